//! `AUTO CDC FROM SNAPSHOT ... WITH VERSION (...)` (SPEC 2.4) through the binary, with seed
//! 000's statements verbatim: its version table (T5: versions 0 and 1, a run with nothing new),
//! its version functions over files (T6: `list_files`, `REGEXP_EXTRACT`, `RLIKE`,
//! `_metadata.file_name`, `current_snapshot_version()`), a snapshot picked by file metadata
//! without reading the other files, the version query's refusals, and `scdflow sql` queries
//! with CTEs, table functions and subqueries.

use crate::durable::{scdflow, stderr, succeed};
use crate::warehouse::{sql, warehouse_with};
use std::path::Path;

const SNAPSHOT_DATA: &str = include_str!("../../dataflows/warehouse/snapshot_data.sql");
const SNAPSHOT_NEXT: &str = include_str!("../../dataflows/warehouse/snapshot_next.sql");
const SNAPSHOT_SCD2: &str = include_str!("../../dataflows/warehouse/snapshot_scd2.sql");
const FILES_SCD2: &str = include_str!("../../dataflows/warehouse/snapshot_files_scd2.sql");

const TARGET: &str = "SELECT * FROM main.cdc_tutorial.target ORDER BY userId, __START_AT";
const VERSIONED: &str =
    "SELECT * FROM main.cdc_tutorial.target_versioned ORDER BY userId, __START_AT";

/// A seed flow with `clause` in place of its `WITH VERSION (...)` clause (empty: periodic
/// snapshots).
pub(crate) fn with_clause(flow: &str, clause: &str) -> String {
    let start = flow.find("WITH VERSION (").unwrap();
    let end = flow.find("KEYS (userId)").unwrap();
    format!("{}{clause}{}", &flow[..start], &flow[end..])
}

fn run(cwd: &Path, pipeline: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "run",
        pipeline,
        "--warehouse",
        "w",
        "--schema",
        "cdc_tutorial",
    ];
    args.extend_from_slice(extra);
    succeed(cwd, &args)
}

#[test]
fn the_seeds_version_table_versions_its_snapshots_0_then_1() {
    let scd1 = SNAPSHOT_SCD2.replace("STORED AS SCD TYPE 2", "STORED AS SCD TYPE 1");
    let dir = warehouse_with(&[
        ("data.sql", SNAPSHOT_DATA),
        ("next.sql", SNAPSHOT_NEXT),
        ("p.sql", SNAPSHOT_SCD2),
        ("p1.sql", &scd1),
    ]);
    let durable = ["--state", "st", "--out", "o"];
    run(dir.path(), "p.sql", &durable);
    assert_eq!(
        sql(dir.path(), TARGET),
        "userId,city,__START_AT,__END_AT\n1,Oaxaca,0,\n2,Monterrey,0,\n3,Tijuana,0,\n"
    );
    // T5-idle: the version query returns no row, so nothing runs.
    let out = run(dir.path(), "p.sql", &durable);
    assert!(out.contains("no new input"), "{out}");
    succeed(dir.path(), &["sql", "--warehouse", "w", "-f", "next.sql"]);
    run(dir.path(), "p.sql", &durable);
    assert_eq!(
        sql(dir.path(), TARGET),
        "userId,city,__START_AT,__END_AT\n\
         1,Oaxaca,0,1\n\
         2,Monterrey,0,1\n\
         2,Carmel,1,\n\
         3,Tijuana,0,1\n\
         3,Los Angeles,1,\n\
         4,Death Valley,1,\n\
         6,Kings Canyon,1,\n"
    );
    // T5-SCD1, as a plain run now: the version is 1, the table the latest snapshot.
    run(dir.path(), "p1.sql", &["--out", "plain"]);
    assert_eq!(
        sql(
            dir.path(),
            "SELECT * FROM main.cdc_tutorial.target ORDER BY userId"
        ),
        "userId,city\n2,Carmel\n3,Los Angeles\n4,Death Valley\n6,Kings Canyon\n"
    );
}

/// A warehouse with the seed's files flow and its two snapshot files in the volume, plus a
/// file the version query ignores, which is not even valid text.
fn files() -> tempfile::TempDir {
    let dir = warehouse_with(&[
        (
            "schema.sql",
            "CREATE SCHEMA IF NOT EXISTS main.cdc_tutorial;",
        ),
        ("p.sql", FILES_SCD2),
    ]);
    let volume = dir.path().join("w/main/cdc_tutorial/snapshots");
    std::fs::create_dir_all(&volume).unwrap();
    let put = |name: &str, text: &[u8]| std::fs::write(volume.join(name), text).unwrap();
    put(
        "snapshot_1.csv",
        b"userId,city\n1,Oaxaca\n2,Monterrey\n3,Tijuana\n",
    );
    put(
        "snapshot_2.csv",
        b"userId,city\n2,Carmel\n3,Los Angeles\n4,Death Valley\n",
    );
    put("tmp.bin", b"\xff\xfe not a snapshot");
    dir
}

pub(crate) const AFTER_SNAPSHOT_2: &str = "userId,city,__START_AT,__END_AT\n\
    1,Oaxaca,1,2\n\
    2,Monterrey,1,2\n\
    2,Carmel,2,\n\
    3,Tijuana,1,2\n\
    3,Los Angeles,2,\n\
    4,Death Valley,2,\n";

#[test]
fn the_seeds_version_functions_take_the_snapshot_files_in_version_order() {
    let dir = files();
    // The flow names its target main.cdc_tutorial.target_versioned and reads a /Volumes/ path:
    // no --schema needed.
    let durable = [
        "run",
        "p.sql",
        "--warehouse",
        "w",
        "--state",
        "st",
        "--out",
        "o",
    ];
    succeed(dir.path(), &durable);
    assert_eq!(sql(dir.path(), VERSIONED), AFTER_SNAPSHOT_2);
    let out = succeed(dir.path(), &durable);
    assert!(out.contains("no new input"), "{out}");
    // A later snapshot is taken; one arriving late with a lower version is not (the version
    // query asks for versions after the last one), as the seed says.
    let volume = dir.path().join("w/main/cdc_tutorial/snapshots");
    std::fs::write(
        volume.join("snapshot_4.csv"),
        "userId,city\n2,Carmel\n7,Yosemite\n",
    )
    .unwrap();
    succeed(dir.path(), &durable);
    std::fs::write(volume.join("snapshot_3.csv"), "userId,city\n1,Oaxaca\n").unwrap();
    let out = succeed(dir.path(), &durable);
    assert!(out.contains("no new input"), "{out}");
    let history = "userId,city,__START_AT,__END_AT\n\
        1,Oaxaca,1,2\n\
        2,Monterrey,1,2\n\
        2,Carmel,2,\n\
        3,Tijuana,1,2\n\
        3,Los Angeles,2,4\n\
        4,Death Valley,2,4\n\
        7,Yosemite,4,\n";
    assert_eq!(sql(dir.path(), VERSIONED), history);
    // A plain run takes every file in version order, 3 included.
    succeed(
        dir.path(),
        &["run", "p.sql", "--warehouse", "w", "--out", "plain"],
    );
    let plain = sql(dir.path(), VERSIONED);
    assert!(plain.contains("1,Oaxaca,1,2\n1,Oaxaca,3,4\n"), "{plain}");
    assert!(plain.contains("7,Yosemite,4,\n"), "{plain}");
}

#[test]
fn version_queries_are_checked_when_planned_and_when_run() {
    let dir = files();
    let with_version = |query: &str| with_clause(FILES_SCD2, &format!("WITH VERSION ({query})\n"));
    let line = FILES_SCD2[..FILES_SCD2.find("WITH VERSION (").unwrap()]
        .lines()
        .count()
        + 1;
    let fails = |pipeline: String, code: i32, needle: &str| {
        std::fs::write(dir.path().join("bad.sql"), pipeline).unwrap();
        let out = scdflow(
            dir.path(),
            &["run", "bad.sql", "--warehouse", "w", "--out", "o"],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{err}");
        assert!(err.contains(needle), "{needle:?} not in {err}");
        err
    };
    let err = fails(
        with_version("SELECT 'one' AS version"),
        2,
        "versions are integers here",
    );
    assert!(err.contains(&format!("bad.sql:{line}:")), "{err}");
    fails(
        with_version("SELECT version FROM current_snapshot_version()"),
        2,
        "current_snapshot_version() can only be used inside FROM SNAPSHOT (...)",
    );
    fails(
        FILES_SCD2.replacen("current_snapshot_version()", "last_snapshot_version()", 1),
        2,
        "last_snapshot_version() can only be used inside WITH VERSION (...)",
    );
    fails(
        with_version("SELECT 1 AS a, 2 AS b"),
        2,
        "returns 2 columns",
    );
    // Found when run: two versions at once, named with the flow.
    let err = fails(
        with_version(
            "SELECT CAST(REGEXP_EXTRACT(path, 'snapshot_([0-9]+)', 1) AS BIGINT) AS version \
             FROM list_files('/Volumes/main/cdc_tutorial/snapshots/') WHERE path RLIKE 'csv$'",
        ),
        2,
        "returned 2 rows; it must return at most one",
    );
    assert!(
        err.contains("flow `target_versioned_snapshot_flow`"),
        "{err}"
    );
    // Nothing was published by the failed runs.
    assert!(!dir
        .path()
        .join("w/main/cdc_tutorial/target_versioned")
        .exists());
}

#[test]
fn a_version_query_that_ignores_the_last_version_is_skipped_not_repeated() {
    let dir = files();
    let constant = with_clause(FILES_SCD2, "WITH VERSION (SELECT 2 AS version)\n");
    std::fs::write(dir.path().join("c.sql"), constant).unwrap();
    let durable = [
        "run",
        "c.sql",
        "--warehouse",
        "w",
        "--state",
        "st",
        "--out",
        "o",
    ];
    let out = scdflow(dir.path(), &durable);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("snapshot version 2 of flow `target_versioned_snapshot_flow` is not newer than the last applied one; skipped"), "{err}");
    assert_eq!(
        sql(dir.path(), VERSIONED),
        "userId,city,__START_AT,__END_AT\n2,Carmel,2,\n3,Los Angeles,2,\n4,Death Valley,2,\n"
    );
}

#[test]
fn scdflow_sql_evaluates_ctes_table_functions_and_subqueries() {
    let dir = files();
    succeed(
        dir.path(),
        &[
            "sql",
            "--warehouse",
            "w",
            "CREATE TABLE main.cdc_tutorial.v AS SELECT * FROM VALUES (1), (4) AS t(version)",
        ],
    );
    let query = "WITH snapshot_files AS (\n\
          SELECT CAST(REGEXP_EXTRACT(path, 'snapshot_([0-9]+)[.]csv$', 1) AS BIGINT) AS version, size\n\
          FROM list_files('/Volumes/main/cdc_tutorial/snapshots/')\n\
          WHERE path RLIKE 'snapshot_[0-9]+[.]csv$'\n\
        )\n\
        SELECT version, size,\n\
          version IN (SELECT version FROM main.cdc_tutorial.v) AS listed,\n\
          (SELECT 9) AS nine,\n\
          EXISTS (SELECT 1 FROM snapshot_files WHERE version > 1) AS later\n\
        FROM snapshot_files\n\
        WHERE NOT EXISTS (SELECT 1 FROM main.cdc_tutorial.v WHERE version = 3)\n\
        ORDER BY version DESC";
    assert_eq!(
        sql(dir.path(), query),
        "version,size,listed,nine,later\n2,50,false,9,true\n1,43,true,9,true\n"
    );
    let out = scdflow(
        dir.path(),
        &[
            "sql",
            "--warehouse",
            "w",
            "SELECT (SELECT version FROM main.cdc_tutorial.v)",
        ],
    );
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("returned 2 rows; it must return at most one"),
        "{err}"
    );
}

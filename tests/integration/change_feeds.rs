//! Change data feeds read back, and the statements about tables seed 003 uses: `table_changes`
//! of a published target equals the file run's change feed; another pipeline streams a
//! target's feed (`STREAM t WITH (readChangeFeed = true)`, Spark's initial snapshot, then each
//! version; `startingVersion`); `SHOW TBLPROPERTIES`, views (seed 003's, verbatim) and
//! `REPAIR TABLE ... SYNC METADATA` in `scdflow sql`; and each refusal naming why.

use crate::durable::{scdflow, stderr, succeed};
use crate::warehouse::{sql, warehouse, warehouse_with};
use std::path::Path;

/// The lines of a CSV text without its header, sorted, each cut before its last field
/// (`_commit_timestamp`, which differs between two runs).
fn without_timestamps(csv: &str) -> Vec<String> {
    let mut lines: Vec<String> = (csv.lines().skip(1))
        .map(|l| l.rsplit_once(',').unwrap().0.to_string())
        .collect();
    lines.sort();
    lines
}

/// `scdflow generate --out g` with `[events, keys, displacement, commits, seed]`.
pub(crate) fn generate(cwd: &Path, [events, keys, displacement, commits, seed]: [&str; 5]) {
    let args = [
        "generate",
        "--out",
        "g",
        "--events",
        events,
        "--keys",
        keys,
        "--displacement",
        displacement,
        "--commits",
        commits,
        "--seed",
        seed,
    ];
    succeed(cwd, &args);
}

#[test]
fn table_changes_of_a_published_target_is_the_change_feed_a_file_run_writes() {
    let dir = warehouse();
    let cwd = dir.path();
    generate(cwd, ["3000", "200", "100", "20", "5"]);
    sql(cwd, "CREATE SCHEMA main.default");
    succeed(cwd, &["run", "g/scd2.sql", "--out", "files"]);
    let run = ["run", "g/scd2.sql", "--warehouse", "w", "--out", "o"];
    succeed(cwd, &run);
    let file = std::fs::read_to_string(cwd.join("files/scd2.changes.csv")).unwrap();
    let feed = sql(cwd, "SELECT * FROM table_changes('scd2', 1)");
    assert_eq!(without_timestamps(&feed), without_timestamps(&file));
    assert!(feed.starts_with("k,"), "{feed}");
    assert!(
        feed.lines()
            .next()
            .unwrap()
            .ends_with(",_change_type,_commit_version,_commit_timestamp"),
        "{feed}"
    );
    // A range of versions, inclusive, by its full name.
    let some = sql(
        cwd,
        "SELECT _commit_version FROM table_changes('main.default.scd2', 3, 5)",
    );
    let want = (file.lines().skip(1))
        .filter(|l| {
            let version = l.rsplit(',').nth(1).unwrap();
            ["3", "4", "5"].contains(&version)
        })
        .count();
    assert_eq!(some.lines().count() - 1, want);
    assert!(
        some.lines().skip(1).all(|v| ["3", "4", "5"].contains(&v)),
        "{some}"
    );
    // Refusals: past the latest version, an end before the start, a table without a feed.
    for (query, why) in [
        (
            "SELECT * FROM table_changes('scd2', 99)",
            "after the latest version",
        ),
        (
            "SELECT * FROM table_changes('scd2', 5, 3)",
            "before the start",
        ),
        ("SELECT * FROM table_changes('scd2')", "one or two versions"),
        (
            "SELECT * FROM table_changes('main.cdc_tutorial.users_cdf', 0)",
            "change data feed was not recorded at version 0",
        ),
    ] {
        let out = scdflow(cwd, &["sql", "--warehouse", "w", query]);
        assert_eq!(out.status.code(), Some(2), "{query}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{query}: {}", stderr(&out));
    }
}

/// Reads `main.cdc_tutorial.users_current`'s change data feed into an SCD2 history of it.
const AUDIT: &str = "\
CREATE OR REFRESH STREAMING TABLE current_changes
TBLPROPERTIES ('pipelines.channel' = 'preview')
AS SELECT * FROM STREAM main.cdc_tutorial.users_current WITH (readChangeFeed = true{START})
WHERE _change_type <> 'update_preimage';

CREATE OR REFRESH STREAMING TABLE users_audit;

CREATE FLOW audit AS AUTO CDC INTO users_audit
FROM STREAM(current_changes)
KEYS (userId)
APPLY AS DELETE WHEN _change_type = 'delete'
SEQUENCE BY _commit_version
COLUMNS * EXCEPT (_change_type, _commit_version, _commit_timestamp)
STORED AS SCD TYPE 2;
";

/// `scdflow run PIPELINE --warehouse w --schema cdc_tutorial` with `extra` arguments.
fn run(cwd: &Path, pipeline: &str, extra: &[&str]) {
    let args = [
        "run",
        pipeline,
        "--warehouse",
        "w",
        "--schema",
        "cdc_tutorial",
    ];
    succeed(cwd, &[&args[..], extra].concat());
}

#[test]
fn another_pipeline_streams_a_targets_change_data_feed() {
    let audit = AUDIT.replace("{START}", "");
    let from_two = AUDIT.replace("{START}", ", startingVersion = 2");
    let dir = warehouse_with(&[
        (
            "sample.sql",
            include_str!("../../dataflows/warehouse/sample_data.sql"),
        ),
        (
            "scd1.sql",
            include_str!("../../dataflows/warehouse/scd1.sql"),
        ),
        ("audit.sql", &audit),
        ("from_two.sql", &from_two),
    ]);
    let cwd = dir.path();
    // Version 1 of users_current: the seed's table.
    run(cwd, "scd1.sql", &["--state", "s1", "--out", "o1"]);
    // Spark's initial snapshot: the latest version's rows, as inserts of version 1.
    run(cwd, "audit.sql", &["--state", "s2", "--out", "o2"]);
    let history = "SELECT * FROM main.cdc_tutorial.users_audit ORDER BY userId, __START_AT";
    assert_eq!(
        sql(cwd, history),
        "userId,name,city,__START_AT,__END_AT\n\
         124,Raul,Oaxaca,1,\n\
         125,Mercedes,Guadalajara,1,\n\
         126,Lily,Cancun,1,\n"
    );
    // Version 2: Raul moves, Lily leaves; the audit's next step reads that version alone.
    sql(
        cwd,
        "INSERT INTO main.cdc_tutorial.users_cdf VALUES \
         (124, 'Raul', 'Puebla', 'UPDATE', 7), (126, NULL, NULL, 'DELETE', 7)",
    );
    run(cwd, "scd1.sql", &["--state", "s1", "--out", "o1"]);
    run(cwd, "audit.sql", &["--state", "s2", "--out", "o2"]);
    assert_eq!(
        sql(cwd, history),
        "userId,name,city,__START_AT,__END_AT\n\
         124,Raul,Oaxaca,1,2\n\
         124,Raul,Puebla,2,\n\
         125,Mercedes,Guadalajara,1,\n\
         126,Lily,Cancun,1,2\n"
    );
    // From version 2 on, a plain run sees only that version's changes.
    run(cwd, "from_two.sql", &["--out", "o3"]);
    assert_eq!(
        sql(cwd, history),
        "userId,name,city,__START_AT,__END_AT\n124,Raul,Puebla,2,\n"
    );
}

#[test]
fn reader_options_are_refused_where_they_cannot_apply() {
    let dir = warehouse();
    let cwd = dir.path();
    let stream = |options: &str| {
        format!(
            "CREATE OR REFRESH STREAMING TABLE t;\n\
             CREATE FLOW f AS AUTO CDC INTO t\n\
             FROM STREAM(main.cdc_tutorial.users_cdf) {options}\n\
             KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' SEQUENCE BY sequenceNum\n\
             COLUMNS * EXCEPT (operation, sequenceNum) STORED AS SCD TYPE 1;\n"
        )
    };
    let own = "CREATE OR REFRESH STREAMING TABLE s AS SELECT * FROM STREAM read_files('in', \
               format => 'csv', schema => 'userId INT, sequenceNum INT');\n\
               CREATE OR REFRESH STREAMING TABLE t;\n\
               CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(s) WITH (readChangeFeed = true)\n\
               KEYS (userId) SEQUENCE BY sequenceNum STORED AS SCD TYPE 1;\n"
        .to_string();
    for (pipeline, line, why) in [
        (
            stream("WITH (readChangeFeed = true)"),
            3,
            "does not record its change data feed",
        ),
        (
            stream("WITH (maxFilesPerTrigger = 1)"),
            3,
            "unknown option `maxFilesPerTrigger`",
        ),
        (
            stream("WITH (startingVersion = 7)"),
            3,
            "startingVersion 7 is after the table's latest version, 0",
        ),
        (
            stream("WITH (readChangeFeed = true, skipChangeCommits = true)"),
            3,
            "skipChangeCommits",
        ),
        (own, 3, "`s` is this pipeline's table"),
        (
            stream("WITH (readChangeFeed = true)").replace("main.cdc_tutorial.users_cdf", "nope"),
            3,
            "no table `nope` in this pipeline, and none in the warehouse as main.default.nope",
        ),
    ] {
        std::fs::write(cwd.join("p.sql"), &pipeline).unwrap();
        let out = scdflow(cwd, &["run", "p.sql", "--warehouse", "w", "--out", "o"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{pipeline}: {err}");
        assert!(err.contains(&format!("p.sql:{line}:")), "{pipeline}: {err}");
        assert!(err.contains(why), "{pipeline}: {err}");
    }
    // skipChangeCommits passes over an UPDATE a stream of appends cannot read.
    sql(
        cwd,
        "UPDATE main.cdc_tutorial.users_cdf SET city = 'Puebla' WHERE userId = 124",
    );
    std::fs::write(cwd.join("p.sql"), stream("WITH (skipChangeCommits = true)")).unwrap();
    run(cwd, "p.sql", &["--out", "o"]);
    assert_eq!(
        sql(cwd, "SELECT * FROM main.cdc_tutorial.t ORDER BY userId"),
        "userId,name,city\n124,Raul,Oaxaca\n125,Mercedes,Guadalajara\n126,Lily,Cancun\n"
    );
}

/// Seed 003's view, verbatim, over an SCD2 target of that name.
const SEED_VIEW: &str = "CREATE VIEW my_employees_view AS
SELECT
  *,
  __START_AT AS valid_from,
  __END_AT AS valid_to
FROM my_scd2_target_table;";

#[test]
fn views_table_properties_and_repair_in_scdflow_sql() {
    let scd2 = include_str!("../../dataflows/warehouse/scd2.sql")
        .replace("users_history", "my_scd2_target_table");
    let dir = warehouse_with(&[
        (
            "sample.sql",
            include_str!("../../dataflows/warehouse/sample_data.sql"),
        ),
        ("scd2.sql", &scd2),
        ("view.sql", SEED_VIEW),
    ]);
    let cwd = dir.path();
    run(cwd, "scd2.sql", &["--out", "o"]);
    let sql_in_schema = |statement: &str| {
        let args = [
            "sql",
            "--warehouse",
            "w",
            "--schema",
            "cdc_tutorial",
            statement,
        ];
        scdflow(cwd, &args)
    };
    let in_schema = |statement: &str| {
        let args = [
            "sql",
            "--warehouse",
            "w",
            "--schema",
            "cdc_tutorial",
            "--format",
            "csv",
        ];
        succeed(cwd, &[&args[..], &[statement]].concat())
    };
    let view = [
        "sql",
        "--warehouse",
        "w",
        "--schema",
        "cdc_tutorial",
        "-f",
        "view.sql",
    ];
    succeed(cwd, &view);
    let out = scdflow(cwd, &view);
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert_eq!(
        in_schema("SELECT userId, city, valid_from, valid_to FROM my_employees_view WHERE userId = 125 ORDER BY valid_from"),
        "userId,city,valid_from,valid_to\n\
         125,Tijuana,2,5\n\
         125,Mexicali,5,6\n\
         125,Guadalajara,6,\n"
    );
    // Its names resolve where it was created, whatever the reader's defaults.
    let full = sql(
        cwd,
        "SELECT valid_from FROM main.cdc_tutorial.my_employees_view WHERE userId = 124",
    );
    assert_eq!(full, "valid_from\n1\n");
    // SHOW TBLPROPERTIES: one property, one it lacks, and the protocol among all of them.
    assert_eq!(
        in_schema("SHOW TBLPROPERTIES my_scd2_target_table ('delta.enableChangeDataFeed')"),
        "key,value\ndelta.enableChangeDataFeed,true\n"
    );
    assert_eq!(
        in_schema("SHOW TBLPROPERTIES main.cdc_tutorial.my_scd2_target_table ('delta.enableRowTracking');"),
        "key,value\ndelta.enableRowTracking,Table main.cdc_tutorial.my_scd2_target_table does not have property: delta.enableRowTracking\n"
    );
    let all = in_schema("SHOW TBLPROPERTIES my_scd2_target_table");
    for row in [
        "delta.minReaderVersion,3",
        "delta.feature.deletionVectors,supported",
        "scdflow.target,",
    ] {
        assert!(all.contains(row), "{all}");
    }
    // A pipeline's target is replaced by its pipeline, not by CREATE OR REPLACE.
    let out = sql_in_schema("CREATE OR REPLACE TABLE my_scd2_target_table AS SELECT 1 AS id");
    assert!(
        stderr(&out).contains("is target `my_scd2_target_table` of a pipeline"),
        "{}",
        stderr(&out)
    );
    // REPAIR TABLE ... SYNC METADATA has nothing to do; other repairs are refused.
    in_schema("REPAIR TABLE my_scd2_target_table SYNC METADATA");
    for (statement, why) in [
        (
            "REPAIR TABLE my_scd2_target_table SYNC PARTITIONS",
            "no partitions",
        ),
        ("DROP TABLE my_employees_view", "is a view; use DROP VIEW"),
        ("CREATE TABLE my_employees_view (a INT)", "is a view"),
        (
            "DROP VIEW my_scd2_target_table",
            "is a table; use DROP TABLE",
        ),
        (
            "CREATE VIEW v AS SELECT nope FROM my_scd2_target_table",
            "nope",
        ),
        ("CREATE TEMPORARY VIEW v AS SELECT 1", "TEMPORARY"),
        ("SHOW TBLPROPERTIES nothing_here", "does not exist"),
    ] {
        let out = sql_in_schema(statement);
        assert_eq!(out.status.code(), Some(2), "{statement}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{statement}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("line 1: "),
            "{statement}: {}",
            stderr(&out)
        );
    }
    // A view file naming a catalog outside the warehouse is refused, not followed.
    let file = cwd.join("w/main/cdc_tutorial/my_employees_view/_view.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("\"main\"", "\"../../etc\"")).unwrap();
    let out = scdflow(
        cwd,
        &[
            "sql",
            "--warehouse",
            "w",
            "SELECT * FROM main.cdc_tutorial.my_employees_view",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("catalog"), "{}", stderr(&out));
    std::fs::write(&file, text).unwrap();
    // A view has no change data feed, and a pipeline streams tables, not views.
    let out = scdflow(
        cwd,
        &[
            "sql",
            "--warehouse",
            "w",
            "SELECT * FROM table_changes('main.cdc_tutorial.my_employees_view', 0)",
        ],
    );
    assert!(
        stderr(&out).contains("is a view; a change data feed is a table's"),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        cwd.join("v.sql"),
        "CREATE OR REFRESH STREAMING TABLE s AS SELECT * FROM STREAM(main.cdc_tutorial.my_employees_view);\n",
    )
    .unwrap();
    let out = scdflow(cwd, &["run", "v.sql", "--warehouse", "w", "--out", "o"]);
    assert!(
        stderr(&out).contains(
            "v.sql:1: FROM: main.cdc_tutorial.my_employees_view is a view of the warehouse"
        ),
        "{}",
        stderr(&out)
    );
    // Views reading views in a cycle fail when read, not forever.
    in_schema("CREATE VIEW a AS SELECT * FROM my_employees_view");
    in_schema("CREATE OR REPLACE VIEW my_employees_view AS SELECT * FROM a");
    let out = sql_in_schema("SELECT * FROM a");
    assert!(stderr(&out).contains("in a cycle"), "{}", stderr(&out));
    in_schema("DROP VIEW a, my_employees_view");
    let out = sql_in_schema("SELECT * FROM a");
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
}

/// A table `scdflow sql` writes with the change data feed on: appends read as inserts (their
/// files, no change-data file), `DELETE`, `UPDATE` and `TRUNCATE` from their change-data
/// files, `CREATE OR REPLACE` as its removed files' deletes and its new file's inserts, each
/// with its version.
#[test]
fn table_changes_reads_every_kind_of_version_scdflow_sql_writes() {
    let dir = warehouse();
    let cwd = dir.path();
    let statements = [
        "CREATE TABLE main.cdc_tutorial.t TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true') \
         AS SELECT * FROM VALUES (1, 'a'), (2, 'b') AS v(id, s)",
        "INSERT INTO main.cdc_tutorial.t VALUES (3, 'c')",
        "DELETE FROM main.cdc_tutorial.t WHERE id = 2",
        "UPDATE main.cdc_tutorial.t SET s = 'z' WHERE id = 3",
        "TRUNCATE TABLE main.cdc_tutorial.t",
        "INSERT INTO main.cdc_tutorial.t VALUES (9, 'n')",
        // Replaced: its files removed (deletes, no change-data file), the new one added.
        "CREATE OR REPLACE TABLE main.cdc_tutorial.t \
         TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true') \
         AS SELECT * FROM VALUES (7, 'r'), (9, 'n') AS v(id, s)",
    ];
    for statement in statements {
        sql(cwd, statement);
    }
    let feed = sql(
        cwd,
        "SELECT * EXCEPT (_commit_timestamp) FROM table_changes('main.cdc_tutorial.t', 0) \
         ORDER BY _commit_version, _change_type, id",
    );
    assert_eq!(
        feed,
        "id,s,_change_type,_commit_version\n\
         1,a,insert,0\n\
         2,b,insert,0\n\
         3,c,insert,1\n\
         2,b,delete,2\n\
         3,z,update_postimage,3\n\
         3,c,update_preimage,3\n\
         1,a,delete,4\n\
         3,z,delete,4\n\
         9,n,insert,5\n\
         9,n,delete,6\n\
         7,r,insert,6\n\
         9,n,insert,6\n"
    );
    // A replaced table keeps its protocol: a property needing a feature it may lack is
    // refused, and the table is as it was.
    let out = scdflow(
        cwd,
        &[
            "sql",
            "--warehouse",
            "w",
            "CREATE OR REPLACE TABLE main.cdc_tutorial.t \
             TBLPROPERTIES ('delta.enableDeletionVectors' = 'true') AS SELECT 1 AS id",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("drop the table first"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        sql(cwd, "SELECT * FROM main.cdc_tutorial.t ORDER BY id"),
        "id,s\n7,r\n9,n\n"
    );
}

/// A stream of a change data feed starts only where the feed was recorded: a table that
/// turned it on at version 1 is refused from version 0 (at the line reading it), and read
/// from version 1 (its replacement: the old row deleted, the new one inserted).
#[test]
fn a_feed_is_read_only_from_where_it_was_recorded() {
    let dir = warehouse();
    let cwd = dir.path();
    sql(cwd, "CREATE SCHEMA main.default");
    sql(
        cwd,
        "CREATE TABLE t AS SELECT * FROM VALUES (1, 1) AS v(userId, seq)",
    );
    sql(
        cwd,
        "CREATE OR REPLACE TABLE t TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true') \
         AS SELECT * FROM VALUES (2, 2) AS v(userId, seq)",
    );
    let pipeline = |start: u64| {
        format!(
            "CREATE OR REFRESH STREAMING TABLE c;\n\
             CREATE FLOW f AS AUTO CDC INTO c FROM STREAM(t)\n\
             WITH (readChangeFeed = true, startingVersion = {start})\n\
             KEYS (userId) APPLY AS DELETE WHEN _change_type = 'delete' SEQUENCE BY seq\n\
             COLUMNS * EXCEPT (_change_type, _commit_version, _commit_timestamp);\n"
        )
    };
    std::fs::write(cwd.join("p.sql"), pipeline(0)).unwrap();
    let out = scdflow(cwd, &["run", "p.sql", "--warehouse", "w", "--out", "o"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("p.sql:2:"), "{err}");
    assert!(err.contains("not recorded at version 0"), "{err}");
    std::fs::write(cwd.join("p.sql"), pipeline(1)).unwrap();
    succeed(cwd, &["run", "p.sql", "--warehouse", "w", "--out", "o"]);
    assert_eq!(sql(cwd, "SELECT * FROM c"), "userId,seq\n2,2\n");
}

/// Another pipeline that applies a published SCD2 target's change data feed, keyed by the
/// target's identity (key and `__START_AT`), rebuilds the target row for row: over many
/// commits (deletion vectors, merged files, late events closing and reopening versions).
#[test]
fn a_targets_change_data_feed_rebuilds_it_in_another_pipeline() {
    let dir = warehouse();
    let cwd = dir.path();
    generate(cwd, ["4000", "300", "300", "25", "9"]);
    sql(cwd, "CREATE SCHEMA main.default");
    succeed(
        cwd,
        &["run", "g/scd2.sql", "--warehouse", "w", "--out", "o"],
    );
    let copy = "CREATE OR REFRESH STREAMING TABLE feed AS\n\
                SELECT k, c0, c1, __START_AT AS started, __END_AT AS ended, _change_type,\n\
                _commit_version\n\
                FROM STREAM scd2 WITH (readChangeFeed = true, startingVersion = 1)\n\
                WHERE _change_type <> 'update_preimage';\n\
                CREATE OR REFRESH STREAMING TABLE copy;\n\
                CREATE FLOW c AS AUTO CDC INTO copy FROM STREAM(feed) KEYS (k, started)\n\
                APPLY AS DELETE WHEN _change_type = 'delete' SEQUENCE BY _commit_version\n\
                COLUMNS * EXCEPT (_change_type, _commit_version) STORED AS SCD TYPE 1;\n";
    std::fs::write(cwd.join("copy.sql"), copy).unwrap();
    succeed(cwd, &["run", "copy.sql", "--warehouse", "w", "--out", "o2"]);
    let original = sql(cwd, "SELECT * FROM scd2 ORDER BY k, __START_AT");
    let rebuilt = sql(cwd, "SELECT * FROM copy ORDER BY k, started");
    assert!(original.lines().count() > 300, "{original}");
    assert_eq!(
        rebuilt.lines().skip(1).collect::<Vec<_>>(),
        original.lines().skip(1).collect::<Vec<_>>()
    );
}

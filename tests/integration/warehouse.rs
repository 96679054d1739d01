//! A warehouse of Delta tables through the binary: the seed's sample data created by
//! `scdflow sql` exactly as the seed writes it, its SCD1 and SCD2 pipelines reading the table by
//! its qualified name, durable runs reading new versions only, and the refusals (names as
//! paths, qualified names without a warehouse, a version that rewrites rows).

use crate::durable::{scdflow, stderr, succeed};
use std::path::Path;

/// Seed 000's SQL, verbatim: the sample data and the SCD type 1 and 2 pipelines.
const SAMPLE: &str = include_str!("../../dataflows/warehouse/sample_data.sql");
const SCD1: &str = include_str!("../../dataflows/warehouse/scd1.sql");
const SCD2: &str = include_str!("../../dataflows/warehouse/scd2.sql");

pub(crate) fn warehouse() -> tempfile::TempDir {
    warehouse_with(&[
        ("sample.sql", SAMPLE),
        ("scd1.sql", SCD1),
        ("scd2.sql", SCD2),
    ])
}

/// A directory with an empty warehouse `w` and `files` (name, text), the first of which has
/// been run through `scdflow sql`.
pub(crate) fn warehouse_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("w")).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    succeed(dir.path(), &["sql", "--warehouse", "w", "-f", files[0].0]);
    dir
}

pub(crate) fn sql(cwd: &Path, statements: &str) -> String {
    succeed(
        cwd,
        &["sql", "--warehouse", "w", "--format", "csv", statements],
    )
}

#[test]
fn the_seeds_sample_data_is_a_delta_table_scdflow_sql_reads() {
    let dir = warehouse();
    let table = dir.path().join("w/main/cdc_tutorial/users_cdf");
    assert!(table.join("_delta_log/00000000000000000000.json").is_file());
    let rows = sql(
        dir.path(),
        "SELECT * FROM main.cdc_tutorial.users_cdf ORDER BY sequenceNum, userId DESC",
    );
    assert_eq!(
        rows,
        "userId,name,city,operation,sequenceNum\n\
         124,Raul,Oaxaca,INSERT,1\n\
         123,Isabel,Monterrey,INSERT,1\n\
         126,Lily,Cancun,INSERT,2\n\
         125,Mercedes,Tijuana,INSERT,2\n\
         125,Mercedes,Mexicali,UPDATE,5\n\
         123,Isabel,Chihuahua,UPDATE,5\n\
         125,Mercedes,Guadalajara,UPDATE,6\n\
         123,,,DELETE,6\n"
    );
    // The schema is created once; creating it again without IF NOT EXISTS is an error.
    let out = scdflow(
        dir.path(),
        &["sql", "--warehouse", "w", "CREATE SCHEMA main.cdc_tutorial"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
}

/// `scdflow run` in the seed's schema, publishing its targets there.
fn publish(cwd: &Path, pipeline: &str, out: &str) {
    succeed(
        cwd,
        &[
            "run",
            pipeline,
            "--warehouse",
            "w",
            "--schema",
            "cdc_tutorial",
            "--out",
            out,
        ],
    );
}

#[test]
fn the_seeds_scd1_and_scd2_pipelines_read_the_table_by_its_qualified_name() {
    let dir = warehouse();
    publish(dir.path(), "scd1.sql", "out1");
    let scd1 = sql(
        dir.path(),
        "SELECT * FROM main.cdc_tutorial.users_current ORDER BY userId",
    );
    assert_eq!(
        scd1,
        "userId,name,city\n124,Raul,Oaxaca\n125,Mercedes,Guadalajara\n126,Lily,Cancun\n"
    );
    // The targets are tables of the warehouse; --out holds the run's metrics.
    assert!(dir.path().join("out1/metrics.json").is_file());
    assert!(!dir.path().join("out1/users_current.csv").exists());
    publish(dir.path(), "scd2.sql", "out2");
    let scd2 = sql(
        dir.path(),
        "SELECT * FROM main.cdc_tutorial.users_history ORDER BY userId, __START_AT",
    );
    assert_eq!(scd2, SEED_SCD2);
}

/// Seed 000's SCD2 table (`users_history`), ordered by `userId, __START_AT`, as CSV.
pub(crate) const SEED_SCD2: &str = "userId,name,city,__START_AT,__END_AT\n\
                                    123,Isabel,Monterrey,1,5\n\
                                    123,Isabel,Chihuahua,5,6\n\
                                    124,Raul,Oaxaca,1,\n\
                                    125,Mercedes,Tijuana,2,5\n\
                                    125,Mercedes,Mexicali,5,6\n\
                                    125,Mercedes,Guadalajara,6,\n\
                                    126,Lily,Cancun,2,\n";

/// A plain run publishes each target afresh: one Delta version per scdflow commit, replacing
/// the table it published before, never a table it did not publish, and never in a schema
/// that does not exist.
#[test]
fn a_plain_run_replaces_only_the_tables_it_published() {
    let dir = warehouse();
    let log = dir
        .path()
        .join("w/main/cdc_tutorial/users_current/_delta_log");
    publish(dir.path(), "scd1.sql", "out");
    sql(
        dir.path(),
        "INSERT INTO main.cdc_tutorial.users_cdf VALUES (127, 'Ana', 'Puebla', 'INSERT', 7)",
    );
    publish(dir.path(), "scd1.sql", "out");
    // Two source versions, two commits: versions 0 (created), 1 and 2, the old history gone.
    let mut versions: Vec<String> = std::fs::read_dir(&log)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    versions.sort();
    assert_eq!(
        versions,
        [0, 1, 2].map(|v| format!("{v:020}.json")),
        "{versions:?}"
    );
    let rows = sql(
        dir.path(),
        "SELECT userId FROM main.cdc_tutorial.users_current ORDER BY userId",
    );
    assert_eq!(rows, "userId\n124\n125\n126\n127\n");

    sql(
        dir.path(),
        "CREATE TABLE main.cdc_tutorial.users_history (a INT)",
    );
    let out = scdflow(
        dir.path(),
        &[
            "run",
            "scd2.sql",
            "--warehouse",
            "w",
            "--schema",
            "cdc_tutorial",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("scdflow did not publish"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        sql(dir.path(), "SELECT * FROM main.cdc_tutorial.users_history"),
        "a\n"
    );

    // A target named as the table it reads: the qualified name now names the pipeline's own
    // target, which a flow cannot read (a run would replace its own input).
    let own = SCD1.replace("users_current", "users_cdf");
    std::fs::write(dir.path().join("own.sql"), own).unwrap();
    let out = scdflow(
        dir.path(),
        &[
            "run",
            "own.sql",
            "--warehouse",
            "w",
            "--schema",
            "cdc_tutorial",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("FROM: `users_cdf` is an AUTO CDC target"),
        "{}",
        stderr(&out)
    );

    let out = scdflow(dir.path(), &["run", "scd2.sql", "--warehouse", "w"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("schema main.default, which does not exist"),
        "{}",
        stderr(&out)
    );
}

/// `scdflow run PIPELINE` into the seed's schema of warehouse `w` with state `st`.
pub(crate) fn durable(pipeline: &str) -> [&str; 8] {
    [
        "run",
        pipeline,
        "--warehouse",
        "w",
        "--schema",
        "cdc_tutorial",
        "--state",
        "st",
    ]
}

/// A durable run publishes each commit once as the version of its number, reading only the
/// source versions added since; versions its manifest prepared and a crash kept out of the log
/// are put there by the next run; the state stays bound to where it publishes.
#[test]
fn a_durable_run_publishes_each_commit_once() {
    let dir = warehouse();
    let cwd = dir.path();
    let args = durable("scd1.sql");
    succeed(cwd, &args);
    sql(
        cwd,
        "INSERT INTO main.cdc_tutorial.users_cdf VALUES (127, 'Ana', 'Puebla', 'INSERT', 7); \
         INSERT INTO main.cdc_tutorial.users_cdf VALUES (124, 'Raul', 'Merida', 'UPDATE', 8)",
    );
    succeed(cwd, &args);
    let table = || {
        sql(
            cwd,
            "SELECT * FROM main.cdc_tutorial.users_current ORDER BY userId",
        )
    };
    let want = "userId,name,city\n124,Raul,Merida\n125,Mercedes,Guadalajara\n\
                126,Lily,Cancun\n127,Ana,Puebla\n";
    assert_eq!(table(), want);
    let log = cwd.join("w/main/cdc_tutorial/users_current/_delta_log");
    let entry = |v: u64| std::fs::read(log.join(format!("{v:020}.json")));
    let last = entry(3).unwrap();
    assert!(
        entry(4).is_err(),
        "three commits, three versions after the first"
    );
    // A crash between the manifest and the log: the next run puts the version in, once.
    std::fs::remove_file(log.join(format!("{:020}.json", 3))).unwrap();
    succeed(cwd, &args);
    assert_eq!(entry(3).unwrap(), last);
    assert_eq!(table(), want);
    succeed(cwd, &args);
    assert!(entry(4).is_err(), "nothing new, no version");

    sql(cwd, "CREATE SCHEMA main.other");
    let mut elsewhere = args;
    elsewhere[5] = "other";
    let out = scdflow(cwd, &elsewhere);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("pass the same --warehouse, --catalog and --schema"),
        "{}",
        stderr(&out)
    );
    // Another state publishing the same table is refused unless it starts over.
    let mut other = args;
    other[7] = "st2";
    let out = scdflow(cwd, &other);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("by another run already"),
        "{}",
        stderr(&out)
    );
    let mut refresh = other.to_vec();
    refresh.push("--full-refresh");
    succeed(cwd, &refresh);
    assert_eq!(table(), want);
    assert!(entry(4).is_err(), "published afresh");
    // The first state's commits are no longer the table's.
    let out = scdflow(cwd, &args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("another run wrote it since"),
        "{}",
        stderr(&out)
    );
}

/// A durable step whose Delta files cannot be written (they are written on a thread of their
/// own while the state is saved) fails whole: no version in the log, no commit in the state;
/// once the files can be written, the next run publishes the commit, once.
#[test]
fn a_step_that_cannot_write_its_delta_files_commits_nothing() {
    let dir = warehouse();
    let cwd = dir.path();
    let args = durable("scd2.sql");
    succeed(cwd, &args);
    let table = cwd.join("w/main/cdc_tutorial/users_history");
    let entry = |v: u64| table.join(format!("_delta_log/{v:020}.json")).exists();
    assert!(entry(1) && !entry(2));
    // The first commit only inserted rows (no change-data file); the next one closes a
    // version, whose pre- and post-images need `_change_data/`, here a file in the way.
    let blocked = table.join("_change_data");
    assert!(!blocked.exists());
    std::fs::write(&blocked, "in the way").unwrap();
    sql(
        cwd,
        "INSERT INTO main.cdc_tutorial.users_cdf VALUES (124, 'Raul', 'Merida', 'UPDATE', 8)",
    );
    let out = scdflow(cwd, &args);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("_change_data"), "{}", stderr(&out));
    assert!(!entry(2), "a failed step publishes nothing");

    std::fs::remove_file(&blocked).unwrap();
    succeed(cwd, &args);
    assert!(entry(2) && !entry(3), "the commit published once");
    let current = sql(
        cwd,
        "SELECT userId, city FROM main.cdc_tutorial.users_history \
         WHERE __END_AT IS NULL ORDER BY userId",
    );
    assert_eq!(
        current,
        "userId,city\n124,Merida\n125,Guadalajara\n126,Cancun\n"
    );
}

#[test]
fn a_stream_refuses_a_version_that_rewrites_rows() {
    let dir = warehouse();
    sql(
        dir.path(),
        "CREATE OR REPLACE TABLE main.cdc_tutorial.users_cdf AS \
         SELECT * FROM main.cdc_tutorial.users_cdf WHERE userId <> 126",
    );
    let out = scdflow(
        dir.path(),
        &[
            "run",
            "scd1.sql",
            "--warehouse",
            "w",
            "--schema",
            "cdc_tutorial",
            "--out",
            "out",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("version 1 of main.cdc_tutorial.users_cdf"),
        "{err}"
    );
    assert!(err.contains("not an append"), "{err}");
    assert!(!dir.path().join("out").exists());
    assert!(!dir
        .path()
        .join("w/main/cdc_tutorial/users_current")
        .exists());
}

#[test]
fn names_never_leave_the_warehouse_and_qualified_names_need_one() {
    let dir = warehouse();
    for bad in [
        "CREATE SCHEMA `..`.x",
        "CREATE TABLE main.`../..`.t (a INT)",
        "CREATE TABLE main.cdc_tutorial.`a/b` (a INT)",
        "SELECT * FROM a.b.c.d",
    ] {
        let out = scdflow(dir.path(), &["sql", "--warehouse", "w", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("panicked"),
            "{bad}: {}",
            stderr(&out)
        );
    }
    assert_eq!(std::fs::read_dir(dir.path().join("w")).unwrap().count(), 1);
    let out = scdflow(dir.path(), &["run", "scd1.sql", "--out", "out"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("give --warehouse DIR"),
        "{}",
        stderr(&out)
    );
    // A table in a schema that was never created is refused, naming the schema.
    let out = scdflow(
        dir.path(),
        &["sql", "--warehouse", "w", "CREATE TABLE nope.t (a INT)"],
    );
    assert!(
        stderr(&out).contains("schema main.nope does not exist"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_failing_statement_names_its_line_and_keeps_the_ones_before() {
    let dir = warehouse();
    let script = "CREATE TABLE main.cdc_tutorial.t (a INT);\n\
                  INSERT INTO main.cdc_tutorial.t VALUES (1);\n\
                  INSERT INTO main.cdc_tutorial.t VALUES ('x');\n";
    std::fs::write(dir.path().join("s.sql"), script).unwrap();
    let out = scdflow(dir.path(), &["sql", "--warehouse", "w", "-f", "s.sql"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("s.sql:3"), "{err}");
    assert!(err.contains("INSERT INTO"), "{err}");
    assert_eq!(
        sql(dir.path(), "SELECT a FROM main.cdc_tutorial.t"),
        "a\n1\n"
    );
    // A syntax error anywhere runs nothing.
    let out = scdflow(
        dir.path(),
        &[
            "sql",
            "--warehouse",
            "w",
            "INSERT INTO main.cdc_tutorial.t VALUES (2); SELEC 1",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        sql(dir.path(), "SELECT a FROM main.cdc_tutorial.t"),
        "a\n1\n"
    );
}

#[test]
fn volume_paths_are_files_inside_the_warehouse() {
    let dir = warehouse();
    let landing = dir.path().join("w/main/cdc_tutorial/landing");
    std::fs::create_dir_all(&landing).unwrap();
    std::fs::write(
        landing.join("users.csv"),
        "id,city\n1,Oaxaca\n2,Tijuana\n1,Puebla\n",
    )
    .unwrap();
    let pipeline = |path: &str| {
        format!(
            "CREATE OR REFRESH STREAMING TABLE landed AS SELECT * FROM STREAM \
             read_files('{path}', format => 'csv', schema => 'id INT, city STRING');\n\
             CREATE OR REFRESH STREAMING TABLE cities;\n\
             CREATE FLOW f AS AUTO CDC INTO cities FROM STREAM(landed) KEYS (id) \
             SEQUENCE BY city STORED AS SCD TYPE 1;\n"
        )
    };
    std::fs::write(
        dir.path().join("v.sql"),
        pipeline("/Volumes/Main/cdc_tutorial/landing/"),
    )
    .unwrap();
    publish(dir.path(), "v.sql", "out");
    let table = sql(
        dir.path(),
        "SELECT * FROM main.cdc_tutorial.cities ORDER BY id",
    );
    assert_eq!(table, "id,city\n1,Puebla\n2,Tijuana\n");
    let out = scdflow(dir.path(), &["run", "v.sql", "--out", "out2"]);
    assert!(
        stderr(&out).contains("give --warehouse DIR"),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        dir.path().join("v.sql"),
        pipeline("/Volumes/main/cdc_tutorial/../../../etc"),
    )
    .unwrap();
    let out = scdflow(
        dir.path(),
        &["run", "v.sql", "--warehouse", "w", "--out", "out3"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("volume name `..`"),
        "{}",
        stderr(&out)
    );
}

/// The published table holds the file table's rows whatever the workers, over a workload of
/// many commits (deletion vectors, merged files): read back through `scdflow sql`.
#[test]
fn a_published_table_equals_the_file_table_for_any_workers() {
    let dir = warehouse();
    let cwd = dir.path();
    succeed(
        cwd,
        &[
            "generate",
            "--out",
            "g",
            "--events",
            "6000",
            "--keys",
            "300",
            "--displacement",
            "200",
            "--commits",
            "40",
            "--seed",
            "11",
        ],
    );
    sql(cwd, "CREATE SCHEMA main.default");
    for (flow, order) in [("scd1", "k"), ("scd2", "k, __START_AT")] {
        let pipeline = format!("g/{flow}.sql");
        succeed(cwd, &["run", &pipeline, "--out", "files"]);
        let file = std::fs::read_to_string(cwd.join(format!("files/{flow}.csv"))).unwrap();
        for workers in ["1", "2"] {
            succeed(
                cwd,
                &[
                    "run",
                    &pipeline,
                    "--warehouse",
                    "w",
                    "-w",
                    workers,
                    "--out",
                    "o",
                ],
            );
            let table = sql(cwd, &format!("SELECT * FROM {flow} ORDER BY {order}"));
            assert_eq!(table, file, "{flow}, {workers} workers");
        }
    }
    let files = std::fs::read_dir(cwd.join("w/main/default/scd2")).unwrap();
    let vectors = (files.map(|e| e.unwrap().file_name()))
        .filter(|n| n.to_string_lossy().starts_with("deletion_vector_"))
        .count();
    assert!(vectors > 0, "updates are deletion vectors");
}

/// A durable pipeline whose `TBLPROPERTIES` change between runs publishes them with its next
/// commit, as `ALTER TABLE ... SET TBLPROPERTIES` would: that version carries the table's new
/// `metaData` (no other does), and the checkpoints follow the new interval from there; a
/// property dropped from the pipeline is dropped from the table.
#[test]
fn a_durable_targets_changed_table_properties_come_with_its_next_commit() {
    let dir = warehouse();
    let cwd = dir.path();
    let generate = "generate --out g --events 3000 --keys 200 --commits 40 --seed 5";
    succeed(cwd, &generate.split(' ').collect::<Vec<_>>());
    sql(cwd, "CREATE SCHEMA main.default");
    succeed(cwd, &["run", "g/scd2.sql", "--out", "files"]);
    let held = cwd.join("held");
    std::fs::create_dir(&held).unwrap();
    let name = |commit: u64| format!("commit_{commit:06}.csv");
    for commit in 21..=40 {
        std::fs::rename(
            cwd.join("g/events").join(name(commit)),
            held.join(name(commit)),
        )
        .unwrap();
    }
    let pipeline = std::fs::read_to_string(cwd.join("g/scd2.sql")).unwrap();
    let run = |properties: Option<&str>, commits: Option<std::ops::RangeInclusive<u64>>| {
        let table = match properties {
            Some(p) => format!("CREATE OR REFRESH STREAMING TABLE scd2\nTBLPROPERTIES ({p});"),
            None => "CREATE OR REFRESH STREAMING TABLE scd2;".to_string(),
        };
        let text = pipeline.replace("CREATE OR REFRESH STREAMING TABLE scd2;", &table);
        std::fs::write(cwd.join("g/p.sql"), text).unwrap();
        for commit in commits.into_iter().flatten() {
            std::fs::rename(
                held.join(name(commit)),
                cwd.join("g/events").join(name(commit)),
            )
            .unwrap();
        }
        let durable = ["--warehouse", "w", "--state", "st", "--out", "o"];
        succeed(cwd, &[&["run", "g/p.sql"][..], &durable].concat());
    };
    let log = cwd.join("w/main/default/scd2/_delta_log");
    let entry = |version: u64| std::fs::read_to_string(log.join(format!("{version:020}.json")));
    let metadata = |version: u64| {
        let entry = entry(version).unwrap();
        let line = entry.lines().find(|l| l.starts_with(r#"{"metaData""#))?;
        let action: serde_json::Value = serde_json::from_str(line).unwrap();
        Some(action["metaData"]["configuration"].clone())
    };
    let checkpoints = || -> Vec<u64> {
        (1..=40)
            .filter(|v| log.join(format!("{v:020}.checkpoint.parquet")).is_file())
            .collect()
    };
    // Commits 1..=20, then those each step brings back.
    run(Some("'delta.checkpointInterval' = '100'"), None);
    assert_eq!(metadata(0).unwrap()["delta.checkpointInterval"], "100");
    run(Some("'delta.checkpointInterval' = '3'"), Some(21..=30));
    let changed = metadata(21).expect("version 21 carries the new properties");
    assert_eq!(changed["delta.checkpointInterval"], "3");
    assert_eq!(changed["delta.enableChangeDataFeed"], "true");
    assert_eq!(changed["scdflow.target"], "scd2");
    assert!((1..=30).filter(|&v| v != 21).all(|v| metadata(v).is_none()));
    assert_eq!(checkpoints(), vec![21, 24, 27, 30]);
    // The same properties again: nothing to publish.
    run(Some("'delta.checkpointInterval' = '3'"), None);
    assert!(entry(31).is_err());
    run(None, Some(31..=40));
    let dropped = metadata(31).expect("version 31 carries the properties left");
    assert!(
        dropped.get("delta.checkpointInterval").is_none(),
        "{dropped}"
    );
    assert!((32..=40).all(|v| metadata(v).is_none()));
    assert_eq!(checkpoints(), vec![21, 24, 27, 30]);
    let file = std::fs::read_to_string(cwd.join("files/scd2.csv")).unwrap();
    assert_eq!(sql(cwd, "SELECT * FROM scd2 ORDER BY k, __START_AT"), file);
}

/// A target's `TBLPROPERTIES` become its published table's: here a checkpoint every 3
/// versions, a vacuum every 4 and no retention, so after the last version only the files it
/// holds are left, and the table (read through its checkpoints) is the file run's. An unknown
/// Delta property is an error naming its line.
#[test]
fn a_targets_table_properties_set_its_checkpoints_and_vacuums() {
    let dir = warehouse();
    let cwd = dir.path();
    let generate = "generate --out g --events 3000 --keys 200 --commits 40 --seed 5";
    succeed(cwd, &generate.split(' ').collect::<Vec<_>>());
    sql(cwd, "CREATE SCHEMA main.default");
    let pipeline = std::fs::read_to_string(cwd.join("g/scd2.sql")).unwrap();
    let with = |properties: &str| {
        let text = pipeline.replace(
            "CREATE OR REFRESH STREAMING TABLE scd2;",
            &format!("CREATE OR REFRESH STREAMING TABLE scd2\nTBLPROPERTIES ({properties});"),
        );
        std::fs::write(cwd.join("g/p.sql"), text).unwrap();
    };
    with(
        "'delta.checkpointInterval' = '3', 'scdflow.vacuumInterval' = '4', \
         'delta.deletedFileRetentionDuration' = 'interval 0 seconds'",
    );
    succeed(cwd, &["run", "g/scd2.sql", "--out", "files"]);
    succeed(cwd, &["run", "g/p.sql", "--warehouse", "w", "--out", "o"]);
    let table = cwd.join("w/main/default/scd2");
    let log = std::fs::read_to_string(table.join("_delta_log/00000000000000000000.json")).unwrap();
    assert!(log.contains(r#""delta.checkpointInterval":"3""#), "{log}");
    for version in 1..=40 {
        let checkpoint = table.join(format!("_delta_log/{version:020}.checkpoint.parquet"));
        assert_eq!(checkpoint.is_file(), version % 3 == 0, "version {version}");
    }
    // Version 40 was vacuumed with no retention: no change-data file and no merged-away file
    // is left, so the data files are the ones the table reads.
    assert!(!table.join("_change_data").read_dir().unwrap().any(|_| true));
    let file = std::fs::read_to_string(cwd.join("files/scd2.csv")).unwrap();
    assert_eq!(sql(cwd, "SELECT * FROM scd2 ORDER BY k, __START_AT"), file);
    with("'delta.noSuchProperty' = 'x'");
    let out = scdflow(cwd, &["run", "g/p.sql", "--warehouse", "w", "--out", "o"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unknown Delta table property `delta.noSuchProperty`"),
        "{err}"
    );
    assert!(err.contains("g/p.sql:17: TBLPROPERTIES"), "{err}");
}

//! A target's change data feed read in its own pipeline, through the binary: a copy rebuilt
//! from an SCD2 target's feed in the same commit equals it — in a plain run, a durable run fed
//! one file per step (and rewound), a published run whose Delta tables `scdflow sql` reads,
//! and a cluster of two processes (gathered and partitioned) — an append flow and a failing
//! expectation read the feed too, and what cannot work is refused saying why.

use crate::durable::{scdflow, stderr, succeed};
use crate::rewind::arrive;
use crate::warehouse::sql;
use std::path::Path;

/// The generated SCD2 pipeline, plus a copy of its target rebuilt from its feed: an SCD1
/// table keyed by the key and `__START_AT` (renamed: the source of a flow may not have
/// `__START_AT`), deletes applied, sequenced by the commit.
const COPY: &str = "
CREATE OR REFRESH STREAMING TABLE feed AS
SELECT k, c0, c1, __START_AT AS started, __END_AT AS ended, _change_type, _commit_version
FROM STREAM(scd2) WITH (readChangeFeed = true)
WHERE _change_type <> 'update_preimage';

CREATE OR REFRESH STREAMING TABLE copy;

CREATE FLOW copy_flow AS AUTO CDC INTO copy
FROM STREAM(feed)
KEYS (k, started)
APPLY AS DELETE WHEN _change_type = 'delete'
SEQUENCE BY _commit_version
COLUMNS * EXCEPT (_change_type, _commit_version)
STORED AS SCD TYPE 1;
";

/// `scdflow generate` of four commits into `g` (seeded `seed`), and `p/NAME.sql`: the SCD2
/// pipeline and `more`, whose input directory gets the commits as [`arrive`] says.
pub(crate) fn workload(cwd: &Path, seed: &str, name: &str, more: &str) {
    crate::change_feeds::generate(cwd, ["3000", "200", "1000", "4", seed]);
    std::fs::create_dir_all(cwd.join("p/events")).unwrap();
    let scd2 = std::fs::read_to_string(cwd.join("g/scd2.sql")).unwrap();
    std::fs::write(cwd.join(format!("p/{name}.sql")), scd2 + more).unwrap();
}

/// Runs `pipeline` over the four commit files: a plain 2-worker run into `plain/`, then, from
/// an empty input directory, a durable run into `o/` (state `st`) per arriving file; `check`
/// sees the outputs of every run. Returns the durable run's arguments.
pub(crate) fn plain_then_per_file<'a>(
    cwd: &Path,
    pipeline: &'a str,
    check: impl Fn(&Path),
) -> [&'a str; 6] {
    for n in 1..=4 {
        arrive(cwd, n);
    }
    succeed(cwd, &["run", pipeline, "--out", "plain", "-w", "2"]);
    check(&cwd.join("plain"));
    std::fs::remove_dir_all(cwd.join("p/events")).unwrap();
    std::fs::create_dir(cwd.join("p/events")).unwrap();
    let run = ["run", pipeline, "--state", "st", "--out", "o"];
    for n in 1..=4 {
        arrive(cwd, n);
        succeed(cwd, &run);
        check(&cwd.join("o"));
    }
    run
}

/// A table file's rows without its header.
fn body(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().skip(1).map(str::to_string).collect()
}

fn assert_copies(out: &Path) {
    let table = body(&out.join("scd2.csv"));
    assert!(table.len() > 100, "{}", table.len());
    assert_eq!(body(&out.join("copy.csv")), table);
}

#[test]
fn a_copy_from_the_feed_equals_the_target_plain_durable_and_rewound() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    workload(cwd, "5", "copy", COPY);
    plain_then_per_file(cwd, "p/copy.sql", assert_copies);
    let metrics = std::fs::read_to_string(cwd.join("plain/metrics.json")).unwrap();
    assert!(
        metrics.contains("\"source_file\": \"the change data feed of `scd2`\""),
        "{metrics}"
    );
    assert_eq!(
        body(&cwd.join("o/copy.csv")),
        body(&cwd.join("plain/copy.csv"))
    );
    let rewind = [
        "rewind",
        "p/copy.sql",
        "--state",
        "st",
        "--out",
        "o",
        "--to",
        "4",
    ];
    let out = succeed(cwd, &rewind);
    assert!(out.contains("state: at commit 4"), "{out}");
    assert_copies(&cwd.join("o"));
}

/// Publishes `pipeline` into warehouse `w` (schema `main.s`, created here) in a durable run
/// per input file, as the four files [`arrive`].
pub(crate) fn publish_four(cwd: &Path, pipeline: &str) {
    std::fs::create_dir(cwd.join("w")).unwrap();
    sql(cwd, "CREATE SCHEMA main.s");
    let run = [
        "run",
        pipeline,
        "--state",
        "st",
        "--out",
        "o",
        "--warehouse",
        "w",
        "--catalog",
        "main",
        "--schema",
        "s",
    ];
    for n in 1..=4 {
        arrive(cwd, n);
        succeed(cwd, &run);
    }
}

#[test]
fn published_copies_from_the_feed_equal_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    workload(cwd, "5", "copy", COPY);
    publish_four(cwd, "p/copy.sql");
    let table = |query: &str| {
        let text = sql(cwd, query);
        text.lines().skip(1).map(str::to_string).collect::<Vec<_>>()
    };
    let copy = table("SELECT * FROM main.s.copy ORDER BY k, started");
    assert!(copy.len() > 100, "{}", copy.len());
    assert_eq!(
        copy,
        table("SELECT * FROM main.s.scd2 ORDER BY k, __START_AT")
    );
    // Each commit is one version of the copy, made in the same commit as the target's.
    let mut versions = table("SELECT _commit_version FROM table_changes('main.s.copy', 1)");
    versions.dedup();
    assert_eq!(versions, ["1", "2", "3", "4"]);
}

#[test]
fn append_flows_and_expectations_read_the_feed() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    workload(cwd, "5", "copy", COPY);
    arrive(cwd, 1);
    arrive(cwd, 2);
    let scd2 = std::fs::read_to_string(cwd.join("g/scd2.sql")).unwrap();
    // An append flow reads the feed directly, keeping the versions that began, as a log.
    let log = "
CREATE OR REFRESH STREAMING TABLE began (CONSTRAINT known EXPECT (k >= 0) ON VIOLATION FAIL UPDATE);
CREATE FLOW began_flow AS INSERT INTO began BY NAME
SELECT k, __START_AT AS started, _commit_version AS at
FROM STREAM(scd2) WITH (readChangeFeed = true) WHERE _change_type = 'insert';
CREATE OR REFRESH STREAMING TABLE versions;
CREATE FLOW v AS AUTO CDC INTO versions FROM STREAM(began) KEYS (k, started) SEQUENCE BY at
STORED AS SCD TYPE 1;
";
    std::fs::write(cwd.join("p/log.sql"), format!("{scd2}{log}")).unwrap();
    succeed(cwd, &["run", "p/log.sql", "--out", "o"]);
    let changes = std::fs::read_to_string(cwd.join("o/scd2.changes.csv")).unwrap();
    let mut began: Vec<(&str, &str)> = (changes.lines())
        .filter(|l| l.contains(",insert,"))
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            (fields[0], fields[3])
        })
        .collect();
    began.sort_unstable();
    began.dedup();
    assert!(began.len() > 100, "{}", began.len());
    assert_eq!(body(&cwd.join("o/versions.csv")).len(), began.len());

    // A FAIL UPDATE expectation on the feed's rows fails the run and writes nothing.
    let failing = log.replace("k >= 0", "k < 0");
    std::fs::write(cwd.join("p/fail.sql"), format!("{scd2}{failing}")).unwrap();
    let out = scdflow(cwd, &["run", "p/fail.sql", "--out", "failed"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the change data feed of `scd2`") && err.contains("known"),
        "{err}"
    );
    assert!(!cwd.join("failed/scd2.csv").exists());
}

/// A run of `scd2` plus `extra` that must be refused; its error.
fn refused(extra: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    workload(cwd, "5", "copy", COPY);
    let scd2 = std::fs::read_to_string(cwd.join("g/scd2.sql")).unwrap();
    std::fs::write(cwd.join("p/bad.sql"), format!("{scd2}{extra}")).unwrap();
    let out = scdflow(cwd, &["check", "p/bad.sql"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn what_a_feed_in_its_own_pipeline_cannot_do_is_refused() {
    let cycle = "
CREATE OR REFRESH STREAMING TABLE echo;
CREATE OR REFRESH STREAMING TABLE f AS SELECT k, c0, c1, _commit_version AS v
FROM STREAM(echo) WITH (readChangeFeed = true);
CREATE FLOW e AS AUTO CDC INTO echo FROM STREAM(f) KEYS (k) SEQUENCE BY v
COLUMNS * EXCEPT (v) STORED AS SCD TYPE 1;
";
    let err = refused(cycle);
    assert!(err.contains("`echo`") && err.contains("(a cycle)"), "{err}");

    let starting = "
CREATE OR REFRESH STREAMING TABLE f AS SELECT * FROM STREAM(scd2)
WITH (readChangeFeed = true, startingVersion = 2);
";
    let err = refused(starting);
    assert!(
        err.contains("bad.sql:") && err.contains("startingVersion"),
        "{err}"
    );

    let once = "
CREATE OR REFRESH STREAMING TABLE f;
CREATE FLOW o AS INSERT INTO ONCE f BY NAME SELECT k, _commit_version AS v
FROM STREAM(scd2) WITH (readChangeFeed = true);
";
    let err = refused(once);
    assert!(err.contains("drop ONCE"), "{err}");

    let snapshot = "
CREATE OR REFRESH STREAMING TABLE f AS SELECT k, c0 FROM STREAM(scd2)
WITH (readChangeFeed = true) WHERE _change_type = 'insert';
CREATE OR REFRESH STREAMING TABLE snap;
CREATE FLOW s AS AUTO CDC INTO snap FROM SNAPSHOT f KEYS (k) STORED AS SCD TYPE 1;
";
    let err = refused(snapshot);
    assert!(err.contains("takes snapshots of `f`"), "{err}");

    let view = "
CREATE MATERIALIZED VIEW mv AS SELECT k, c0 FROM scd2 WHERE c0 IS NOT NULL;
";
    let err = refused(view);
    assert!(err.contains("must select `__START_AT`"), "{err}");

    let plain_stream = "
CREATE OR REFRESH STREAMING TABLE f AS SELECT * FROM STREAM(scd2);
";
    let err = refused(plain_stream);
    assert!(err.contains("WITH (readChangeFeed = true)"), "{err}");
}

#[test]
fn two_processes_copy_from_the_feed_as_one_does() {
    use crate::cluster::{finish, hostfile, member};
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    workload(cwd, "5", "copy", COPY);
    for n in 1..=4 {
        arrive(cwd, n);
    }
    let pipeline = cwd.join("p/copy.sql");
    let pipeline = pipeline.to_str().unwrap();
    let out = |name: &str| cwd.join(name).to_str().unwrap().to_string();
    succeed(cwd, &["run", pipeline, "--out", &out("single")]);
    let single = body(&cwd.join("single/copy.csv"));
    // Gathered: process 0 captures every change of `scd2` and makes all of `copy`'s input.
    let hosts = hostfile(cwd);
    let first = member(pipeline, &out("p0"), "0", &hosts, &["-w", "2"]);
    let second = member(pipeline, &out("p1"), "1", &hosts, &["-w", "2"]);
    finish(first, "process 0");
    finish(second, "process 1");
    assert_copies(&cwd.join("p0"));
    assert_eq!(body(&cwd.join("p0/copy.csv")), single);
    // Partitioned: each process makes the input of the changes it owns.
    let hosts = hostfile(cwd);
    let parted = ["-w", "2", "--partitioned-output"];
    let first = member(pipeline, &out("q0"), "0", &hosts, &parted);
    let second = member(pipeline, &out("q1"), "1", &hosts, &parted);
    finish(first, "process 0");
    finish(second, "process 1");
    let mut copy = body(&cwd.join("q0/copy.part-0.csv"));
    copy.extend(body(&cwd.join("q1/copy.part-1.csv")));
    copy.sort();
    let mut expected = single;
    expected.sort();
    assert_eq!(copy, expected);
}

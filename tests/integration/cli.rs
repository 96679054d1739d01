//! End-to-end runs of the `scdflow` binary: the bundled examples and every bad-input class.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scdflow(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scdflow"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run scdflow")
}

fn dataflows() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("dataflows")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `dataflows/<name>` into a fresh directory and returns it.
fn run_example(name: &str, extra: &[&str]) -> tempfile::TempDir {
    let out = tempfile::tempdir().unwrap();
    let pipeline = dataflows().join(name);
    let mut args = vec![
        "run",
        pipeline.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let result = scdflow(&args, out.path());
    assert!(result.status.success(), "{name}: {}", stderr(&result));
    out
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn t1_example_writes_the_spec_table() {
    let out = run_example("t1_scd1.sql", &[]);
    assert_eq!(
        read(out.path(), "users_current.csv"),
        "userId,name,city\n124,Raul,Oaxaca\n125,Mercedes,Guadalajara\n126,Lily,Cancun\n"
    );
}

#[test]
fn t2_example_writes_the_spec_table() {
    let out = run_example("t2_scd1_truncate.sql", &[]);
    assert_eq!(
        read(out.path(), "users_current.csv"),
        "userId,name,city\n125,Mercedes,Guadalajara\n"
    );
}

#[test]
fn t3_feed_example_keeps_the_versions_from_the_historys_feed() {
    let out = run_example("t3_scd2_feed.sql", &["--workers", "2"]);
    assert_eq!(
        read(out.path(), "versions.csv"),
        "userId,name,city,valid_from,valid_to,changed_in\n\
         123,Isabel,Monterrey,1,5,2\n\
         123,Isabel,Chihuahua,5,6,2\n\
         124,Raul,Oaxaca,1,,1\n\
         125,Mercedes,Tijuana,2,5,2\n\
         125,Mercedes,Mexicali,5,6,2\n\
         125,Mercedes,Guadalajara,6,,1\n\
         126,Lily,Cancun,2,,1\n"
    );
}

#[test]
fn t3_example_writes_the_spec_table() {
    let out = run_example("t3_scd2.sql", &[]);
    assert_eq!(
        read(out.path(), "users_history.csv"),
        "userId,name,city,__START_AT,__END_AT\n\
         123,Isabel,Monterrey,1,5\n\
         123,Isabel,Chihuahua,5,6\n\
         124,Raul,Oaxaca,1,\n\
         125,Mercedes,Tijuana,2,5\n\
         125,Mercedes,Mexicali,5,6\n\
         125,Mercedes,Guadalajara,6,\n\
         126,Lily,Cancun,2,\n"
    );
}

#[test]
fn t8_example_writes_the_spec_table() {
    let out = run_example("t8_bitemporal.sql", &[]);
    assert_eq!(
        read(out.path(), "company_bitemporal.csv"),
        "id,value,__START_AT,__END_AT,__SYSTEM_START_AT,__SYSTEM_END_AT\n\
         A,XFv1,2025-07-18T10:01:00,,2025-07-18T10:05:00,2025-07-18T12:20:00\n\
         A,XFv1,2025-07-18T10:01:00,2025-07-18T12:15:43,2025-07-18T12:20:00,2025-07-18T12:25:00\n\
         A,XFv1,2025-07-18T10:01:00,2025-07-18T12:05:00,2025-07-18T12:25:00,\n\
         A,XFv3,2025-07-18T12:05:00,2025-07-18T12:15:43,2025-07-18T12:25:00,\n\
         A,XFv2,2025-07-18T12:15:43,,2025-07-18T12:20:00,2025-07-18T12:30:00\n\
         A,XFv2,2025-07-18T12:15:43,2025-07-18T12:30:00,2025-07-18T12:30:00,\n"
    );
}

#[test]
fn t4_example_writes_the_spec_table() {
    let out = run_example("t4_scd2_track_history.sql", &[]);
    assert_eq!(
        read(out.path(), "users_history.csv"),
        "userId,name,city,__START_AT,__END_AT\n\
         123,Isabel,Chihuahua,1,6\n\
         124,Raul,Oaxaca,1,\n\
         125,Mercedes,Guadalajara,2,\n\
         126,Lily,Cancun,2,\n"
    );
}

/// The change feed without its `_commit_timestamp` column (the last one).
fn without_timestamps(feed: &str) -> Vec<String> {
    feed.lines()
        .map(|l| l.rsplit_once(',').map_or(l, |(head, _)| head).to_string())
        .collect()
}

#[test]
fn workers_do_not_change_outputs() {
    for example in ["t3_scd2.sql", "customers_multi_file.sql"] {
        let one = run_example(example, &["--workers", "1"]);
        let four = run_example(example, &["--workers", "4"]);
        for entry in std::fs::read_dir(one.path()).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let (a, b) = (read(one.path(), &name), read(four.path(), &name));
            if name.ends_with(".changes.csv") {
                assert_eq!(
                    without_timestamps(&a),
                    without_timestamps(&b),
                    "{example}: {name}"
                );
            } else if name != "metrics.json" {
                assert_eq!(a, b, "{example}: {name}");
            }
        }
    }
}

#[test]
fn change_feed_and_metrics_of_the_late_batch() {
    let out = run_example("t3_scd2.sql", &[]);
    let feed = without_timestamps(&read(out.path(), "users_history.changes.csv"));
    let commit2: Vec<&str> = feed
        .iter()
        .map(String::as_str)
        .filter(|l| l.ends_with(",2"))
        .collect();
    assert_eq!(
        commit2,
        vec![
            "123,Isabel,Monterrey,1,6,update_preimage,2",
            "123,Isabel,Monterrey,1,5,update_postimage,2",
            "123,Isabel,Chihuahua,5,6,insert,2",
            "125,Mercedes,Tijuana,2,6,update_preimage,2",
            "125,Mercedes,Tijuana,2,5,update_postimage,2",
            "125,Mercedes,Mexicali,5,6,insert,2",
        ]
    );
    let metrics: serde_json::Value =
        serde_json::from_str(&read(out.path(), "metrics.json")).unwrap();
    let commits = &metrics["flows"][0]["commits"];
    assert_eq!(commits[1]["commit_version"], 2);
    assert_eq!(commits[1]["num_input_rows"], 2);
    assert_eq!(commits[1]["num_upserted_rows"], 4);
    assert_eq!(commits[1]["num_deleted_rows"], 0);
}

#[test]
fn jsonl_output() {
    let out = run_example("t3_scd2.sql", &["--format", "jsonl"]);
    let text = read(out.path(), "users_history.jsonl");
    assert_eq!(
        text.lines().next().unwrap(),
        r#"{"userId":123,"name":"Isabel","city":"Monterrey","__START_AT":1,"__END_AT":5}"#
    );
    assert_eq!(text.lines().count(), 7);
}

/// A scratch pipeline directory with `p.sql` and data files.
fn scratch(sql: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.sql"), sql).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

const KV_SQL: &str = "CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('data.csv', format => 'csv', \
                      schema => 'k INT, v STRING, seq INT');\n\
                      CREATE STREAMING TABLE t;\n\
                      CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (k) SEQUENCE BY seq;\n";

/// Runs `p.sql` in `dir` expecting failure; returns the one-line message.
fn fails(dir: &Path) -> String {
    let out = scdflow(&["run", "p.sql", "--out", "out"], dir);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!dir.join("out").exists(), "a failed run must write nothing");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err.trim_end().to_string()
}

#[test]
fn invalid_sql_names_file_and_line() {
    let dir = scratch("CREATE STREAMING TABLE t;\nCREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (k)\n  SEQUENCE BY;\n", &[]);
    let err = fails(dir.path());
    assert!(err.starts_with("error: p.sql:3: "), "{err}");
}

#[test]
fn unknown_column_suggests_the_closest() {
    let sql = KV_SQL.replace("KEYS (k)", "KEYS (kk)");
    let dir = scratch(&sql, &[("data.csv", "k,v,seq\n1,a,1\n")]);
    let err = fails(dir.path());
    assert!(err.starts_with("error: p.sql:3: KEYS"), "{err}");
    assert!(
        err.contains("`kk`") && err.contains("did you mean `k`"),
        "{err}"
    );
}

#[test]
fn null_sequence_fails_the_update() {
    let dir = scratch(KV_SQL, &[("data.csv", "k,v,seq\n1,a,1\n2,b,\n")]);
    assert_eq!(
        fails(dir.path()),
        "error: data.csv:3: flow `f`: SEQUENCE BY: the sequence value is NULL"
    );
}

#[test]
fn null_key_fails_the_update() {
    let dir = scratch(KV_SQL, &[("data.csv", "k,v,seq\n,a,1\n")]);
    assert_eq!(
        fails(dir.path()),
        "error: data.csv:2: flow `f`: KEYS (k): the key value is NULL"
    );
}

#[test]
fn type_mismatch_names_the_column() {
    let dir = scratch(KV_SQL, &[("data.csv", "k,v,seq\n1,a,abc\n")]);
    assert_eq!(
        fails(dir.path()),
        "error: data.csv:2: column `seq`: `abc` is not a valid INT"
    );
}

#[test]
fn malformed_json_names_the_line() {
    let sql = KV_SQL.replace(
        "'data.csv', format => 'csv'",
        "'data.jsonl', format => 'json'",
    );
    let dir = scratch(
        &sql,
        &[(
            "data.jsonl",
            "{\"k\": 1, \"v\": \"a\", \"seq\": 1}\n{\"k\": 2,\n",
        )],
    );
    let err = fails(dir.path());
    assert!(err.starts_with("error: data.jsonl:2: "), "{err}");
}

#[test]
fn unreadable_input_names_the_file() {
    let dir = scratch(KV_SQL, &[]);
    let err = fails(dir.path());
    assert!(
        err.starts_with("error: ") && err.contains("data.csv"),
        "{err}"
    );
}

#[test]
fn missing_pipeline_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = fails(dir.path());
    assert!(err.contains("p.sql"), "{err}");
}

#[test]
fn quarantine_sets_invalid_rows_aside() {
    let dir = scratch(
        KV_SQL,
        &[("data.csv", "k,v,seq\n1,a,1\n2,b,\n3,c,x\n4,d,4\n")],
    );
    let out = scdflow(
        &["run", "p.sql", "--out", "out", "--on-invalid", "quarantine"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        read(&dir.path().join("out"), "t.csv"),
        "k,v,seq\n1,a,1\n4,d,4\n"
    );
    let quarantine = read(&dir.path().join("out/_quarantine"), "f.jsonl");
    assert_eq!(quarantine.lines().count(), 2, "{quarantine}");
    assert!(
        quarantine.contains("the sequence value is NULL") && quarantine.contains("not a valid INT")
    );
    let metrics: serde_json::Value =
        serde_json::from_str(&read(&dir.path().join("out"), "metrics.json")).unwrap();
    assert_eq!(metrics["flows"][0]["commits"][0]["num_quarantined_rows"], 2);
}

#[test]
fn check_prints_the_plan() {
    let out = scdflow(
        &["check", dataflows().join("t3_scd2.sql").to_str().unwrap()],
        &dataflows(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let plan = String::from_utf8(out.stdout).unwrap();
    assert!(
        plan.contains("users_history") && plan.contains("__START_AT") && plan.contains("INT"),
        "{plan}"
    );
}

#[test]
fn malformed_csv_names_the_line() {
    let dir = scratch(KV_SQL, &[("data.csv", "k,v,seq\n1,a,1\n2,\"b,2\n3,c,3\n")]);
    assert_eq!(
        fails(dir.path()),
        "error: data.csv:3: malformed CSV: a quoted field opened here is not closed before the end of the file"
    );
}

#[test]
fn a_short_csv_row_names_the_line() {
    let dir = scratch(KV_SQL, &[("data.csv", "k,v,seq\n1,a\n")]);
    assert_eq!(
        fails(dir.path()),
        "error: data.csv:2: expected 3 fields, found 2"
    );
}

#[test]
fn t5_t6_t7_examples_write_the_spec_tables() {
    let out = run_example("t5_snapshot_scd2.sql", &[]);
    assert_eq!(
        read(out.path(), "target.csv"),
        "userId,city,__START_AT,__END_AT\n1,Oaxaca,0,1\n2,Monterrey,0,1\n2,Carmel,1,\n3,Tijuana,0,1\n\
         3,Los Angeles,1,\n4,Death Valley,1,\n6,Kings Canyon,1,\n"
    );
    let out = run_example("t6_snapshot_files.sql", &[]);
    assert_eq!(
        read(out.path(), "target.csv"),
        "userId,city,__START_AT,__END_AT\n1,Oaxaca,1,2\n2,Monterrey,1,2\n2,Carmel,2,\n3,Tijuana,1,2\n\
         3,Los Angeles,2,\n4,Death Valley,2,\n"
    );
    let out = run_example("t7_replace_using.sql", &[]);
    assert_eq!(
        read(out.path(), "region_events.csv"),
        "region_id,device_type,event_type,seq\n1,Android,conversion,2\n1,desktop,click,2\n1,iOS,click,2\n\
         2,desktop,click,1\n2,iOS,click,1\n3,desktop,click,2\n"
    );
    let metrics: serde_json::Value =
        serde_json::from_str(&read(out.path(), "metrics.json")).unwrap();
    let expectation = &metrics["flows"][0]["commits"][1]["expectations"][0];
    assert_eq!(
        (
            &expectation["name"],
            &expectation["passed"],
            &expectation["failed"]
        ),
        (&"known_event".into(), &5.into(), &1.into())
    );
}

#[test]
fn a_fail_update_expectation_fails_the_run() {
    let sql = "CREATE STREAMING TABLE src (CONSTRAINT positive EXPECT (seq > 0) ON VIOLATION FAIL UPDATE)\n\
               AS SELECT * FROM STREAM read_files('data.csv', format => 'csv', schema => 'k INT, v STRING, seq INT');\n\
               CREATE STREAMING TABLE t;\n\
               CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (k) SEQUENCE BY seq;\n";
    let dir = scratch(sql, &[("data.csv", "k,v,seq\n1,a,1\n2,b,-4\n")]);
    assert_eq!(
        fails(dir.path()),
        "error: data.csv:3: expectation `positive` of `src` failed (ON VIOLATION FAIL UPDATE) on {\"k\":2,\"v\":\"b\",\"seq\":-4}"
    );
}

#[test]
fn warn_expectations_keep_rows_and_count_them() {
    let sql = "CREATE STREAMING TABLE src (CONSTRAINT has_v EXPECT (v IS NOT NULL))\n\
               AS SELECT * FROM STREAM read_files('data.csv', format => 'csv', schema => 'k INT, v STRING, seq INT');\n\
               CREATE STREAMING TABLE t;\n\
               CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (k) SEQUENCE BY seq;\n";
    let dir = scratch(sql, &[("data.csv", "k,v,seq\n1,a,1\n2,,2\n")]);
    let out = scdflow(&["run", "p.sql", "--out", "out"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        read(&dir.path().join("out"), "t.csv"),
        "k,v,seq\n1,a,1\n2,,2\n"
    );
    let metrics: serde_json::Value =
        serde_json::from_str(&read(&dir.path().join("out"), "metrics.json")).unwrap();
    let counts = &metrics["tables"][0]["commits"][0]["expectations"][0];
    assert_eq!(
        (&counts["passed"], &counts["failed"]),
        (&1.into(), &1.into())
    );
}

#[test]
fn a_duplicate_key_in_a_snapshot_fails_the_update() {
    let sql = "CREATE STREAMING TABLE t;\n\
               CREATE FLOW f AS AUTO CDC INTO t FROM SNAPSHOT read_files('snaps', format => 'csv',\n\
                 schema => 'userId INT, city STRING', version => 'snapshot_([0-9]+)[.]csv') KEYS (userId);\n";
    let dir = scratch(sql, &[]);
    std::fs::create_dir_all(dir.path().join("snaps")).unwrap();
    std::fs::write(
        dir.path().join("snaps/snapshot_1.csv"),
        "userId,city\n1,a\n1,b\n",
    )
    .unwrap();
    assert_eq!(
        fails(dir.path()),
        "error: snaps/snapshot_1.csv:3: flow `f`: KEYS (userId): duplicate key in snapshot version 1 (first at line 2)"
    );
}

/// Issue 13, item 6: a run that fails while moving its files into an existing `--out` (here the
/// quarantine folder is on another file system, so its file cannot be renamed in, after the
/// table and change feed were) leaves every file of `--out` as it was.
#[test]
fn a_run_that_fails_moving_its_files_in_changes_none() {
    use std::os::unix::fs::MetadataExt;
    let elsewhere = match tempfile::tempdir_in("/dev/shm") {
        Ok(dir) => dir,
        Err(e) => panic!("this test needs /dev/shm (a tmpfs) to be writable: {e}"),
    };
    let dir = scratch(KV_SQL, &[("data.csv", "k,v,seq\n1,a,1\n2,b,\n")]);
    let device = |p: &Path| std::fs::metadata(p).unwrap().dev();
    assert_ne!(
        device(elsewhere.path()),
        device(dir.path()),
        "/dev/shm must be another file system than the temporary directory"
    );
    let quarantine = ["--on-invalid", "quarantine"];
    let first = scdflow(
        &[&["run", "p.sql", "--out", "out"][..], &quarantine].concat(),
        dir.path(),
    );
    assert!(first.status.success(), "{}", stderr(&first));
    let out = dir.path().join("out");
    // The quarantine folder now lives on the other file system.
    let moved = elsewhere.path().join("q");
    std::fs::create_dir(&moved).unwrap();
    std::fs::copy(out.join("_quarantine/f.jsonl"), moved.join("f.jsonl")).unwrap();
    std::fs::remove_dir_all(out.join("_quarantine")).unwrap();
    std::os::unix::fs::symlink(&moved, out.join("_quarantine")).unwrap();
    let before = crate::durable::snapshot(&out);
    std::fs::write(dir.path().join("data.csv"), "k,v,seq\n1,z,9\n3,c,\n").unwrap();
    let second = scdflow(
        &[&["run", "p.sql", "--out", "out"][..], &quarantine].concat(),
        dir.path(),
    );
    assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
    let err = stderr(&second);
    assert!(err.contains("cannot move f.jsonl there"), "{err}");
    assert_eq!(
        crate::durable::snapshot(&out),
        before,
        "the failed run changed --out"
    );
    let staged = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().contains("scdflow-staging")
        })
        .count();
    assert_eq!(staged, 0, "the staging directory is removed");
}

/// Issue 13, item 15: under `--on-invalid quarantine` a broken JSON line, bytes that are not
/// UTF-8 (JSON or CSV) and a column given twice are set aside like any bad record; the good
/// records around them count.
#[test]
fn quarantine_sets_aside_broken_lines_and_bytes() {
    let sql = KV_SQL.replace(
        "'data.csv', format => 'csv'",
        "'data.jsonl', format => 'json'",
    );
    let json: &[u8] = b"{\"k\":1,\"v\":\"a\",\"seq\":1}\n{\"k\":2,\n{\"k\":3,\"v\":\"\xff\",\"seq\":3}\n\
                        {\"k\":4,\"v\":\"d\",\"seq\":4,\"SEQ\":5}\n{\"k\":5,\"v\":\"e\",\"seq\":5}\n";
    let dir = scratch(&sql, &[]);
    std::fs::write(dir.path().join("data.jsonl"), json).unwrap();
    let args = ["run", "p.sql", "--out", "out", "--on-invalid", "quarantine"];
    let out = scdflow(&args, dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let out_dir = dir.path().join("out");
    assert_eq!(read(&out_dir, "t.csv"), "k,v,seq\n1,a,1\n5,e,5\n");
    let set_aside: Vec<serde_json::Value> = read(&out_dir.join("_quarantine"), "f.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lines: Vec<u64> = set_aside
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [2, 3, 4]);
    assert!(set_aside[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("not a JSON object"));
    assert_eq!(set_aside[1]["reason"], "invalid UTF-8 at column 13");
    assert_eq!(set_aside[2]["column"], "seq");
    let csv = scratch(KV_SQL, &[]);
    std::fs::write(
        csv.path().join("data.csv"),
        b"k,v,seq\n1,a,1\n2,\"b\n\xc3\",2\n3,c,3\n".as_slice(),
    )
    .unwrap();
    let out = scdflow(&args, csv.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let out_dir = csv.path().join("out");
    assert_eq!(read(&out_dir, "t.csv"), "k,v,seq\n1,a,1\n3,c,3\n");
    let set_aside = read(&out_dir.join("_quarantine"), "f.jsonl");
    assert!(
        set_aside.contains("\"line\":3") && set_aside.contains("invalid UTF-8 at line 4, column 1"),
        "{set_aside}"
    );
    // Without quarantine the first such record fails the run, naming file and line.
    let out = scdflow(&["run", "p.sql", "--out", "out2"], csv.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error: data.csv:3: "),
        "{}",
        stderr(&out)
    );
}

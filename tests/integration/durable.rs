//! Durable runs (`scdflow run PIPELINE --state DIR`) through the binary: the spec's multi-run
//! examples (T5, T11) one run per batch, split runs against one uninterrupted run, refused
//! pipeline changes, damaged state files, and tombstone retention across runs.
//!
//! Every test works in its own temporary directory, runs the binary there (relative paths, so
//! `metrics.json` names the same files as a reference run in another directory) and compares
//! files: targets byte for byte or as exact tables, change feeds by commit without
//! `_commit_timestamp`.

use crate::golden::{seed_case, seed_cases};
use crate::golden_snapshot::snapshot_sql;
use crate::util::metrics_without_latency;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the binary in `cwd`.
pub fn scdflow(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scdflow"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run scdflow")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs the binary in `cwd`, asserts success and returns its stdout.
pub fn succeed(cwd: &Path, args: &[&str]) -> String {
    let out = scdflow(cwd, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// `scdflow run PIPELINE --state state --out out EXTRA...` in `cwd`; its stdout.
fn durable(cwd: &Path, pipeline: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", pipeline, "--state", "state", "--out", "out"];
    args.extend_from_slice(extra);
    succeed(cwd, &args)
}

/// Asserts a refused run: exit code 2, no panic; returns stderr.
fn refused(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Every file under `dir` (recursively) with its bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).unwrap();
        }
    }
}

pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A CSV file's records (header included).
fn csv_records(path: &Path) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

/// A CSV table: its header and its rows, sorted.
type Table = (Vec<String>, Vec<Vec<String>>);

fn table(path: &Path) -> Table {
    let mut records = csv_records(path);
    assert!(!records.is_empty(), "{}: no header", path.display());
    let header = records.remove(0);
    records.sort();
    (header, records)
}

/// A JSON value as a CSV field (NULL is empty).
fn field(v: &Json) -> String {
    match v {
        Json::Null => String::new(),
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A seed vector's table (`{"columns": [...], "rows": [...]}`) as a CSV table.
fn expected_table(step: &Json) -> Table {
    let columns: Vec<String> = step["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    let mut rows: Vec<Vec<String>> = step["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| columns.iter().map(|c| field(&r[c.as_str()])).collect())
        .collect();
    rows.sort();
    (columns, rows)
}

/// A change feed (CSV or JSON lines, by extension) by commit version: each commit's rows without
/// `_commit_timestamp`, sorted. Asserts that a CSV feed has its header once and that versions
/// never go back in file order (each commit's rows are contiguous).
pub fn feed(path: &Path) -> BTreeMap<u64, Vec<String>> {
    let mut rows: Vec<(u64, String)> = Vec::new();
    if path.extension().is_some_and(|e| e == "jsonl") {
        let text = String::from_utf8(read(path)).unwrap();
        for line in text.lines() {
            let mut obj: serde_json::Map<String, Json> = serde_json::from_str(line).unwrap();
            assert!(obj.remove("_commit_timestamp").is_some(), "{line}");
            let version = obj["_commit_version"].as_u64().unwrap();
            rows.push((version, Json::Object(obj).to_string()));
        }
    } else {
        let mut records = csv_records(path);
        let header = records.remove(0);
        let at = |name: &str| header.iter().position(|c| c == name).unwrap();
        let (version, timestamp) = (at("_commit_version"), at("_commit_timestamp"));
        for r in records {
            assert_ne!(r, header, "{}: a second header", path.display());
            let v: u64 = r[version].parse().unwrap_or_else(|e| panic!("{r:?}: {e}"));
            let mut r = r;
            r.remove(timestamp);
            rows.push((v, r.join(",")));
        }
    }
    let mut by_commit: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut last = 0;
    for (v, row) in rows {
        assert!(
            v >= last,
            "{}: commit {v} after commit {last}",
            path.display()
        );
        last = v;
        by_commit.entry(v).or_default().push(row);
    }
    for rows in by_commit.values_mut() {
        rows.sort();
    }
    by_commit
}

pub(crate) fn versions(feed: &BTreeMap<u64, Vec<String>>) -> Vec<u64> {
    feed.keys().copied().collect()
}

/// `OUT/metrics.json`'s commits of flow `i`.
fn metric_commits(out: &Path, i: usize) -> Vec<Json> {
    let m: Json = serde_json::from_slice(&read(&out.join("metrics.json"))).unwrap();
    m["flows"][i]["commits"].as_array().unwrap().clone()
}

fn seed(name: &str) -> Json {
    seed_cases()
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no seed vector {name}"))
}

// ---------------------------------------------------------------------------------------------
// T5: one snapshot per run.

/// `userId,city` CSV text of a seed snapshot batch.
fn snapshot_csv(batch: &Json) -> String {
    let mut text = "userId,city\n".to_string();
    for r in batch["rows"].as_array().unwrap() {
        text.push_str(&format!("{},{}\n", r["userId"], field(&r["city"])));
    }
    text
}

/// A seed table with `__START_AT`/`__END_AT` shifted by one: periodic snapshots are versioned
/// by commit (1, 2), the seed's explicit versions are 0 and 1.
fn shifted(mut step: Json) -> Json {
    for row in step["rows"].as_array_mut().unwrap() {
        for c in ["__START_AT", "__END_AT"] {
            if let Some(v) = row.get(c).and_then(Json::as_i64) {
                row[c] = Json::from(v + 1);
            }
        }
    }
    step
}

/// T5 across runs: run 1 sees only the version-0 snapshot, run 2 the version-1 snapshot too, run
/// 3 nothing new. `periodic`: one CSV file read by a streaming table, overwritten between runs.
fn t5_across_runs(name: &str, scd: u8, periodic: bool) {
    let v = seed(name);
    let batches = v["batches"].as_array().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let snapshot_file = |i: usize| -> PathBuf {
        if periodic {
            d.join("exports/snapshot.csv")
        } else {
            d.join(format!("snaps/snapshot_{}.csv", batches[i]["version"]))
        }
    };
    let sql = if periodic {
        format!(
            "CREATE STREAMING TABLE snapshot_table AS SELECT * FROM STREAM read_files(\
               'exports/snapshot.csv', format => 'csv', header => true, \
               schema => 'userId INT, city STRING');\n\
             CREATE STREAMING TABLE target;\n\
             CREATE FLOW target_flow AS AUTO CDC INTO target \
               FROM SNAPSHOT (SELECT userId, city FROM snapshot_table)\n\
             KEYS (userId) STORED AS SCD TYPE {scd};\n"
        )
    } else {
        snapshot_sql(scd)
    };
    std::fs::create_dir_all(d.join("exports")).unwrap();
    std::fs::create_dir_all(d.join("snaps")).unwrap();
    std::fs::write(d.join("pipeline.sql"), sql).unwrap();
    let expect = |step: &Json| {
        expected_table(&if periodic {
            shifted(step.clone())
        } else {
            step.clone()
        })
    };
    let out = d.join("out");
    let (target, changes) = (out.join("target.csv"), out.join("target.changes.csv"));

    std::fs::write(snapshot_file(0), snapshot_csv(&batches[0])).unwrap();
    let stdout = durable(d, "pipeline.sql", &[]);
    assert!(stdout.contains("commit 1 is new"), "{stdout}");
    assert_eq!(
        table(&target),
        expect(&v["expected_intermediate"][0]),
        "{name} after run 1"
    );
    let feed1 = read(&changes);
    assert_eq!(versions(&feed(&changes)), [1], "{name}");

    std::fs::write(snapshot_file(1), snapshot_csv(&batches[1])).unwrap();
    let stdout = durable(d, "pipeline.sql", &[]);
    assert!(stdout.contains("commit 2 is new"), "{stdout}");
    assert_eq!(
        table(&target),
        expect(&v["expected_final"]),
        "{name} after run 2"
    );
    let feed2 = read(&changes);
    assert!(feed2.starts_with(&feed1), "{name}: run 2 rewrote commit 1");
    assert_eq!(versions(&feed(&changes)), [1, 2], "{name}");

    // T5-idle; a periodic snapshot rewritten with the same bytes is not a new snapshot.
    if periodic {
        std::fs::write(snapshot_file(1), snapshot_csv(&batches[1])).unwrap();
    }
    let (target2, out2) = (read(&target), snapshot(&out));
    let stdout = durable(d, "pipeline.sql", &[]);
    assert!(stdout.contains("no new input"), "{stdout}");
    assert_eq!(read(&target), target2, "{name}: run 3 changed the table");
    assert_eq!(read(&changes), feed2, "{name}: run 3 changed the feed");
    assert_eq!(snapshot(&out), out2, "{name}: run 3 changed an output");
    let commits: Vec<u64> = metric_commits(&out, 0)
        .iter()
        .map(|c| c["commit_version"].as_u64().unwrap())
        .collect();
    assert_eq!(commits, [1, 2], "{name}");
}

#[test]
fn t5_scd2_one_snapshot_file_per_run() {
    t5_across_runs("T5_snapshot_scd2", 2, false);
}

#[test]
fn t5_scd1_one_snapshot_file_per_run() {
    t5_across_runs("T5_snapshot_scd1", 1, false);
}

#[test]
fn t5_scd2_periodic_snapshot_changed_between_runs() {
    t5_across_runs("T5_snapshot_scd2", 2, true);
}

#[test]
fn t5_scd1_periodic_snapshot_changed_between_runs() {
    t5_across_runs("T5_snapshot_scd1", 1, true);
}

// ---------------------------------------------------------------------------------------------
// T11: one batch per run.

/// T11 across three runs; `appended`: the batches are lines appended to one CSV file (header
/// once), otherwise one JSON-lines file per batch.
fn t11_across_runs(appended: bool) {
    let v = seed("T11_three_runs_scd1");
    let case = seed_case(&v);
    let columns: Vec<String> = v["source_schema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("data")).unwrap();
    let source = if appended {
        format!(
            "read_files('data/events.csv', format => 'csv', header => true, schema => '{}')",
            case.schema
        )
    } else {
        format!(
            "read_files('data', format => 'json', schema => '{}')",
            case.schema
        )
    };
    let sql = format!(
        "CREATE STREAMING TABLE {} AS SELECT * FROM STREAM {source};\n\
         CREATE STREAMING TABLE {};\n{}\n",
        case.source, case.target, case.flow
    );
    std::fs::write(d.join("pipeline.sql"), sql).unwrap();
    let events = d.join("data/events.csv");
    if appended {
        std::fs::write(&events, format!("{}\n", columns.join(","))).unwrap();
    }
    let add = |i: usize, batch: &[Json]| {
        if appended {
            let lines: String = batch
                .iter()
                .map(|r| {
                    let fields: Vec<String> = columns.iter().map(|c| field(&r[c])).collect();
                    format!("{}\n", fields.join(","))
                })
                .collect();
            append(&events, &lines);
        } else {
            let text: String = batch.iter().map(|r| format!("{r}\n")).collect();
            std::fs::write(d.join(format!("data/batch_{:03}.jsonl", i + 1)), text).unwrap();
        }
    };
    let out = d.join("out");
    let target = out.join(format!("{}.csv", case.target));
    let changes = out.join(format!("{}.changes.csv", case.target));
    let mut previous_feed = Vec::new();
    for (i, batch) in case.batches.iter().enumerate() {
        add(i, batch);
        let stdout = durable(d, "pipeline.sql", &[]);
        let run = i + 1;
        assert!(stdout.contains(&format!("commit {run} is new")), "{stdout}");
        let expected = v["expected_intermediate"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["after_batch"] == run)
            .unwrap_or(&v["expected_final"]);
        assert_eq!(table(&target), expected_table(expected), "after run {run}");
        let bytes = read(&changes);
        assert!(
            bytes.starts_with(&previous_feed),
            "run {run} rewrote earlier commits"
        );
        previous_feed = bytes;
    }
    // Run 3 re-delivered a stale event alone: no change rows.
    let by_commit = feed(&changes);
    let rows = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut expected = BTreeMap::new();
    expected.insert(1, rows(&["1,alice,1,insert,1", "2,bob,1,insert,1"]));
    expected.insert(
        2,
        rows(&[
            "1,alice,1,update_preimage,2",
            "1,alicia,2,update_postimage,2",
            "2,bob,1,delete,2",
            "3,carol,1,insert,2",
        ]),
    );
    assert_eq!(by_commit, expected);
    let commits = metric_commits(&out, 0);
    let numbers: Vec<u64> = commits
        .iter()
        .map(|c| c["commit_version"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 3]);
    assert_eq!(commits[2]["num_stale_events"], 1, "{commits:?}");
    assert_eq!(commits[2]["num_input_rows"], 1, "{commits:?}");

    let stdout = durable(d, "pipeline.sql", &[]);
    assert!(stdout.contains("no new input"), "{stdout}");
    assert_eq!(read(&changes), previous_feed);
    if appended {
        // Only complete lines are new input: half a line waits for the rest.
        append(&events, "3,dave,5,UPS");
        let stdout = durable(d, "pipeline.sql", &[]);
        assert!(stdout.contains("no new input"), "{stdout}");
        assert_eq!(read(&changes), previous_feed);
        append(&events, "ERT\n");
        let stdout = durable(d, "pipeline.sql", &[]);
        assert!(stdout.contains("commit 4 is new"), "{stdout}");
        let (_, rows) = table(&target);
        assert!(
            rows.contains(&vec!["3".into(), "dave".into(), "5".into()]),
            "{rows:?}"
        );
        assert_eq!(
            feed(&changes)[&4],
            ["3,carol,1,update_preimage,4", "3,dave,5,update_postimage,4"]
        );
    }
}

pub(crate) fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn t11_one_file_per_run() {
    t11_across_runs(false);
}

#[test]
fn t11_lines_appended_between_runs() {
    t11_across_runs(true);
}

// ---------------------------------------------------------------------------------------------
// Split runs vs one run.

/// `scdflow generate` into `dir`: 12 commit files of 200 events over 50 keys with deletes,
/// truncates, partial updates, reordering and stragglers several files late.
fn small_workload(dir: &Path) {
    let args = "generate --out . --events 2400 --keys 50 --commits 12 --deletes 0.15 \
                --truncates 0.03 --partial 0.2 --displacement 100 --stragglers 0.05 \
                --straggler-distance 700 --seed 11";
    succeed(dir, &args.split_whitespace().collect::<Vec<_>>());
}

#[test]
fn split_runs_with_changing_workers_equal_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("all");
    let split = dir.path().join("split");
    std::fs::create_dir_all(&all).unwrap();
    small_workload(&all);
    std::fs::create_dir_all(split.join("events")).unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(all.join("events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 12);
    // (pipeline, output format): both feeds' forms of append.
    let pipelines = [("scd1", "csv"), ("scd2", "jsonl")];
    for (p, format) in pipelines {
        std::fs::copy(all.join(format!("{p}.sql")), split.join(format!("{p}.sql"))).unwrap();
        let sql = format!("{p}.sql");
        let out = format!("out_{p}");
        succeed(&all, &["run", &sql, "--out", &out, "--format", format]);
    }
    let mut added = 0;
    for (n, workers) in [(1, "1"), (5, "2"), (2, "3"), (4, "1")] {
        for f in &files[added..added + n] {
            std::fs::copy(f, split.join("events").join(f.file_name().unwrap())).unwrap();
        }
        added += n;
        for (p, format) in pipelines {
            let (sql, state, out) = (format!("{p}.sql"), format!("state_{p}"), format!("out_{p}"));
            let args = [
                "run", &sql, "--state", &state, "--out", &out, "--format", format,
            ];
            let stdout = succeed(&split, &[&args[..], &["-w", workers][..]].concat());
            assert!(
                stdout.contains(&format!("state: {added} commits")),
                "{stdout}"
            );
        }
    }
    for (p, format) in pipelines {
        let (a, s) = (all.join(format!("out_{p}")), split.join(format!("out_{p}")));
        let target = format!("{p}.{format}");
        assert!(
            read(&a.join(&target)) == read(&s.join(&target)),
            "{target} differs"
        );
        let changes = format!("{p}.changes.{format}");
        let (fa, fs) = (feed(&a.join(&changes)), feed(&s.join(&changes)));
        assert_eq!(versions(&fa), (1..=12).collect::<Vec<_>>(), "{changes}");
        assert!(fa == fs, "{changes} differs");
        assert_eq!(
            metrics_without_latency(&read(&a.join("metrics.json"))),
            metrics_without_latency(&read(&s.join("metrics.json"))),
            "{p}: metrics.json"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Pipeline changes, damaged state.

const KV_SCHEMA: &str = "k INT, v STRING, op STRING, seq BIGINT";

/// A pipeline over CSV files in `data/` (`k,v,op,seq`) into target `t`.
pub(crate) fn kv_sql(keys: &str, scd: u8) -> String {
    format!(
        "CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('data', format => 'csv', \
           header => true, schema => '{KV_SCHEMA}');\n\
         CREATE STREAMING TABLE t;\n\
         CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS ({keys}) \
           APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op) \
           STORED AS SCD TYPE {scd};\n"
    )
}

/// Writes `data/<name>` with the `k,v,op,seq` header and `rows`.
pub(crate) fn kv_file(dir: &Path, name: &str, rows: &[&str]) {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let text: String = std::iter::once("k,v,op,seq")
        .chain(rows.iter().copied())
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.join("data").join(name), text).unwrap();
}

/// Two durable runs of `kv_sql("k", scd)` over two files.
fn two_kv_runs(d: &Path, scd: u8) {
    std::fs::write(d.join("pipeline.sql"), kv_sql("k", scd)).unwrap();
    kv_file(d, "b1.csv", &["1,a,U,1", "2,b,U,1", "3,c,U,1"]);
    durable(d, "pipeline.sql", &[]);
    kv_file(d, "b2.csv", &["1,a2,U,2", "2,,D,2", "4,d,U,1", "3,c0,U,0"]);
    durable(d, "pipeline.sql", &[]);
}

#[test]
fn pipeline_changes_are_refused_and_touch_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_kv_runs(d, 2);
    kv_file(d, "b3.csv", &["5,e,U,1"]);
    let (out, state) = (snapshot(&d.join("out")), snapshot(&d.join("state")));
    let changes = [
        (kv_sql("k, v", 2), "KEYS changed"),
        (kv_sql("k", 1), "STORED AS changed"),
    ];
    for (sql, what) in changes {
        std::fs::write(d.join("changed.sql"), sql).unwrap();
        let args = ["run", "changed.sql", "--state", "state", "--out", "out"];
        let err = refused(&scdflow(d, &args));
        assert!(err.contains(what), "{err}");
        assert!(err.contains("target `t`"), "{err}");
        assert!(err.contains("--full-refresh"), "{err}");
        assert_eq!(snapshot(&d.join("out")), out, "{what}: outputs changed");
        assert_eq!(snapshot(&d.join("state")), state, "{what}: state changed");
    }
    let args = [
        "run",
        "pipeline.sql",
        "--state",
        "state",
        "--out",
        "elsewhere",
    ];
    let err = refused(&scdflow(d, &args));
    assert!(err.contains("--out"), "{err}");
    assert!(err.contains("--full-refresh"), "{err}");
    assert!(!d.join("elsewhere").exists());
    assert_eq!(snapshot(&d.join("out")), out, "--out: outputs changed");
    assert_eq!(snapshot(&d.join("state")), state, "--out: state changed");
    // The unchanged pipeline still continues where it stopped.
    let stdout = durable(d, "pipeline.sql", &[]);
    assert!(stdout.contains("commit 3 is new"), "{stdout}");
}

/// A changed pipeline (SCD type 2 to 1) with --full-refresh, and the same pipeline run once without state in
/// another directory over the same files.
fn full_refresh_and_reference(d: &Path) -> PathBuf {
    two_kv_runs(d, 2);
    std::fs::write(d.join("changed.sql"), kv_sql("k", 1)).unwrap();
    let stdout = durable(d, "changed.sql", &["--full-refresh"]);
    assert!(stdout.contains("commits 1..=2 are new"), "{stdout}");
    let reference = d.join("reference");
    copy_dir(&d.join("data"), &reference.join("data"));
    std::fs::write(reference.join("changed.sql"), kv_sql("k", 1)).unwrap();
    succeed(&reference, &["run", "changed.sql", "--out", "out"]);
    reference
}

#[test]
fn full_refresh_rebuilds_the_tables_of_a_changed_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let reference = full_refresh_and_reference(d);
    assert_eq!(
        read(&d.join("out/t.csv")),
        read(&reference.join("out/t.csv"))
    );
    assert_eq!(
        metrics_without_latency(&read(&d.join("out/metrics.json"))),
        metrics_without_latency(&read(&reference.join("out/metrics.json")))
    );
}

#[test]
fn full_refresh_starts_the_change_feed_over() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let reference = full_refresh_and_reference(d);
    assert_eq!(
        feed(&d.join("out/t.changes.csv")),
        feed(&reference.join("out/t.changes.csv"))
    );
}

/// A crash after a first run's change feed and metrics were appended but before its manifest
/// was written leaves exactly what deleting `MANIFEST` after a completed first run leaves.
#[test]
fn a_first_run_crashed_before_its_commit_is_applied_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("pipeline.sql"), kv_sql("k", 2)).unwrap();
    std::fs::create_dir_all(d.join("data")).unwrap();
    // A new state's empty manifest is on disk before the first run writes anything.
    durable(d, "pipeline.sql", &[]);
    let empty = read(&d.join("state/MANIFEST"));
    kv_file(d, "b1.csv", &["1,a,U,1", "2,b,U,1", "1,,D,2"]);
    durable(d, "pipeline.sql", &[]);
    let (target, once) = (
        read(&d.join("out/t.csv")),
        feed(&d.join("out/t.changes.csv")),
    );
    // The first commit crashed just before its manifest: its outputs and checkpoint are there,
    // the manifest is the empty one.
    std::fs::write(d.join("state/MANIFEST"), empty).unwrap();
    durable(d, "pipeline.sql", &[]);
    assert_eq!(read(&d.join("out/t.csv")), target);
    assert_eq!(feed(&d.join("out/t.changes.csv")), once);
    assert_eq!(metric_commits(&d.join("out"), 0).len(), 1);
}

/// Issue 13, item 13: an input folder is no output or state directory, and one `--out` spelled
/// two ways (`../`, a symlink) is one `--out`.
#[test]
fn input_folders_are_refused_and_one_out_has_many_spellings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("pipeline.sql"), kv_sql("k", 2)).unwrap();
    kv_file(d, "b1.csv", &["1,a,U,1"]);
    for args in [
        &["run", "pipeline.sql", "--out", "data"][..],
        &["run", "pipeline.sql", "--out", "./data/../data"][..],
        &["run", "pipeline.sql", "--state", "data", "--out", "out"][..],
        &["run", "pipeline.sql", "--state", "state", "--out", "data"][..],
    ] {
        let err = refused(&scdflow(d, args));
        assert!(
            err.contains("is the input folder of `src`"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(std::fs::read_dir(d.join("data")).unwrap().count(), 1);
    durable(d, "pipeline.sql", &[]);
    kv_file(d, "b2.csv", &["2,b,U,1"]);
    std::os::unix::fs::symlink(d.join("out"), d.join("link")).unwrap();
    succeed(
        d,
        &["run", "pipeline.sql", "--state", "state", "--out", "link"],
    );
    kv_file(d, "b3.csv", &["3,c,U,1"]);
    std::fs::create_dir(d.join("sub")).unwrap();
    let args = [
        "run",
        "pipeline.sql",
        "--state",
        "state",
        "--out",
        "sub/../out",
    ];
    succeed(d, &args);
    assert_eq!(feed(&d.join("out/t.changes.csv")).len(), 3);
}

/// A state whose first run failed committed nothing: a fixed (changed) pipeline starts it
/// afresh, without `--full-refresh`.
#[test]
fn a_state_that_never_committed_takes_a_changed_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("pipeline.sql"), kv_sql("k", 2)).unwrap();
    kv_file(d, "b1.csv", &["1,a,U,1", "2,b,U,not a number"]);
    let args = ["run", "pipeline.sql", "--state", "state", "--out", "out"];
    refused(&scdflow(d, &args));
    std::fs::write(d.join("pipeline.sql"), kv_sql("k", 1)).unwrap();
    kv_file(d, "b1.csv", &["1,a,U,1", "2,b,U,2"]);
    durable(d, "pipeline.sql", &[]);
    assert_eq!(feed(&d.join("out/t.changes.csv")).len(), 1);
}

/// Issue 13, item 4: a lost manifest, a lost state directory or a mistyped `--state` never
/// silently starts over (rewriting the change feed from version 1 and losing archived rows);
/// `--full-refresh` does, on purpose.
#[test]
fn a_lost_manifest_or_state_is_refused_unless_starting_over() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("pipeline.sql"), kv_sql("k", 2)).unwrap();
    kv_file(d, "b1.csv", &["1,a,U,1", "2,b,U,1"]);
    durable(d, "pipeline.sql", &[]);
    let out = snapshot(&d.join("out"));
    let args = ["run", "pipeline.sql", "--state", "state", "--out", "out"];
    std::fs::remove_file(d.join("state/MANIFEST")).unwrap();
    let err = refused(&scdflow(d, &args));
    assert!(
        err.contains("holds checkpoint ckpt-") && err.contains("but no MANIFEST"),
        "{err}"
    );
    assert!(
        d.join("state").read_dir().unwrap().count() > 1,
        "the checkpoint is kept"
    );
    std::fs::remove_dir_all(d.join("state")).unwrap();
    let err = refused(&scdflow(d, &args));
    assert!(
        err.contains("already holds the change feed") && err.contains("t.changes.csv"),
        "{err}"
    );
    let mistyped = ["run", "pipeline.sql", "--state", "stat", "--out", "out"];
    refused(&scdflow(d, &mistyped));
    assert_eq!(snapshot(&d.join("out")), out, "outputs untouched");
    durable(d, "pipeline.sql", &["--full-refresh"]);
    assert_eq!(read(&d.join("out/t.csv")), out[&d.join("out/t.csv")]);
}

/// Offsets spread over `0..len`, its ends included.
fn offsets(len: usize) -> Vec<usize> {
    let step = (len / 24).max(1);
    let mut at: Vec<usize> = (0..len).step_by(step).collect();
    at.extend([len.saturating_sub(13), len.saturating_sub(1)]);
    at.sort();
    at.dedup();
    at
}

/// Damages a copy of a good state with `damage`, runs with new input, and expects a refusal
/// that names `file` and a byte offset, and untouched outputs.
const RUN_ON_TWO: [&str; 8] = [
    "run",
    "pipeline.sql",
    "--state",
    "state",
    "--out",
    "out",
    "-w",
    "2",
];

/// Damages `file` in a copy of the `good` state, then asserts that `args` is refused naming it
/// and its byte offset, and changes no output.
fn refused_with_damage(d: &Path, good: &Path, file: &Path, args: &[&str], damage: impl Fn(&Path)) {
    let state = d.join("state");
    std::fs::remove_dir_all(&state).unwrap();
    copy_dir(good, &state);
    damage(&state.join(file));
    let out = snapshot(&d.join("out"));
    let err = refused(&scdflow(d, args));
    let name = Path::new("state").join(file);
    assert!(err.contains(&name.display().to_string()), "{err}");
    assert!(err.contains("byte offset"), "{err}");
    assert_eq!(snapshot(&d.join("out")), out, "outputs changed: {err}");
}

#[test]
fn damaged_state_files_are_refused_with_their_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_kv_runs(d, 2);
    kv_file(d, "b3.csv", &["5,e,U,1", "1,,D,9"]);
    let good = d.join("good");
    copy_dir(&d.join("state"), &good);
    let ckpt = std::fs::read_dir(&good)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.starts_with("ckpt-"))
        .unwrap();
    let (shards, copies): (Vec<PathBuf>, Vec<PathBuf>) = std::fs::read_dir(good.join(&ckpt))
        .unwrap()
        .map(|e| Path::new(&ckpt).join(e.unwrap().file_name()))
        .partition(|f| !f.ends_with("MANIFEST"));
    assert!(!shards.is_empty());
    // The checkpoint's copy of the manifest that committed it is read by a rewind to it.
    assert_eq!(copies.len(), 1, "{copies:?}");
    let version = ckpt.trim_start_matches("ckpt-").trim_start_matches('0');
    let rewind = [
        "rewind",
        "pipeline.sql",
        "--state",
        "state",
        "--out",
        "out",
        "--to",
        version,
    ];
    for (file, args) in
        (shards.iter().map(|s| (s, &RUN_ON_TWO[..]))).chain(copies.iter().map(|c| (c, &rewind[..])))
    {
        let len = read(&good.join(file)).len();
        for at in offsets(len) {
            refused_with_damage(d, &good, file, args, |f| {
                let file = std::fs::OpenOptions::new().write(true).open(f).unwrap();
                file.set_len(at as u64).unwrap();
            });
        }
    }
    let manifest = Path::new("MANIFEST");
    let len = read(&good.join(manifest)).len();
    for at in offsets(len) {
        refused_with_damage(d, &good, manifest, &RUN_ON_TWO, |f| {
            let mut bytes = read(f);
            bytes[at] ^= 0x20;
            std::fs::write(f, bytes).unwrap();
        });
    }
    // The good state still works, and its run matches one run over all files.
    std::fs::remove_dir_all(d.join("state")).unwrap();
    copy_dir(&good, &d.join("state"));
    durable(d, "pipeline.sql", &["-w", "2"]);
    let reference = d.join("reference");
    copy_dir(&d.join("data"), &reference.join("data"));
    std::fs::copy(d.join("pipeline.sql"), reference.join("pipeline.sql")).unwrap();
    succeed(&reference, &["run", "pipeline.sql", "--out", "out"]);
    assert_eq!(
        read(&d.join("out/t.csv")),
        read(&reference.join("out/t.csv"))
    );
}

// ---------------------------------------------------------------------------------------------
// Tombstone retention across runs (D11).

/// Run 1 upserts key 1 at seq 10 and deletes it at seq 20; after `pause`, run 2 brings an older
/// upsert (seq 15). Returns the SCD1 table after run 2 and run 2's metrics.
fn late_upsert_after(pause: std::time::Duration, gc: Option<&str>) -> (Table, Json) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("pipeline.sql"), kv_sql("k", 1)).unwrap();
    let extra: Vec<&str> = gc.map_or(vec![], |s| vec!["--tombstone-gc-seconds", s]);
    kv_file(d, "b1.csv", &["1,a,U,10", "2,b,U,10", "1,,D,20"]);
    durable(d, "pipeline.sql", &extra);
    assert_eq!(table(&d.join("out/t.csv")).1, [["2", "b", "10"]]);
    std::thread::sleep(pause);
    kv_file(d, "b2.csv", &["1,late,U,15"]);
    durable(d, "pipeline.sql", &extra);
    let metrics = metric_commits(&d.join("out"), 0)[1].clone();
    (table(&d.join("out/t.csv")), metrics)
}

#[test]
fn expired_tombstones_let_a_late_upsert_recreate_the_key_across_runs() {
    let (table, metrics) = late_upsert_after(std::time::Duration::from_millis(1200), Some("1"));
    assert_eq!(table.1, [["1", "late", "15"], ["2", "b", "10"]]);
    assert_eq!(metrics["num_collected_tombstones"], 1, "{metrics}");
    assert_eq!(metrics["num_stale_events"], 0, "{metrics}");
}

#[test]
fn live_tombstones_keep_a_late_upsert_stale_across_runs() {
    for gc in [None, Some("3600")] {
        let (table, metrics) = late_upsert_after(std::time::Duration::ZERO, gc);
        assert_eq!(table.1, [["2", "b", "10"]], "{gc:?}");
        assert_eq!(metrics["num_stale_events"], 1, "{gc:?}: {metrics}");
        assert_eq!(metrics["num_live_tombstones"], 1, "{gc:?}: {metrics}");
    }
}

#[test]
fn a_checksum_mismatch_reads_as_a_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_kv_runs(d, 1);
    let manifest = d.join("state/MANIFEST");
    let mut bytes = read(&manifest);
    // Past the 16-byte header and the first frame's length and checksum: its payload.
    bytes[30] ^= 0x20;
    std::fs::write(&manifest, bytes).unwrap();
    let args = ["run", "pipeline.sql", "--state", "state", "--out", "out"];
    let err = refused(&scdflow(d, &args));
    assert!(err.contains("checksum"), "{err}");
    assert!(err.contains("it fails its checksum"), "{err}");
}

/// Whether version `version`'s entry is in the Delta log `log`, as [`wait_for`] asks.
pub(crate) fn logged(log: &Path, version: u64) -> impl FnMut() -> bool {
    let entry = log.join(format!("{version:020}.json"));
    move || entry.is_file()
}

/// Waits (up to a minute) until `done` holds.
pub(crate) fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Stops a `--follow` run with SIGTERM; returns its stderr after checking it exited 0.
pub(crate) fn stop_following(mut child: std::process::Child) -> String {
    let pid = child.id().to_string();
    let term = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(term.success());
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    err
}

#[test]
fn follow_commits_new_files_and_lines_until_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("pipeline.sql"), kv_sql("k", 2)).unwrap();
    kv_file(d, "b1.csv", &["1,a,U,1", "2,b,U,1"]);
    let child = Command::new(env!("CARGO_BIN_EXE_scdflow"))
        .args(["run", "pipeline.sql", "--state", "state", "--out", "out"])
        .args(["--follow", "--poll", "0.05"])
        .current_dir(d)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let feed_path = d.join("out/t.changes.csv");
    let commits = |n: u64| {
        let path = feed_path.clone();
        move || path.exists() && versions(&feed(&path)).last() == Some(&n)
    };
    wait_for("commit 1", commits(1));
    // Issue 13, item 5: another run into the followed `--out` is refused, and leaves its change
    // feed alone (the follower may still be rewriting the tables of commit 1 meanwhile).
    let before = read(&feed_path);
    let intruder = scdflow(d, &["run", "pipeline.sql", "--out", "out"]);
    let err = refused(&intruder);
    assert!(err.contains("in use by another scdflow run"), "{err}");
    assert_eq!(read(&feed_path), before);
    kv_file(d, "b2.csv", &["1,a2,U,2", "2,,D,2"]);
    wait_for("commit 2", commits(2));
    // Lines appended to a followed file are the next commit; half a line waits.
    append(&d.join("data/b2.csv"), "3,c,U,1\n4,d");
    wait_for("commit 3", commits(3));
    append(&d.join("data/b2.csv"), ",U,1\n");
    wait_for("commit 4", commits(4));
    stop_following(child);
    // The same input in one plain run gives the same table and, commit by commit, the same feed.
    let plain = d.join("plain");
    succeed(
        d,
        &["run", "pipeline.sql", "--out", plain.to_str().unwrap()],
    );
    assert_eq!(read(&d.join("out/t.csv")), read(&plain.join("t.csv")));
    let followed: Vec<Vec<String>> = feed(&feed_path).into_values().collect();
    let one_run: Vec<String> = feed(&plain.join("t.changes.csv"))
        .into_values()
        .flatten()
        .collect();
    assert_eq!(followed.len(), 4);
    // Commit numbers differ (the appended lines were two more commits; here each key's changes
    // fall in one commit either way): compare the rows without `_commit_version`.
    let strip = |rows: Vec<String>| -> Vec<String> {
        let mut rows: Vec<String> = rows
            .into_iter()
            .map(|r| {
                r.rsplit_once(',')
                    .map_or(r.clone(), |(head, _)| head.to_string())
            })
            .collect();
        rows.sort();
        rows
    };
    let all: Vec<String> = followed.into_iter().flatten().collect();
    assert_eq!(strip(all), strip(one_run));
    // A restart continues after commit 4 with nothing new.
    let out = durable(d, "pipeline.sql", &[]);
    assert!(out.contains("4 commits (no new input)"), "{out}");
}

/// The checkpoints in the state directory: base (`ckpt-`) and delta directories, sorted.
fn checkpoints(d: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(d.join("state"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("ckpt-") || n.starts_with("delta-"))
        .collect();
    names.sort();
    names
}

#[test]
fn later_runs_save_deltas_and_a_restart_restores_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("pipeline.sql"), kv_sql("k", 2)).unwrap();
    // Enough keys that one commit's changes are far below half the base.
    let first: Vec<String> = (0..200).map(|k| format!("{k},v{k},U,1")).collect();
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    kv_file(d, "b1.csv", &first);
    durable(d, "pipeline.sql", &[]);
    assert_eq!(checkpoints(d), ["ckpt-000000000001"]);
    kv_file(d, "b2.csv", &["1,a,U,2", "2,,D,2", "3,late,U,0"]);
    let out = durable(d, "pipeline.sql", &[]);
    assert!(out.contains("(the keys this run changed)"), "{out}");
    assert_eq!(checkpoints(d), ["ckpt-000000000001", "delta-000000000002"]);
    kv_file(d, "b3.csv", &["1,b,U,3", "4,c,U,5", "2,back,U,3"]);
    durable(d, "pipeline.sql", &[]);
    assert_eq!(
        checkpoints(d),
        [
            "ckpt-000000000001",
            "delta-000000000002",
            "delta-000000000003"
        ]
    );
    // Another worker count restores base and deltas, and saves a whole checkpoint.
    kv_file(d, "b4.csv", &["4,d,U,4", "5,,D,9"]);
    let out = durable(d, "pipeline.sql", &["--workers", "2"]);
    assert!(out.contains("(a whole checkpoint)"), "{out}");
    assert_eq!(checkpoints(d), ["ckpt-000000000004"]);
    let plain = d.join("plain");
    succeed(
        d,
        &["run", "pipeline.sql", "--out", plain.to_str().unwrap()],
    );
    assert_eq!(read(&d.join("out/t.csv")), read(&plain.join("t.csv")));
    // A restart from a base with deltas (one worker again: a delta on top of it, then the
    // chain restored) still agrees.
    kv_file(d, "b5.csv", &["6,e,U,1"]);
    durable(d, "pipeline.sql", &["--workers", "2"]);
    kv_file(d, "b6.csv", &["6,f,U,2", "1,g,U,9"]);
    durable(d, "pipeline.sql", &["--workers", "1"]);
    succeed(
        d,
        &["run", "pipeline.sql", "--out", plain.to_str().unwrap()],
    );
    assert_eq!(read(&d.join("out/t.csv")), read(&plain.join("t.csv")));
}

/// Issue 13, item 5: a plain run into a durable run's `--out` rewrites its change feed; the
/// next durable run refuses it (by the committed bytes' checksum) instead of cutting it to a
/// length that ends no commit, and leaves every output as it found it.
#[test]
fn a_change_feed_rewritten_by_another_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_kv_runs(d, 2);
    kv_file(
        d,
        "b3.csv",
        &["9,long value to make the feed longer,U,5"; 8],
    );
    succeed(d, &["run", "pipeline.sql", "--out", "out"]);
    let before = snapshot(&d.join("out"));
    let err = refused(&scdflow(
        d,
        &["run", "pipeline.sql", "--state", "state", "--out", "out"],
    ));
    assert!(
        err.contains("t.changes.csv") && err.contains("changed outside scdflow"),
        "{err}"
    );
    assert_eq!(snapshot(&d.join("out")), before, "outputs untouched");
    durable(d, "pipeline.sql", &["--full-refresh"]);
}

/// Issue 13, item 7: a versioned snapshot file rewritten after it was applied is refused (a
/// fresh run would give another table), not skipped as "no new input".
#[test]
fn a_snapshot_file_rewritten_after_it_was_applied_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v = seed("T5_snapshot_scd2");
    let batches = v["batches"].as_array().unwrap();
    std::fs::create_dir_all(d.join("snaps")).unwrap();
    std::fs::write(d.join("pipeline.sql"), snapshot_sql(2)).unwrap();
    let file = d.join(format!("snaps/snapshot_{}.csv", batches[0]["version"]));
    std::fs::write(&file, snapshot_csv(&batches[0])).unwrap();
    durable(d, "pipeline.sql", &[]);
    let out = snapshot(&d.join("out"));
    let args = ["run", "pipeline.sql", "--state", "state", "--out", "out"];
    // The same length, other bytes; then another length.
    let text = snapshot_csv(&batches[0]);
    let swapped: String = text.chars().rev().collect();
    for rewritten in [swapped, text.clone() + "99,Nowhere\n"] {
        std::fs::write(&file, &rewritten).unwrap();
        let err = refused(&scdflow(d, &args));
        assert!(
            err.contains("snapshot_") && err.contains("was applied") && err.contains("new version"),
            "{err}"
        );
        assert_eq!(snapshot(&d.join("out")), out, "outputs untouched");
    }
    std::fs::write(&file, &text).unwrap();
    assert!(durable(d, "pipeline.sql", &[]).contains("no new input"));
}

/// Issue 13, item 13: a state made with a relative `--state` (and relative pipeline paths) is
/// the same state from another working directory: nothing is applied twice.
#[test]
fn a_relative_state_works_from_another_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&b).unwrap();
    std::fs::create_dir_all(&a).unwrap();
    two_kv_runs(&a, 2);
    let before = read(&a.join("out/t.changes.csv"));
    let args = [
        "run",
        "../a/pipeline.sql",
        "--state",
        "../a/state",
        "--out",
        "../a/out",
    ];
    let stdout = succeed(&b, &args);
    assert!(stdout.contains("no new input"), "{stdout}");
    assert_eq!(read(&a.join("out/t.changes.csv")), before);
    kv_file(&a, "b3.csv", &["5,e,U,1"]);
    let stdout = succeed(&b, &args);
    assert!(stdout.contains("commit 3 is new"), "{stdout}");
    let commits = versions(&feed(&a.join("out/t.changes.csv")));
    assert_eq!(commits, [1, 2, 3]);
}

//! Publishing to Delta per commit, what users run: `scdflow run --warehouse DIR --state ST
//! --follow` turning each new commit file into one version of the SCD2 target's Delta table,
//! beside the SCD2 MERGE a user hand-writes with delta-rs (`benches/peers/delta_merge.py`, the
//! Python `deltalake` package) applying the same commit files to a copy of the same table.
//!
//! Command: `cargo bench --bench delta_publish [-- EVENTS KEYS COMMITS FOLLOWED]` (defaults
//! 1000000 100000 100 10: commits of 10,000 events on a history of about 900,000 rows; `--
//! 1000000 100000 1000 20` gives commits of 1,000 events). Workload: `scdflow generate
//! --events EVENTS --keys KEYS --displacement 1000 --commits COMMITS --seed 7` (10% deletes).
//! The first COMMITS - FOLLOWED files are published by one durable run; the peer starts from a
//! copy of that table; then each system applies the last FOLLOWED files one at a time (scdflow
//! once its `--follow` run says it is following: its start-up is printed apart), scdflow on 1
//! and on 2 workers, each run from the same state, table and outputs.
//!
//! Measured per commit, for scdflow: from the commit file appearing complete in the input
//! directory (renamed in) until its Delta version is in the log (the bench polls for
//! `_delta_log/<version>.json` every millisecond), and the bytes of the files the followed
//! versions hold that they wrote (data files new to the table, merged files included,
//! deletion vectors, change-data files, log entries), per commit, plus a commit's share of a
//! Delta checkpoint (written every 100 versions: the latest one's bytes over 100; a window of
//! followed commits ending at a multiple of 100 would otherwise count a whole checkpoint in a
//! few commits), beside the commit's change rows as the change-data file holds them; and
//! where those bytes went, by kind of file. Not the table directory's growth, also printed:
//! a merge runs beside the versions, and one still running when the run stops is deleted
//! there. For the peer: reading the file and its MERGE, and its table's growth. The peer needs
//! `python3 -m pip install deltalake polars pyarrow` (or `PEER_PYTHON=/path/to/python`);
//! without them, it is skipped with a note. Figures drift by ±30% on this shared 2-core
//! machine: compare the ratios of one run.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{
    copy_synced, feed, last_json, latencies, nearest, run_ok, Followed, Following, SCDFLOW,
};

fn main() {
    let w = Followed::from_args("delta_publish");
    let (commits, followed) = (w.commits, w.followed);
    let dir = tempfile::tempdir().expect("temporary directory");
    let (gen, work) = (dir.path().join("gen"), dir.path());
    let generate = w.generate(&gen);
    println!(
        "workload: scdflow {generate} ({} events per commit; the last {followed} followed); \
         SCD2",
        w.events / commits
    );
    let held = w.hold_back(&gen, work);
    let warehouse = work.join("w");
    std::fs::create_dir_all(&warehouse).expect("warehouse");
    run_ok(Command::new(SCDFLOW).current_dir(work).args([
        "sql",
        "--warehouse",
        "w",
        "CREATE SCHEMA main.default",
    ]));
    let table = warehouse.join("main/default/scd2");
    let pipeline = format!("{}/scd2.sql", gen.display());

    let started = Instant::now();
    run_ok(
        Command::new(SCDFLOW)
            .current_dir(work)
            .args(["run", &pipeline])
            .args(DURABLE),
    );
    println!(
        "first durable run publishing {} commits: {:.2} s, table {:.1} MB",
        commits - followed,
        started.elapsed().as_secs_f64(),
        tree_bytes(&table) as f64 / 1e6
    );
    let peer = delta_merge(&table, work, &held);

    // Each followed run starts from the same state, table and outputs, put back in place.
    let places = ["st", "w", "o"].map(|p| (work.join(p), work.join(format!("{p}.kept"))));
    for (place, kept) in &places {
        copy_synced(place, kept);
    }
    let runs: Vec<(usize, Publishing)> = (1..=2)
        .map(|workers| {
            for (place, kept) in &places {
                std::fs::remove_dir_all(place).expect("remove");
                copy_synced(kept, place);
            }
            (workers, follow(&w, work, &gen, &held, workers))
        })
        .collect();

    println!("\n| system | p50 ms | p99 ms | MB written per commit | MERGE's p50 over this |");
    println!("|---|---|---|---|---|");
    let merge_p50 = peer
        .as_ref()
        .map(|json| json["p50_us"].as_f64().unwrap_or(f64::NAN) / 1e3);
    for (workers, run) in &runs {
        let (p50, p99) = (nearest(&run.visible, 0.5), nearest(&run.visible, 0.99));
        let ratio = merge_p50.map_or("–".to_string(), |merge| format!("{:.1}x", merge / p50));
        println!(
            "| scdflow --follow -w {workers} --warehouse (file complete -> version in the log) \
             | {p50:.1} | {p99:.1} | {:.2} | {ratio} |",
            run.written / 1e6
        );
    }
    if let Some(json) = &peer {
        let ms = |k: &str| json[k].as_f64().unwrap_or(f64::NAN) / 1e3;
        println!(
            "| delta-rs MERGE (read the file + MERGE) | {:.1} | {:.1} | {:.2} | 1.0x |",
            ms("p50_us"),
            ms("p99_us"),
            json["bytes_per_commit"].as_f64().unwrap_or(f64::NAN) / 1e6,
        );
    }
    for (workers, run) in &runs {
        println!(
            "\nscdflow -w {workers}: {:.2} MB written per commit for {:.2} MB of change rows (its \
             change-data file): {:.1}x (the table's directory grew {:.2} MB a commit); latency \
             recorded by scdflow (input complete -> version's files written) p50 {:.1} ms",
            run.written / 1e6,
            run.feed / 1e6,
            run.written / run.feed,
            run.grown / 1e6,
            nearest(&run.logged, 0.5)
        );
        let parts = (run.parts.iter())
            .map(|(part, bytes)| format!("{part} {:.1}", bytes / 1e3))
            .collect::<Vec<_>>();
        println!(
            "where a followed commit's bytes go, KB per commit as its log entries name them: {} \
             (checkpoints: the latest one's bytes over the {CHECKPOINT_INTERVAL} versions it \
             follows)",
            parts.join(", ")
        );
    }
}

/// What a followed run measured: the latencies it was seen at (sorted, ms) and recorded
/// (sorted, ms), bytes written and change-data bytes per commit, and where the bytes went.
struct Publishing {
    visible: Vec<f64>,
    logged: Vec<f64>,
    /// Bytes per commit of the files its version holds (see [`breakdown`]).
    written: f64,
    /// Bytes per commit the table's directory grew by: merges still running when the run
    /// stops are deleted, not counted.
    grown: f64,
    feed: f64,
    parts: Vec<(&'static str, f64)>,
}

/// Runs `scdflow run --follow` on `workers` workers over the state in `work` and feeds it the
/// `held` files one at a time, each once the one before is a version of the table.
fn follow(w: &Followed, work: &Path, gen: &Path, held: &[PathBuf], workers: usize) -> Publishing {
    let (commits, followed) = (w.commits, w.followed);
    let table = work.join("w/main/default/scd2");
    let pipeline = format!("{}/scd2.sql", gen.display());
    let before = tree_bytes(&table);
    let files_before = files_in(&table);
    let feeds_before = files_in(&table.join("_change_data"));
    let (following, start_up) = Following::start(
        Command::new(SCDFLOW)
            .current_dir(work)
            .args(["run", &pipeline])
            .args(DURABLE)
            .args(["-w", &workers.to_string()])
            .args(["--follow", "--tables-every", "3600"]),
    );
    println!(
        "--follow -w {workers} ready after {:.2} s (restoring the state, reading the table, \
         writing the tables); then fed one file at a time",
        start_up.as_secs_f64()
    );
    let mut visible = Vec::new();
    for (i, f) in held.iter().enumerate() {
        let version = commits - followed + i as u64 + 1;
        let entry = table.join(format!("_delta_log/{version:020}.json"));
        let fed = feed(f, &gen.join("events"));
        let deadline = fed + Duration::from_secs(300);
        while !entry.is_file() {
            assert!(Instant::now() < deadline, "version {version} never came");
            std::thread::sleep(Duration::from_millis(1));
        }
        visible.push(fed.elapsed().as_secs_f64() * 1e3);
    }
    following.stop();
    for f in held {
        std::fs::remove_file(gen.join("events").join(f.file_name().expect("name")))
            .expect("fed file");
    }
    // A checkpoint is written every CHECKPOINT_INTERVAL versions: the window's own (if one
    // falls in it) is replaced by its share of the latest one.
    let first = commits - followed + 1;
    let (in_window, share) = checkpoints(&table, first..=commits);
    let grown = (tree_bytes(&table) - before - in_window) as f64;
    let feeds: u64 = files_in(&table.join("_change_data"))
        .difference(&feeds_before)
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    visible.sort_by(f64::total_cmp);
    let mut logged = latencies(&work.join("st/metrics.jsonl"), commits - followed);
    logged.sort_by(f64::total_cmp);
    let parts = breakdown(&table, &files_before, first..=commits, share);
    Publishing {
        visible,
        logged,
        written: parts.iter().map(|(_, bytes)| bytes).sum(),
        grown: grown / followed as f64 + share,
        feed: feeds as f64 / followed as f64,
        parts,
    }
}

/// Where the durable runs keep their state and outputs, in the work directory.
const DURABLE: [&str; 6] = ["--warehouse", "w", "--state", "st", "--out", "o"];

/// Versions between Delta checkpoints of the published table (`delta.checkpointInterval`,
/// unset here: scdflow's default, delta-rs's).
const CHECKPOINT_INTERVAL: u64 = 100;

/// The bytes of the checkpoints of `versions` of the Delta table at `table`, and a version's
/// share of the latest checkpoint (its bytes over [`CHECKPOINT_INTERVAL`]): a window of
/// versions holds one checkpoint or none, where a version's cost is a share of each.
fn checkpoints(table: &Path, versions: std::ops::RangeInclusive<u64>) -> (u64, f64) {
    let log = table.join("_delta_log");
    let size = |version: u64| {
        let checkpoint = log.join(format!("{version:020}.checkpoint.parquet"));
        std::fs::metadata(checkpoint).map_or(0, |m| m.len())
    };
    let in_window = versions.clone().map(size).sum();
    let latest = (0..=*versions.end())
        .rev()
        .map(size)
        .find(|&bytes| bytes > 0);
    (
        in_window,
        latest.unwrap_or(0) as f64 / CHECKPOINT_INTERVAL as f64,
    )
}

/// The bytes per version that `versions` of the Delta table at `table` wrote, by what they
/// hold, from their log entries: change-data files, data files of new rows, files merges
/// wrote (each data file counted once), deletion vectors (as their descriptors size them;
/// their files add a few bytes each), the entries themselves; and `checkpoint`, a version's
/// share of the checkpoints. A data file
/// not among `files_before` (the table's files when the versions began) is written by them:
/// new rows if it comes as a data change without a deletion vector, else a merge's (taken
/// in with its deletion vector when versions removed rows from the merging files meanwhile).
fn breakdown(
    table: &Path,
    files_before: &BTreeSet<PathBuf>,
    versions: std::ops::RangeInclusive<u64>,
    checkpoint: f64,
) -> Vec<(&'static str, f64)> {
    let mut parts = [
        ("change data", 0.0),
        ("new rows", 0.0),
        ("merges", 0.0),
        ("deletion vectors", 0.0),
        ("log entries", 0.0),
    ];
    let mut add = |part: &str, bytes: u64| {
        let at = parts.iter().position(|(p, _)| *p == part).expect("a part");
        parts[at].1 += bytes as f64;
    };
    let log = table.join("_delta_log");
    let n = versions.clone().count() as f64;
    let mut written = BTreeSet::new();
    for version in versions {
        let entry = std::fs::read_to_string(log.join(format!("{version:020}.json")))
            .expect("a followed version's log entry");
        add("log entries", entry.len() as u64);
        for line in entry.lines() {
            let action: serde_json::Value = serde_json::from_str(line).expect("a log action");
            let size = |a: &serde_json::Value| a["size"].as_u64().unwrap_or(0);
            if let Some(cdc) = action.get("cdc") {
                add("change data", size(cdc));
            } else if let Some(file) = action.get("add") {
                let path = table.join(file["path"].as_str().unwrap_or_default());
                let dv = &file["deletionVector"];
                if dv.is_object() {
                    add("deletion vectors", dv["sizeInBytes"].as_u64().unwrap_or(0));
                }
                // A file is counted once, where it first comes (later versions re-add it with
                // a grown deletion vector).
                if !files_before.contains(&path) && written.insert(path) {
                    match (dv.is_object(), file["dataChange"].as_bool()) {
                        (false, Some(true)) => add("new rows", size(file)),
                        _ => add("merges", size(file)),
                    }
                }
            }
        }
    }
    let mut parts: Vec<_> = parts
        .iter()
        .map(|(part, bytes)| (*part, bytes / n))
        .collect();
    parts.push(("checkpoints", checkpoint));
    parts
}

/// The delta-rs MERGE peer over `files`, starting from a copy of `table`: its JSON line, or
/// `None` (with a note) when Python lacks `deltalake`, `polars` or `pyarrow`.
fn delta_merge(table: &Path, work: &Path, files: &[PathBuf]) -> Option<serde_json::Value> {
    let python = std::env::var("PEER_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let ready = Command::new(&python)
        .args(["-c", "import deltalake, polars, pyarrow"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ready {
        println!(
            "(delta-rs MERGE peer skipped: `python3 -m pip install deltalake polars pyarrow`, or \
             PEER_PYTHON=/path/to/python)"
        );
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/delta_merge.py");
    let json = last_json(
        Command::new(python)
            .arg(script)
            .arg("--start")
            .arg(table)
            .arg("--work")
            .arg(work)
            .args(files),
    );
    println!(
        "delta-rs MERGE peer: {} commits onto a copy of the table",
        json["commits"]
    );
    Some(json)
}

/// Bytes of every file under `dir`.
fn tree_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let meta = entry.metadata().expect("metadata");
        total += match meta.is_dir() {
            true => tree_bytes(&entry.path()),
            false => meta.len(),
        };
    }
    total
}

/// The files directly in `dir`.
fn files_in(dir: &Path) -> BTreeSet<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect()
}

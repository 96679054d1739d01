//! Durable runs killed with SIGKILL at random instants, between which input files keep arriving:
//! the run after the last kill must leave exactly what one uninterrupted run over all files
//! leaves (tables byte for byte, every commit's change rows once, the same metrics).

use crate::durable::{feed, read, stderr, succeed};
use crate::util::metrics_without_latency;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Input files (commits), of 2,000 events each.
const FILES: usize = 25;
/// Kills that must hit a running process.
const KILLS: usize = 20;
const SIGKILL: i32 = 9;

/// SCD1 and SCD2 targets from one source, with deletes and partial updates.
const SQL: &str = "\
CREATE OR REFRESH STREAMING TABLE events AS SELECT * FROM STREAM read_files('events',
  format => 'csv', header => true,
  schema => 'k BIGINT, c0 STRING, c1 STRING, op STRING, seq BIGINT, st BIGINT, cols STRING');
CREATE OR REFRESH STREAMING TABLE scd1;
CREATE FLOW scd1_flow AS AUTO CDC INTO scd1 FROM STREAM(events) KEYS (k)
  APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq, st, cols)
  COLUMNS TO UPDATE cols STORED AS SCD TYPE 1;
CREATE OR REFRESH STREAMING TABLE scd2;
CREATE FLOW scd2_flow AS AUTO CDC INTO scd2 FROM STREAM(events) KEYS (k)
  APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq, st, cols)
  COLUMNS TO UPDATE cols STORED AS SCD TYPE 2;
";

fn spawn(work: &Path, workers: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_scdflow"))
        .args(["run", "pipeline.sql", "--state", "state", "--out", "out"])
        .args(["-w", workers])
        .current_dir(work)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn scdflow")
}

/// When to kill a run.
#[derive(Clone, Copy, Debug)]
enum Kill {
    Never,
    /// This long after the spawn.
    After(Duration),
    /// This long after the change feed changed (cut back or appended to): the run's last phase
    /// (append, commit, rewrite of the targets), or just after it recovered.
    AfterFeed(Duration),
}

/// Watches `child` until it exits (then asserts success and returns its run time) or until
/// `kill` says to kill it (`None`). `feed` held `before` bytes at the spawn.
fn watch(
    child: &mut Child,
    started: Instant,
    kill: Kill,
    feed: &Path,
    before: u64,
) -> Option<Duration> {
    let mut changed_at = None;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let took = started.elapsed();
            let mut err = String::new();
            let pipe = child.stderr.as_mut().unwrap();
            pipe.read_to_string(&mut err).unwrap();
            assert!(status.success(), "a run failed after kills: {err}");
            return Some(took);
        }
        let now = Instant::now();
        let due = match kill {
            Kill::Never => {
                assert!(
                    now - started < Duration::from_secs(120),
                    "a run took two minutes"
                );
                None
            }
            Kill::After(delay) => Some(started + delay),
            Kill::AfterFeed(delay) => {
                if changed_at.is_none() && len(feed) != before {
                    changed_at = Some(now);
                }
                changed_at.map(|at| at + delay)
            }
        };
        if due.is_some_and(|due| now >= due) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Generates `commits` files of 2,000 events (10% deletes, 20% partial updates, displaced by up
/// to 500, and `extra` generator options) under `dir`, runs them without state into
/// `dir/reference/out`, and prepares `dir/work` with the pipeline and no input: returns both
/// directories and the files, in commit order.
fn workload(dir: &Path, commits: usize, extra: &str) -> (PathBuf, PathBuf, Vec<PathBuf>) {
    let (gen, reference, work) = (dir.join("gen"), dir.join("reference"), dir.join("work"));
    for d in [&gen, &reference.join("events"), &work.join("events")] {
        std::fs::create_dir_all(d).unwrap();
    }
    let args = format!(
        "generate --out . --events {} --commits {commits} --deletes 0.1 --partial 0.2 \
         --displacement 500 {extra}",
        commits * 2000
    );
    succeed(&gen, &args.split_whitespace().collect::<Vec<_>>());
    let mut files: Vec<_> = std::fs::read_dir(gen.join("events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), commits);
    files.iter().for_each(|f| add(&reference, f));
    std::fs::write(reference.join("pipeline.sql"), SQL).unwrap();
    std::fs::write(work.join("pipeline.sql"), SQL).unwrap();
    succeed(&reference, &["run", "pipeline.sql", "--out", "out"]);
    (reference, work, files)
}

/// Copies input file `f` into `to/events`, whole at once, as a producer does (written beside,
/// then renamed in): a followed run that saw a copy half done would read its lines so far as
/// one commit and the rest as another.
fn add(to: &Path, f: &Path) {
    let name = f.file_name().unwrap();
    let beside = to.join(name);
    std::fs::copy(f, &beside).unwrap();
    std::fs::rename(&beside, to.join("events").join(name)).unwrap();
}

fn len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

#[test]
fn killed_runs_lose_and_duplicate_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (reference, work, files) = workload(
        dir.path(),
        FILES,
        "--keys 5000 --stragglers 0.01 --straggler-distance 6000 --seed 7",
    );

    // An uninterrupted durable run of the first file elsewhere measures the run time that the
    // kill delays range over at first.
    let probe = dir.path().join("probe");
    std::fs::create_dir_all(probe.join("events")).unwrap();
    std::fs::write(probe.join("pipeline.sql"), SQL).unwrap();
    add(&probe, &files[0]);
    let started = Instant::now();
    let mut child = spawn(&probe, "1");
    let probed = watch(&mut child, started, Kill::Never, &probe.join("none"), 0).unwrap();
    // The typical run time: the longest of the last five completed runs (runs get longer as the
    // state grows; an old outlier is forgotten).
    let mut recent = std::collections::VecDeque::from([probed]);
    let mut typical = probed;
    let mut rng = ChaCha8Rng::seed_from_u64(20_240_611);
    let (mut added, mut kills, mut completed, mut attempts) = (0, 0, 0, 0);
    let scd2_feed = work.join("out/scd2.changes.csv");
    // Where the kills hit, roughly: by kind, and what they left on disk.
    let mut delays = Vec::new();
    let (mut late_kills, mut in_feed, mut in_checkpoint) = (0, 0, 0);
    let staged = || {
        std::fs::read_dir(work.join("state")).is_ok_and(|mut d| {
            d.any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".tmp"))
        })
    };
    while kills < KILLS || added < FILES {
        attempts += 1;
        assert!(attempts < 1000, "{kills} kills in {attempts} attempts");
        if added == 0 || (added < FILES && rng.random_bool(0.5)) {
            add(&work, &files[added]);
            added += 1;
        }
        let workers = if rng.random_bool(0.5) { "1" } else { "2" };
        // Some runs complete (the state advances, and they measure the run time). Most kills
        // come at a point from process start to about the typical end (startup, restore,
        // execute, append, commit, rewrite); the others aim at the short last phase.
        let u: f64 = rng.random();
        let kill = match rng.random::<f64>() {
            x if x < 0.35 => Kill::Never,
            x if x < 0.75 => Kill::After(typical.mul_f64(1.1 * u)),
            _ => Kill::AfterFeed(typical.mul_f64(0.5 * u)),
        };
        let before = len(&scd2_feed);
        let started = Instant::now();
        let mut child = spawn(&work, workers);
        if let Some(took) = watch(&mut child, started, kill, &scd2_feed, before) {
            completed += 1;
            if recent.len() == 5 {
                recent.pop_front();
            }
            recent.push_back(took);
            typical = *recent.iter().max().unwrap();
            continue;
        }
        let at = started.elapsed();
        child.kill().unwrap();
        let status = child.wait().unwrap();
        if status.signal() != Some(SIGKILL) {
            // It exited just before the kill.
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            assert!(status.success(), "a run failed after kills: {err}");
            completed += 1;
            continue;
        }
        kills += 1;
        delays.push(at);
        if matches!(kill, Kill::AfterFeed(_)) {
            late_kills += 1;
        }
        if len(&scd2_feed) != before {
            in_feed += 1;
        } else if staged() {
            in_checkpoint += 1;
        }
    }
    let final_run = Command::new(env!("CARGO_BIN_EXE_scdflow"))
        .args(["run", "pipeline.sql", "--state", "state", "--out", "out"])
        .current_dir(&work)
        .output()
        .unwrap();
    assert!(final_run.status.success(), "{}", stderr(&final_run));
    let stdout = String::from_utf8_lossy(&final_run.stdout);
    assert!(
        stdout.contains(&format!("state: {FILES} commits")),
        "{stdout}"
    );
    delays.sort();
    println!(
        "{kills} kills in {attempts} runs ({completed} completed); typical run {typical:?}; \
         kills {:?} ..= {:?} after the spawn, {late_kills} aimed at the last phase; \
         {in_checkpoint} left a staged checkpoint, {in_feed} a changed change feed",
        delays.first().unwrap(),
        delays.last().unwrap()
    );

    same_outputs(&reference, &work, FILES);
}

/// `work`'s outputs after `files` commits are `reference`'s (tables byte for byte, every
/// commit's change rows once, the same metrics), and its state holds one base checkpoint, its
/// deltas and nothing staged.
fn same_outputs(reference: &Path, work: &Path, files: usize) {
    let (a, b) = (reference.join("out"), work.join("out"));
    for target in ["scd1", "scd2"] {
        let table = format!("{target}.csv");
        assert!(
            read(&a.join(&table)) == read(&b.join(&table)),
            "{table} differs"
        );
        let changes = format!("{target}.changes.csv");
        let (fa, fb) = (feed(&a.join(&changes)), feed(&b.join(&changes)));
        let all: Vec<u64> = (1..=files as u64).collect();
        assert_eq!(fa.keys().copied().collect::<Vec<_>>(), all, "{changes}");
        assert_eq!(fb.keys().copied().collect::<Vec<_>>(), all, "{changes}");
        for (v, rows) in &fa {
            assert!(rows == &fb[v], "{changes}: commit {v} differs");
        }
    }
    assert_eq!(
        metrics_without_latency(&read(&a.join("metrics.json"))),
        metrics_without_latency(&read(&b.join("metrics.json")))
    );
    let mut left: Vec<String> = std::fs::read_dir(work.join("state"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| !name.starts_with("delta-"))
        .collect();
    left.sort();
    assert_eq!(left.len(), 4, "{left:?}");
    assert_eq!(
        [&left[0], &left[1], &left[3]],
        ["LOCK", "MANIFEST", "metrics.jsonl"]
    );
    assert!(
        left[2].starts_with("ckpt-") && !left[2].ends_with(".tmp"),
        "{left:?}"
    );
}

/// `scdflow run --follow` killed at random instants while files arrive, restarted each time
/// on 1 or 2 workers (so some restarts compact the checkpoint chain), then one plain durable
/// run: the outputs are one uninterrupted run's.
#[test]
fn killed_follow_runs_lose_and_duplicate_nothing() {
    const FOLLOWED: usize = 12;
    let dir = tempfile::tempdir().unwrap();
    let (reference, work, files) = workload(dir.path(), FOLLOWED, "--keys 3000 --seed 11");
    let mut rng = ChaCha8Rng::seed_from_u64(7_2026);
    kill_following(&work, &files, &mut rng, |rng| {
        let workers = if rng.random_bool(0.5) { "1" } else { "2" };
        [
            "run",
            "pipeline.sql",
            "--state",
            "state",
            "--out",
            "out",
            "-w",
            workers,
        ]
        .map(String::from)
        .to_vec()
    });
    succeed(
        &work,
        &["run", "pipeline.sql", "--state", "state", "--out", "out"],
    );
    same_outputs(&reference, &work, FOLLOWED);
}

/// `scdflow run --follow --warehouse` killed at random instants while files arrive: after a
/// last durable run each published table holds one uninterrupted run's rows, and its log holds
/// each scdflow commit exactly once, as the version of its number (`txn` = version).
#[test]
fn killed_runs_publishing_to_a_warehouse_lose_and_duplicate_nothing() {
    const FOLLOWED: usize = 10;
    let dir = tempfile::tempdir().unwrap();
    let (reference, work, files) = workload(dir.path(), FOLLOWED, "--keys 3000 --seed 12");
    std::fs::create_dir_all(work.join("w/main/default")).unwrap();
    let run = [
        "run",
        "pipeline.sql",
        "--state",
        "state",
        "--warehouse",
        "w",
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(12_2026);
    kill_following(&work, &files, &mut rng, |_| run.map(String::from).to_vec());
    succeed(&work, &run);
    for (target, order) in [("scd1", "k"), ("scd2", "k, __START_AT")] {
        let query = format!("SELECT * FROM {target} ORDER BY {order}");
        let table = succeed(
            &work,
            &["sql", "--warehouse", "w", "--format", "csv", &query],
        );
        let file = read(&reference.join(format!("out/{target}.csv")));
        assert!(table.as_bytes() == file, "{target} differs");
        let log = work.join(format!("w/main/default/{target}/_delta_log"));
        for version in 1..=FOLLOWED as u64 {
            let entry = String::from_utf8(read(&log.join(format!("{version:020}.json")))).unwrap();
            let txn = (entry.lines())
                .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
                .find_map(|action| action.get("txn").cloned())
                .expect("a txn action");
            let app = txn["appId"].as_str().unwrap();
            assert!(app.starts_with(&format!("scdflow:{target}:")), "{entry}");
            assert_eq!(
                txn["version"], version,
                "{target} version {version}: {entry}"
            );
        }
        let next = log.join(format!("{:020}.json", FOLLOWED + 1));
        if next.exists() {
            let entry = String::from_utf8_lossy(&read(&next)).into_owned();
            panic!("{target}: a version past the last commit: {entry}");
        }
    }
}

/// Eight `scdflow --follow` runs (arguments from `args`) on `work`, each killed at a random
/// instant while `files` arrive one to three at a time; then every file not added yet is added.
/// The kill lands in a step, an idle poll, or a restart.
fn kill_following(
    work: &Path,
    files: &[PathBuf],
    rng: &mut ChaCha8Rng,
    mut args: impl FnMut(&mut ChaCha8Rng) -> Vec<String>,
) {
    let mut added = 0;
    for _ in 0..8 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_scdflow"))
            .args(args(rng))
            .args(["--follow", "--poll", "0.02", "--tables-every", "0"])
            .current_dir(work)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn scdflow");
        for _ in 0..rng.random_range(1..4) {
            if added < files.len() {
                add(work, &files[added]);
                added += 1;
            }
            std::thread::sleep(Duration::from_millis(rng.random_range(5..150)));
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }
    files[added..].iter().for_each(|f| add(work, f));
}

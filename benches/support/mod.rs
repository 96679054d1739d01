//! What the benchmarks that run the release binary share: running it, reading the metrics log
//! of a durable run, and a peer's JSON line.

// Each benchmark uses a part of what is here.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The release binary the benchmark measures.
pub const SCDFLOW: &str = env!("CARGO_BIN_EXE_scdflow");

/// Runs `cmd` and fails unless it succeeds.
pub fn run_ok(cmd: &mut Command) {
    let output = cmd.output().expect("run");
    assert!(output.status.success(), "{cmd:?}: {output:?}");
}

/// Runs a peer and parses its last stdout line, a JSON object.
pub fn last_json(cmd: &mut Command) -> serde_json::Value {
    let output = cmd.output().expect("run the peer");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or("{}");
    serde_json::from_str(last).expect("the peer's JSON line")
}

/// Whether the metrics log records commit `version`'s latency.
pub fn latency_logged(log: &Path, version: u64) -> bool {
    let needle = format!("{{\"latency\":{{\"commit_version\":{version},");
    std::fs::read_to_string(log).is_ok_and(|text| text.contains(&needle))
}

/// The latencies (ms) the metrics log records for commits after `after`.
pub fn latencies(log: &Path, after: u64) -> Vec<f64> {
    let text = std::fs::read_to_string(log).expect("metrics log");
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            let l = v.get("latency")?;
            (l["commit_version"].as_u64()? > after).then(|| l["latency_ms"].as_f64())?
        })
        .collect()
}

/// The exact nearest-rank `q` quantile of `sorted` (ascending, not empty).
pub fn nearest(sorted: &[f64], q: f64) -> f64 {
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// A generated workload whose last `followed` commit files a `--follow` run is fed one at a
/// time: `-- EVENTS KEYS COMMITS FOLLOWED` (defaults 1000000 100000 100 10).
pub struct Followed {
    pub events: u64,
    pub keys: u64,
    pub commits: u64,
    pub followed: u64,
}

impl Followed {
    /// The workload the command line asks for; prints the command that runs `bench` so.
    pub fn from_args(bench: &str) -> Followed {
        let args: Vec<u64> = std::env::args()
            .skip(1)
            .filter_map(|a| a.parse().ok())
            .collect();
        let commits = args.get(2).copied().unwrap_or(100).max(2);
        let w = Followed {
            events: args.first().copied().unwrap_or(1_000_000),
            keys: args.get(1).copied().unwrap_or(100_000),
            commits,
            followed: args.get(3).copied().unwrap_or(10).clamp(1, commits - 1),
        };
        println!(
            "command: cargo bench --bench {bench} -- {} {} {} {}",
            w.events, w.keys, w.commits, w.followed
        );
        w
    }

    /// Runs `scdflow generate` into `gen` (10% deletes, displacement 1,000, seed 7); the
    /// arguments it ran with.
    pub fn generate(&self, gen: &Path) -> String {
        let generate = format!(
            "generate --out {} --events {} --keys {} --displacement 1000 --commits {} --seed 7",
            gen.display(),
            self.events,
            self.keys,
            self.commits
        );
        run_ok(Command::new(SCDFLOW).args(generate.split_whitespace()));
        generate
    }

    /// Moves the last `followed` commit files of `gen` aside, into `work/later`; their paths
    /// there, in commit order.
    pub fn hold_back(&self, gen: &Path, work: &Path) -> Vec<PathBuf> {
        let (events, later) = (gen.join("events"), work.join("later"));
        std::fs::create_dir_all(&later).expect("directory");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&events)
            .expect("events")
            .map(|e| e.expect("entry").path())
            .collect();
        files.sort();
        files[(self.commits - self.followed) as usize..]
            .iter()
            .map(|f| {
                let to = later.join(f.file_name().expect("name"));
                std::fs::rename(f, &to).expect("move");
                to
            })
            .collect()
    }
}

/// Puts the held-back commit file `file` into `events` whole (written beside, then renamed in);
/// the instant it appeared.
pub fn feed(file: &Path, events: &Path) -> Instant {
    let tmp = events.join(".incoming");
    std::fs::copy(file, &tmp).expect("copy");
    let fed = Instant::now();
    std::fs::rename(&tmp, events.join(file.file_name().expect("name"))).expect("rename");
    fed
}

/// A `scdflow run --follow` child that has said it is following: its first step (restoring the
/// state, reading published tables, writing the tables) is over, so a file fed now measures a
/// followed commit, not the start-up. Its stdout and stderr are read as it writes them, so a
/// long run never blocks on a full pipe.
pub struct Following {
    child: Child,
    stdout: JoinHandle<String>,
    stderr: JoinHandle<()>,
}

impl Following {
    /// Spawns `cmd` (a `run --follow`) and waits until it says it is following: the child, and
    /// how long its start-up took.
    pub fn start(cmd: &mut Command) -> (Following, Duration) {
        let spawned = Instant::now();
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn --follow");
        let mut out = child.stdout.take().expect("piped");
        let stdout = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = out.read_to_string(&mut text);
            text
        });
        // It says so on stderr, after its first step.
        let err = child.stderr.take().expect("piped");
        let (ready, said) = std::sync::mpsc::channel();
        let stderr = std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if line.starts_with("following new input") {
                    let _ = ready.send(());
                }
            }
        });
        said.recv_timeout(Duration::from_secs(300))
            .expect("--follow says it is following");
        let following = Following {
            child,
            stdout,
            stderr,
        };
        (following, spawned.elapsed())
    }

    /// Stops the child with SIGTERM (it finishes the commit under way) and returns what it
    /// wrote to stdout.
    pub fn stop(mut self) -> String {
        run_ok(Command::new("kill").args(["-TERM", &self.child.id().to_string()]));
        let status = self.child.wait().expect("--follow exits");
        assert!(status.success(), "--follow: {status:?}");
        self.stderr.join().expect("stderr reader");
        self.stdout.join().expect("stdout reader")
    }
}

/// Copies directory `from` (files and directories) to `to`, every file synced: a copy's dirty
/// pages would otherwise be written back by the first `fsync` of the run that appends to it,
/// inside a commit's latency.
pub fn copy_synced(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("directory");
    for entry in std::fs::read_dir(from).expect("directory") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_synced(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy");
            std::fs::File::open(&target)
                .and_then(|f| f.sync_all())
                .expect("sync");
        }
    }
}

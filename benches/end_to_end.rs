//! What users run, end to end: `scdflow run` over generated files (wall time and peak RSS, 1 and
//! 2 workers, SCD1 and SCD2) beside DuckDB computing the same final table from the same files in
//! one query and beside the engine alone on the same workload (`scdflow bench`: the session
//! `run` drives, fed events the same generator makes in memory, same seed and commit size, on
//! as many workers; what reading, preparing and writing add is the ratio between them), and
//! `scdflow run --follow` applying the last commits one at a time onto the state of the
//! others, on 1 and on 2 workers (per-commit latency from the input being complete to the
//! change feed being synced, and the bytes each checkpoint wrote) beside DuckDB's incremental
//! peer. A followed run is fed once it says it is following; its start-up
//! (restoring the state, writing the tables) is printed apart.
//!
//! Command: `cargo bench --bench end_to_end [-- EVENTS KEYS COMMITS FOLLOWED]` (defaults 1000000
//! 100000 100 10). Workload: `scdflow generate --events EVENTS --keys KEYS --displacement 1000
//! --commits COMMITS --seed 7` (10% deletes), CSV. The followed commits are the last FOLLOWED
//! files; the run before them builds the state from the others. `EVENTS / COMMITS` events per
//! commit: 10,000 with the defaults, 1,000 with `-- 1000000 100000 1000 20`.
//!
//! Every figure comes from running the release binary as a child process (peak RSS from
//! `wait4`), so it is the product's cost, reading and writing included. The DuckDB figures come
//! from `benches/peers/duckdb_incremental.py` (`--final` for the one-query table; `--preload` for
//! the incremental commits), skipped with a note when `python3 -c 'import duckdb'` fails.
//! Figures drift by ±30% on this shared 2-core machine: compare the ratios of one run.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{
    copy_synced, feed, last_json, latencies, latency_logged, nearest, Followed, Following, SCDFLOW,
};

fn main() {
    let w = Followed::from_args("end_to_end");
    let (events, commits, followed) = (w.events, w.commits, w.followed);
    let dir = tempfile::tempdir().expect("temporary directory");
    let gen = dir.path().join("gen");
    let generate = w.generate(&gen);
    println!(
        "workload: scdflow {generate} ({} events per commit); machine: {} cores",
        events / commits,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let duckdb = duckdb_available();

    println!("\n## scdflow run over all {commits} files (the final table, change feed, metrics)");
    println!(
        "the engine alone: scdflow {}",
        engine_alone_command(&w, "FLOW", "WORKERS")
    );
    println!("| flow | system | wall s | peak RSS MiB | vs DuckDB wall | vs the engine alone |");
    println!("|---|---|---|---|---|---|");
    for flow in ["scd1", "scd2"] {
        let peer = duckdb.then(|| duckdb_final(&gen, flow));
        if let Some((seconds, rss)) = peer {
            println!(
                "| {flow} | DuckDB 1 thread, one query | {seconds:.2} | {rss:.0} | 1.00 | – |"
            );
        }
        for workers in ["1", "2"] {
            let out = dir.path().join(format!("out-{flow}-{workers}"));
            let mut cmd = Command::new(SCDFLOW);
            cmd.args(["run", &format!("{}/{flow}.sql", gen.display())])
                .args(["--out", out.to_str().expect("utf-8 path"), "-w", workers]);
            let (wall, rss) = measured(&mut cmd);
            let ratio = peer.map_or("–".into(), |(s, _)| {
                format!("{:.2}", wall.as_secs_f64() / s)
            });
            let alone = engine_alone(&w, flow, workers);
            println!(
                "| {flow} | scdflow run -w {workers} | {:.2} | {:.0} | {ratio} | {:.2} |",
                wall.as_secs_f64(),
                rss,
                wall.as_secs_f64() / alone
            );
            println!("| {flow} | the engine alone, -w {workers} | {alone:.2} | – | – | 1.00 |");
        }
    }

    println!(
        "\n## scdflow run --follow (SCD2): {followed} commits applied one at a time onto the \
         state of the first {}",
        commits - followed
    );
    follow(&gen, dir.path(), &w, duckdb);
}

/// The `scdflow` arguments of [`engine_alone`].
fn engine_alone_command(w: &Followed, flow: &str, workers: &str) -> String {
    format!(
        "bench --events {} --keys {} --displacement 1000 --batch {} --flows {flow} --systems \
         scdflow --budget 0 --seed 7 -w {workers}",
        w.events,
        w.keys,
        w.events / w.commits
    )
}

/// The engine alone on the same workload: `scdflow bench` (the session `run` drives, its
/// events made in memory by the same generator, seed and commit size, its outputs counted and
/// dropped) on `workers` workers; its seconds for all the events.
fn engine_alone(w: &Followed, flow: &str, workers: &str) -> f64 {
    let output = Command::new(SCDFLOW)
        .args(engine_alone_command(w, flow, workers).split_whitespace())
        .output()
        .expect("scdflow bench");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let rate = (stdout.lines())
        .filter(|line| line.contains(" scdflow "))
        .find_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "ev/s")?;
            words.get(at.checked_sub(1)?)?.parse::<f64>().ok()
        })
        .unwrap_or_else(|| panic!("no rate in the bench's output: {stdout}"));
    w.events as f64 / rate
}

/// Builds the state from all but the last `followed` files, then follows them one at a time on
/// 1 and on 2 workers, each run from that state.
fn follow(gen: &Path, work: &Path, w: &Followed, duckdb: bool) {
    let (commits, followed) = (w.commits, w.followed);
    let held = w.hold_back(gen, work);
    let (base, base_out) = (work.join("state"), work.join("follow-out"));
    let pipeline = format!("{}/scd2.sql", gen.display());
    let started = Instant::now();
    let mut cmd = Command::new(SCDFLOW);
    cmd.args(["run", &pipeline, "--state", base.to_str().expect("utf-8")])
        .args(["--out", base_out.to_str().expect("utf-8")]);
    let output = cmd.output().expect("first durable run");
    assert!(output.status.success(), "{output:?}");
    println!(
        "first durable run ({} commits): {:.2} s; {}",
        commits - followed,
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .last()
            .unwrap_or("")
    );
    // A state continues its outputs where they are: each run starts from the same copy, put
    // back in place.
    let (kept, kept_out) = (work.join("state.kept"), work.join("follow-out.kept"));
    copy_synced(&base, &kept);
    copy_synced(&base_out, &kept_out);
    let mut p50 = f64::NAN;
    for workers in [1, 2] {
        for (from, to) in [(&kept, &base), (&kept_out, &base_out)] {
            std::fs::remove_dir_all(to).expect("remove");
            copy_synced(from, to);
        }
        let ms = follow_once(gen, &pipeline, &base, &base_out, workers, &held, w);
        if workers == 1 {
            p50 = nearest(&ms, 0.5);
        }
    }
    // The peer reads every file and applies the last `followed` incrementally.
    for f in &held {
        let name = f.file_name().expect("name");
        std::fs::copy(f, gen.join("events").join(name)).expect("copy");
    }
    if duckdb {
        let mut cmd = Command::new("python3");
        cmd.arg(peer_script())
            .args(["--events-dir", gen.to_str().expect("utf-8"), "--scd", "2"])
            .args(["--threads", "1", "--json", "--tail", "0"])
            .args(["--preload", &(commits - followed).to_string()]);
        let json = last_json(&mut cmd);
        let us = |k: &str| json[k].as_f64().unwrap_or(f64::NAN) / 1e3;
        println!(
            "DuckDB incremental (in memory, 1 thread; append + recompute the touched keys, one \
             transaction per commit): p50 {:.1} ms, p99 {:.1} ms",
            us("p50_us"),
            us("p99_us")
        );
        println!(
            "ratio DuckDB / scdflow (1 worker) at p50: {:.1}x",
            us("p50_us") / p50
        );
    }
}

/// One `--follow` run on `workers` workers over `state`: it is fed the `held` files one at a
/// time once it says it is following (its start-up, restoring the state and writing the tables,
/// is timed apart), each file after the one before is in the metrics log; the fed files are
/// taken out again afterwards. Prints and returns the commits' latencies (ms, sorted).
fn follow_once(
    gen: &Path,
    pipeline: &str,
    state: &Path,
    out: &Path,
    workers: usize,
    held: &[PathBuf],
    w: &Followed,
) -> Vec<f64> {
    let (commits, followed) = (w.commits, w.followed);
    let (following, start_up) = Following::start(
        Command::new(SCDFLOW)
            .args(["run", pipeline, "--state", state.to_str().expect("utf-8")])
            .args([
                "--out",
                out.to_str().expect("utf-8"),
                "-w",
                &workers.to_string(),
            ])
            .args(["--follow", "--tables-every", "3600"]),
    );
    let log = state.join("metrics.jsonl");
    let events = gen.join("events");
    for (i, f) in held.iter().enumerate() {
        let version = commits - followed + i as u64 + 1;
        feed(f, &events);
        let deadline = Instant::now() + Duration::from_secs(120);
        while !latency_logged(&log, version) {
            assert!(Instant::now() < deadline, "commit {version} never came");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let stdout = following.stop();
    for f in held {
        std::fs::remove_file(events.join(f.file_name().expect("name"))).expect("fed file");
    }
    let steps: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("commit "))
        .collect();
    let mut ms = latencies(&log, commits - followed);
    ms.sort_by(f64::total_cmp);
    let nearest = |q: f64| nearest(&ms, q);
    println!(
        "scdflow --follow -w {workers} (ready after {:.2} s: restoring the state, writing the \
         tables): {} commits, latency (input complete -> change feed synced) p50 {:.1} ms, \
         p99 {:.1} ms, max {:.1} ms",
        start_up.as_secs_f64(),
        ms.len(),
        nearest(0.5),
        nearest(0.99),
        ms.last().copied().unwrap_or(0.0)
    );
    for step in steps.iter().take(3) {
        println!("  {step}");
    }
    if steps.len() > 3 {
        println!("  ... ({} steps)", steps.len());
    }
    ms
}

fn peer_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/duckdb_incremental.py")
}

fn duckdb_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import duckdb"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!("(DuckDB peer skipped: `python3 -m pip install --user duckdb` to add it)");
    }
    ok
}

/// DuckDB's one-query final table of `flow` over the generated files: seconds, peak RSS MiB.
fn duckdb_final(gen: &Path, flow: &str) -> (f64, f64) {
    let mut cmd = Command::new("python3");
    cmd.arg(peer_script())
        .args([
            "--events-dir",
            gen.to_str().expect("utf-8"),
            "--scd",
            &flow[3..],
        ])
        .args(["--threads", "1", "--final", "--json"]);
    let json = last_json(&mut cmd);
    (
        json["seconds"].as_f64().unwrap_or(f64::NAN),
        json["peak_rss_mib"].as_f64().unwrap_or(f64::NAN),
    )
}

/// Runs `cmd` to completion: its wall time and peak RSS in MiB (the kernel's, from `wait4`).
// `wait4` reaps the child, which `Child::wait` cannot do while also reporting its rusage.
#[allow(clippy::zombie_processes)]
fn measured(cmd: &mut Command) -> (Duration, f64) {
    let started = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn");
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value, and `wait4` writes it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    // SAFETY: `pid` is our child, not yet waited for; both pointers are to live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    assert_eq!(waited, pid, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{cmd:?} failed"
    );
    (wall, usage.ru_maxrss as f64 / 1024.0)
}

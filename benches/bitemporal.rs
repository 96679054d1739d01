//! Bitemporal ingestion throughput and per-commit latency, against the bitemporal state machine
//! alone and against SCD2 on the same events, all measured in the same run.
//!
//! Command: `cargo bench --bench bitemporal [-- EVENTS KEYS BATCH WORKERS]` (defaults 1000000
//! 100000 10000 1).
//! Workload (`scdflow::gen`, seed 42): EVENTS events over KEYS keys, 10% deletes, two STRING
//! payload columns, in EVENTS / BATCH commits of BATCH events. Business time (`seq`) is in order
//! except for 10% stragglers, each arriving `10 * BATCH` positions (10 commits) late; system time
//! is the arrival position except for 1% of events, late in system time by a lag uniform in
//! `1 ..= 10 * BATCH` positions (up to 10 commits back), which the engine must splice into
//! system history it has already emitted. Reported per run: events/s, per-commit latency
//! percentiles (HdrHistogram, microseconds: from handing the commit to the inputs until the
//! output frontier passes it, or one `apply` for the state loops), the table's size, and the RSS
//! at the start of the run -> its peak during the run (VmHWM, reset before each run). Both
//! include the input held in memory; the engine runs first, so its figures are its own, while
//! later runs start with whatever the allocator kept from earlier ones (their growth is a lower
//! bound of their need).
//! - `bitemporal`: the engine (`runtime::execute`, one target, WORKERS workers);
//! - `bt state loop`: `engine::BitemporalState` applied commit by commit in one thread, without
//!   timely: the physical-limit proxy for the engine;
//! - `scd2`, `scd2 state loop`: the same, for an SCD2 target on the same events (system time
//!   ignored): what bitemporal history costs on top of business history.
//!
//! Machines here have 2 noisy cores: compare the ratios printed in one run.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use hdrhistogram::Histogram;
use scdflow::engine::{BitemporalState, CdcState, CommitStats, Scd2State};
use scdflow::gen::{self, Workload};
use scdflow::plan::{ScdType, Target};
use scdflow::runtime::{execute, CommitEvents};
use std::time::{Duration, Instant};

/// One measured run.
struct Run {
    latencies: Vec<Duration>,
    total: Duration,
    /// Rows in the table after the last commit.
    rows: isize,
    /// RSS at the start of the run and its peak during the run, in MiB (`None` without /proc).
    rss_mib: Option<(u64, u64)>,
}

impl Run {
    fn rate(&self, events: u64) -> f64 {
        events as f64 / self.total.as_secs_f64()
    }

    fn line(&self, name: &str, events: u64) {
        let mut h = Histogram::<u64>::new(3).expect("histogram");
        for l in &self.latencies {
            h.record(l.as_micros().max(1) as u64).expect("record");
        }
        let rss = self.rss_mib.map_or_else(
            || "?".to_string(),
            |(start, peak)| format!("{start} -> {peak}"),
        );
        println!(
            "  {name:<16} {:>9.0} ev/s  {:>6.2} s  p50 {:>7} µs  p90 {:>7}  p99 {:>7}  p99.9 {:>7}  max {:>8}  rows {:>8}  RSS {rss:>12} MiB",
            self.rate(events),
            self.total.as_secs_f64(),
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.9),
            h.value_at_quantile(0.99),
            h.value_at_quantile(0.999),
            h.max(),
            self.rows,
        );
    }
}

/// Resets the peak RSS to the current RSS (Linux `clear_refs` 5) and returns the current RSS in
/// MiB, which includes the input and whatever the allocator kept from earlier runs.
fn reset_peak_rss() -> Option<u64> {
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    status_mib("VmRSS:")
}

/// A `/proc/self/status` field given in kB, in MiB (VmHWM: the peak RSS since the last reset).
fn status_mib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

fn engine(target: &Target, commits: Vec<CommitEvents>, workers: usize) -> Run {
    let start_mib = reset_peak_rss();
    let started = Instant::now();
    let updates = execute(std::slice::from_ref(target), commits, workers, None).expect("execute");
    let total = started.elapsed();
    let rss_mib = start_mib.zip(status_mib("VmHWM:"));
    Run {
        total,
        latencies: updates.latencies,
        rows: updates.rows[0].iter().map(|(_, _, diff)| diff).sum(),
        rss_mib,
    }
}

fn state_loop(target: &Target, commits: Vec<CommitEvents>) -> Run {
    let mut state: Box<dyn CdcState> = match target.scd {
        ScdType::Bitemporal => Box::new(BitemporalState::new(
            target.image_len,
            target.tracked.clone(),
            target.partial,
        )),
        ScdType::Type2 => Box::new(Scd2State::new(
            target.image_len,
            target.tracked.clone(),
            target.partial,
            None,
        )),
        ScdType::Type1 => unreachable!("SCD1 is not compared here"),
    };
    let start_mib = reset_peak_rss();
    let mut latencies = Vec::with_capacity(commits.len());
    let mut rows = 0;
    let mut out = Vec::new();
    let started = Instant::now();
    for commit in commits {
        let t = Instant::now();
        out.clear();
        let events = commit.events.into_iter().next().unwrap_or_default();
        state.apply(events, 0, &mut out, &mut CommitStats::default());
        latencies.push(t.elapsed());
        rows += out.iter().map(|(_, diff)| diff).sum::<isize>();
    }
    let total = started.elapsed();
    Run {
        total,
        latencies,
        rows,
        rss_mib: start_mib.zip(status_mib("VmHWM:")),
    }
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let events = args.first().copied().unwrap_or(1_000_000);
    let keys = args.get(1).copied().unwrap_or(100_000);
    let batch = args.get(2).copied().unwrap_or(10_000).max(1);
    let workers = args.get(3).copied().unwrap_or(1).max(1) as usize;
    println!("command: cargo bench --bench bitemporal -- {events} {keys} {batch} {workers}");
    let w = Workload {
        events,
        keys,
        displacement: 0,
        stragglers: 0.1,
        straggler_distance: 10 * batch,
        system_late: 0.01,
        system_lag: 10 * batch,
        commits: events.div_ceil(batch),
        ..Workload::default()
    };
    println!("workload: {w}");
    println!("{workers} worker(s) for the engine, {batch} events per commit:");

    let bt = gen::target(&w, ScdType::Bitemporal);
    let bt_commits = gen::events(&w, &bt);
    let fed: u64 = bt_commits.iter().map(|c| c.events[0].len() as u64).sum();
    // The engine first: its RSS figures are then its own (see the module docs).
    let bt_engine = engine(&bt, bt_commits.clone(), workers);
    bt_engine.line("bitemporal", fed);
    let bt_loop = state_loop(&bt, bt_commits);
    bt_loop.line("bt state loop", fed);

    let scd2 = gen::target(&w, ScdType::Type2);
    let scd2_commits = gen::events(&w, &scd2);
    let scd2_engine = engine(&scd2, scd2_commits.clone(), workers);
    scd2_engine.line("scd2", fed);
    let scd2_loop = state_loop(&scd2, scd2_commits);
    scd2_loop.line("scd2 state loop", fed);

    println!(
        "  bitemporal engine: {:.2}x the bt state loop's throughput, {:.2}x SCD2's (engine), \
         {:.1}x its table; bt state loop: {:.2}x the SCD2 state loop's throughput",
        bt_engine.rate(fed) / bt_loop.rate(fed),
        bt_engine.rate(fed) / scd2_engine.rate(fed),
        bt_engine.rows as f64 / scd2_engine.rows.max(1) as f64,
        bt_loop.rate(fed) / scd2_loop.rate(fed),
    );
    let mut failed = false;
    for (what, engine, state) in [
        ("bitemporal", &bt_engine, &bt_loop),
        ("scd2", &scd2_engine, &scd2_loop),
    ] {
        if engine.rows != state.rows {
            eprintln!(
                "error: {what}: the engine's table has {} rows, the state loop's {}",
                engine.rows, state.rows
            );
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}

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

use scdflow::bench::{self, Feed, Measurement, Summary, System};
use scdflow::gen::{self, Workload};
use scdflow::plan::{ScdType, Target};
use scdflow::runtime::{execute, CommitEvents};
use std::time::Instant;

/// Prints one run's line: throughput, time, percentiles, table size and memory (MiB).
fn line(name: &str, m: &Measurement) {
    let h = Summary::of(&m.latencies);
    let rate = m.events as f64 / m.total.as_secs_f64();
    let rss = m.rss.map_or_else(
        || "?".to_string(),
        |r| format!("{} -> {}", r.start >> 20, r.peak >> 20),
    );
    println!(
        "  {name:<16} {rate:>9.0} ev/s  {:>6.2} s  p50 {:>7} µs  p90 {:>7}  p99 {:>7}  p99.9 {:>7}  max {:>8}  rows {:>8}  RSS {rss:>12} MiB",
        m.total.as_secs_f64(),
        h.p50_us,
        h.p90_us,
        h.p99_us,
        h.p999_us,
        h.max_us,
        m.rows,
    );
}

fn rate(m: &Measurement) -> f64 {
    m.events as f64 / m.total.as_secs_f64()
}

/// The engine as `scdflow run` executes it (`runtime::execute`, which keeps every update).
fn engine(target: &Target, commits: Vec<CommitEvents>, workers: usize) -> Measurement {
    let events = commits.iter().map(|c| c.events[0].len() as u64).sum();
    let planned = commits.len();
    let started = Instant::now();
    let (updates, rss) =
        bench::during(|| execute(std::slice::from_ref(target), commits, workers, None));
    let updates = updates.expect("execute");
    Measurement {
        total: started.elapsed(),
        latencies: updates.latencies,
        planned,
        events,
        rows: updates.rows[0]
            .iter()
            .map(|(_, _, diff)| *diff as i64)
            .sum(),
        rss,
        state: None,
    }
}

fn state_loop(target: &Target, commits: Vec<CommitEvents>) -> Measurement {
    bench::measure(System::StateLoop, target, commits, Feed::closed(1)).expect("state loop")
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
    // The engine first: its RSS figures are then its own (see the module docs).
    let bt_engine = engine(&bt, bt_commits.clone(), workers);
    line("bitemporal", &bt_engine);
    let bt_loop = state_loop(&bt, bt_commits);
    line("bt state loop", &bt_loop);

    let scd2 = gen::target(&w, ScdType::Type2);
    let scd2_commits = gen::events(&w, &scd2);
    let scd2_engine = engine(&scd2, scd2_commits.clone(), workers);
    line("scd2", &scd2_engine);
    let scd2_loop = state_loop(&scd2, scd2_commits);
    line("scd2 state loop", &scd2_loop);

    println!(
        "  bitemporal engine: {:.2}x the bt state loop's throughput, {:.2}x SCD2's (engine), \
         {:.1}x its table; bt state loop: {:.2}x the SCD2 state loop's throughput",
        rate(&bt_engine) / rate(&bt_loop),
        rate(&bt_engine) / rate(&scd2_engine),
        bt_engine.rows as f64 / scd2_engine.rows.max(1) as f64,
        rate(&bt_loop) / rate(&scd2_loop),
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

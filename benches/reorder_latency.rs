//! Per-commit latency under heavy reordering, with two baselines measured in the same run: a
//! thin main over `scdflow::bench`, whose docs say exactly what is measured.
//!
//! Command: `cargo bench --bench reorder_latency [-- EVENTS KEYS BATCH WORKERS]` (defaults
//! 200000 100000 1000 1). It runs the displacement sweep of
//! `scdflow bench --events EVENTS --keys KEYS --batch BATCH --workers WORKERS` (D in {0, 1000,
//! 100000}; the CLI adds the history sweep over K, an open loop, a report with plots and the
//! DuckDB peer): for SCD1, SCD2, bitemporal and snapshot (SCD2 from a full snapshot per commit)
//! flows, `scdflow::gen` workloads (seed 42, 10% deletes, two STRING payload columns, 1% of
//! events late in system time by up to 10 commits), fed in commits of BATCH events to
//! - `scdflow`: the engine's operators on WORKERS timely workers;
//! - `state loop`: the engine's per-key state machines in one thread (the physical-limit proxy);
//! - `dd reduce`: a differential `reduce` per key re-evaluating the reference model (what a DD
//!   user would write first).
//!
//! Per commit it records the time from handing the commit to the inputs until the output
//! frontier passes it (HdrHistogram, microseconds), and prints throughput, p50 / p90 / p99 /
//! p99.9 / max, peak RSS, an estimate of state per key and the ratios. Machines here have 2
//! noisy cores: compare the ratios printed in one run.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use scdflow::bench::{markdown_table, ratios_table, Flow, Suite, System};
use scdflow::gen::Workload;
use std::time::Duration;

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let events = args.first().copied().unwrap_or(200_000);
    let keys = args.get(1).copied().unwrap_or(100_000);
    let batch = args.get(2).copied().unwrap_or(1_000).max(1);
    let workers = args.get(3).copied().unwrap_or(1).max(1) as usize;
    println!("command: cargo bench --bench reorder_latency -- {events} {keys} {batch} {workers}");
    let suite = Suite {
        workload: Workload {
            events,
            system_late: 0.01,
            system_lag: 10 * batch,
            ..Workload::default()
        },
        default_straggler_distance: true,
        batch,
        displacements: vec![0, 1_000, 100_000],
        keys: vec![keys],
        flows: Flow::ALL.to_vec(),
        systems: System::ALL.to_vec(),
        workers,
        rate: None,
        budget: Some(Duration::from_secs(30)),
        warmup: 0,
    };
    println!(
        "{workers} worker(s) for scdflow and dd reduce, {batch} events per commit, {}",
        suite.pacing()
    );
    let records = suite
        .run(|w| println!("workload: {w}"), |r| println!("  {r}"))
        .unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(1)
        });
    println!("\n{}", markdown_table(&records));
    println!("{}", ratios_table(&records));
}

//! Ingest throughput of the SCD1 and SCD2 operators, against the reference model in the same run.
//!
//! Command: `cargo bench --bench ingest [-- EVENTS KEYS BATCH]` (defaults 1000000 100000 1000).
//! Workload (`scdflow::gen`, seed 42): EVENTS upserts/deletes (10% deletes) over KEYS keys, two
//! STRING payload columns, BIGINT sequences displaced by up to 1000 positions from their order
//! (out-of-order arrival), fed in EVENTS / BATCH equal commits of about BATCH events. Reported:
//! events/s of the engine with 1 and 2 workers, and of the reference model evaluating the whole
//! event set once (batch, no incremental maintenance): the ratio says what incremental,
//! per-commit maintenance costs relative to one batch pass.
//! Machines here have 2 noisy cores: compare ratios, not absolute figures, across runs.

// The binary's allocator, so the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use scdflow::gen::{self, Workload};
use scdflow::plan::ScdType;
use scdflow::runtime::execute;
use std::time::Instant;

const DISPLACEMENT: u64 = 1000;

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(1_000_000);
    let keys = args.get(1).copied().unwrap_or(100_000);
    let batch = args.get(2).copied().unwrap_or(1_000).max(1);
    println!("command: cargo bench --bench ingest -- {n} {keys} {batch}");
    println!("workload: {n} events, {keys} keys, 10% deletes, displacement <= {DISPLACEMENT}, {batch} events/commit");
    let workload = Workload {
        events: n,
        keys,
        deletes: 0.1,
        displacement: DISPLACEMENT,
        commits: (n / batch).max(1),
        ..Workload::default()
    };
    for scd in [ScdType::Type1, ScdType::Type2] {
        let t = gen::target(&workload, scd);
        let commits = gen::events(&workload, &t);
        let all: Vec<_> = commits
            .iter()
            .flat_map(|c| c.events.iter().flatten().cloned())
            .collect();
        let started = Instant::now();
        let rows = scdflow::model::evaluate(&t, &all).len();
        let model = n as f64 / started.elapsed().as_secs_f64();
        println!(
            "{scd:?}: model (one batch pass): {:>10.0} events/s ({rows} rows)",
            model
        );
        for workers in [1, 2] {
            let commits = commits.clone();
            let started = Instant::now();
            let updates =
                execute(std::slice::from_ref(&t), commits, workers, None).expect("execute");
            let rate = n as f64 / started.elapsed().as_secs_f64();
            let live = scdflow::driver::final_rows(&t, &updates.rows[0]).len();
            assert_eq!(live, rows, "engine and model disagree");
            println!(
                "{scd:?}: engine, {workers} worker(s): {rate:>10.0} events/s  = {:.2}x model",
                rate / model
            );
        }
    }
}

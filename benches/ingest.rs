//! Ingest throughput of the SCD1 and SCD2 operators, against the reference model in the same run.
//!
//! Command: `cargo bench --bench ingest [-- EVENTS KEYS BATCH]` (defaults 1000000 100000 1000).
//! Workload: EVENTS upserts/deletes (10% deletes) over KEYS keys, two STRING payload columns,
//! INT sequences displaced by up to 1000 positions from their order (out-of-order arrival),
//! fed in commits of BATCH events. Reported: events/s of the engine with 1 and 2 workers, and of
//! the reference model evaluating the whole event set once (batch, no incremental maintenance):
//! the ratio says what incremental, per-commit maintenance costs relative to one batch pass.
//! Machines here have 2 noisy cores: compare ratios, not absolute figures, across runs.

// The binary's allocator, so the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use scdflow::event::{Event, EventKind};
use scdflow::plan::{ScdType, Target, TargetKind};
use scdflow::runtime::{execute, CommitEvents};
use scdflow::value::{DataType, Schema, Value};
use std::time::Instant;

const DISPLACEMENT: u64 = 1000;

/// splitmix64: a seeded generator, so every run measures the same events.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn events(n: u64, keys: u64) -> Vec<Event> {
    let mut rng = Rng(42);
    let mut order: Vec<(u64, u64)> = (0..n).map(|i| (i + rng.next() % DISPLACEMENT, i)).collect();
    order.sort_unstable();
    order
        .into_iter()
        .map(|(_, seq)| {
            let k = rng.next() % keys;
            let key = vec![Value::Int(k as i64)];
            let delete = rng.next() % 10 == 0;
            let (kind, image) = if delete {
                (EventKind::Delete, Vec::new())
            } else {
                let mut image = key.clone();
                image.push(Value::Str(format!("name{}", rng.next() % 1000)));
                image.push(Value::Str(format!("city{}", rng.next() % 100)));
                (EventKind::Upsert, image)
            };
            Event {
                seq: Value::Int(seq as i64),
                kind,
                key,
                image,
                authored: None,
            }
        })
        .collect()
}

fn target(scd: ScdType) -> Target {
    let mut cols = vec![
        ("k".to_string(), DataType::BigInt),
        ("name".to_string(), DataType::String),
        ("city".to_string(), DataType::String),
    ];
    if scd == ScdType::Type2 {
        cols.push(("__START_AT".to_string(), DataType::BigInt));
        cols.push(("__END_AT".to_string(), DataType::BigInt));
    }
    Target {
        kind: TargetKind::AutoCdc,
        name: "t".into(),
        schema: Schema::new(cols),
        image_len: 3,
        keys: vec![0],
        scd,
        sequence_type: DataType::BigInt,
        tracked: vec![true; 3],
        partial: false,
        tombstone_gc_seconds: 0,
        line: 1,
    }
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(1_000_000);
    let keys = args.get(1).copied().unwrap_or(100_000);
    let batch = args.get(2).copied().unwrap_or(1_000) as usize;
    println!("command: cargo bench --bench ingest -- {n} {keys} {batch}");
    println!("workload: {n} events, {keys} keys, 10% deletes, displacement <= {DISPLACEMENT}, {batch} events/commit");
    let all = events(n, keys);
    for scd in [ScdType::Type1, ScdType::Type2] {
        let t = target(scd);
        let started = Instant::now();
        let rows = scdflow::model::evaluate(&t, &all).len();
        let model = n as f64 / started.elapsed().as_secs_f64();
        println!(
            "{scd:?}: model (one batch pass): {:>10.0} events/s ({rows} rows)",
            model
        );
        for workers in [1, 2] {
            let commits: Vec<CommitEvents> = all
                .chunks(batch)
                .map(|c| CommitEvents {
                    events: vec![c.to_vec()],
                    timestamp: 0,
                    ..CommitEvents::default()
                })
                .collect();
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

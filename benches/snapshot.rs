//! Applying a new snapshot version incrementally versus recomputing the target from scratch.
//!
//! Command: `cargo bench --bench snapshot [-- ROWS CHANGED_PERCENT]` (defaults 1000000 1).
//! Workload: an SCD2 snapshot target keyed by an INT with a STRING column; version 1 has ROWS
//! rows; version 2 changes CHANGED_PERCENT% of them (a third updated, a third deleted, a third
//! new keys). Reported, with 1 and 2 workers: the time to apply version 2 after version 1 (the
//! snapshot diff plus the SCD2 operator, measured from version 1's completion to version 2's),
//! and, in the same run, the reference model recomputing the whole target from both snapshots.
//! The goal: after the read, the changed keys' work dominates, not the table's size.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use scdflow::plan::{ScdType, Target, TargetKind};
use scdflow::runtime::{execute, CommitEvents, Snapshot};
use scdflow::value::{DataType, Row, Schema, Value};
use std::sync::{Arc, Mutex};
use std::time::Instant;

fn target() -> Target {
    Target {
        name: "t".into(),
        kind: TargetKind::Snapshot,
        schema: Schema::new([
            ("k".to_string(), DataType::Int),
            ("city".to_string(), DataType::String),
            ("__START_AT".to_string(), DataType::BigInt),
            ("__END_AT".to_string(), DataType::BigInt),
        ]),
        image_len: 2,
        keys: vec![0],
        scd: ScdType::Type2,
        sequence_type: DataType::BigInt,
        system_sequence_type: None,
        tracked: vec![true, true],
        partial: false,
        tombstone_gc_seconds: 0,
        replace_where: None,
        view_of: None,
        properties: Default::default(),
        line: 1,
    }
}

fn row(k: i64, city: String) -> Row {
    Row::from(vec![Value::Int(k), Value::Str(city)])
}

fn versions(rows: i64, percent: i64) -> (Vec<Row>, Vec<Row>) {
    let v1: Vec<Row> = (0..rows)
        .map(|k| row(k, format!("city{}", k % 1000)))
        .collect();
    let changed = rows * percent / 100;
    let third = (changed / 3).max(1);
    let mut v2 = Vec::with_capacity(rows as usize);
    for k in 0..rows {
        if k < third {
            v2.push(row(k, format!("moved{k}")));
        } else if k >= third * 2 {
            v2.push(row(k, format!("city{}", k % 1000)));
        }
    }
    v2.extend((rows..rows + third).map(|k| row(k, "new".to_string())));
    (v1, v2)
}

fn main() {
    let args: Vec<i64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let rows = args.first().copied().unwrap_or(1_000_000);
    let percent = args.get(1).copied().unwrap_or(1);
    println!("command: cargo bench --bench snapshot -- {rows} {percent}");
    println!(
        "workload: SCD2 snapshot target, {rows} rows, {percent}% changed between versions 1 and 2"
    );
    let (v1, v2) = versions(rows, percent);
    let t = target();
    let started = Instant::now();
    let table =
        scdflow::model::snapshots(&t, &[(1, v1.clone()), (2, v2.clone())]).expect("unique keys");
    let model = started.elapsed().as_secs_f64();
    println!(
        "model, recompute from both snapshots: {model:>8.3} s ({} rows)",
        table.len()
    );
    for workers in [1, 2] {
        let commits = vec![
            CommitEvents {
                snapshots: vec![Some(Snapshot {
                    version: 1,
                    rows: v1.clone(),
                })],
                ..CommitEvents::default()
            },
            CommitEvents {
                snapshots: vec![Some(Snapshot {
                    version: 2,
                    rows: v2.clone(),
                })],
                ..CommitEvents::default()
            },
        ];
        let done = Arc::new(Mutex::new(Vec::new()));
        let clock = Arc::clone(&done);
        let started = Instant::now();
        let progress: scdflow::runtime::Progress =
            Box::new(move |_| clock.lock().unwrap().push(started.elapsed()));
        let updates =
            execute(std::slice::from_ref(&t), commits, workers, Some(progress)).expect("execute");
        let done = done.lock().unwrap().clone();
        let (first, second) = (done[0].as_secs_f64(), (done[1] - done[0]).as_secs_f64());
        let live = scdflow::driver::final_rows(&t, &updates.rows[0]).len();
        assert_eq!(live, table.len(), "engine and model disagree");
        println!(
            "engine, {workers} worker(s): version 1 (all rows new) {first:>8.3} s, version 2 (diff) {second:>8.3} s = {:.2}x the model's recompute",
            second / model
        );
    }
}

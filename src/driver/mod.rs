//! Runs a whole pipeline: read the sources into commits (one per input file), turn each
//! commit's rows into its targets' input — events for AUTO CDC flows, a full snapshot for
//! snapshot flows, rows for REPLACE USING flows — checking expectations on the way, execute the
//! targets on long-lived timely workers, and hand each commit's change feeds and metrics to a
//! sink as the commit completes ([`Driver`]); the tables are read from the engine's states.
//! [`evaluate`] keeps everything in memory.
//!
//! Invalid rows (D3): under [`OnInvalid::Fail`] the first one (in commit order, then line)
//! fails the run, after the commits before it were delivered (a sink that writes all or
//! nothing stages them); under [`OnInvalid::Quarantine`] they are set aside with their reason
//! and the run goes on.
//!
//! In a cluster ([`Options::cluster`]) the processes first agree on the pipeline and the options
//! that shape results, and each run on process 0's list of commits (`cluster`). Process `p` of
//! `n` reads commits `p`, `p + n`, ... (in commit order, from 0), and what it learns of them
//! (metrics, set-aside rows, warnings) travels to process 0 with the targets' updates, so
//! process 0's sink sees the whole run and the others' see empty commits. With [`Options::partitioned_output`] each process's sink gets
//! the change feeds of the keys its workers own instead, and process 0 still gets the metrics
//! of the whole run. A process that cannot read its share fails with its own error, and every
//! other process with [`crate::ErrorKind::Peer`]; under [`OnInvalid::Fail`] each process
//! reports the first invalid row of its own share.

mod cluster;
mod commit;
mod evaluation;
pub(crate) mod expect;
mod feeds;
pub mod flows;
mod metrics;
pub(crate) mod new_input;
mod report;
mod run;
mod versions;

pub use commit::{sources, CommitSource, ReadFrom, Span};
pub use evaluation::{evaluate, Evaluation, TargetResult};
pub use expect::ExpectationCount;
pub use flows::{FlowKind, FlowRef};
pub use metrics::{CommitLatency, FlowCommitMetrics, TableCommitMetrics};
pub use run::{CommitOutput, Driver, Resume, Sink};

use crate::io::RowError;
use crate::plan::Target;
use crate::runtime;
use crate::value::Row;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// What to do with invalid rows (D3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnInvalid {
    /// Fail the run with an error naming the file, line and column.
    #[default]
    Fail,
    /// Set the row aside (with its reason) and go on.
    Quarantine,
}

/// An invalid row set aside under [`OnInvalid::Quarantine`].
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Quarantined {
    /// The flow (or, for rows no flow reads directly, the table) the row was meant for.
    pub owner: String,
    /// The input file.
    pub file: PathBuf,
    /// The problem.
    pub error: RowError,
}

/// How to run a pipeline.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Worker threads (0 counts as 1), per process.
    pub workers: usize,
    /// What to do with invalid rows.
    pub on_invalid: OnInvalid,
    /// Overrides every target's `pipelines.cdc.tombstoneGCThresholdInSeconds` (0 = never).
    pub tombstone_gc_seconds: Option<u64>,
    /// Run as one process of a cluster: every process reads and validates the whole input and
    /// executes its workers' share; the targets' updates and counters reach process 0 only (the
    /// other processes' targets come back empty).
    pub cluster: Option<runtime::Cluster>,
    /// In a cluster: an input file of at least this many bytes (0 = none) is read by every
    /// process, each parsing the records in its share of the bytes, instead of by one process.
    /// Files feeding snapshot flows are never split (a snapshot's keys are checked for
    /// duplicates as a whole).
    pub split_bytes: u64,
    /// Outside a cluster: a commit's file part of at least this many bytes (0 = none), read
    /// while no commit is in flight (the workers wait for it: a `--follow` step, a run's first
    /// commit), is parsed by two threads, each taking half its records, split at a `\n` near
    /// the middle that the first thread's read confirms as a record boundary (`io::halves`;
    /// when it is not, the part is read again whole): a 48 MB file read a third faster here,
    /// a 440 KB one (a followed 10,000-event commit) in 3.6 ms instead of 5–7.
    pub read_halves_over: u64,
    /// In a cluster: each process keeps the target rows of the keys its workers own (its
    /// partition) instead of gathering every target to process 0; metrics still reach process 0.
    pub partitioned_output: bool,
    /// Pin the workers to cores, when the process pins its threads ([`crate::runtime::cores`]).
    /// For a run that mostly waits for its workers, as `--follow` between polls: a 10,000-event
    /// SCD2 commit followed on 2 workers had one start applying 1–3 ms after the other and the
    /// two label one after the other, unpinned. Not for a plain run whose driver reads ahead beside
    /// as many workers as cores: three busy threads on two pinned cores made the 1M-event SCD2
    /// run on 2 workers 2.07–2.15 s, against 1.59–1.67 s placed by the OS.
    pub pin_workers: bool,
}

/// The table after all commits: rows with a positive count, sorted by keys, then `__START_AT`.
pub fn final_rows(target: &Target, updates: &[(Row, u64, isize)]) -> Vec<Row> {
    let mut counts: BTreeMap<&Row, isize> = BTreeMap::new();
    for (row, _, diff) in updates {
        *counts.entry(row).or_default() += diff;
    }
    let mut rows: Vec<Row> = counts
        .into_iter()
        .flat_map(|(row, n)| std::iter::repeat_n(row.clone(), n.max(0) as usize))
        .collect();
    sort_rows(target, &mut rows);
    rows
}

/// Sorts rows by key columns, then `__START_AT` (SCD2, bitemporal), then `__SYSTEM_START_AT`
/// (bitemporal), then the whole row.
pub fn sort_rows(target: &Target, rows: &mut [Row]) {
    let starts = crate::engine::changefeed::interval_starts(target);
    let order: Vec<usize> = target.keys.iter().copied().chain(starts).collect();
    sort_by_columns(rows, &order);
}

/// Sorts rows by the columns at `order`, then by the whole row.
pub fn sort_by_columns(rows: &mut [Row], order: &[usize]) {
    // A table is sorted key by key, a few rows each, that its state nearly always gives in
    // order: those are compared in place (a stable sort checks sorted input in one pass),
    // without making projections.
    match rows.len() <= SMALL_SORT {
        true => sort_in_place(rows, order),
        false => sort_projected(rows, order),
    }
}

fn sort_in_place(rows: &mut [Row], order: &[usize]) {
    // Only the ordering columns are decoded; ties fall to the packed rows' own order.
    rows.sort_by(|a, b| {
        (order.iter())
            .map(|&i| a.iter().nth(i).cmp(&b.iter().nth(i)))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| a.cmp(b))
    });
}

fn sort_projected(rows: &mut [Row], order: &[usize]) {
    // Each row is moved beside its projection and back, not cloned (a table's rows are most of
    // what is sorted, and most spill to the heap); the projection's order prefix settles most
    // comparisons.
    let mut keyed: Vec<(u64, Row, Row)> = rows
        .iter_mut()
        .map(|row| {
            let key = row.project(order);
            (key.order_prefix(), key, std::mem::take(row))
        })
        .collect();
    keyed.sort_unstable();
    for (slot, (_, _, row)) in rows.iter_mut().zip(keyed) {
        *slot = row;
    }
}

/// Rows up to which [`sort_by_columns`] compares rows in place.
const SMALL_SORT: usize = 32;

/// The wall clock in microseconds since the epoch (0 before it).
pub(crate) fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

#[cfg(test)]
mod save_tests;
#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            (-3i64..3).prop_map(Value::Int),
            "[ab]{0,2}".prop_map(Value::Str),
        ]
    }

    proptest! {
        /// Both ways of sorting give the same order: by the columns, then the whole row.
        #[test]
        fn sorting_in_place_and_by_projection_agree(
            rows in proptest::collection::vec(proptest::collection::vec(value(), 3), 0..40),
            order in proptest::collection::vec(0usize..3, 0..3),
        ) {
            let rows: Vec<Row> = rows.into_iter().map(Row::from).collect();
            let (mut a, mut b) = (rows.clone(), rows);
            sort_in_place(&mut a, &order);
            sort_projected(&mut b, &order);
            prop_assert_eq!(a, b);
        }
    }
}

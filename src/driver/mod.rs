//! Runs a whole pipeline: read the sources into commits (one per input file), turn each
//! commit's rows into its targets' input — events for AUTO CDC flows, a full snapshot for
//! snapshot flows, rows for REPLACE USING flows — checking expectations on the way, execute the
//! targets on timely workers, and produce each target's table, change feed and metrics.
//!
//! Invalid rows (D3) are found before anything executes: under [`OnInvalid::Fail`] the first
//! one (in commit order, then line) fails the run and nothing is written; under
//! [`OnInvalid::Quarantine`] they are set aside with their reason and the run goes on.

mod commit;
pub(crate) mod expect;
pub mod flows;
mod metrics;

pub use commit::CommitSource;
pub use expect::ExpectationCount;
pub use flows::{FlowKind, FlowRef};
pub use metrics::{FlowCommitMetrics, TableCommitMetrics};

use crate::changefeed::{self, Change};
use crate::io::RowError;
use crate::plan::{Pipeline, Target};
use crate::runtime::{self, CommitEvents, Progress};
use crate::value::Row;
use crate::Result;
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
#[derive(Clone, Debug)]
pub struct Quarantined {
    /// The flow (or, for rows no flow reads directly, the table) the row was meant for.
    pub owner: String,
    /// The input file.
    pub file: PathBuf,
    /// The problem.
    pub error: RowError,
}

/// One target's results.
#[derive(Clone, Debug)]
pub struct TargetResult {
    /// The final table, sorted by key columns, then `__START_AT`.
    pub rows: Vec<Row>,
    /// All differential updates, `(row, commit version, diff)`.
    pub updates: Vec<(Row, u64, isize)>,
    /// The change feed.
    pub changes: Vec<Change>,
}

/// Everything a pipeline run produced.
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// Per target (indexed like [`Pipeline::targets`]).
    pub targets: Vec<TargetResult>,
    /// Every flow of any kind ([`flows::all`]).
    pub flows: Vec<FlowRef>,
    /// Per flow (indexed like [`Evaluation::flows`]): metrics of the commits it had input in.
    pub metrics: Vec<Vec<FlowCommitMetrics>>,
    /// Per source table (indexed like [`Pipeline::tables`]): expectation counts per commit.
    pub table_metrics: Vec<Vec<TableCommitMetrics>>,
    /// Rows set aside.
    pub quarantined: Vec<Quarantined>,
    /// Problems that did not stop the run (skipped snapshot versions, D12).
    pub warnings: Vec<String>,
    /// Commit (ingestion) time of each commit, microseconds since the epoch.
    pub commit_timestamps: Vec<i64>,
    /// Number of events executed.
    pub events: u64,
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
}

/// Runs `pipeline`.
pub fn evaluate(
    pipeline: &Pipeline,
    options: &Options,
    progress: Option<Progress>,
) -> Result<Evaluation> {
    let mut targets_run = pipeline.targets.clone();
    if let Some(seconds) = options.tombstone_gc_seconds {
        targets_run
            .iter_mut()
            .for_each(|t| t.tombstone_gc_seconds = seconds);
    }
    let flows = flows::all(pipeline);
    let mut metrics: Vec<Vec<FlowCommitMetrics>> = vec![Vec::new(); flows.len()];
    let mut table_metrics: Vec<Vec<TableCommitMetrics>> = vec![Vec::new(); pipeline.tables.len()];
    let mut quarantined = Vec::new();
    let mut warnings = Vec::new();
    let mut inputs: Vec<CommitEvents> = Vec::new();
    let mut events = 0u64;
    // Commits are read one at a time: a file's rows are dropped once they are the runtime's input.
    for (c, source) in commit::sources(pipeline)?.iter().enumerate() {
        let version = c as u64 + 1;
        let mut prepared = commit::prepare(pipeline, &flows, source, version, &mut metrics)?;
        if let Some(first) = prepared.invalid.first() {
            if options.on_invalid == OnInvalid::Fail {
                return Err(first.error.clone().into_error(&first.file));
            }
        }
        for (flow, v) in &prepared.skipped {
            warnings.push(format!(
                "{}: snapshot version {v} of flow `{}` is not newer than the last applied one; skipped",
                source.file().display(),
                pipeline.snapshot_flows[*flow].name
            ));
        }
        for q in &prepared.invalid {
            if let Some(f) = flows.iter().position(|f| f.name == q.owner) {
                if let Some(m) = metrics[f].iter_mut().find(|m| m.commit_version == version) {
                    m.num_quarantined_rows += 1;
                }
            }
        }
        for (t, entry) in prepared.tables {
            table_metrics[t].push(entry);
        }
        // Commit time is ingestion time, never decreasing even if the wall clock steps back.
        let last = inputs.last().map_or(i64::MIN, |p| p.timestamp);
        prepared.input.timestamp = now_micros().max(last);
        events += prepared
            .input
            .events
            .iter()
            .map(|e| e.len() as u64)
            .sum::<u64>();
        events += prepared
            .input
            .rows
            .iter()
            .map(|r| r.len() as u64)
            .sum::<u64>();
        events += prepared
            .input
            .snapshots
            .iter()
            .flatten()
            .map(|s| s.rows.len() as u64)
            .sum::<u64>();
        quarantined.extend(prepared.invalid);
        inputs.push(prepared.input);
    }
    let commit_timestamps: Vec<i64> = inputs.iter().map(|c| c.timestamp).collect();
    let updates = runtime::execute_in(
        &targets_run,
        inputs,
        options.workers,
        options.cluster.as_ref(),
        progress,
    )?;
    let mut targets = Vec::new();
    for (t, (target, updates)) in pipeline.targets.iter().zip(updates.rows).enumerate() {
        let changes = changefeed::changes(target, &updates);
        metrics::attribute_changes(&flows, t, &changes, &mut metrics);
        targets.push(TargetResult {
            rows: final_rows(target, &updates),
            updates,
            changes,
        });
    }
    for (t, stats) in updates.stats.iter().enumerate() {
        metrics::attribute_stats(&flows, t, stats, &mut metrics);
    }
    Ok(Evaluation {
        targets,
        flows,
        metrics,
        table_metrics,
        quarantined,
        warnings,
        commit_timestamps,
        events,
    })
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
    let starts = crate::changefeed::interval_starts(target);
    let order: Vec<usize> = target.keys.iter().copied().chain(starts).collect();
    rows.sort_by(|a, b| {
        let ka = order.iter().map(|&i| &a[i]);
        let kb = order.iter().map(|&i| &b[i]);
        ka.cmp(kb).then_with(|| a.cmp(b))
    });
}

fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

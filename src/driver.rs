//! Runs a whole pipeline: read the sources into commits, turn rows into events, execute the
//! targets on timely workers, and produce each target's table, change feed and metrics.
//!
//! Invalid rows (D3) are found before anything executes: under [`OnInvalid::Fail`] the first
//! one (in commit order, then line) fails the run and nothing is written; under
//! [`OnInvalid::Quarantine`] they are set aside with their reason and the run goes on.

use crate::changefeed::{self, Change, ChangeType};
use crate::engine::CommitStats;
use crate::event::Event;
use crate::ingest::{self, SourceCommit};
use crate::io::RowError;
use crate::plan::{Pipeline, ScdType, Target};
use crate::prepare::to_event;
use crate::runtime::{self, CommitEvents, Progress};
use crate::value::Row;
use crate::Result;
use serde::Serialize;
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

/// The metrics of one flow in one commit (D13).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlowCommitMetrics {
    /// Commit version.
    pub commit_version: u64,
    /// The input file of the commit.
    pub source_file: String,
    /// Rows of the flow's source in this commit.
    pub num_input_rows: u64,
    /// Change-feed rows of type insert or update_postimage.
    pub num_upserted_rows: u64,
    /// Change-feed rows of type delete.
    pub num_deleted_rows: u64,
    /// Events ignored because older than the key's state or a truncate.
    pub num_stale_events: u64,
    /// Events that met a different event of the same key at the same sequence (D2).
    pub num_sequence_ties: u64,
    /// Rows set aside as invalid.
    pub num_quarantined_rows: u64,
    /// Snapshot versions skipped (snapshot flows; always 0 for change-feed flows).
    pub num_skipped_snapshots: u64,
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
    /// Per flow (indexed like [`Pipeline::flows`]): metrics of the commits it had input in.
    pub metrics: Vec<Vec<FlowCommitMetrics>>,
    /// Rows set aside.
    pub quarantined: Vec<Quarantined>,
    /// Commit (ingestion) time of each commit, microseconds since the epoch.
    pub commit_timestamps: Vec<i64>,
    /// Number of events executed.
    pub events: u64,
}

/// How to run a pipeline.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Worker threads (0 counts as 1).
    pub workers: usize,
    /// What to do with invalid rows.
    pub on_invalid: OnInvalid,
    /// Overrides every target's `pipelines.cdc.tombstoneGCThresholdInSeconds` (0 = never).
    pub tombstone_gc_seconds: Option<u64>,
}

/// Runs `pipeline`.
pub fn evaluate(
    pipeline: &Pipeline,
    options: &Options,
    progress: Option<Progress>,
) -> Result<Evaluation> {
    let on_invalid = options.on_invalid;
    let mut targets_run = pipeline.targets.clone();
    if let Some(seconds) = options.tombstone_gc_seconds {
        targets_run
            .iter_mut()
            .for_each(|t| t.tombstone_gc_seconds = seconds);
    }
    // Commits are read one at a time: a file's rows are dropped once they are events.
    let files = ingest::input_files(pipeline)?;
    let mut metrics: Vec<Vec<FlowCommitMetrics>> = vec![Vec::new(); pipeline.flows.len()];
    let mut quarantined = Vec::new();
    let mut inputs = Vec::new();
    let mut events = 0u64;
    for (c, (table, file)) in files.into_iter().enumerate() {
        let commit = ingest::read_commit(pipeline, table, file)?;
        let mut prepared = prepare_commit(pipeline, &commit, c as u64 + 1, &mut metrics)?;
        drop(commit);
        // Commit time is ingestion time, never decreasing even if the wall clock steps back.
        let last = inputs
            .last()
            .map_or(i64::MIN, |p: &CommitEvents| p.timestamp);
        prepared.events.timestamp = now_micros().max(last);
        if let Some(first) = prepared.invalid.first() {
            if on_invalid == OnInvalid::Fail {
                return Err(first.error.clone().into_error(&first.file));
            }
        }
        count_quarantined(pipeline, &prepared.invalid, c as u64 + 1, &mut metrics);
        events += prepared
            .events
            .events
            .iter()
            .map(|e| e.len() as u64)
            .sum::<u64>();
        quarantined.extend(prepared.invalid);
        inputs.push(prepared.events);
    }
    let commit_timestamps: Vec<i64> = inputs.iter().map(|c| c.timestamp).collect();
    let updates = runtime::execute(&targets_run, inputs, options.workers, progress)?;
    let mut targets = Vec::new();
    for (t, (target, updates)) in pipeline.targets.iter().zip(updates.rows).enumerate() {
        let changes = changefeed::changes(target, &updates);
        attribute(pipeline, t, &changes, &mut metrics);
        targets.push(TargetResult {
            rows: final_rows(target, &updates),
            updates,
            changes,
        });
    }
    for (t, stats) in updates.stats.iter().enumerate() {
        attribute_stats(pipeline, t, stats, &mut metrics);
    }
    Ok(Evaluation {
        targets,
        metrics,
        quarantined,
        commit_timestamps,
        events,
    })
}

struct PreparedCommit {
    events: CommitEvents,
    invalid: Vec<Quarantined>,
}

/// Turns one commit's rows into events per target, recording input counts per flow.
fn prepare_commit(
    pipeline: &Pipeline,
    commit: &SourceCommit,
    version: u64,
    metrics: &mut [Vec<FlowCommitMetrics>],
) -> Result<PreparedCommit> {
    let mut events: Vec<Vec<Event>> = vec![Vec::new(); pipeline.targets.len()];
    let mut invalid: Vec<Quarantined> = commit
        .invalid
        .iter()
        .map(|(t, e)| Quarantined {
            owner: owner_of_table(pipeline, *t),
            file: commit.file.clone(),
            error: e.clone(),
        })
        .collect();
    for (f, flow) in pipeline.flows.iter().enumerate() {
        let rows = &commit.rows[flow.source];
        let touched = !rows.is_empty() || commit.invalid.iter().any(|(t, _)| *t == flow.source);
        if !touched {
            continue;
        }
        metrics[f].push(FlowCommitMetrics {
            commit_version: version,
            source_file: commit.file.display().to_string(),
            num_input_rows: rows.len() as u64,
            ..Default::default()
        });
        let target = &pipeline.targets[flow.target];
        let schema = &pipeline.tables[flow.source].schema;
        for source in rows {
            match to_event(flow, target, schema, &source.row) {
                Ok(event) => events[flow.target].push(event),
                Err(bad) => invalid.push(Quarantined {
                    owner: flow.name.clone(),
                    file: commit.file.clone(),
                    error: RowError {
                        line: source.line,
                        column: None,
                        reason: format!("flow `{}`: {}: {}", flow.name, bad.column, bad.reason),
                        raw: ingest::row_to_json(&source.row, schema),
                    },
                }),
            }
        }
    }
    invalid.sort_by_key(|q| q.error.line);
    Ok(PreparedCommit {
        events: CommitEvents {
            events,
            timestamp: 0,
        },
        invalid,
    })
}

/// The flow that reads table `t` directly (the first one), or the table's own name.
fn owner_of_table(pipeline: &Pipeline, t: usize) -> String {
    pipeline
        .flows
        .iter()
        .find(|f| f.source == t)
        .map_or_else(|| pipeline.tables[t].name.clone(), |f| f.name.clone())
}

fn count_quarantined(
    pipeline: &Pipeline,
    invalid: &[Quarantined],
    version: u64,
    metrics: &mut [Vec<FlowCommitMetrics>],
) {
    for q in invalid {
        if let Some(f) = pipeline.flows.iter().position(|f| f.name == q.owner) {
            if let Some(m) = metrics[f].iter_mut().find(|m| m.commit_version == version) {
                m.num_quarantined_rows += 1;
            }
        }
    }
}

/// The flow of target `t` credited with a commit's target-level counts: the first flow into
/// `t` that had input in that commit.
fn credited_flow(
    pipeline: &Pipeline,
    t: usize,
    version: u64,
    metrics: &[Vec<FlowCommitMetrics>],
) -> Option<(usize, usize)> {
    pipeline.flows.iter().enumerate().find_map(|(f, flow)| {
        let m = metrics[f].iter().position(|m| m.commit_version == version);
        (flow.target == t).then_some(m).flatten().map(|m| (f, m))
    })
}

fn attribute(
    pipeline: &Pipeline,
    t: usize,
    changes: &[Change],
    metrics: &mut [Vec<FlowCommitMetrics>],
) {
    for change in changes {
        if let Some((f, m)) = credited_flow(pipeline, t, change.version, metrics) {
            let m = &mut metrics[f][m];
            match change.kind {
                ChangeType::Insert | ChangeType::UpdatePostimage => m.num_upserted_rows += 1,
                ChangeType::Delete => m.num_deleted_rows += 1,
                ChangeType::UpdatePreimage => {}
            }
        }
    }
}

fn attribute_stats(
    pipeline: &Pipeline,
    t: usize,
    stats: &BTreeMap<u64, CommitStats>,
    metrics: &mut [Vec<FlowCommitMetrics>],
) {
    for (version, s) in stats {
        if let Some((f, m)) = credited_flow(pipeline, t, *version, metrics) {
            metrics[f][m].num_stale_events += s.stale_events;
            metrics[f][m].num_sequence_ties += s.sequence_ties;
        }
    }
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

/// Sorts rows by key columns, then `__START_AT` (SCD2), then the whole row.
pub fn sort_rows(target: &Target, rows: &mut [Row]) {
    let start = (target.scd == ScdType::Type2).then_some(target.image_len);
    let order: Vec<usize> = target.keys.iter().copied().chain(start).collect();
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

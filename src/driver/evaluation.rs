//! [`evaluate`]: a whole pipeline run in memory, keeping every update, change and metric — the
//! one-call form of [`Driver`] that `scdflow query`, the tests and embedders use.

use super::run::{CommitOutput, Driver, Resume, Sink};
use super::{commit, FlowCommitMetrics, FlowRef, Options, Quarantined, TableCommitMetrics};
use crate::engine::changefeed::{Change, ChangeType};
use crate::plan::Pipeline;
use crate::runtime::Progress;
use crate::value::Row;
use crate::Result;

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
    /// Every flow of any kind ([`super::flows::all`]).
    pub flows: Vec<FlowRef>,
    /// Per flow (indexed like [`Evaluation::flows`]): metrics of the commits it had input in.
    pub metrics: Vec<Vec<FlowCommitMetrics>>,
    /// Per source table (indexed like [`Pipeline::tables`]): expectation counts per commit.
    pub table_metrics: Vec<Vec<TableCommitMetrics>>,
    /// Rows set aside.
    pub quarantined: Vec<Quarantined>,
    /// Problems that did not stop the run (skipped snapshot versions, D12).
    pub warnings: Vec<String>,
    /// Commit (ingestion) time of each commit (versions `1, 2, ...`), microseconds since the
    /// epoch.
    pub commit_timestamps: Vec<i64>,
    /// Number of events executed.
    pub events: u64,
    /// Per target: tombstones held after the last commit (D11).
    pub live_tombstones: Vec<i64>,
}

impl Evaluation {
    /// The commit time of commit `version` (0 for a version the run did not make).
    pub fn commit_timestamp(&self, version: u64) -> i64 {
        version
            .checked_sub(1)
            .and_then(|i| self.commit_timestamps.get(i as usize))
            .copied()
            .unwrap_or(0)
    }
}

/// Runs `pipeline` over all its input, in memory.
pub fn evaluate(
    pipeline: &Pipeline,
    options: &Options,
    progress: Option<Progress>,
) -> Result<Evaluation> {
    let sources = commit::sources(pipeline)?;
    let mut driver = Driver::open(pipeline, options, Resume::default(), progress)?;
    let mut collect = Collect::new(pipeline, driver.flows().to_vec());
    driver.apply(&sources, &mut collect)?;
    let tables = driver.tables()?;
    let live_tombstones = driver.live_tombstones().to_vec();
    driver.finish()?;
    let mut evaluation = collect.evaluation;
    for (result, rows) in evaluation.targets.iter_mut().zip(tables) {
        result.rows = rows;
    }
    evaluation.live_tombstones = live_tombstones;
    Ok(evaluation)
}

/// A sink that keeps everything.
struct Collect {
    evaluation: Evaluation,
}

impl Collect {
    fn new(pipeline: &Pipeline, flows: Vec<FlowRef>) -> Self {
        let target = || TargetResult {
            rows: Vec::new(),
            updates: Vec::new(),
            changes: Vec::new(),
        };
        Collect {
            evaluation: Evaluation {
                targets: pipeline.targets.iter().map(|_| target()).collect(),
                metrics: vec![Vec::new(); flows.len()],
                flows,
                table_metrics: vec![Vec::new(); pipeline.tables.len()],
                quarantined: Vec::new(),
                warnings: Vec::new(),
                commit_timestamps: Vec::new(),
                events: 0,
                live_tombstones: Vec::new(),
            },
        }
    }
}

impl Sink for Collect {
    fn commit(&mut self, commit: CommitOutput) -> Result<()> {
        let e = &mut self.evaluation;
        let version = commit.version;
        for (result, changes) in e.targets.iter_mut().zip(commit.changes) {
            for (kind, row) in changes {
                // The feed relabels the consolidated updates: an insertion is an insert or a
                // postimage, a retraction a delete or a preimage.
                let diff = match kind {
                    ChangeType::Insert | ChangeType::UpdatePostimage => 1,
                    ChangeType::Delete | ChangeType::UpdatePreimage => -1,
                };
                result.updates.push((row.clone(), version, diff));
                result.changes.push(Change { version, kind, row });
            }
        }
        for (f, m) in commit.metrics {
            e.metrics[f].push(m);
        }
        for (t, m) in commit.table_metrics {
            e.table_metrics[t].push(m);
        }
        e.quarantined.extend(commit.quarantined);
        e.warnings.extend(commit.warnings);
        e.commit_timestamps.push(commit.timestamp);
        e.events += commit.events;
        Ok(())
    }
}

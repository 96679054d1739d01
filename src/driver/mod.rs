//! Runs a whole pipeline: read the sources into commits (one per input file), turn each
//! commit's rows into its targets' input — events for AUTO CDC flows, a full snapshot for
//! snapshot flows, rows for REPLACE USING flows — checking expectations on the way, execute the
//! targets on timely workers, and produce each target's table, change feed and metrics.
//!
//! Invalid rows (D3) are found before anything executes: under [`OnInvalid::Fail`] the first
//! one (in commit order, then line) fails the run and nothing is written; under
//! [`OnInvalid::Quarantine`] they are set aside with their reason and the run goes on.
//!
//! In a cluster ([`Options::cluster`]) process `p` of `n` reads commits `p`, `p + n`, ... (in
//! commit order, from 0), and what it learns of them (metrics, set-aside rows, warnings)
//! travels to process 0 with the targets' updates, so process 0's [`Evaluation`] is the whole
//! run's and the others' are empty. With [`Options::partitioned_output`] each process's targets
//! hold the rows of the keys its workers own instead, and process 0 still gets the metrics of
//! the whole run. A process that cannot read its share fails with its own
//! error, and every other process with [`crate::ErrorKind::Peer`]; under
//! [`OnInvalid::Fail`] each process reports the first invalid row of its own share.

mod commit;
pub(crate) mod expect;
pub mod flows;
mod metrics;
pub(crate) mod new_input;
mod report;

pub use commit::{CommitSource, ReadFrom, Span};
pub use expect::ExpectationCount;
pub use flows::{FlowKind, FlowRef};
pub use metrics::{FlowCommitMetrics, TableCommitMetrics};

use crate::changefeed::{self, Change};
use crate::io::RowError;
use crate::plan::{Pipeline, SourceInput, Target};
use crate::runtime::{self, Progress};
use crate::value::Row;
use crate::{Error, ErrorKind, Result};
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
    /// Commit (ingestion) time of each commit of this run (versions `base + 1, ...`),
    /// microseconds since the epoch.
    pub commit_timestamps: Vec<i64>,
    /// Number of events executed.
    pub events: u64,
    /// Commits applied by earlier runs (durable runs): the tables include them, while the
    /// change feeds and metrics hold this run's commits only.
    pub base: u64,
    /// Per target: tombstones held after the last commit (D11).
    pub live_tombstones: Vec<i64>,
}

impl Evaluation {
    /// The commit time of commit `version` of this run (0 for an earlier run's).
    pub fn commit_timestamp(&self, version: u64) -> i64 {
        version
            .checked_sub(self.base + 1)
            .and_then(|i| self.commit_timestamps.get(i as usize))
            .copied()
            .unwrap_or(0)
    }
}

/// Where a run starts: after the commits of earlier runs, whose operator state it restores.
#[derive(Debug, Default)]
pub(crate) struct Resume {
    /// Commit time of the last earlier commit (µs): commit times never go back.
    pub(crate) last_timestamp: Option<i64>,
    /// What the runtime restores and saves; its `base` counts the earlier commits.
    pub(crate) persistence: runtime::Persistence,
    /// Per target: tombstones held after the earlier commits.
    pub(crate) live_tombstones: Vec<i64>,
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
    /// Set once this process's workers start (in a cluster: once every process is connected).
    pub started: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// In a cluster: each process keeps the target rows of the keys its workers own (its
    /// partition) instead of gathering every target to process 0; metrics still reach process 0.
    pub partitioned_output: bool,
}

/// Runs `pipeline` over all its input.
pub fn evaluate(
    pipeline: &Pipeline,
    options: &Options,
    progress: Option<Progress>,
) -> Result<Evaluation> {
    let sources = commit::sources(pipeline)?;
    Ok(run(pipeline, options, &sources, Resume::default(), progress)?.0)
}

/// Runs `pipeline` over the commits `sources` after `resume`; also returns, per source, where a
/// read of complete lines ended.
pub(crate) fn run(
    pipeline: &Pipeline,
    options: &Options,
    sources: &[CommitSource],
    resume: Resume,
    progress: Option<Progress>,
) -> Result<(Evaluation, Vec<Option<ReadFrom>>)> {
    let base = resume.persistence.base;
    let skip_once = base > 0;
    let mut targets_run = pipeline.targets.clone();
    if let Some(seconds) = options.tombstone_gc_seconds {
        targets_run
            .iter_mut()
            .for_each(|t| t.tombstone_gc_seconds = seconds);
    }
    let flows = flows::all(pipeline);
    let (processes, process) = options
        .cluster
        .as_ref()
        .map_or((1, 0), |c| (c.addresses.len(), c.process));
    // In a cluster each process reads every `processes`-th commit; a process that cannot read
    // its share still joins, so that the others fail with it instead of waiting.
    let mut input = runtime::ProcessInput {
        persistence: resume.persistence,
        partitioned: options.partitioned_output,
        started: options.started.clone(),
        ..runtime::ProcessInput::default()
    };
    let mut reports: Vec<report::CommitReport> = Vec::new();
    let mut failure = None;
    let mut last = resume.last_timestamp.unwrap_or(i64::MIN);
    let mut ends = vec![None; sources.len()];
    for (c, source) in sources.iter().enumerate() {
        let version = base + c as u64 + 1;
        // A large file is read by every process, each its share of the records; any other
        // commit by one process.
        let share = share_of(pipeline, options, source, processes, process);
        let split = !matches!(share, Ok(None));
        if (!split && c % processes != process) || failure.is_some() {
            input.commits.push(None);
            continue;
        }
        let read = share.and_then(|share| {
            let source = share.as_ref().unwrap_or(source);
            report::read(
                pipeline,
                &flows,
                source,
                version,
                options.on_invalid,
                skip_once,
            )
        });
        match read {
            Ok((mut commit, report)) => {
                // Commit time is ingestion time, never decreasing even if the clock steps back.
                last = now_micros().max(last);
                commit.timestamp = last;
                input.commits.push(Some(commit));
                ends[c] = report.end;
                reports.push(report);
            }
            Err(e) if options.cluster.is_none() => return Err(e),
            Err(e) => {
                input.failure = Some(e.to_string());
                input.commits.push(None);
                failure = Some(e);
            }
        }
    }
    if options.cluster.is_some() {
        input.reports = reports
            .drain(..)
            .map(|r| {
                (
                    r.version,
                    serde_json::to_string(&r).expect("reports serialize"),
                )
            })
            .collect();
    }
    let run = runtime::execute_in(
        &targets_run,
        input,
        options.workers,
        options.cluster.as_ref(),
        progress,
    );
    let mut updates = match (run, failure) {
        (_, Some(own)) => return Err(own),
        (run, None) => run?,
    };
    for (_, text) in std::mem::take(&mut updates.reports) {
        let report = serde_json::from_str(&text).map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("a commit report does not parse: {e}"),
            )
        })?;
        reports.push(report);
    }
    reports.sort_by_key(|r| r.version);
    // A split file's commit has one report per process.
    reports.dedup_by(|later, first| {
        let same = later.version == first.version;
        if same {
            first.absorb(std::mem::take(later));
        }
        same
    });
    let mut metrics: Vec<Vec<FlowCommitMetrics>> = vec![Vec::new(); flows.len()];
    let mut table_metrics: Vec<Vec<TableCommitMetrics>> = vec![Vec::new(); pipeline.tables.len()];
    let mut quarantined = Vec::new();
    let mut warnings = Vec::new();
    let mut events = 0u64;
    for report in reports {
        for (f, entry) in report.metrics {
            metrics[f].push(entry);
        }
        for (t, entry) in report.tables {
            table_metrics[t].push(entry);
        }
        quarantined.extend(report.invalid);
        warnings.extend(report.warnings);
        events += report.events;
    }
    let commit_timestamps = std::mem::take(&mut updates.timestamps);
    let updates_changed = std::mem::take(&mut updates.changed);
    let mut targets = Vec::new();
    for (t, (target, updates)) in pipeline.targets.iter().zip(updates.rows).enumerate() {
        // The restored table (at `base`) is the starting point, not a change of this run.
        let changes = if base == 0 {
            changefeed::changes(target, &updates)
        } else {
            let new: Vec<_> = updates.iter().filter(|u| u.1 > base).cloned().collect();
            changefeed::changes(target, &new)
        };
        // With partitioned outputs this process holds only its keys' changes; process 0 was
        // sent every process's counts.
        if options.partitioned_output && options.cluster.is_some() {
            for (version, counts) in &updates_changed[t] {
                metrics::attribute_counts(&flows, t, *version, *counts, &mut metrics);
            }
        } else {
            metrics::attribute_changes(&flows, t, &changes, &mut metrics);
        }
        targets.push(TargetResult {
            rows: final_rows(target, &updates),
            updates,
            changes,
        });
    }
    let mut live_tombstones = resume.live_tombstones;
    live_tombstones.resize(pipeline.targets.len(), 0);
    for (t, stats) in updates.stats.iter().enumerate() {
        live_tombstones[t] =
            metrics::attribute_stats(&flows, t, stats, live_tombstones[t], &mut metrics);
    }
    let evaluation = Evaluation {
        targets,
        flows,
        metrics,
        table_metrics,
        quarantined,
        warnings,
        commit_timestamps,
        events,
        base,
        live_tombstones,
    };
    Ok((evaluation, ends))
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
    sort_by_columns(rows, &order);
}

/// Sorts rows by the columns at `order`, then by the whole row.
pub fn sort_by_columns(rows: &mut [Row], order: &[usize]) {
    rows.sort_by(|a, b| {
        let ka = order.iter().map(|&i| &a[i]);
        let kb = order.iter().map(|&i| &b[i]);
        ka.cmp(kb).then_with(|| a.cmp(b))
    });
}

/// In a cluster, this process's share of a commit whose file is split among the processes:
/// `None` when the commit is read whole (by one process).
fn share_of(
    pipeline: &Pipeline,
    options: &Options,
    source: &CommitSource,
    processes: usize,
    process: usize,
) -> Result<Option<CommitSource>> {
    let CommitSource::Table {
        table,
        file,
        span: Span::Whole,
    } = source
    else {
        return Ok(None);
    };
    let SourceInput::Files { format, .. } = &pipeline.tables[*table].input else {
        return Ok(None);
    };
    if processes < 2
        || options.split_bytes == 0
        || new_input::feeds_periodic_snapshot(pipeline, *table)
        || crate::io::file_len(file)? < options.split_bytes
    {
        return Ok(None);
    }
    let points = crate::io::split_points(file, *format, processes)?;
    let (offset, line) = points[process];
    Ok(Some(CommitSource::Table {
        table: *table,
        file: file.clone(),
        span: Span::Share {
            from: ReadFrom { offset, line },
            to: points[process + 1].0,
        },
    }))
}

fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

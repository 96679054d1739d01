//! One commit read into the runtime's input plus everything the driver learns on the way (its
//! metrics entries, set-aside rows, warnings), as a [`CommitReport`] that can travel between the
//! processes of a cluster.

use super::commit::{self, CommitSource};
use super::flows::FlowRef;
use super::metrics::{FlowCommitMetrics, TableCommitMetrics};
use super::{OnInvalid, Quarantined};
use crate::plan::Pipeline;
use crate::runtime::CommitEvents;
use crate::Result;
use serde::{Deserialize, Serialize};

/// What reading one commit produced besides the runtime's input.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct CommitReport {
    /// The commit version.
    pub(super) version: u64,
    /// Metrics entries: `(flow, entry)`, flows indexed like [`super::flows::all`].
    pub(super) metrics: Vec<(usize, FlowCommitMetrics)>,
    /// Expectation counts of source tables: `(table, entry)`.
    pub(super) tables: Vec<(usize, TableCommitMetrics)>,
    /// Rows set aside (under [`OnInvalid::Quarantine`]), in line order.
    pub(super) invalid: Vec<Quarantined>,
    /// Problems that did not stop the run.
    pub(super) warnings: Vec<String>,
    /// Events, rows and snapshot rows handed to the runtime.
    pub(super) events: u64,
    /// For a read of complete lines from an offset: where they end.
    pub(super) end: Option<super::ReadFrom>,
    /// Why making a later stage's input from a target's change data feed failed
    /// ([`super::feeds`]); the commit fails with it.
    pub(super) failed: Option<String>,
    /// The rows of published source tables: `(table, rows)`.
    pub(super) appended: Vec<(usize, Vec<crate::value::Row>)>,
}

impl CommitReport {
    /// Adds another process's report of the same commit (each read a share of its file).
    pub(super) fn absorb(&mut self, other: CommitReport) {
        for (f, entry) in other.metrics {
            match self.metrics.iter_mut().find(|(g, _)| *g == f) {
                Some((_, mine)) => mine.add(&entry),
                None => self.metrics.push((f, entry)),
            }
        }
        for (t, entry) in other.tables {
            match self.tables.iter_mut().find(|(u, _)| *u == t) {
                Some((_, mine)) => {
                    super::expect::add_counts(&mut mine.expectations, &entry.expectations)
                }
                None => self.tables.push((t, entry)),
            }
        }
        self.invalid.extend(other.invalid);
        self.invalid.sort_by_key(|q| q.error.line);
        for warning in other.warnings {
            if !self.warnings.contains(&warning) {
                self.warnings.push(warning);
            }
        }
        self.events += other.events;
        self.end = self.end.or(other.end);
        self.failed = self.failed.take().or(other.failed);
        for (t, rows) in other.appended {
            match self.appended.iter_mut().find(|(u, _)| *u == t) {
                Some((_, mine)) => mine.extend(rows),
                None => self.appended.push((t, rows)),
            }
        }
    }
}

/// Reads commit `version` from `source` (`ONCE` flows take nothing with `skip_once`). Under
/// [`OnInvalid::Fail`] its first invalid row is the error. The input's timestamp is left for
/// the caller.
pub(super) fn read(
    pipeline: &Pipeline,
    flows: &[FlowRef],
    source: &CommitSource,
    version: u64,
    on_invalid: OnInvalid,
    skip_once: bool,
) -> Result<(CommitEvents, CommitReport)> {
    let mut metrics: Vec<Vec<FlowCommitMetrics>> = vec![Vec::new(); flows.len()];
    let prepared = commit::prepare(pipeline, flows, source, version, skip_once, &mut metrics)?;
    if let Some(first) = prepared.invalid.first() {
        if on_invalid == OnInvalid::Fail {
            return Err(first.error.clone().into_error(&first.file));
        }
    }
    let warnings = prepared
        .skipped
        .iter()
        .map(|(flow, v)| {
            format!(
                "{}: snapshot version {v} of flow `{}` is not newer than the last applied one; skipped",
                source.file().display(),
                pipeline.snapshot_flows[*flow].name
            )
        })
        .collect();
    Ok(reported(flows, version, prepared, metrics, warnings))
}

/// The runtime's input of commit `version` and its report, from what preparing it made.
pub(super) fn reported(
    flows: &[FlowRef],
    version: u64,
    prepared: commit::Prepared,
    mut metrics: Vec<Vec<FlowCommitMetrics>>,
    warnings: Vec<String>,
) -> (CommitEvents, CommitReport) {
    for q in &prepared.invalid {
        if let Some(f) = flows.iter().position(|f| f.name == q.owner) {
            if let Some(m) = metrics[f].iter_mut().find(|m| m.commit_version == version) {
                m.num_quarantined_rows += 1;
            }
        }
    }
    let input = prepared.input;
    let events = input.events.iter().map(Vec::len).sum::<usize>()
        + input.rows.iter().map(Vec::len).sum::<usize>()
        + input
            .snapshots
            .iter()
            .flatten()
            .map(|s| s.rows.len())
            .sum::<usize>();
    let report = CommitReport {
        version,
        metrics: metrics
            .into_iter()
            .enumerate()
            .flat_map(|(f, entries)| entries.into_iter().map(move |m| (f, m)))
            .collect(),
        tables: prepared.tables,
        invalid: prepared.invalid,
        warnings,
        events: events as u64,
        end: prepared.end,
        failed: None,
        appended: prepared.appended,
    };
    (input, report)
}

//! Metrics per flow and commit (D13), per source table and commit (expectations), and how a
//! target's counts are credited to its flows.

use super::expect::ExpectationCount;
use super::flows::FlowRef;
use crate::changefeed::Change;
use crate::engine::CommitStats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The metrics of one flow in one commit (D13).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Snapshot versions skipped because not newer than the last applied one (D12).
    pub num_skipped_snapshots: u64,
    /// Tombstones forgotten in this commit because older than the retention (D11).
    #[serde(default)]
    pub num_collected_tombstones: u64,
    /// Tombstones the target holds after this commit (D11): deletes kept to recognise late,
    /// older events, not yet collected.
    #[serde(default)]
    pub num_live_tombstones: u64,
    /// The target's expectations checked on this flow's rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expectations: Vec<ExpectationCount>,
}

impl FlowCommitMetrics {
    /// Adds the counts of another share of the same commit (a file split among processes).
    pub fn add(&mut self, other: &FlowCommitMetrics) {
        self.num_input_rows += other.num_input_rows;
        self.num_upserted_rows += other.num_upserted_rows;
        self.num_deleted_rows += other.num_deleted_rows;
        self.num_stale_events += other.num_stale_events;
        self.num_sequence_ties += other.num_sequence_ties;
        self.num_quarantined_rows += other.num_quarantined_rows;
        self.num_skipped_snapshots += other.num_skipped_snapshots;
        self.num_collected_tombstones += other.num_collected_tombstones;
        super::expect::add_counts(&mut self.expectations, &other.expectations);
    }
}

/// The expectations of one source table in one commit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableCommitMetrics {
    /// Commit version.
    pub commit_version: u64,
    /// The input file of the commit.
    pub source_file: String,
    /// Passed and failed counts per constraint.
    pub expectations: Vec<ExpectationCount>,
}

/// The flow of target `t` credited with a commit's target-level counts: the first flow into
/// `t` that had input in that commit.
fn credited(
    flows: &[FlowRef],
    t: usize,
    version: u64,
    metrics: &[Vec<FlowCommitMetrics>],
) -> Option<(usize, usize)> {
    flows.iter().enumerate().find_map(|(f, flow)| {
        let m = metrics[f].iter().position(|m| m.commit_version == version);
        (flow.target == t).then_some(m).flatten().map(|m| (f, m))
    })
}

/// Counts target `t`'s change-feed rows into its flows' metrics.
pub fn attribute_changes(
    flows: &[FlowRef],
    t: usize,
    changes: &[Change],
    metrics: &mut [Vec<FlowCommitMetrics>],
) {
    for change in changes {
        attribute_counts(flows, t, change.version, change.kind.counts(), metrics);
    }
}

/// Adds `(upserted, deleted)` change-feed rows of target `t` in commit `version` to its flows'
/// metrics.
pub fn attribute_counts(
    flows: &[FlowRef],
    t: usize,
    version: u64,
    (upserted, deleted): (u64, u64),
    metrics: &mut [Vec<FlowCommitMetrics>],
) {
    if let Some((f, m)) = credited(flows, t, version, metrics) {
        metrics[f][m].num_upserted_rows += upserted;
        metrics[f][m].num_deleted_rows += deleted;
    }
}

/// Adds target `t`'s operator counters into its flows' metrics, given the tombstones it held
/// before the first of them (`live_before`); returns the tombstones held after the last.
pub fn attribute_stats(
    flows: &[FlowRef],
    t: usize,
    stats: &BTreeMap<u64, CommitStats>,
    live_before: i64,
    metrics: &mut [Vec<FlowCommitMetrics>],
) -> i64 {
    // Tombstones held after each version with counters (the gauge only moves at those).
    let mut live = live_before;
    let mut gauge: Vec<(u64, i64)> = Vec::with_capacity(stats.len());
    for (version, s) in stats {
        live += s.tombstones_delta;
        gauge.push((*version, live));
        if let Some((f, m)) = credited(flows, t, *version, metrics) {
            metrics[f][m].num_stale_events += s.stale_events;
            metrics[f][m].num_sequence_ties += s.sequence_ties;
            metrics[f][m].num_collected_tombstones += s.tombstones_collected;
        }
    }
    for (f, flow) in flows.iter().enumerate() {
        if flow.target != t {
            continue;
        }
        for m in &mut metrics[f] {
            let at = gauge.partition_point(|(v, _)| *v <= m.commit_version);
            let held = at.checked_sub(1).map_or(live_before, |i| gauge[i].1);
            m.num_live_tombstones = u64::try_from(held).unwrap_or(0);
        }
    }
    live
}

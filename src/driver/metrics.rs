//! Metrics per flow and commit (D13), per source table and commit (expectations), and how a
//! target's counts are credited to its flows.

use super::expect::ExpectationCount;
use super::flows::FlowRef;
use crate::engine::CommitStats;
use serde::{Deserialize, Serialize};

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

/// How long one commit took to reach its outputs (`metrics.json`'s `latency`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommitLatency {
    /// Commit version.
    pub commit_version: u64,
    /// Milliseconds from the commit's input being complete (read and validated) to its
    /// change-feed rows being written: appended and synced in a durable run, into the staged
    /// files (published when the run ends) in a plain run.
    pub latency_ms: f64,
}

impl CommitLatency {
    /// The latency of commit `version` whose input was complete at `since`, measured now.
    pub fn since(version: u64, since: std::time::Instant) -> Self {
        CommitLatency {
            commit_version: version,
            latency_ms: since.elapsed().as_secs_f64() * 1e3,
        }
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

/// The entry credited with target `t`'s counts in one commit: that of the first flow into `t`
/// (in [`super::flows::all`] order) that had input in the commit. `entries` are the commit's
/// `(flow, metrics)`.
fn credited<'a>(
    flows: &[FlowRef],
    t: usize,
    entries: &'a mut [(usize, FlowCommitMetrics)],
) -> Option<&'a mut FlowCommitMetrics> {
    entries
        .iter_mut()
        .filter(|(f, _)| flows[*f].target == t)
        .min_by_key(|(f, _)| *f)
        .map(|(_, m)| m)
}

/// Adds target `t`'s change-feed rows of one commit, `(upserted, deleted)`, and its counters,
/// to the commit's metrics entries; `live` is the target's tombstone gauge, moved by the
/// counters and recorded in every entry of a flow into `t`.
pub fn attribute(
    flows: &[FlowRef],
    t: usize,
    (upserted, deleted): (u64, u64),
    stats: &CommitStats,
    live: &mut i64,
    entries: &mut [(usize, FlowCommitMetrics)],
) {
    *live += stats.tombstones_delta;
    if let Some(m) = credited(flows, t, entries) {
        m.num_upserted_rows += upserted;
        m.num_deleted_rows += deleted;
        m.num_stale_events += stats.stale_events;
        m.num_sequence_ties += stats.sequence_ties;
        m.num_collected_tombstones += stats.tombstones_collected;
    }
    for (f, m) in entries.iter_mut() {
        if flows[*f].target == t {
            m.num_live_tombstones = u64::try_from(*live).unwrap_or(0);
        }
    }
}

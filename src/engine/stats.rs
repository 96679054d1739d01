//! Per-commit counters that the states report alongside their row updates (D13).

use serde::{Deserialize, Serialize};

/// What one commit did to one target, beyond its row updates.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct CommitStats {
    /// Events ignored because the key's state (or a truncate) is newer (D13).
    pub stale_events: u64,
    /// Events that met a different event of the same key at the same sequence (D2).
    pub sequence_ties: u64,
    /// Tombstones forgotten because older than the retention (D11).
    pub tombstones_collected: u64,
    /// Tombstones recorded minus tombstones removed (by a newer event, a truncate or the
    /// retention) in this commit on this worker. Summed over every commit and worker, it is the
    /// number of tombstones held ([`Durable::live_tombstones`](super::Durable::live_tombstones)
    /// summed over the workers); a restored state starts from its restored tombstones.
    pub tombstones_delta: i64,
}

impl CommitStats {
    /// Adds another worker's counters.
    pub fn merge(&mut self, other: &CommitStats) {
        self.stale_events += other.stale_events;
        self.sequence_ties += other.sequence_ties;
        self.tombstones_collected += other.tombstones_collected;
        self.tombstones_delta += other.tombstones_delta;
    }
}

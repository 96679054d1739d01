//! Tombstone retention (D11): deletes are remembered for a time measured in commit (ingestion)
//! time, then forgotten. After that a late, older upsert for the key re-creates it.
//!
//! The queue holds tombstones in the order they were recorded; commit times only grow, so the
//! expired ones are always at its front and a commit pays only for what expires. Entries are
//! checked lazily: the state decides whether the key still holds that tombstone.
//!
//! A saved queue keeps each entry's commit time (`since`), so tombstones go on ageing across
//! runs; restoring merges the queues of several old workers back into `since` order.

use super::CommitStats;
use crate::value::{Row, Value};
use std::collections::VecDeque;

/// A queue entry: the commit time the delete was recorded at, the key, the delete's sequence.
pub(super) type Queued = (i64, Row, Value);

/// Tombstones of one state, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Tombstones {
    retention: Option<i64>,
    queue: VecDeque<Queued>,
    /// Entries recorded since the last save: the queue's share of a delta.
    since_save: usize,
    /// Every entry recorded before this commit time has expired (and left the queue).
    expired_before: Option<i64>,
}

impl super::heap::HeapSize for Tombstones {
    fn heap_bytes(&self) -> usize {
        self.queue.heap_bytes()
    }
}

impl Tombstones {
    /// Tombstones kept for `retention` microseconds; `None` keeps them forever (and records
    /// nothing).
    pub(crate) fn new(retention: Option<i64>) -> Self {
        Tombstones {
            retention: retention.filter(|r| *r > 0),
            queue: VecDeque::new(),
            since_save: 0,
            expired_before: None,
        }
    }

    /// Records the delete at `seq` of `key`, made at commit time `now`.
    pub(crate) fn record(&mut self, now: i64, key: &Row, seq: &Value) {
        if self.retention.is_some() {
            self.queue.push_back((now, key.clone(), seq.clone()));
            self.since_save += 1;
        }
    }

    /// Removes and returns the tombstones older than the retention at commit time `now`.
    pub(crate) fn expire(&mut self, now: i64) -> Vec<(Row, Value)> {
        let Some(retention) = self.retention else {
            return Vec::new();
        };
        let mut expired = Vec::new();
        self.expired_before = Some(now.saturating_sub(retention));
        while let Some((since, _, _)) = self.queue.front() {
            if since.saturating_add(retention) >= now {
                break;
            }
            let (_, key, seq) = self.queue.pop_front().expect("front exists");
            expired.push((key, seq));
        }
        expired
    }

    /// The queue, oldest first, to save.
    pub(super) fn entries(&self) -> &VecDeque<Queued> {
        &self.queue
    }

    /// The entries recorded since the last save, oldest first.
    fn added(&self) -> VecDeque<Queued> {
        let n = self.since_save.min(self.queue.len());
        self.queue.range(self.queue.len() - n..).cloned().collect()
    }

    /// Marks the queue saved.
    pub(super) fn saved(&mut self) {
        self.since_save = 0;
    }

    /// What a delta records of the queue: the entries recorded since the last save, and the
    /// commit time before which every entry has expired.
    pub(super) fn delta(&self) -> (VecDeque<Queued>, Option<i64>) {
        (self.added(), self.expired_before)
    }

    /// Applies a delta's record of the queue of the worker that wrote it (whose keys `wrote`
    /// accepts): its entries that expired since the last save leave, the new ones join.
    /// Expiry pops every entry older than a cutoff, so `expired_before` says exactly which are
    /// gone, even when a key deleted again at the same sequence has a newer entry.
    pub(super) fn restore_delta(
        &mut self,
        (added, expired_before): (VecDeque<Queued>, Option<i64>),
        owns: &dyn Fn(&Row) -> bool,
        wrote: &dyn Fn(&Row) -> bool,
    ) {
        if let Some(before) = expired_before {
            self.queue
                .retain(|(since, key, _)| *since >= before || !wrote(key));
        }
        self.restore(added, owns);
    }

    /// Merges saved `entries` (oldest first) of the keys `owns` accepts, keeping the queue
    /// ordered by commit time; entries of equal time keep their order. Without a retention
    /// nothing is kept, as [`Tombstones::record`] keeps nothing.
    pub(super) fn restore(&mut self, entries: VecDeque<Queued>, owns: &dyn Fn(&Row) -> bool) {
        if self.retention.is_none() {
            return;
        }
        self.queue
            .extend(entries.into_iter().filter(|(_, key, _)| owns(key)));
        // Two ascending runs (the held queue and the shard's): the stable sort merges them in
        // linear time.
        self.queue
            .make_contiguous()
            .sort_by_key(|(since, _, _)| *since);
    }
}

/// The number of tombstones a state holds, changed only alongside the commit's
/// [`CommitStats::tombstones_delta`].
#[derive(Debug, Default)]
pub(super) struct Live(u64);

impl Live {
    /// The tombstones held.
    pub(super) fn get(&self) -> u64 {
        self.0
    }

    /// Adds `n` (negative: removes) tombstones in the commit `stats` describes.
    pub(super) fn add(&mut self, n: i64, stats: &mut CommitStats) {
        debug_assert!(
            self.0.checked_add_signed(n).is_some(),
            "tombstone count {} {n:+}",
            self.0
        );
        self.0 = self.0.saturating_add_signed(n);
        stats.tombstones_delta += n;
    }

    /// Records that something held a tombstone `before` and holds one `after`.
    pub(super) fn change(&mut self, before: bool, after: bool, stats: &mut CommitStats) {
        self.add(i64::from(after) - i64::from(before), stats);
    }

    /// Counts restored tombstones (no commit: they were counted when recorded).
    pub(super) fn restored(&mut self, n: u64) {
        self.0 += n;
    }

    /// Uncounts restored tombstones that a later delta replaced.
    pub(super) fn replaced(&mut self, n: u64) {
        self.0 = self.0.saturating_sub(n);
    }
}

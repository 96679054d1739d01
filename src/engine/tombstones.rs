//! Tombstone retention (D11): deletes are remembered for a time measured in commit (ingestion)
//! time, then forgotten. After that a late, older upsert for the key re-creates it.
//!
//! The queue holds tombstones in the order they were recorded; commit times only grow, so the
//! expired ones are always at its front and a commit pays only for what expires. Entries are
//! checked lazily: the state decides whether the key still holds that tombstone.

use crate::value::{Row, Value};
use std::collections::VecDeque;

/// Tombstones of one state, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Tombstones {
    retention: Option<i64>,
    queue: VecDeque<(i64, Row, Value)>,
}

impl Tombstones {
    /// Tombstones kept for `retention` microseconds; `None` keeps them forever (and records
    /// nothing).
    pub(crate) fn new(retention: Option<i64>) -> Self {
        Tombstones {
            retention: retention.filter(|r| *r > 0),
            queue: VecDeque::new(),
        }
    }

    /// Records the delete at `seq` of `key`, made at commit time `now`.
    pub(crate) fn record(&mut self, now: i64, key: &Row, seq: &Value) {
        if self.retention.is_some() {
            self.queue.push_back((now, key.clone(), seq.clone()));
        }
    }

    /// Removes and returns the tombstones older than the retention at commit time `now`.
    pub(crate) fn expire(&mut self, now: i64) -> Vec<(Row, Value)> {
        let Some(retention) = self.retention else {
            return Vec::new();
        };
        let mut expired = Vec::new();
        while let Some((since, _, _)) = self.queue.front() {
            if since.saturating_add(retention) >= now {
                break;
            }
            let (_, key, seq) = self.queue.pop_front().expect("front exists");
            expired.push((key, seq));
        }
        expired
    }
}

//! Stages of a commit: targets whose flows read other targets' change data feeds in the same
//! pipeline ([`crate::plan::Pipeline::stages`]).
//!
//! A commit's targets are applied stage by stage, all at the commit's timely time: each worker
//! closes stage 0's inputs for the commit, steps until stage 0's targets have passed it, hands
//! the changes it captured of them (labelled on the worker that owns their keys) to the
//! [`Feeder`], inserts the input the feeder makes into the later stages' inputs — still open at
//! the commit — and goes on with stage 1, and so on. Which worker inserts an event does not
//! matter (the operators exchange events by key), so this holds on any number of workers and
//! processes; in a cluster that gathers its results, worker 0 captures every change and makes
//! all of the later stages' input.
//!
//! Invariant: a stage's inputs close for a commit only after every earlier stage has passed it
//! on this worker, so no target applies a commit without the changes it reads of that commit.
//! Limits: the feeder's input goes to AUTO CDC and REPLACE USING targets (events and rows);
//! snapshots are not taken, since each worker holds only a share of a stage's changes.

use super::worker::Labelled;
use super::CommitEvents;
use crate::engine::changefeed::ChangeType;
use crate::value::Row;
use std::sync::Arc;

/// Makes later stages' input from one stage's changes on one worker: the input (AUTO CDC events
/// and REPLACE USING rows of later stages' targets) and the caller's report of it, which comes
/// back with the commit's outcome ([`super::Outcome::reports`]).
#[derive(Clone)]
pub struct Feeder(pub Arc<FeederFn>);

/// What a [`Feeder`] calls.
pub type FeederFn = dyn Fn(&StageChanges<'_>) -> (CommitEvents, Option<String>) + Send + Sync;

impl std::fmt::Debug for Feeder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Feeder")
    }
}

/// One worker's changes of one stage's targets in one commit.
pub struct StageChanges<'a> {
    /// The commit.
    pub version: u64,
    /// The commit's time (µs since the epoch), which every worker uses.
    pub timestamp: i64,
    /// The stage that made the changes.
    pub stage: usize,
    /// Per target: the changes this worker captured of the commit so far (empty for targets of
    /// later stages); the feeder reads those of `stage`'s targets.
    pub(super) changes: &'a [Vec<Labelled>],
}

impl StageChanges<'_> {
    /// Target `target`'s changes on this worker, in feed order.
    pub fn of(&self, target: usize) -> impl Iterator<Item = (ChangeType, &Row)> {
        let changes = self.changes.get(target).map_or(&[][..], Vec::as_slice);
        changes.iter().map(|(kind, row)| (*kind, row))
    }

    /// Whether this worker captured no change of the commit so far.
    pub fn is_empty(&self) -> bool {
        self.changes.iter().all(Vec::is_empty)
    }
}

//! The state-loop baseline: the engine's per-key state machines applied commit by commit in
//! this thread, without timely (a snapshot flow's through the engine's snapshot diff state).

use super::drive::Run;
use super::source::{self, Batch, Commits};
use super::Feed;
use super::StateSize;
use crate::engine::{
    BitemporalState, CdcState, CommitStats, Durable, Scd1State, Scd2State, SnapshotState,
};
use crate::plan::{ScdType, Target};
use std::time::Instant;

/// A state whose table can be read back (for its [`StateSize`]).
trait Table: CdcState + Durable {}

impl<S: CdcState + Durable> Table for S {}

/// The state of `target` (tombstones kept forever, as in the engine with commit time 0).
fn state(target: &Target) -> Box<dyn Table> {
    match target.scd {
        ScdType::Type1 => Box::new(Scd1State::new(target.image_len, target.partial, None)),
        ScdType::Type2 => Box::new(Scd2State::new(
            target.image_len,
            target.tracked.clone(),
            target.partial,
            None,
        )),
        ScdType::Bitemporal => Box::new(BitemporalState::new(
            target.image_len,
            target.tracked.clone(),
            target.partial,
        )),
    }
}

/// Applies `commits` in order, waiting for each one's due time in an open loop, until the
/// budget runs out.
pub(super) fn run(target: &Target, commits: Commits, feed: Feed) -> Run {
    let mut state = state(target);
    let mut snapshots = SnapshotState::new();
    let n = commits.len();
    let mut share = source::deal(commits, 1)
        .pop()
        .expect("one share for one worker");
    let mut latencies = Vec::with_capacity(n);
    let mut rows = 0i64;
    let mut out = Vec::new();
    let start = Instant::now();
    for i in 0..n {
        let due = feed.pacing.due(start, i);
        // The budget counts due times in an open loop, hand-over times in a closed one.
        let at = due.unwrap_or_else(Instant::now);
        if feed
            .budget
            .is_some_and(|b| at.saturating_duration_since(start) >= b)
        {
            break;
        }
        if let Some(wait) = due.and_then(|d| d.checked_duration_since(Instant::now())) {
            std::thread::sleep(wait);
        }
        // As in the dataflow driver: making a snapshot's rows counts in an open loop only.
        let batch = share.next().expect("i < n");
        let handed = Instant::now();
        let events = match batch {
            Batch::Events(events) => events,
            Batch::Snapshot(rows) => snapshots.diff(rows, i as i64 + 1, 0),
            Batch::Typed(_) => unreachable!("the state loop is dealt events or snapshots"),
        };
        out.clear();
        state.apply(events, 0, &mut out, &mut CommitStats::default());
        latencies.push(due.unwrap_or(handed).elapsed());
        rows += out.iter().map(|(_, diff)| *diff as i64).sum::<i64>();
    }
    let total = start.elapsed();
    Run {
        latencies,
        total,
        rows,
        state: Some(StateSize::of(&*state, &snapshots)),
    }
}

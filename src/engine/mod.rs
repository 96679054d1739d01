//! Incremental per-key state of SCD targets, free of any dataflow.
//!
//! Each state consumes the events of one commit (for the keys one worker owns, in any order)
//! and appends the differential updates of its target rows: `(row, +1)` for rows that appear,
//! `(row, -1)` for rows that disappear. Summed over commits these updates equal the reference
//! model's table for the events seen so far (`crate::model`), whatever the arrival order and
//! commit split. The timely operators in `crate::operators` only route events to these states
//! and retire commits in frontier order.
//!
//! Beside them, [`SnapshotState`] diffs full snapshots into events and [`ReplaceState`] keeps
//! REPLACE USING rows. Every state is [`Durable`]: saved key by key at the end of a run and
//! restored, on any number of workers, at the start of the next. [`typed`] keeps the same rules
//! for whole upserts and deletes over the caller's own key, sequence and image types, for
//! dataflows that embed the operators.

mod bitemporal;
pub mod changefeed;
mod durable;
mod edits;
mod hashed_row;
mod heap;
mod records;
mod replace;
mod scd1;
mod scd2;
mod snapshot;
mod sorted_map;
mod stats;
mod tombstones;
pub mod typed;

#[cfg(test)]
mod durable_tests;

pub use bitemporal::BitemporalState;
pub use durable::{worker_of, Durable};
pub use edits::{edit, Editable, HistoryRules, KeyEdit};
pub use records::{RecordIn, RecordOut};
pub use replace::{ReplaceConfig, ReplaceState};
pub use scd1::Scd1State;
pub use scd2::Scd2State;
pub use snapshot::SnapshotState;
pub use stats::CommitStats;

use crate::event::Event;
use crate::value::Row;

/// Per-key maps of the states and operators. A fixed-seed fast hash: keys come from the
/// operators' own exchange (already spread by key hash), so HashDoS resistance buys nothing, and
/// a fixed seed keeps runs repeatable.
pub(crate) type KeyMap<V> = std::collections::HashMap<Row, V, foldhash::fast::FixedState>;

/// The state of one SCD target on one worker.
pub trait CdcState: 'static {
    /// Applies one commit's events and appends the resulting row updates to `out`. `now` is the
    /// commit's time (microseconds since the epoch; never decreasing), which ages tombstones.
    fn apply(
        &mut self,
        events: Vec<Event>,
        now: i64,
        out: &mut Vec<(Row, isize)>,
        stats: &mut CommitStats,
    );

    /// Whether `apply` already emits each row at most once per commit, so the caller need not
    /// consolidate (sort) its output.
    fn emits_consolidated(&self) -> bool {
        false
    }

    /// The bytes the state holds on the heap, counted from its structures (allocator rounding
    /// and retained pages aside; see `heap` for what is counted).
    fn heap_bytes(&self) -> usize;
}

/// How many events' keys [`for_each_key`] reads ahead of applying them: a block's states stay
/// in the first caches until it is applied (a 10,000-event commit's states outgrow them).
pub(crate) const AHEAD: usize = 256;

/// Calls `each` with every key's events of a commit, grouped and with exact duplicates removed
/// (D1); within a group events are in event order, and the first event of each group has given
/// its key to the group (the states never read an event's own key). Groups come in key order,
/// so that a state's updates come out ordered by key, as a change feed is: labelling them
/// ([`changefeed::label`]) then has only each key's own updates to order. Sorting on each
/// key's order prefix first (sixteen bytes: text keys often share their first eight) keeps a
/// large commit's sort away from comparing keys value by value. `each` may take the events out
/// of the group: one buffer serves every group, where a vector per key cost an allocation and
/// a move per event (a tenth of SCD2's state loop on 10,000-event commits).
///
/// Before each block of [`AHEAD`] events is applied, `touch` reads their keys' states in
/// `state` (what applying a key reads first). Applying a key waits for its state to come from
/// memory: a commit's keys are spread over a state of megabytes, and a state restored or left
/// idle between commits is cold. The block's lookups are independent of each other, so the
/// processor overlaps their misses, and applying finds the states in cache. One pass over the
/// whole commit first (the previous form) took a followed 10,000-event SCD2 commit's apply
/// from 11.6-12.5 ms to 8.5-10 ms, but there the states it read were evicted again before they
/// were applied: a plain 1M-event SCD2 run still spent a third of its apply waiting on the
/// first read of a key's bucket and of its history. Read block by block, that run took
/// 1.22-1.39 s where it took 1.38-1.43 (alternating, four runs each), and a followed commit's
/// p50 fell from 26.2 to 23.3-24.7 ms; commits of 1,000 events, whose states stay in cache
/// either way, ran as fast as before. Blocks of 64 events did no better than 256.
fn for_each_key<S>(
    state: &mut S,
    events: Vec<Event>,
    touch: impl Fn(&S, &Row) -> usize,
    mut each: impl FnMut(&mut S, Row, &mut Vec<Event>),
) {
    // Sorts positions, not events: an event is large to move, and the order prefix settles
    // nearly every comparison.
    let mut order: Vec<(u128, usize)> = events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.key.as_row_ref().wide_order_prefix(), i))
        .collect();
    order.sort_unstable_by(|(pa, a), (pb, b)| {
        pa.cmp(pb).then_with(|| {
            let (a, b) = (&events[*a], &events[*b]);
            a.key.cmp(&b.key).then_with(|| a.cmp(b))
        })
    });
    order.dedup_by(|(pb, b), (pa, a)| pa == pb && events[*a] == events[*b]);
    // Taken out in sorted order. `Option<Event>` is as large as `Event`, so this keeps the buffer.
    let mut events: Vec<Option<Event>> = events.into_iter().map(Some).collect();
    let mut group: Vec<Event> = Vec::new();
    let mut key: Option<Row> = None;
    for (n, &(_, i)) in order.iter().enumerate() {
        if n % AHEAD == 0 {
            let block = order[n..].iter().take(AHEAD);
            // A taken event's key went to its group, which came before this block.
            let read = (block.filter_map(|&(_, j)| events[j].as_ref()))
                .map(|e| touch(state, &e.key))
                .fold(0, usize::wrapping_add);
            // What was read must look used, or the reads go.
            std::hint::black_box(read);
        }
        let mut event = events[i].take().expect("each position is taken once");
        if key.as_ref() != Some(&event.key) {
            if let Some(done) = key.take() {
                each(state, done, &mut group);
                group.clear();
            }
            key = Some(std::mem::take(&mut event.key));
        }
        group.push(event);
    }
    if let Some(done) = key {
        each(state, done, &mut group);
    }
}

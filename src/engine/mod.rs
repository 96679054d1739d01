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
mod by_key;
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

use by_key::{for_each_key, AHEAD};

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

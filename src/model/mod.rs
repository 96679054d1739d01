//! The reference model: the executable specification of what an AUTO CDC target contains.
//!
//! Every function here is a pure function of the *set* of events delivered to one target (SPEC
//! section 8: "every target is a pure function of the set of retained events"). It builds no
//! dataflow and keeps no state: plain loops over `BTreeMap`s and `BTreeSet`s, written to be
//! obviously correct rather than fast. The incremental engine is property-tested against it on
//! every prefix of random arrival orders, so when the two disagree, decide which one matches the
//! rules below before changing anything — never "fix" the model to match the engine.
//!
//! # Common rules
//!
//! * Events are grouped by [`Event::key`] (in `KEYS` order). TRUNCATE events have an empty key
//!   and act on the whole table (SCD1 only).
//! * D1 (replays): byte-identical events are one event. The input is treated as a set.
//! * D2 (ties): among the events of one key with *equal* sequence, only the greatest survives,
//!   ordered by [`Event::tie_rank`]: a DELETE beats an UPSERT, and among upserts the greatest
//!   `(image, authored)` wins. The one exception is SCD1 with partial updates, which resolves
//!   ties column by column (below).
//! * Sequence values compare with [`Value`]'s order (SQL ascending; STRUCTs field by field).
//! * Key columns are authored by every upsert, whatever its `authored` mask says.
//!
//! # SCD type 1, whole images (`target.partial == false`) — [`scd1()`]
//!
//! Let `t*` be the greatest sequence among TRUNCATE events (if any). For each key, the *winner*
//! is its greatest UPSERT/DELETE event by `(seq, tie rank)`. The key has a row iff the winner is
//! an UPSERT and (there is no truncate or `winner.seq > t*`) — D5: a truncate wins equality and
//! acts as a table-wide tombstone. The row is the winner's image.
//!
//! # SCD type 1, partial updates (`target.partial == true`) — [`scd1()`]
//!
//! D6, field level. Per key, `reset` = the greatest of the key's greatest DELETE sequence and
//! `t*` (either may be absent). The key has a row iff it has an UPSERT with `seq > reset` (so a
//! delete or truncate at the same sequence as the latest upsert beats it). Column `i` of the row
//! is taken from the UPSERT with `seq > reset` that authors `i` ([`Event::authors`]) and has the
//! greatest `(seq, image[i])`; if no such upsert exists the column is NULL.
//!
//! Deviation from image-level D2, deliberately: at equal sequence two partial upserts of one key
//! are *merged* column by column, and where both author a column the greatest *value* of that
//! column wins. This keeps the per-key state O(columns) and makes the result independent of how
//! events are folded.
//!
//! # SCD type 2 — [`scd2()`]
//!
//! Per key, the surviving events (after D1 and D2) are folded in ascending sequence order with
//! an open version `open: Option<(start, image)>` and the key's current full image `folded`
//! (all NULL initially):
//!
//! * UPSERT `e`: `new` = `folded` overlaid with `e.image` at the columns `e` authors (for
//!   whole-image targets, `new = e.image`). With no open version, open `(e.seq, new)`. If the
//!   tracked projection (`target.tracked`) of `new` equals that of the open image, the open
//!   image becomes `new` in place and keeps its start (R2.3, R2.6). Otherwise the open version
//!   is emitted with `__END_AT = e.seq` and `(e.seq, new)` is opened (R2.1, R2.7). Then
//!   `folded = new`.
//! * DELETE `e`: an open version is emitted with `__END_AT = e.seq` and closed (R2.4, R2.8); a
//!   delete with nothing open emits nothing. `folded` is reset to all NULL.
//! * TRUNCATE events are ignored (validation rejects them for SCD2, R2.11).
//!
//! At the end the open version is emitted with `__END_AT` NULL. Intervals are half-open (D10)
//! and, thanks to the tie rule, never empty: every version starts at a distinct sequence.
//!
//! # Output
//!
//! Rows are sorted ascending by the key columns (in `target.keys` order), then by `__START_AT`
//! (SCD2), then by the whole row, so tables can be compared with `==`.

mod scd1;
mod scd2;

#[cfg(test)]
mod tests;

pub use scd1::scd1;
pub use scd2::scd2;

use crate::event::{Event, EventKind};
use crate::plan::{ScdType, Target};
use crate::value::{Row, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The table `target` holds after `events` (in any order, duplicates allowed), by SCD type.
pub fn evaluate(target: &Target, events: &[Event]) -> Vec<Row> {
    match target.scd {
        ScdType::Type1 => scd1(target, events),
        ScdType::Type2 => scd2(target, events),
    }
}

/// The UPSERT and DELETE events grouped by key, each group deduplicated (D1) and ordered.
fn by_key(events: &[Event]) -> BTreeMap<&Row, BTreeSet<&Event>> {
    let mut groups: BTreeMap<&Row, BTreeSet<&Event>> = BTreeMap::new();
    for e in events {
        if e.kind != EventKind::Truncate {
            groups.entry(&e.key).or_default().insert(e);
        }
    }
    groups
}

/// `t*`: the greatest sequence among TRUNCATE events, if there are any.
fn truncate_seq(events: &[Event]) -> Option<&Value> {
    events
        .iter()
        .filter(|e| e.kind == EventKind::Truncate)
        .map(|e| &e.seq)
        .max()
}

/// The events of one key after the tie rule (D2): per sequence, the greatest by tie rank; in
/// ascending sequence order.
fn tie_winners<'a>(events: &BTreeSet<&'a Event>) -> Vec<&'a Event> {
    let mut per_seq: BTreeMap<&Value, &Event> = BTreeMap::new();
    for &e in events {
        per_seq
            .entry(&e.seq)
            .and_modify(|w| {
                if e.tie_rank() > w.tie_rank() {
                    *w = e;
                }
            })
            .or_insert(e);
    }
    per_seq.into_values().collect()
}

/// Whether upsert `e` sets image column `i` of `target` (keys are always set).
fn authors(target: &Target, e: &Event, i: usize) -> bool {
    target.keys.contains(&i) || e.authors(i)
}

/// Sorts rows by (key columns in `KEYS` order, then the columns at `then`, then the whole row).
fn sort_rows(target: &Target, rows: &mut [Row], then: &[usize]) {
    let columns: Vec<usize> = target.keys.iter().chain(then).copied().collect();
    let project = |r: &Row| -> Vec<Value> { columns.iter().map(|&i| r[i].clone()).collect() };
    rows.sort_by_cached_key(|r| (project(r), r.clone()));
}

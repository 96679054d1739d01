//! The reference model: the executable specification of what an AUTO CDC target contains.
//!
//! Change-feed targets ([`evaluate`], [`scd1()`], [`scd2()`]) are pure functions of the *set* of
//! events delivered to one target (SPEC section 8: "every target is a pure function of the set of
//! retained events"); snapshot targets ([`snapshots()`]) are functions of the sequence of
//! snapshots in arrival order, REPLACE USING targets ([`replace_using()`]) of the multiset of
//! incoming rows, and REPLACE WHERE targets ([`replace_where()`]) of the sequence of updates. The model builds no dataflow and keeps no state between calls: plain loops
//! over `BTreeMap`s and `BTreeSet`s, written to be obviously correct rather than fast. The
//! incremental engine is property-tested against it on every prefix of random arrival orders, so
//! when the two disagree, decide which one matches the rules below before changing anything —
//! never "fix" the model to match the engine.
//!
//! # Common rules of change-feed targets
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
//! # Bitemporal — [`bitemporal()`]
//!
//! SPEC 3.11 and D15. Each event also carries a system time ([`Event::system`], never NULL).
//! For a key, `H(s)` is the SCD2 table above computed from the key's events with system time
//! `<= s` (tracked columns and partial updates apply as for SCD2). Walking the key's distinct
//! system times in ascending order, a business row `(image, __START_AT, __END_AT)` of `H(s)`
//! that was not in the previous `H` opens a row with `__SYSTEM_START_AT = s`, and a business row
//! of the previous `H` missing from `H(s)` gets `__SYSTEM_END_AT = s`. Rows still believed after
//! the last system time stay open (`__SYSTEM_END_AT` NULL). An unchanged business row keeps its
//! original `__SYSTEM_START_AT` (T8 step 3); events with equal system time are applied together.
//! The table is a function of the event set, so an event late in system time is spliced in as
//! if it had arrived in order. Rows sort by key, `__START_AT`, then `__SYSTEM_START_AT`.
//!
//! # AUTO CDC FROM SNAPSHOT — [`snapshots()`]
//!
//! SPEC 1.4, 3.7 and D12. The input is the list of `(version, rows)` snapshots in arrival order;
//! rows are images and keys are `target.keys`. The state is one current row per live key (with
//! its start version, for SCD2) plus, for SCD2, the closed versions. Snapshots are taken in
//! order:
//!
//! * A version `<=` the last applied one is skipped and counted ([`snapshots_with_skips`]); a
//!   skipped snapshot is not inspected at all, so duplicate keys in it are not an error (the
//!   engine never reads it).
//! * A snapshot with two rows of one key — even two identical rows — is an error,
//!   [`SnapshotError::DuplicateKey`]; the model stops there (the engine fails the update).
//!   Keys compare with plain [`Value`] equality; NULL keys are not the model's concern.
//! * Otherwise snapshot `v` is diffed against the current rows. A key new to the current rows is
//!   inserted (SCD2: opened at `v`). A key whose image is unchanged is left alone. A changed
//!   image is overwritten (SCD1); under SCD2, if a tracked column (`target.tracked`) changed,
//!   the current version is closed with `__END_AT = v` and a new one opened at `v`, otherwise
//!   the current version is overwritten in place and keeps its `__START_AT` (T16). A key
//!   missing from the snapshot is deleted (SCD1) or has its current version closed at `v`
//!   (SCD2); if it reappears in a later snapshot `w` it opens a new version at `w`.
//!
//! Versions are BIGINT: `__START_AT` / `__END_AT` are `Value::Int`. An SCD1 target after
//! version `v` equals snapshot `v`.
//!
//! # REPLACE USING — [`replace_using()`]
//!
//! SPEC 1.6, 3.12. The input is the multiset of incoming rows after the expectations (a row an
//! expectation drops is simply not passed, so it sets no sequence floor). Rows are grouped by
//! their replace-key value (`target.keys`, plain [`Value`] equality: NULL keys match NULL
//! keys). Per key value, the table holds every offered row whose sequence equals the greatest
//! sequence offered for that key, duplicates kept.
//!
//! This is what SPEC 3.12's batch-by-batch algorithm produces for any order and split into
//! commits: by induction, after any prefix of batches the key's stored rows are exactly the
//! rows offered so far at the greatest sequence offered so far. A batch carrying the key at a
//! higher sequence replaces them with its own rows at that sequence (the new maximum); at an
//! equal sequence it appends its rows (the maximum is unchanged); at a lower sequence it is
//! ignored (those rows are below the maximum). Within a batch only the batch's highest rows
//! count, which again are exactly its rows that can be at the overall maximum. So the result
//! depends only on the multiset of rows. NULL sequences are rejected upstream (D3); the model
//! orders them like any [`Value`] (lowest).
//!
//! # REPLACE WHERE — [`replace_where()`]
//!
//! The input is the list of updates in order, each the condition compiled at the update's
//! instant and the rows the flow's query returned. An update deletes every row of the table
//! the condition holds for (TRUE; FALSE, NULL and an evaluation error do not hold) and adds the
//! query's rows it holds for. Rows are a multiset: equal rows repeat. Rows the condition does
//! not hold for stay, even when later queries no longer return them.
//!
//!
//! Rows are sorted ascending by the key columns (in `target.keys` order), then by `__START_AT`
//! (SCD2), then by the whole row, so tables can be compared with `==`. REPLACE USING tables
//! are sorted by the key columns, then the whole row; REPLACE WHERE tables by the whole row.

mod bitemporal;
mod replace_using;
mod replace_where;
mod scd1;
mod scd2;
mod snapshot;

#[cfg(test)]
mod snapshot_tests;
#[cfg(test)]
mod tests;

pub use bitemporal::bitemporal;
pub use replace_using::replace_using;
pub use replace_where::replace_where;
pub use scd1::scd1;
pub use scd2::scd2;
pub use snapshot::{snapshots, snapshots_with_skips, SnapshotError, SnapshotOutcome};

use crate::event::{Event, EventKind};
use crate::plan::{ScdType, Target};
use crate::value::{Datum, Packer, Row, Seq, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The table `target` holds after `events` (in any order, duplicates allowed), by SCD type.
pub fn evaluate(target: &Target, events: &[Event]) -> Vec<Row> {
    match target.scd {
        ScdType::Type1 => scd1(target, events),
        ScdType::Type2 => scd2(target, events),
        ScdType::Bitemporal => bitemporal(target, events),
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
fn truncate_seq(events: &[Event]) -> Option<&Seq> {
    events
        .iter()
        .filter(|e| e.kind == EventKind::Truncate)
        .map(|e| &e.seq)
        .max()
}

/// The events of one key after the tie rule (D2): per sequence, the greatest by tie rank; in
/// ascending sequence order.
fn tie_winners<'a>(events: &BTreeSet<&'a Event>) -> Vec<&'a Event> {
    let mut per_seq: BTreeMap<&Seq, &Event> = BTreeMap::new();
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
    rows.sort_by_cached_key(|r| (r.project(&columns), r.clone()));
}

/// The tracked columns of an image (`target.tracked`).
pub(crate) fn tracked<'a>(target: &Target, image: &'a Row) -> Vec<Datum<'a>> {
    image
        .iter()
        .zip(&target.tracked)
        .filter(|(_, &t)| t)
        .map(|(v, _)| v)
        .collect()
}

/// An output row: the image, then `__START_AT`, `__END_AT`.
pub(crate) fn version(image: Row, start: Value, end: Value) -> Row {
    Packer::new()
        .extend_from(image.as_row_ref())
        .push(&start)
        .push(&end)
        .finish()
}

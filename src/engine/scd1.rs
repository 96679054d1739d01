//! SCD type 1 state: O(columns) per key, never an event log (D6).
//!
//! Whole-image targets keep each key's winning event (greatest by sequence, then by the D2 tie
//! rank). Partial-update targets keep, per column, the latest `(seq, value)` that authored it,
//! plus the key's latest upsert and delete sequences: a column's value is its latest author
//! newer than the key's last reset (delete or truncate), which is exactly the field-level fold
//! of D6, independent of arrival order.
//!
//! A truncate at `t*` is a table-wide tombstone (D5): rows whose state is not newer than `t*`
//! disappear, later events not newer than `t*` are stale, and keys whose whole state is covered
//! by `t*` are dropped from memory. Truncates reach every worker (the operator broadcasts them).
//! `t*` itself is a single value and is never collected.
//!
//! A key whose latest event is a delete is a tombstone: kept for the retention (D11), then the
//! key is forgotten entirely, so a late upsert older than the delete re-creates it (R1.4).
//!
//! Saved ([`Durable`]) as the truncate point and the tombstone queue, then each key's state.

use super::durable::{
    misfit, read_changes, read_header, read_keys, write_changes, write_header, Changed, Durable,
};
use super::edits::{Editable, HistoryRules};
use super::heap::HeapSize;
use super::records::{RecordIn, RecordOut};
use super::tombstones::{Live, Queued, Tombstones};
use super::{for_each_key, CdcState, CommitStats, KeyMap};
use crate::event::{Event, EventKind};
use crate::expr::describe;
use crate::value::{Row, Seq, Value};
use crate::Result;
use differential_dataflow::consolidation::consolidate_from;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::VecDeque;

/// SCD1 state of the keys one worker owns.
#[derive(Debug)]
pub struct Scd1State {
    image_len: usize,
    partial: bool,
    truncated_at: Option<Value>,
    keys: KeyMap<KeyState>,
    tombstones: Tombstones,
    /// Keys whose state is a tombstone ([`KeyState::tombstone`]).
    held: Live,
    changed: Changed,
    /// Whether two keys may hold equal images ([`Scd1State::with_equal_images`]).
    equal_images: bool,
}

/// A key's state: 48 bytes (64 with a `Value` sequence, 152 when it held a whole `Event` and
/// unboxed fields), one per key of the table.
#[derive(Debug, Serialize, Deserialize)]
enum KeyState {
    /// Whole images: the winning upsert or delete.
    Winner(Winner),
    /// Partial images: per-column latest authors.
    Fields(Box<Fields>),
}

/// The winning event of a whole-image key. Whole-image events author every column (their mask
/// is `None`), so the D2 tie rank is `(kind, image)`; the key is where the winner is stored.
/// Its sequence is a [`Seq`] (16 bytes, a `Value` is 32), saved as the value it holds.
#[derive(Debug, Serialize, Deserialize)]
struct Winner {
    seq: Seq,
    kind: EventKind,
    image: Row,
}

impl Winner {
    fn of(event: Event) -> Self {
        Winner {
            seq: event.seq,
            kind: event.kind,
            image: event.image,
        }
    }

    /// Whether the winner comes after a truncate at `t`.
    fn after(&self, t: &Value) -> bool {
        *self.seq.to_value() > *t
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Fields {
    upsert: Option<Value>,
    delete: Option<Value>,
    columns: Vec<Option<(Value, Value)>>,
}

impl Scd1State {
    /// An empty state for images of `image_len` columns; `partial` selects field-level folding;
    /// tombstones are kept for `retention` microseconds of commit time (`None`: forever).
    pub fn new(image_len: usize, partial: bool, retention: Option<i64>) -> Self {
        Scd1State {
            image_len,
            partial,
            truncated_at: None,
            keys: KeyMap::default(),
            tombstones: Tombstones::new(retention),
            held: Live::default(),
            changed: Changed::default(),
            equal_images: false,
        }
    }

    /// The state for keys that are not image columns, so that two keys may hold equal images
    /// (a REPLACE WHERE target's keys: a row and its occurrence number); a commit's output may
    /// then repeat a row, and the caller consolidates it.
    pub fn with_equal_images(mut self) -> Self {
        self.equal_images = true;
        self
    }

    /// Forgets the tombstones that expired by commit time `now`.
    fn collect_tombstones(&mut self, now: i64, stats: &mut CommitStats) {
        for (key, seq) in self.tombstones.expire(now) {
            let held = self.keys.get(&key).and_then(KeyState::tombstone);
            if held.is_some_and(|held| *held == seq) {
                self.keys.remove(&key);
                self.changed.mark(&key);
                stats.tombstones_collected += 1;
                self.held.add(-1, stats);
            }
        }
    }

    /// Number of keys held (live rows and tombstones).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn truncate(&mut self, seq: Value, out: &mut Vec<(Row, isize)>, stats: &mut CommitStats) {
        if self.truncated_at.as_ref().is_some_and(|t| *t >= seq) {
            return;
        }
        let old = self.truncated_at.replace(seq);
        let new = self.truncated_at.clone();
        let mut dropped = 0;
        let changed = &mut self.changed;
        self.keys.retain(|key, state| {
            // Under partial updates a surviving row can still lose the columns authored before
            // the truncate, so compare whole rows, not just presence.
            let (before, after) = (state.visible(old.as_ref()), state.visible(new.as_ref()));
            if before != after {
                out.extend(before.map(|r| (r, -1)));
                out.extend(after.map(|r| (r, 1)));
            }
            let covered = state.covered_by(new.as_ref());
            dropped += i64::from(covered && state.tombstone().is_some());
            if covered {
                changed.mark(key);
            }
            !covered
        });
        self.held.add(-dropped, stats);
    }

    fn apply_key(
        &mut self,
        key: Row,
        live: &mut Vec<Event>,
        now: i64,
        out: &mut Vec<(Row, isize)>,
        stats: &mut CommitStats,
    ) {
        if let Some(t) = &self.truncated_at {
            let all = live.len();
            live.retain(|e| *e.seq.to_value() > *t);
            stats.stale_events += (all - live.len()) as u64;
        }
        if live.is_empty() {
            return;
        }
        self.changed.mark(&key);
        let t = self.truncated_at.as_ref();
        let (partial, image_len) = (self.partial, self.image_len);
        let Some(state) = self.keys.get_mut(&key) else {
            let mut live = live.drain(..);
            let first = live.next().expect("`live` is not empty");
            let mut state = KeyState::new(first, partial, image_len, stats);
            for event in live {
                state.absorb(event, stats);
            }
            out.extend(state.visible(t).map(|r| (r, 1)));
            if let Some(seq) = state.tombstone() {
                self.tombstones.record(now, &key, &seq);
                self.held.add(1, stats);
            }
            self.keys.insert(key, state);
            return;
        };
        let tombstone_before = state.tombstone().map(Cow::into_owned);
        match state {
            KeyState::Winner(winner) => {
                // The first displaced winner is the row as it was: moved out, never cloned.
                let mut displaced = None;
                for event in live.drain(..) {
                    if let Some(old) = absorb_winner(winner, event, stats) {
                        displaced.get_or_insert(old);
                    }
                }
                if let Some(old) = displaced {
                    let (before, after) = (shown(old, t), shown_ref(winner, t));
                    if before != after {
                        out.extend(before.map(|r| (r, -1)));
                        out.extend(after.map(|r| (r, 1)));
                    }
                }
            }
            KeyState::Fields(fields) => {
                let before = fields.visible(t);
                for event in live.drain(..) {
                    fields.absorb(event, stats);
                }
                let after = fields.visible(t);
                if before != after {
                    out.extend(before.map(|r| (r, -1)));
                    out.extend(after.map(|r| (r, 1)));
                }
            }
        }
        if let Some(seq) = state.tombstone() {
            if tombstone_before.as_ref() != Some(&*seq) {
                self.tombstones.record(now, &key, &seq);
            }
        }
        let after = state.tombstone().is_some();
        self.held.change(tombstone_before.is_some(), after, stats);
    }

    /// Counts the tombstones by looking at every key (tests check the incremental count).
    #[cfg(test)]
    pub(super) fn count_tombstones(&self) -> u64 {
        self.keys
            .values()
            .filter(|s| s.tombstone().is_some())
            .count() as u64
    }
}

const TAG: &str = "scd1";

impl Durable for Scd1State {
    fn save(&mut self, out: &mut dyn RecordOut) -> Result<()> {
        write_header(out, TAG, &(&self.truncated_at, self.tombstones.entries()))?;
        for (key, state) in &self.keys {
            out.write(&(key, state))?;
        }
        self.changed.clear();
        self.tombstones.saved();
        Ok(())
    }

    fn track_changes(&mut self) {
        self.changed.track();
    }

    fn save_changes(&mut self, out: &mut dyn RecordOut) -> Result<()> {
        write_header(out, TAG, &(&self.truncated_at, self.tombstones.delta()))?;
        write_changes(out, &mut self.changed, &self.keys)?;
        self.tombstones.saved();
        Ok(())
    }

    fn restore_changes(
        &mut self,
        input: &mut dyn RecordIn,
        owns: &dyn Fn(&Row) -> bool,
        wrote: &dyn Fn(&Row) -> bool,
    ) -> Result<()> {
        type Header = (Option<Value>, (VecDeque<Queued>, Option<i64>));
        let (truncated_at, queue): Header = read_header(input, TAG)?;
        self.truncated_at = self.truncated_at.take().max(truncated_at);
        self.tombstones.restore_delta(queue, owns, wrote);
        read_changes(input, owns, |key, state: Option<KeyState>| {
            if let Some(old) = self.keys.remove(&key) {
                self.held.replaced(u64::from(old.tombstone().is_some()));
            }
            if let Some(state) = state {
                state.fits(self.partial, self.image_len)?;
                self.held.restored(u64::from(state.tombstone().is_some()));
                self.keys.insert(key, state);
            }
            Ok(())
        })
    }

    fn restore(&mut self, input: &mut dyn RecordIn, owns: &dyn Fn(&Row) -> bool) -> Result<()> {
        let (truncated_at, queue): (Option<Value>, VecDeque<Queued>) = read_header(input, TAG)?;
        // Truncates reach every worker, so every shard has the same truncate point.
        self.truncated_at = self.truncated_at.take().max(truncated_at);
        self.tombstones.restore(queue, owns);
        read_keys(input, owns, |key, state: KeyState| {
            state.fits(self.partial, self.image_len)?;
            if self.keys.contains_key(&key) {
                return Ok(false);
            }
            self.held.restored(u64::from(state.tombstone().is_some()));
            self.keys.insert(key, state);
            Ok(true)
        })
    }

    fn table_keys(&self) -> Vec<&Row> {
        self.keys.keys().collect()
    }

    fn key_rows(&self, key: &Row, out: &mut Vec<(Row, isize)>) {
        let t = self.truncated_at.as_ref();
        out.extend(
            (self.keys.get(key))
                .and_then(|s| s.visible(t))
                .map(|r| (r, 1)),
        );
    }

    fn live_tombstones(&self) -> u64 {
        self.held.get()
    }
}

/// Lets `event` compete with the key's winner; returns the winner it displaced, if any.
fn absorb_winner(winner: &mut Winner, event: Event, stats: &mut CommitStats) -> Option<Winner> {
    let seq = &event.seq;
    let (new, old) = ((event.kind, &event.image), (winner.kind, &winner.image));
    if *seq == winner.seq && new != old {
        stats.sequence_ties += 1;
    }
    if (seq, new) > (&winner.seq, old) {
        return Some(std::mem::replace(winner, Winner::of(event)));
    }
    if *seq < winner.seq {
        stats.stale_events += 1;
    }
    None
}

/// Whether a winning event shows a row, given the table's truncate sequence.
fn shows(winner: &Winner, truncated_at: Option<&Value>) -> bool {
    winner.kind == EventKind::Upsert && truncated_at.is_none_or(|t| winner.after(t))
}

fn shown(winner: Winner, truncated_at: Option<&Value>) -> Option<Row> {
    shows(&winner, truncated_at).then_some(winner.image)
}

fn shown_ref(winner: &Winner, truncated_at: Option<&Value>) -> Option<Row> {
    shows(winner, truncated_at).then(|| winner.image.clone())
}

impl Editable for Scd1State {
    fn set_rows(
        &mut self,
        _rules: &HistoryRules,
        key: &Row,
        rows: &[Row],
        now: i64,
    ) -> std::result::Result<(), String> {
        let held = self.keys.get(key);
        let tombstone_before = held.and_then(KeyState::tombstone).is_some();
        let row = rows.first();
        let state = match (held, row) {
            (None, None) => return Ok(()),
            // The key keeps its sequence: a later event wins as it would have over the row.
            (Some(KeyState::Winner(w)), _) => KeyState::Winner(Winner {
                seq: w.seq.clone(),
                kind: row.map_or(EventKind::Delete, |_| EventKind::Upsert),
                image: row.cloned().unwrap_or_default(),
            }),
            (Some(KeyState::Fields(f)), _) => {
                KeyState::Fields(Box::new(f.set(row, self.truncated_at.as_ref())))
            }
            // A row set by hand has no sequence (NULL sorts first): every event wins over it.
            (None, Some(row)) if !self.partial => KeyState::Winner(Winner {
                seq: Seq::from(Value::Null),
                kind: EventKind::Upsert,
                image: row.clone(),
            }),
            (None, Some(row)) => KeyState::Fields(Box::new(Fields {
                upsert: Some(Value::Null),
                delete: None,
                columns: row
                    .iter()
                    .map(|v| Some((Value::Null, v.to_value())))
                    .collect(),
            })),
        };
        if row.is_some() && state.visible(self.truncated_at.as_ref()).as_ref() != row {
            return Err(format!(
                "the table was truncated (a TRUNCATE event at sequence {}) after this key's \
                 last event, so a row set by hand would not show",
                self.truncated_at
                    .as_ref()
                    .map_or("NULL".to_string(), describe)
            ));
        }
        let tombstone = state.tombstone().map(Cow::into_owned);
        self.changed.mark(key);
        self.keys.insert(key.clone(), state);
        if let Some(seq) = &tombstone {
            self.tombstones.record(now, key, seq);
        }
        let mut stats = CommitStats::default();
        self.held
            .change(tombstone_before, tombstone.is_some(), &mut stats);
        Ok(())
    }
}

impl CdcState for Scd1State {
    fn apply(
        &mut self,
        mut events: Vec<Event>,
        now: i64,
        out: &mut Vec<(Row, isize)>,
        stats: &mut CommitStats,
    ) {
        self.collect_tombstones(now, stats);
        let is_truncate = |e: &Event| e.kind == EventKind::Truncate;
        let truncate = events
            .iter()
            .filter(|e| is_truncate(e))
            .map(|e| &e.seq)
            .max()
            .cloned();
        let start = out.len();
        let truncated = truncate.is_some();
        if let Some(t) = truncate {
            events.retain(|e| !is_truncate(e));
            self.truncate(t.to_value().into_owned(), out, stats);
        }
        let touch = |s: &Self, key: &Row| match s.keys.get(key) {
            Some(KeyState::Winner(w)) => w.kind as usize,
            Some(KeyState::Fields(f)) => f.columns.len(),
            None => 0,
        };
        for_each_key(self, events, touch, |s, key, events| {
            s.apply_key(key, events, now, out, stats)
        });
        // Each key emits at most one retraction and one insertion, of rows that differ, and
        // rows of different keys differ (keys are image columns, but for `equal_images`); only
        // a truncate's retraction can meet a key's re-insertion of the same row in one commit.
        if truncated {
            consolidate_from(out, start);
        }
    }

    fn emits_consolidated(&self) -> bool {
        !self.equal_images
    }

    fn heap_bytes(&self) -> usize {
        self.keys.heap_bytes()
            + self.truncated_at.heap_bytes()
            + self.tombstones.heap_bytes()
            + self.changed.heap_bytes()
    }
}

impl HeapSize for KeyState {
    fn heap_bytes(&self) -> usize {
        match self {
            KeyState::Winner(w) => w.seq.heap_bytes() + w.image.heap_bytes(),
            KeyState::Fields(f) => {
                let own = f.upsert.heap_bytes() + f.delete.heap_bytes() + f.columns.heap_bytes();
                std::mem::size_of::<Fields>() + own
            }
        }
    }
}

impl KeyState {
    fn new(first: Event, partial: bool, image_len: usize, stats: &mut CommitStats) -> Self {
        if !partial {
            return KeyState::Winner(Winner::of(first));
        }
        let mut fields = Fields {
            upsert: None,
            delete: None,
            columns: vec![None; image_len],
        };
        fields.absorb(first, stats);
        KeyState::Fields(Box::new(fields))
    }

    /// Checks a restored key state against the target's shape, so that a shard of another
    /// pipeline cannot make `apply` index out of bounds.
    fn fits(&self, partial: bool, image_len: usize) -> Result<()> {
        match self {
            KeyState::Winner(w) if !partial => {
                if w.kind == EventKind::Upsert && w.image.len() != image_len {
                    return Err(misfit(format!(
                        "an image has {} columns, the target {image_len}",
                        w.image.len()
                    )));
                }
                Ok(())
            }
            KeyState::Fields(f) if partial => {
                if f.columns.len() != image_len {
                    return Err(misfit(format!(
                        "a key has {} columns, the target {image_len}",
                        f.columns.len()
                    )));
                }
                Ok(())
            }
            _ => Err(misfit("whole and partial images are mixed")),
        }
    }

    /// The row this key shows given the table's truncate sequence, if any.
    fn visible(&self, truncated_at: Option<&Value>) -> Option<Row> {
        match self {
            KeyState::Winner(w) => shown_ref(w, truncated_at),
            KeyState::Fields(f) => f.visible(truncated_at),
        }
    }

    /// The sequence of the delete this key is a tombstone of, if its latest event is a delete.
    fn tombstone(&self) -> Option<Cow<'_, Value>> {
        match self {
            KeyState::Winner(w) => (w.kind == EventKind::Delete).then(|| w.seq.to_value()),
            KeyState::Fields(f) => f
                .delete
                .as_ref()
                .filter(|d| f.upsert.as_ref().is_none_or(|u| u <= *d))
                .map(Cow::Borrowed),
        }
    }

    /// Whether a truncate at `t` makes this key's whole state irrelevant.
    fn covered_by(&self, t: Option<&Value>) -> bool {
        let Some(t) = t else { return false };
        match self {
            KeyState::Winner(w) => !w.after(t),
            KeyState::Fields(f) => {
                f.upsert.as_ref().is_none_or(|s| s <= t) && f.delete.as_ref().is_none_or(|s| s <= t)
            }
        }
    }

    fn absorb(&mut self, event: Event, stats: &mut CommitStats) {
        match self {
            KeyState::Winner(w) => {
                absorb_winner(w, event, stats);
            }
            KeyState::Fields(f) => f.absorb(event, stats),
        }
    }
}

impl Fields {
    /// These fields with `row` set by hand (`None`: the row deleted by hand), given the
    /// table's truncate sequence. A shown row keeps its sequences: a column whose value stays
    /// keeps its author, a changed one takes its author's sequence (the key's latest upsert's
    /// when the author is hidden by a delete or truncate), so later events win over it as they
    /// would have over the value it replaces. A hidden (deleted)
    /// key comes back at its delete's sequence, every column set there; a shown key deleted
    /// by hand is a delete at its latest upsert's sequence.
    fn set(&self, row: Option<&Row>, truncated_at: Option<&Value>) -> Fields {
        let shown = self.visible(truncated_at);
        let Some(row) = row else {
            let delete = match shown {
                Some(_) => self.upsert.clone(),
                None => self.delete.clone(),
            };
            return Fields {
                upsert: self.upsert.clone(),
                delete,
                columns: self.columns.clone(),
            };
        };
        let Some(shown) = shown else {
            let at = self
                .upsert
                .clone()
                .max(self.delete.clone())
                .unwrap_or(Value::Null);
            return Fields {
                upsert: Some(at.clone()),
                delete: None,
                columns: row
                    .iter()
                    .map(|v| Some((at.clone(), v.to_value())))
                    .collect(),
            };
        };
        let at = self.upsert.clone().unwrap_or(Value::Null);
        let reset = self.delete.as_ref().max(truncated_at);
        let columns = (self.columns.iter().zip(row.iter()).zip(shown.iter()))
            .map(|((column, new), old)| match column {
                Some(author) if new == old => Some(author.clone()),
                Some((seq, _)) if reset.is_none_or(|r| seq > r) => {
                    Some((seq.clone(), new.to_value()))
                }
                _ => Some((at.clone(), new.to_value())),
            })
            .collect();
        Fields {
            upsert: self.upsert.clone(),
            delete: self.delete.clone(),
            columns,
        }
    }

    /// The row these fields show, given the table's truncate sequence, if any.
    fn visible(&self, truncated_at: Option<&Value>) -> Option<Row> {
        let reset = self.delete.as_ref().max(truncated_at);
        let upsert = self.upsert.as_ref()?;
        if reset.is_some_and(|r| upsert <= r) {
            return None;
        }
        let value = |c: &Option<(Value, Value)>| match c {
            Some((seq, v)) if reset.is_none_or(|r| seq > r) => v.clone(),
            _ => Value::Null,
        };
        Some(self.columns.iter().map(value).collect())
    }

    fn absorb(&mut self, event: Event, stats: &mut CommitStats) {
        // The fields keep their sequences as values, as they are saved.
        let seq = event.seq.to_value().into_owned();
        if event.kind == EventKind::Delete {
            if self.delete.as_ref().is_some_and(|d| *d >= seq) {
                stats.stale_events += 1;
            } else {
                self.delete = Some(seq);
            }
            return;
        }
        if self.upsert.as_ref() == Some(&seq) {
            stats.sequence_ties += 1;
        }
        let mut changed = false;
        for ((i, column), value) in self.columns.iter_mut().enumerate().zip(&event.image) {
            if !event.authors(i) {
                continue;
            }
            let value = value.to_value();
            if column.as_ref().is_none_or(|(s, v)| (&seq, &value) > (s, v)) {
                *column = Some((seq.clone(), value));
                changed = true;
            }
        }
        if self.upsert.as_ref().is_none_or(|u| seq > *u) {
            self.upsert = Some(seq);
            changed = true;
        }
        if !changed {
            stats.stale_events += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upsert(key: i64, name: &str, seq: i64) -> Event {
        Event {
            seq: Seq::from(seq),
            kind: EventKind::Upsert,
            key: Row::from(vec![Value::Int(key)]),
            image: Row::from(vec![Value::Int(key), Value::Str(name.into())]),
            authored: None,
            system: None,
        }
    }

    fn delete(key: i64, seq: i64) -> Event {
        Event {
            seq: Seq::from(seq),
            kind: EventKind::Delete,
            key: Row::from(vec![Value::Int(key)]),
            image: Row::new(),
            authored: None,
            system: None,
        }
    }

    fn truncate(seq: i64) -> Event {
        Event {
            seq: Seq::from(seq),
            kind: EventKind::Truncate,
            key: Row::new(),
            image: Row::new(),
            authored: None,
            system: None,
        }
    }

    fn run(state: &mut Scd1State, events: Vec<Event>) -> Vec<(Row, isize)> {
        let mut out = Vec::new();
        state.apply(events, 0, &mut out, &mut CommitStats::default());
        out.sort();
        out
    }

    /// Every key of a table costs this much beside its key and image bytes.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_key_state_is_48_bytes() {
        assert_eq!(std::mem::size_of::<KeyState>(), 48);
    }

    #[test]
    fn late_older_upsert_changes_nothing_and_tombstone_blocks() {
        let mut s = Scd1State::new(2, false, None);
        assert_eq!(run(&mut s, vec![upsert(1, "a", 2), delete(9, 5)]).len(), 1);
        assert!(run(&mut s, vec![upsert(1, "old", 1), upsert(9, "z", 4)]).is_empty());
        let out = run(&mut s, vec![upsert(1, "b", 3)]);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn expired_tombstones_are_forgotten_and_older_upserts_recreate_the_key() {
        let mut s = Scd1State::new(2, false, Some(10));
        let mut stats = CommitStats::default();
        let mut out = Vec::new();
        s.apply(
            vec![upsert(1, "a", 1), delete(1, 5)],
            100,
            &mut out,
            &mut stats,
        );
        s.apply(vec![upsert(1, "old", 2)], 110, &mut out, &mut stats);
        assert!(
            out.is_empty(),
            "within the retention the tombstone blocks the older upsert"
        );
        s.apply(vec![], 111, &mut out, &mut stats);
        assert_eq!((s.len(), stats.tombstones_collected), (0, 1));
        s.apply(vec![upsert(1, "old", 2)], 112, &mut out, &mut stats);
        assert_eq!(
            out,
            vec![(Row::from(vec![Value::Int(1), Value::Str("old".into())]), 1)]
        );
    }

    #[test]
    fn truncate_removes_older_rows_and_forgets_covered_keys() {
        let mut s = Scd1State::new(2, false, None);
        run(&mut s, vec![upsert(1, "a", 1), upsert(2, "b", 5)]);
        let out = run(&mut s, vec![truncate(3)]);
        assert_eq!(
            out,
            vec![(Row::from(vec![Value::Int(1), Value::Str("a".into())]), -1)]
        );
        assert_eq!(s.len(), 1);
        assert!(run(&mut s, vec![upsert(3, "c", 2)]).is_empty());
    }
}

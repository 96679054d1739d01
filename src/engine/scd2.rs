//! SCD type 2 state: each key's events by sequence, each marked if it starts a version ("run").
//!
//! A run starts at an upsert whose tracked columns differ from the open run's (or when no run
//! is open), absorbs following upserts with equal tracked columns in place, and ends at the next
//! run start or delete (SPEC 3.3). The visible row of a run is its latest folded image.
//!
//! Runs are not stored beside the events: the event that starts one carries a flag (a byte of
//! its padding), and a run's end and latest upsert are the events around it. A map of runs cost
//! 48 bytes per version and a second heap block per key, a third of the state (a 1M-event
//! history held 285-293 MB at its peak with it, 224-228 MB without). Each history keeps the
//! start of its open run, so the in-order path never scans back over a run.
//!
//! A commit that inserts events at sequences `lo..=hi` of a key re-derives runs from the run
//! open just before `lo` and stops at the first point after `hi` where the new derivation meets
//! the old one: a delete, or an upsert that starts a run in both derivations with the same
//! folded image. The runs it replaces are read from the events as they were: what each changed
//! sequence held is kept aside ([`Before`]) until the difference is emitted. A late event
//! costs O(log h) plus the events from the start of the run it lands in to the end of the last
//! run it changes (a long run of untracked changes is walked, not skipped).
//!
//! A commit whose events of a key all come after the key's last stored sequence (the in-order
//! case) can only change the open run, the last one: it is updated in place, without a walk.
//!
//! Deletes stay in the history, so late events older than a delete never resurrect a version
//! past it. A delete that closes a version is part of the table (it is that version's
//! `__END_AT`) and stays as long as the history does. A delete that closes nothing (of a key
//! never seen, or after another delete) is a tombstone: kept for the retention (D11), then
//! forgotten; forgetting it changes no row, and afterwards a late, older upsert re-creates the
//! key.
//!
//! The per-key [`History`] is shared with the bitemporal state (`super::bitemporal`), which
//! also replaces and removes stored events ([`History::replace`]) to rewind a history in system
//! time; a removal re-derives like an insertion, with what was removed in `before`.
//!
//! The state counts its tombstones as it goes: whether a stored delete closes nothing depends
//! only on it and the event before it, so a commit re-checks just the sequences it stores at
//! and the events right after them.
//!
//! Saved ([`Durable`]) as the tombstone queue, then each key's events; the run flags are
//! derived again on restore ([`History::fit`]), so a saved state cannot hold runs that
//! disagree with its events. A delta gives a changed key's events from the least sequence a
//! commit stored, replaced or removed on ([`KeyDelta::From`]): a commit changes nothing before
//! it (a re-derivation refolds later events only), so in-order events save themselves alone.

use super::durable::{misfit, read_header, read_keys, write_header, Changed, Durable, KeyDelta};
use super::edits::{Editable, HistoryRules};
use super::heap::HeapSize;
use super::records::{RecordIn, RecordOut};
use super::sorted_map::SortedMap;
use super::tombstones::{Live, Queued, Tombstones};
use super::{for_each_key, CdcState, CommitStats, KeyMap};
use crate::event::{Event, EventKind};
use crate::value::{Row, Seq};
use crate::Result;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::mem::size_of;
use std::ops::Bound::{self, Excluded, Included, Unbounded};

/// SCD2 state of the keys one worker owns.
#[derive(Debug)]
pub struct Scd2State {
    shape: Shape,
    keys: KeyMap<History>,
    tombstones: Tombstones,
    /// Stored deletes that close nothing ([`History::is_tombstone`]).
    held: Live,
    changed: Changed<Seq>,
}

/// What a target's versions depend on: image width, tracked columns, partial folding.
#[derive(Debug)]
pub(super) struct Shape {
    image_len: usize,
    tracked: Vec<bool>,
    /// Every column is tracked: versions compare whole images (as bytes).
    all_tracked: bool,
    partial: bool,
}

/// One key's events by sequence; each event that starts a version says so
/// ([`Stored::starts`]).
///
/// The start of the open run (while the last event is an upsert) is the last event that starts
/// a run ([`History::open_start`]): a small history finds it scanning back over at most
/// [`SMALL_HISTORY`] flags, a large one keeps it as its map's mark, so the in-order path never
/// walks back over a long run. A history is its map alone, 24 bytes (40 with the start beside
/// it, in every key's entry).
///
/// Saved as its events alone: a restored history has no version marked until [`History::fit`]
/// derives them.
#[derive(Debug, Default)]
pub(super) struct History<const G: usize = 1> {
    events: SortedMap<Seq, Stored, SMALL_HISTORY, G>,
}

/// Events a history keeps in a sorted vector before its map becomes a B-tree: more than a
/// map's default ([`super::sorted_map::SMALL`], 128), since an entry is small (48 bytes: a
/// 16-byte sequence and a 32-byte event) and its sequence cheap to compare, so a search of a
/// vector beats a tree's and an insert's memmove of a few hundred entries costs about what a
/// tree's insert does. `scdflow bench --events 400000 --keys 1000 --displacement 0,100000
/// --flows scd2 --systems state-loop --budget 0` (400 events a key): at 128, 1.94–2.28 M
/// events/s in order and 0.61–0.69 M at displacement 100,000, with 80 bytes of state per
/// version (2.1x its columns' width); at 512, 2.76–3.01 M and 0.74–0.84 M, 57 bytes (1.5x),
/// alternating runs.
/// Histories of a few events are alike either way.
pub(super) const SMALL_HISTORY: usize = 512;

/// The event stored at a sequence (the winner of its ties).
///
/// 32 bytes: every event of every key is one, so what only partial updates keep (D6) is boxed
/// whole, and the box's variant takes its tag from the kind's spare values (a struct with a box
/// beside the image took 40). `starts` says this upsert starts a run: no upsert comes right
/// before it, or its folded image differs from the one before in a tracked column; derived,
/// never saved. Saved as the four fields it holds ([`StoredFields`]).
#[derive(Debug, Deserialize)]
#[serde(from = "StoredFields<Row, Box<[bool]>, Row>")]
pub(super) enum Stored {
    /// A delete, or an upsert that sets every column and is its own folded image.
    Whole {
        kind: EventKind,
        starts: bool,
        image: Row,
    },
    /// An upsert of a partial target that sets some columns or folds to another image.
    Partial(Box<PartialUpsert>),
}

/// A [`Stored::Partial`] upsert.
#[derive(Debug)]
pub(super) struct PartialUpsert {
    kind: EventKind,
    starts: bool,
    image: Row,
    /// The columns the upsert sets (`None`: all of them).
    authored: Option<Box<[bool]>>,
    /// The image folded up to and including this upsert, when it differs from the image.
    folded: Option<Row>,
}

/// A [`Stored`] as saved.
#[derive(Serialize, Deserialize)]
struct StoredFields<I, A, F> {
    kind: EventKind,
    image: I,
    authored: Option<A>,
    folded: Option<F>,
}

impl Serialize for Stored {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let folded = match self {
            Stored::Whole { .. } => None,
            Stored::Partial(p) => p.folded.as_ref(),
        };
        StoredFields {
            kind: self.kind(),
            image: self.image(),
            authored: self.authored(),
            folded,
        }
        .serialize(serializer)
    }
}

impl From<StoredFields<Row, Box<[bool]>, Row>> for Stored {
    fn from(f: StoredFields<Row, Box<[bool]>, Row>) -> Self {
        if f.authored.is_none() && f.folded.is_none() {
            return Stored::Whole {
                kind: f.kind,
                starts: false,
                image: f.image,
            };
        }
        Stored::Partial(Box::new(PartialUpsert {
            kind: f.kind,
            starts: false,
            image: f.image,
            authored: f.authored,
            folded: f.folded,
        }))
    }
}

/// A run as a walk derives it: from `start` to `end`, showing the folded image of its latest
/// upsert, `last`.
#[derive(Debug)]
struct Run {
    start: Seq,
    end: Option<Seq>,
    last: Seq,
}

/// A version as it is (or was) in the table: borrowed from the events it comes from.
#[derive(Debug)]
struct Version<'a> {
    start: &'a Seq,
    end: Option<&'a Seq>,
    image: &'a Row,
}

/// What a sequence changed in one commit held before it: `None` if it held no event.
pub(super) type Before = BTreeMap<Seq, Option<Prior>>;

/// An event as it was before a change replaced it or removed it.
#[derive(Debug)]
pub(super) struct Prior {
    kind: EventKind,
    starts: bool,
    folded: Row,
}

impl From<Stored> for Prior {
    fn from(stored: Stored) -> Self {
        Prior {
            kind: stored.kind(),
            starts: stored.starts(),
            folded: stored.into_folded(),
        }
    }
}

impl<const G: usize> Serialize for History<G> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        self.events.serialize(serializer)
    }
}

impl<'de, const G: usize> Deserialize<'de> for History<G> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let events = SortedMap::deserialize(deserializer)?;
        Ok(History { events })
    }
}

impl Scd2State {
    /// An empty state. `tracked[i]` says whether image column `i` opens a new version when it
    /// changes; `partial` selects field-level folding of upserts (D6); tombstones are kept for
    /// `retention` microseconds of commit time (`None`: forever).
    pub fn new(
        image_len: usize,
        tracked: Vec<bool>,
        partial: bool,
        retention: Option<i64>,
    ) -> Self {
        Scd2State {
            shape: Shape::new(image_len, tracked, partial),
            keys: KeyMap::default(),
            tombstones: Tombstones::new(retention),
            held: Live::default(),
            changed: Changed::default(),
        }
    }

    /// Forgets the deletes that closed nothing and expired by commit time `now`.
    fn collect_tombstones(&mut self, now: i64, stats: &mut CommitStats) {
        for (key, seq) in self.tombstones.expire(now) {
            let Some(history) = self.keys.get_mut(&key) else {
                continue;
            };
            let seq = Seq::from(seq);
            if history.forget_tombstone(&seq) {
                self.changed.mark_from(&key, &seq);
                // Forgetting a delete that closes nothing leaves the next event's predecessor
                // a delete or nothing, so no other tombstone changes.
                stats.tombstones_collected += 1;
                self.held.add(-1, stats);
                if history.events.is_empty() {
                    self.keys.remove(&key);
                }
            }
        }
    }

    /// Number of keys held.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Counts the tombstones by looking at every event (tests check the incremental count).
    #[cfg(test)]
    pub(super) fn count_tombstones(&self) -> u64 {
        let all = self
            .keys
            .values()
            .flat_map(|h| h.events.iter().filter(move |(seq, _)| h.is_tombstone(seq)));
        all.count() as u64
    }
}

const TAG: &str = "scd2";

impl Durable for Scd2State {
    fn save(&mut self, out: &mut dyn RecordOut) -> Result<()> {
        write_header(out, TAG, self.tombstones.entries())?;
        for (key, history) in &self.keys {
            out.write(&(key, history))?;
        }
        self.changed.clear();
        self.tombstones.saved();
        Ok(())
    }

    fn track_changes(&mut self) {
        self.changed.track();
    }

    fn save_changes(&mut self, out: &mut dyn RecordOut) -> Result<()> {
        write_header(out, TAG, &self.tombstones.delta())?;
        let keys = &self.keys;
        // What finding a mark's entries reads first (the middle entry's sequence), and the
        // end, where the entries written are.
        let touch = |key: &Row| {
            let events = keys.get(key).map(|history| &history.events);
            let ends = events.into_iter().flat_map(|e| [e.middle(), e.last()]);
            ends.flatten()
                .map(|(seq, _)| usize::from(seq.is_int()))
                .sum()
        };
        self.changed.save_each(touch, |key, from| {
            let record = match (keys.get(key), from) {
                (None, _) => KeyDelta::Dropped,
                (Some(history), None) => KeyDelta::Whole(history),
                (Some(history), Some(from)) => {
                    KeyDelta::From((from, history.events.entries_from(from)))
                }
            };
            out.write(&(key, record))
        })?;
        self.tombstones.saved();
        Ok(())
    }

    fn restore_changes(
        &mut self,
        input: &mut dyn RecordIn,
        owns: &dyn Fn(&Row) -> bool,
        wrote: &dyn Fn(&Row) -> bool,
    ) -> Result<()> {
        let queue: (VecDeque<Queued>, Option<i64>) = read_header(input, TAG)?;
        self.tombstones.restore_delta(queue, owns, wrote);
        type Record = (Row, KeyDelta<History, (Seq, Vec<(Seq, Stored)>)>);
        while let Some((key, delta)) = input.read::<Record>()? {
            if !owns(&key) {
                continue;
            }
            let old = self.keys.remove(&key);
            if let Some(old) = &old {
                self.held.replaced(old.tombstones());
            }
            let mut history = match delta {
                KeyDelta::Dropped => continue,
                KeyDelta::Whole(history) => history,
                KeyDelta::From((from, entries)) => {
                    let mut history = old.unwrap_or_default();
                    history.events.truncate_from(&from);
                    for (seq, stored) in entries {
                        let last = history.events.last().map(|(last, _)| last);
                        if seq < from || last.is_some_and(|last| *last >= seq) {
                            return Err(input.damaged("holds a history's events out of order"));
                        }
                        history.events.push(seq, stored);
                    }
                    history
                }
            };
            history.fit(&self.shape)?;
            if !history.events.is_empty() {
                self.held.restored(history.tombstones());
                self.keys.insert(key, history);
            }
        }
        Ok(())
    }

    fn restore(&mut self, input: &mut dyn RecordIn, owns: &dyn Fn(&Row) -> bool) -> Result<()> {
        let queue: VecDeque<Queued> = read_header(input, TAG)?;
        self.tombstones.restore(queue, owns);
        read_keys(input, owns, |key, mut history: History| {
            history.fit(&self.shape)?;
            if self.keys.contains_key(&key) {
                return Ok(false);
            }
            self.held.restored(history.tombstones());
            self.keys.insert(key, history);
            Ok(true)
        })
    }

    fn table_keys(&self) -> Vec<&Row> {
        self.keys.keys().collect()
    }

    fn key_rows(&self, key: &Row, out: &mut Vec<(Row, isize)>) {
        // One row per version, each with its own start: consolidated as they come.
        if let Some(history) = self.keys.get(key) {
            history.rows(out);
        }
    }

    fn live_tombstones(&self) -> u64 {
        self.held.get()
    }
}

impl Editable for Scd2State {
    fn set_rows(
        &mut self,
        rules: &HistoryRules,
        key: &Row,
        rows: &[Row],
        now: i64,
    ) -> std::result::Result<(), String> {
        if let Some(old) = self.keys.remove(key) {
            self.held.replaced(old.tombstones());
        }
        self.changed.mark(key);
        let events = rules.events(key, rows);
        // The rows are in the table already: what the events derive is not emitted again.
        let mut derived = Vec::new();
        self.apply(events, now, &mut derived, &mut CommitStats::default());
        Ok(())
    }
}

impl CdcState for Scd2State {
    fn apply(
        &mut self,
        events: Vec<Event>,
        now: i64,
        out: &mut Vec<(Row, isize)>,
        stats: &mut CommitStats,
    ) {
        self.collect_tombstones(now, stats);
        let touch = |s: &Self, key: &Row| s.keys.get(key).map_or(0, History::touch);
        for_each_key(self, events, touch, |s, key, events| {
            for delete in events.iter().filter(|e| e.kind == EventKind::Delete) {
                s.tombstones.record(now, &key, &delete.seq.to_value());
            }
            // Each event is stored at its sequence or loses a tie there; a re-derivation
            // refolds only events after the least of them. (A run that never saves skips it.)
            let least = || events.iter().map(|e| &e.seq).min().cloned();
            if let Some(from) = s.changed.tracks().then(least).flatten() {
                s.changed.mark_from(&key, &from);
            }
            let history = match s.keys.entry(key) {
                Entry::Occupied(o) => o.into_mut(),
                Entry::Vacant(v) => v.insert(History::default()),
            };
            if let Some(tombstones) = history.append(events, &s.shape, out) {
                s.held.add(tombstones, stats);
                return;
            }
            let probes = history.probes(events);
            let tombstones_before = history.tombstones_at(&probes);
            let mut before = BTreeMap::new();
            if let Some((lo, hi)) = history.absorb(events, &mut before, stats) {
                history.rederive(&lo, &hi, &s.shape, before, out);
            }
            let tombstones_after = history.tombstones_at(&probes);
            s.held.add(tombstones_after - tombstones_before, stats);
        });
    }

    fn emits_consolidated(&self) -> bool {
        // One re-derivation per key per commit, and it emits only rows that differ.
        true
    }

    fn heap_bytes(&self) -> usize {
        self.keys.heap_bytes() + self.tombstones.heap_bytes() + self.changed.heap_bytes()
    }
}

impl<const G: usize> HeapSize for History<G> {
    fn heap_bytes(&self) -> usize {
        self.events.heap_bytes()
    }
}

impl HeapSize for Stored {
    fn heap_bytes(&self) -> usize {
        match self {
            Stored::Whole { image, .. } => image.heap_bytes(),
            Stored::Partial(p) => {
                let own = p.image.heap_bytes() + p.authored.heap_bytes() + p.folded.heap_bytes();
                size_of::<PartialUpsert>() + own
            }
        }
    }
}

impl Stored {
    /// The event's sequence, and the event as a history stores it.
    fn from_event(e: Event) -> (Seq, Self) {
        (e.seq, Stored::new(e.kind, e.image, e.authored))
    }

    /// An event to store; its folded image is computed when runs are re-derived.
    pub(super) fn new(kind: EventKind, image: Row, authored: Option<Box<[bool]>>) -> Self {
        match authored {
            None => Stored::Whole {
                kind,
                starts: false,
                image,
            },
            Some(a) => Stored::Partial(Box::new(PartialUpsert {
                kind,
                starts: false,
                image,
                authored: Some(a),
                folded: None,
            })),
        }
    }

    pub(super) fn kind(&self) -> EventKind {
        match self {
            Stored::Whole { kind, .. } => *kind,
            Stored::Partial(p) => p.kind,
        }
    }

    fn starts(&self) -> bool {
        match self {
            Stored::Whole { starts, .. } => *starts,
            Stored::Partial(p) => p.starts,
        }
    }

    fn set_starts(&mut self, to: bool) {
        match self {
            Stored::Whole { starts, .. } => *starts = to,
            Stored::Partial(p) => p.starts = to,
        }
    }

    fn image(&self) -> &Row {
        match self {
            Stored::Whole { image, .. } => image,
            Stored::Partial(p) => &p.image,
        }
    }

    /// The columns the upsert sets (`None`: all of them).
    fn authored(&self) -> Option<&[bool]> {
        match self {
            Stored::Whole { .. } => None,
            Stored::Partial(p) => p.authored.as_deref(),
        }
    }

    /// Sets the folded image; returns the one it had, if it differed from the image.
    fn set_folded(&mut self, folded: Row) -> Option<Row> {
        match self {
            Stored::Partial(p) => p.folded.replace(folded),
            Stored::Whole {
                kind,
                starts,
                image,
            } => {
                let partial = PartialUpsert {
                    kind: *kind,
                    starts: *starts,
                    image: std::mem::take(image),
                    authored: None,
                    folded: Some(folded),
                };
                *self = Stored::Partial(Box::new(partial));
                None
            }
        }
    }

    /// The event's tie rank ([`Event::tie_rank`]).
    pub(super) fn rank(&self) -> (EventKind, &Row, Option<&[bool]>) {
        (self.kind(), self.image(), self.authored())
    }

    fn folded(&self) -> &Row {
        match self {
            Stored::Whole { image, .. } => image,
            Stored::Partial(p) => p.folded.as_ref().unwrap_or(&p.image),
        }
    }

    fn into_folded(self) -> Row {
        match self {
            Stored::Whole { image, .. } => image,
            Stored::Partial(p) => p.folded.unwrap_or(p.image),
        }
    }
}

impl Shape {
    pub(super) fn new(image_len: usize, tracked: Vec<bool>, partial: bool) -> Self {
        Shape {
            image_len,
            all_tracked: tracked.iter().all(|t| *t),
            tracked,
            partial,
        }
    }

    /// The number of image columns.
    pub(super) fn image_len(&self) -> usize {
        self.image_len
    }

    fn tracked_eq(&self, a: &Row, b: &Row) -> bool {
        if self.all_tracked {
            return a == b;
        }
        a.iter()
            .zip(b)
            .zip(&self.tracked)
            .all(|((a, b), t)| !t || a == b)
    }

    fn fold(&self, before: &Row, e: &Stored) -> Row {
        match e.authored() {
            Some(mask) if self.partial => before
                .iter()
                .zip(e.image())
                .zip(mask.iter())
                .map(|((old, new), set)| if *set { new } else { old })
                .collect(),
            _ => e.image().clone(),
        }
    }
}

impl<const G: usize> History<G> {
    /// The event stored at `seq`.
    pub(super) fn stored(&self, seq: &Seq) -> Option<&Stored> {
        self.events.get(seq)
    }

    /// Stores `new` at `seq`, or removes the event there when `new` is `None`, without
    /// re-deriving: what `seq` held goes to `before` (unless an earlier change in the same
    /// batch already put it there) for the [`History::rederive`] that must follow, with `seq`
    /// inside its range.
    pub(super) fn replace(&mut self, seq: &Seq, new: Option<Stored>, before: &mut Before) {
        let old = match new {
            Some(stored) => self.events.insert(seq.clone(), stored),
            None => self.events.remove(seq),
        };
        before
            .entry(seq.clone())
            .or_insert_with(|| old.map(Prior::from));
    }

    /// Whether the event at `seq` is a tombstone: a delete that closes no version, because no
    /// upsert comes right before it.
    fn is_tombstone(&self, seq: &Seq) -> bool {
        let is_delete = self
            .events
            .get(seq)
            .is_some_and(|e| e.kind() == EventKind::Delete);
        let after_upsert = || {
            self.events
                .last_before(Excluded(seq))
                .is_some_and(|(_, e)| e.kind() == EventKind::Upsert)
        };
        is_delete && !after_upsert()
    }

    /// Removes the delete at `seq` if it closes no version; returns whether it did. No run
    /// changes: the event after it has a delete or nothing before it either way.
    fn forget_tombstone(&mut self, seq: &Seq) -> bool {
        let forget = self.is_tombstone(seq);
        if forget {
            self.events.remove(seq);
        }
        forget
    }

    /// The sequences whose tombstone status storing `events` can change: theirs, and for each
    /// the stored event right after it (its predecessor may change). An event stored right
    /// after another of `events` is one of `events` itself, so the set is the same before and
    /// after storing them. Only a delete is a tombstone, so a sequence that holds no delete
    /// before or after is left out: most probes were upserts, and each probe costs a search
    /// or two of the history before and after: `scdflow bench --events 400000 --keys 1000
    /// --displacement 100000 --flows scd2` (400 events a key, arriving far out of order) ran
    /// its state loop at 520–586 k events/s with every event's sequence and successor
    /// probed, 595–645 k with the deletes' only, and the engine at 351–469 k, 460–488 k
    /// (three alternating runs each).
    fn probes(&self, events: &[Event]) -> Vec<Seq> {
        let is_delete = |stored: &Stored| stored.kind() == EventKind::Delete;
        let mut probes = Vec::new();
        for e in events {
            let seq = e.seq.clone();
            let (held, next) = match self.events.first_from(Included(&seq)) {
                Some((at, stored)) if *at == seq => {
                    (Some(stored), self.events.first_from(Excluded(&seq)))
                }
                next => (None, next),
            };
            if let Some((next, _)) = next.filter(|(_, stored)| is_delete(stored)) {
                probes.push(next.clone());
            }
            if e.kind == EventKind::Delete || held.is_some_and(is_delete) {
                probes.push(seq);
            }
        }
        probes.sort_unstable();
        probes.dedup();
        probes
    }

    /// How many of the sequences `at` hold a tombstone.
    fn tombstones_at(&self, at: &[Seq]) -> i64 {
        at.iter().filter(|seq| self.is_tombstone(seq)).count() as i64
    }

    /// How many tombstones the history holds (a scan; for restoring).
    fn tombstones(&self) -> u64 {
        let mut count = 0;
        let mut after_upsert = false;
        for (_, e) in self.events.iter() {
            count += u64::from(e.kind() == EventKind::Delete && !after_upsert);
            after_upsert = e.kind() == EventKind::Upsert;
        }
        count
    }

    /// Appends the versions of this history as `(row, +1)`.
    pub(super) fn rows(&self, out: &mut Vec<(Row, isize)>) {
        let all = self
            .events
            .iter()
            .map(|(s, e)| (s, e.kind(), e.starts(), e.folded()));
        for v in versions(all, None) {
            out.push((v.row(), 1));
        }
    }

    /// Checks a restored history against the target's shape (upsert images have its width, so
    /// a shard of another pipeline cannot make `apply` panic) and marks the events that start
    /// runs, which are not saved.
    pub(super) fn fit(&mut self, shape: &Shape) -> Result<()> {
        let mut starts = Vec::with_capacity(self.events.len());
        let mut before: Option<&Row> = None;
        for (_, e) in self.events.iter() {
            let width = |row: &Row| row.len() == shape.image_len;
            let mask = e.authored().is_none_or(|m| m.len() == shape.image_len);
            let widths = width(e.image()) && width(e.folded());
            if e.kind() == EventKind::Upsert && !(widths && mask) {
                return Err(misfit(format!(
                    "an image does not have the target's {} columns",
                    shape.image_len
                )));
            }
            let upsert = e.kind() == EventKind::Upsert;
            starts.push(upsert && before.is_none_or(|b| !shape.tracked_eq(b, e.folded())));
            before = upsert.then(|| e.folded());
        }
        for ((_, e), starts) in self.events.range_mut(Unbounded, Unbounded).zip(starts) {
            e.set_starts(starts);
        }
        // The flags are new: so is the open run's start.
        self.events.set_mark(None);
        let open = self.open_start().cloned();
        self.events.set_mark(open);
        Ok(())
    }

    /// Stores the events (the greatest wins a sequence tie, D2) and returns the range of
    /// sequences whose event changed, if any. What each changed sequence held goes to `before`.
    fn absorb(
        &mut self,
        events: &mut Vec<Event>,
        before: &mut Before,
        stats: &mut CommitStats,
    ) -> Option<(Seq, Seq)> {
        let mut changed: Option<(Seq, Seq)> = None;
        for event in events.drain(..) {
            if let Some(old) = self.events.get(&event.seq) {
                let ord = event.tie_rank().cmp(&old.rank());
                if ord.is_eq() {
                    continue;
                }
                stats.sequence_ties += 1;
                if ord.is_lt() {
                    continue;
                }
            }
            let (seq, stored) = Stored::from_event(event);
            self.replace(&seq, Some(stored), before);
            changed = Some(match changed {
                None => (seq.clone(), seq),
                Some((lo, hi)) => (lo.min(seq.clone()), hi.max(seq)),
            });
        }
        changed
    }

    /// Stores `events` (taking them out) if they all come after the stored ones, at distinct
    /// sequences, and emits the row updates; returns the change in tombstones. Otherwise leaves
    /// `events` for [`History::absorb`] and [`History::rederive`].
    fn append(
        &mut self,
        events: &mut Vec<Event>,
        shape: &Shape,
        out: &mut Vec<(Row, isize)>,
    ) -> Option<i64> {
        let after_last = |first: &Event| self.is_past_last(&first.seq);
        let ascending = events.windows(2).all(|w| w[0].seq < w[1].seq);
        if !(ascending && events.first().is_some_and(after_last)) {
            return None;
        }
        // Only the open run's row can disappear, and only runs closed here or open at the end
        // can appear.
        let open_before = self.open_row();
        let tombstones = (events.drain(..))
            .map(|e| {
                let (seq, stored) = Stored::from_event(e);
                self.append_one(seq, stored, shape, out)
            })
            .sum();
        self.emit_open_change(open_before, out);
        Some(tombstones)
    }

    /// Reads what an append reads first, for a read ahead ([`super::for_each_key`]): the last
    /// event's sequence and kind, and the open row's image (an entry may straddle two cache
    /// lines, and a long image is on the heap).
    pub(super) fn touch(&self) -> usize {
        self.events.last().map_or(0, |(seq, e)| {
            let image = e.folded().as_row_ref().as_bytes();
            usize::from(seq.is_int()) + image.first().map_or(0, |&b| b as usize)
        })
    }

    /// Whether `seq` comes after every stored sequence, so that an append
    /// ([`History::append`], [`History::push_last`]) may store an event there.
    pub(super) fn is_past_last(&self, seq: &Seq) -> bool {
        (self.events.last()).is_none_or(|(last, _)| last < seq)
    }

    /// Stores `stored` at `seq`, which comes after every stored sequence, and emits the row
    /// updates, as [`History::append`] does for one event: what [`History::replace`] and
    /// [`History::rederive`] would emit, without walking or re-deriving.
    pub(super) fn push_last(
        &mut self,
        seq: Seq,
        stored: Stored,
        shape: &Shape,
        out: &mut Vec<(Row, isize)>,
    ) {
        let open_before = self.open_row();
        self.append_one(seq, stored, shape, out);
        self.emit_open_change(open_before, out);
    }

    /// Emits the change of the open run's row from `before`, the row before an append: only
    /// that row can disappear, and the open row is compared as a whole, so an upsert that
    /// leaves it as it was emits nothing.
    fn emit_open_change(&self, before: Option<Row>, out: &mut Vec<(Row, isize)>) {
        match (before, self.open_row()) {
            (Some(before), Some(after)) if before == after => {}
            (before, after) => {
                out.extend(before.map(|r| (r, -1)));
                out.extend(after.map(|r| (r, 1)));
            }
        }
    }

    /// The start of the open run: the last event that starts a run, while the last event is an
    /// upsert (which always lies inside a run). Runs do not cross deletes, so the scan back
    /// never passes one.
    fn open_start(&self) -> Option<&Seq> {
        (self.events.last()).filter(|(_, e)| e.kind() == EventKind::Upsert)?;
        if let Some(start) = self.events.mark() {
            return Some(start);
        }
        let start = (self.events.range_to(Unbounded).rev()).find(|(_, e)| e.starts());
        Some(start.expect("an upsert always lies inside a run").0)
    }

    /// The row of the open run (the last one, if the last event is an upsert).
    fn open_row(&self) -> Option<Row> {
        let start = self.open_start()?;
        let (_, last) = self.events.last()?;
        Some(row(start, None, last.folded()))
    }

    /// Stores `stored` at `seq`, past every stored sequence, and emits the row of the run it
    /// closes, if any: only the open run can change. Returns whether the event is a new
    /// tombstone: it has no successor and is the predecessor of nothing, so no other event's
    /// status changes.
    fn append_one(
        &mut self,
        seq: Seq,
        mut stored: Stored,
        shape: &Shape,
        out: &mut Vec<(Row, isize)>,
    ) -> i64 {
        let mut open = self.open_start().cloned();
        let events = &mut self.events;
        let last = (events.last().map(|(_, e)| e)).filter(|e| e.kind() == EventKind::Upsert);
        let mut close = |last: &Stored| {
            let start = open.take().expect("an upsert always lies inside a run");
            out.push((row(&start, Some(&seq), last.folded()), 1));
        };
        if stored.kind() != EventKind::Upsert {
            let tombstone = match last {
                Some(last) => {
                    close(last);
                    0
                }
                None => 1,
            };
            events.push(seq, stored);
            return tombstone;
        }
        if shape.partial {
            let nulls;
            let before = match last {
                Some(last) => last.folded(),
                None => {
                    nulls = Row::nulls(shape.image_len);
                    &nulls
                }
            };
            let folded = shape.fold(before, &stored);
            if folded != *stored.image() {
                stored.set_folded(folded);
            }
        }
        stored.set_starts(!last.is_some_and(|l| shape.tracked_eq(l.folded(), stored.folded())));
        let start = match stored.starts() {
            true => {
                if let Some(last) = last {
                    close(last);
                }
                seq.clone()
            }
            false => open.expect("an upsert after an upsert continues its run"),
        };
        events.push(seq, stored);
        events.set_mark(Some(start));
        0
    }

    /// Re-derives the runs affected by events changed (inserted, replaced or removed) in
    /// `lo..=hi` and emits the difference. `before` holds what every changed sequence held.
    pub(super) fn rederive(
        &mut self,
        lo: &Seq,
        hi: &Seq,
        shape: &Shape,
        before: Before,
        out: &mut Vec<(Row, isize)>,
    ) {
        let (from, derived, stop, refolded) = self.walk(lo, hi, shape);
        let image = |last: &Seq| match refolded.binary_search_by(|(s, _)| s.cmp(last)) {
            Ok(i) => &refolded[i].1,
            Err(_) => folded_at(&self.events, last),
        };
        let new = derived.iter().map(|run| Version {
            start: &run.start,
            end: run.end.as_ref(),
            image: image(&run.last),
        });
        let stop_seq = match &stop {
            Excluded(seq) => Some(seq),
            _ => None,
        };
        let until = |seq: &&Seq| stop_seq.is_none_or(|stop| *seq < stop);
        let was = self.before_changes(&from, &before);
        let old = versions(was.take_while(|(seq, ..)| until(seq)), stop_seq);
        // Compare rows by content (not by which event gives the image), so a key never emits a
        // row it also retracts: the output is consolidated without sorting it. Both are in
        // start order: merging pairs each derived run with the old run of its start.
        let mut old = old.into_iter().peekable();
        let mut added = Vec::new();
        for v in new {
            while let Some(o) = old.next_if(|o| o.start < v.start) {
                out.push((o.row(), -1));
            }
            let unchanged = match old.next_if(|o| o.start == v.start) {
                Some(o) if o.end == v.end && o.image == v.image => true,
                Some(o) => {
                    out.push((o.row(), -1));
                    false
                }
                None => false,
            };
            if !unchanged {
                added.push((v.row(), 1));
            }
        }
        out.extend(old.map(|o| (o.row(), -1)));
        out.append(&mut added);
        let events = &mut self.events;
        let mut starts = derived.iter().map(|run| &run.start).peekable();
        for (seq, e) in events.range_mut(Included(&from), stop.as_ref()) {
            e.set_starts(starts.next_if(|s| *s == seq).is_some());
        }
        for (seq, folded) in refolded {
            let e = events.get_mut(&seq).expect("refolded events exist");
            e.set_folded(folded);
        }
        if stop_seq.is_none() {
            let open = (derived.last())
                .filter(|run| run.end.is_none())
                .map(|run| run.start.clone());
            events.set_mark(open);
        }
    }

    /// The events from `from` on as they were before the changes `before` records, as
    /// (sequence, kind, starts, folded image).
    fn before_changes<'a>(
        &'a self,
        from: &Seq,
        before: &'a Before,
    ) -> impl Iterator<Item = (&'a Seq, EventKind, bool, &'a Row)> {
        let mut now = self.events.range_from(Included(from)).peekable();
        let mut was = before
            .range::<Seq, _>((Included(from), Unbounded))
            .peekable();
        std::iter::from_fn(move || loop {
            let changed = match (now.peek(), was.peek()) {
                (_, None) => None,
                (None, Some(_)) => Some(true),
                (Some((n, _)), Some((w, _))) => Some(w <= n),
            };
            match changed {
                Some(true) => {
                    let (seq, prior) = was.next()?;
                    now.next_if(|(n, _)| *n == seq);
                    if let Some(p) = prior {
                        return Some((seq, p.kind, p.starts, &p.folded));
                    }
                }
                _ => {
                    let (seq, e) = now.next()?;
                    return Some((seq, e.kind(), e.starts(), e.folded()));
                }
            }
        })
    }

    /// The start of the run holding the upsert at `seq`: the nearest event at or before it that
    /// starts one (a scan back over the run).
    fn run_start(&self, seq: &Seq) -> &Seq {
        let (start, _) = (self.events.range_to(Included(seq)).rev())
            .find(|(_, e)| e.starts())
            .expect("an upsert always lies inside a run");
        start
    }

    /// Derives runs from the run open just before `lo` until the derivation meets the old runs
    /// again after `hi`. Returns where the derivation starts, the runs, the bound that ends the
    /// range of old runs they replace, and the new folded images (partial targets).
    fn walk(
        &self,
        lo: &Seq,
        hi: &Seq,
        shape: &Shape,
    ) -> (Seq, Vec<Run>, Bound<Seq>, Vec<(Seq, Row)>) {
        let events = &self.events;
        // Only partial targets fold into NULLs.
        let nulls = || Row::nulls(if shape.partial { shape.image_len } else { 0 });
        // The open run as `(start, last upsert)`, and the folded image before the current event:
        // the open run's image, or (partial targets) all NULL after a delete. Whole images are
        // borrowed from the events, never copied.
        let (from, mut open, mut folded) = match events.last_before(Excluded(lo)) {
            Some((p, pe)) if pe.kind() == EventKind::Upsert => {
                let start = self.run_start(p);
                (
                    start.clone(),
                    Some((start.clone(), p.clone())),
                    Cow::Borrowed(pe.folded()),
                )
            }
            _ => (lo.clone(), None, Cow::Owned(nulls())),
        };
        let mut derived: Vec<Run> = Vec::new();
        let mut refolded: Vec<(Seq, Row)> = Vec::new();
        let close = |open: &mut Option<(Seq, Seq)>, end: Option<Seq>, derived: &mut Vec<Run>| {
            if let Some((start, last)) = open.take() {
                derived.push(Run { start, end, last });
            }
        };
        for (seq, ev) in events.range_from(Included(lo)) {
            let past = seq > hi;
            if ev.kind() != EventKind::Upsert {
                close(&mut open, Some(seq.clone()), &mut derived);
                if shape.partial {
                    folded = Cow::Owned(nulls());
                }
                if past {
                    return (from, derived, Excluded(seq.clone()), refolded);
                }
                continue;
            }
            let image = if shape.partial {
                Cow::Owned(shape.fold(&folded, ev))
            } else {
                Cow::Borrowed(ev.image())
            };
            let starts = open.is_none() || !shape.tracked_eq(&folded, &image);
            // Past `hi` the events are as they were: one that starts a run in both derivations
            // with the same image ends the change.
            if past && starts && ev.starts() && *ev.folded() == *image {
                close(&mut open, Some(seq.clone()), &mut derived);
                return (from, derived, Excluded(seq.clone()), refolded);
            }
            if starts {
                close(&mut open, Some(seq.clone()), &mut derived);
                open = Some((seq.clone(), seq.clone()));
            } else if let Some((_, last)) = open.as_mut() {
                last.clone_from(seq);
            }
            if shape.partial && *ev.folded() != *image {
                refolded.push((seq.clone(), image.clone().into_owned()));
            }
            folded = image;
        }
        close(&mut open, None, &mut derived);
        (from, derived, Unbounded, refolded)
    }
}

/// The versions of a stretch of history, given as (sequence, kind, starts, folded image) in
/// sequence order from a run's start (or a delete); a version still open at the stretch's end
/// ends at `end`.
fn versions<'a>(
    stretch: impl Iterator<Item = (&'a Seq, EventKind, bool, &'a Row)>,
    end: Option<&'a Seq>,
) -> Vec<Version<'a>> {
    let mut out = Vec::new();
    let mut open: Option<(&Seq, &Row)> = None;
    for (seq, kind, starts, folded) in stretch {
        let upsert = kind == EventKind::Upsert;
        if let Some((_, image)) = open.as_mut().filter(|_| upsert && !starts) {
            *image = folded;
            continue;
        }
        if let Some((start, image)) = open.take() {
            out.push(Version {
                start,
                end: Some(seq),
                image,
            });
        }
        if upsert {
            open = Some((seq, folded));
        }
    }
    out.extend(open.map(|(start, image)| Version { start, end, image }));
    out
}

impl Version<'_> {
    fn row(&self) -> Row {
        row(self.start, self.end, self.image)
    }
}

/// The folded image of the event at `seq` (which exists: runs only point at stored upserts).
fn folded_at<'a, const G: usize>(
    events: &'a SortedMap<Seq, Stored, SMALL_HISTORY, G>,
    seq: &Seq,
) -> &'a Row {
    events
        .get(seq)
        .expect("a run's last upsert is stored")
        .folded()
}

fn row(start: &Seq, end: Option<&Seq>, image: &Row) -> Row {
    Seq::versioned(image, start, end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn ev(key: i64, city: Option<&str>, seq: i64) -> Event {
        let (kind, image) = match city {
            Some(c) => (
                EventKind::Upsert,
                Row::from(vec![Value::Int(key), Value::Str(c.into())]),
            ),
            None => (EventKind::Delete, Row::new()),
        };
        Event {
            seq: Seq::from(seq),
            kind,
            key: Row::from(vec![Value::Int(key)]),
            image,
            authored: None,
            system: None,
        }
    }

    fn table(updates: &[(Row, isize)]) -> Vec<Row> {
        let mut acc: BTreeMap<Row, isize> = BTreeMap::new();
        for (r, d) in updates {
            *acc.entry(r.clone()).or_default() += d;
        }
        acc.into_iter()
            .inspect(|(_, d)| assert!(*d == 0 || *d == 1))
            .filter(|(_, d)| *d == 1)
            .map(|(r, _)| r)
            .collect()
    }

    fn r(key: i64, city: &str, start: i64, end: Option<i64>) -> Row {
        Row::from(vec![
            Value::Int(key),
            Value::Str(city.into()),
            Value::Int(start),
            end.map_or(Value::Null, Value::Int),
        ])
    }

    /// Every stored event of every key costs this much beside its sequence (16 bytes) and its
    /// image's heap bytes, and a version nothing more: it is a flag on the event that starts
    /// it. A key's history is 24 bytes beside its events (40 with its open run's start, 64 with
    /// a map of versions). A whole upsert or a delete is 32 bytes (40 with a box for partial
    /// data beside its image, 56 with `Value` sequences and two boxes); a version took 64
    /// bytes, later 48.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_stored_event_is_32_bytes_and_a_version_nothing_more() {
        assert_eq!(std::mem::size_of::<Stored>(), 32);
        assert_eq!(std::mem::size_of::<History>(), 24);
    }

    #[test]
    fn late_events_splice_into_history() {
        let mut s = Scd2State::new(2, vec![true, true], false, None);
        let mut out = Vec::new();
        let mut st = CommitStats::default();
        s.apply(
            vec![ev(125, Some("Tijuana"), 2), ev(125, Some("Guadalajara"), 6)],
            0,
            &mut out,
            &mut st,
        );
        s.apply(vec![ev(125, Some("Mexicali"), 5)], 0, &mut out, &mut st);
        s.apply(
            vec![ev(123, Some("Monterrey"), 1), ev(123, None, 6)],
            0,
            &mut out,
            &mut st,
        );
        s.apply(vec![ev(123, Some("Chihuahua"), 5)], 0, &mut out, &mut st);
        let mut expected = vec![
            r(123, "Monterrey", 1, Some(5)),
            r(123, "Chihuahua", 5, Some(6)),
            r(125, "Tijuana", 2, Some(5)),
            r(125, "Mexicali", 5, Some(6)),
            r(125, "Guadalajara", 6, None),
        ];
        expected.sort();
        assert_eq!(table(&out), expected);
    }

    #[test]
    fn untracked_changes_stay_in_place_and_late_splits_keep_unchanged_runs() {
        let mut s = Scd2State::new(2, vec![true, false], false, None);
        let mut out = Vec::new();
        let mut st = CommitStats::default();
        let events: Vec<Event> = (1..=50)
            .map(|i| ev(1, Some(&format!("c{i}")), i * 10))
            .collect();
        s.apply(events, 0, &mut out, &mut st);
        assert_eq!(table(&out), vec![r(1, "c50", 10, None)]);
        s.apply(vec![ev(1, None, 255)], 0, &mut out, &mut st);
        assert_eq!(
            table(&out),
            vec![r(1, "c25", 10, Some(255)), r(1, "c50", 260, None)]
        );
    }

    #[test]
    fn only_deletes_that_close_nothing_expire() {
        let mut s = Scd2State::new(2, vec![true, true], false, Some(10));
        let mut out = Vec::new();
        let mut st = CommitStats::default();
        s.apply(
            vec![ev(1, Some("a"), 1), ev(1, None, 6), ev(9, None, 5)],
            100,
            &mut out,
            &mut st,
        );
        s.apply(vec![], 200, &mut out, &mut st);
        assert_eq!(
            st.tombstones_collected, 1,
            "key 9's delete closed nothing; key 1's closed [1, 6)"
        );
        assert_eq!(s.len(), 1);
        s.apply(
            vec![ev(1, Some("b"), 3), ev(9, Some("z"), 4)],
            201,
            &mut out,
            &mut st,
        );
        assert_eq!(
            table(&out),
            vec![
                r(1, "a", 1, Some(3)),
                r(1, "b", 3, Some(6)),
                r(9, "z", 4, None)
            ]
        );
    }
}

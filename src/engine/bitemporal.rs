//! Bitemporal state (SPEC 3.11, D15): the system-time versioning of each key's SCD2 history.
//!
//! For a key, `H(s)` is the SCD2 history (tracked columns and partial updates as for SCD2) of
//! the key's events with system time `<= s`. Walking the key's distinct system times in order, a
//! business row `(image, __START_AT, __END_AT)` that appears in `H(s)` opens a system interval
//! `[s, NULL)`, and one that disappears gets its interval closed at `s`. An output row is the
//! business row followed by `__SYSTEM_START_AT` and `__SYSTEM_END_AT` (NULL while believed).
//!
//! # State and invariants
//!
//! Per key:
//!
//! * the event log: every distinct event (D1), by business sequence (ties at one sequence, also
//!   with different system times, are all kept) and by system time;
//! * `h`, an SCD2 [`History`] equal to `H(smax)`, `smax` the key's greatest system time;
//! * `rows`: per business row ever believed, its system intervals, ascending and disjoint; the
//!   table is every business row with each of its intervals. The rows are ordered by their
//!   hash first ([`HashedRow`]): searches compare integers, not the rows' bytes.
//!
//! # Applying a commit
//!
//! Let `s0` be the least system time among a key's new events. `H(s)` for `s < s0` does not
//! change, so neither do the intervals that ended before `s0`. The state rewinds `h` to
//! `H(< s0)` (it puts back, at each business sequence with events at or after `s0`, the tie
//! winner among the events before `s0`), then replays the events at or after `s0` in system
//! order: at each system time it stores the events of that time that win their ties and
//! re-derives `h` at each (O(log h) plus the versions that change, see `super::scd2`; an event
//! past every business sequence is appended, as SCD2 appends it, without re-deriving); the
//! business rows these re-derivations retract or insert, summed, are the rows whose belief
//! changes at that time.
//! For an event later in system time than all the key's others (the usual case) that is one
//! re-derivation. An event late in system time is spliced in: the old events from `s0` on are
//! first replayed once more to learn which rows they touched, then the old and new events are
//! replayed together; every touched row keeps its intervals that ended before `s0`, re-opens
//! the one believed just before `s0`, and takes its changes from the new replay. Only rows
//! whose intervals differ are emitted, each at most once per commit.
//!
//! # Limits
//!
//! * Bitemporal history keeps everything: every event stays in the log (the winner of each
//!   business sequence is held twice, in the log and in `h`), and there is no tombstone
//!   collection (D11 does not apply).
//! * An event `d` system times late costs two replays of the key's events with system time at
//!   or after its own: O(events since `s0` · log h) plus the rows they change.
//! * Truncates cannot reach a bitemporal target (validation rejects them); any that do are
//!   ignored.
//!
//! Saved ([`Durable`]) key by key, with no worker-wide data; it holds no tombstones.

use super::durable::{
    misfit, read_changes, read_header, read_keys, write_changes, write_header, Changed, Durable,
};
use super::hashed_row::{deserialize_map, HashedRow};
use super::heap::HeapSize;
use super::records::{RecordIn, RecordOut};
use super::scd2::{History, Shape, Stored};
use super::sorted_map::{SortedMap, SMALL};
use super::{for_each_key, CdcState, CommitStats, KeyMap};
use crate::event::{Event, EventKind};
use crate::value::{Row, Seq, Value};
use crate::Result;
use differential_dataflow::consolidation::{consolidate, consolidate_from};
use serde::{Deserialize, Serialize};
use smallvec::{smallvec, SmallVec};
use std::collections::BTreeMap;
use std::ops::Bound::{self, Excluded, Included, Unbounded};

/// Bitemporal state of the keys one worker owns.
#[derive(Debug)]
pub struct BitemporalState {
    shape: Shape,
    keys: KeyMap<KeyState>,
    changed: Changed,
}

/// One key: its event log, its current business history and its rows' system intervals.
#[derive(Debug, Default, Serialize, Deserialize)]
struct KeyState {
    /// Every distinct event of the key, by business sequence.
    by_seq: SortedMap<Seq, One<Logged>, SMALL, GROWTH>,
    /// The business sequence of every logged event, by system time.
    by_system: SortedMap<Seq, One<Seq>, SMALL, GROWTH>,
    /// `H(smax)`: the SCD2 history of all logged events.
    h: History<GROWTH>,
    /// Per business row (image, `__START_AT`, `__END_AT`), its system intervals.
    #[serde(deserialize_with = "deserialize_map")]
    rows: SortedMap<HashedRow, One<Interval>, SMALL, GROWTH>,
}

/// The least a key's vectors grow by, in entries. An event adds an entry to each of a key's
/// four vectors; grown one entry at a time (SCD2's histories, which keep state per version
/// within twice its columns' width, do so), each event moved all four into new blocks: the
/// allocator's size classes are an eighth apart, an entry of 48 bytes and more crosses one
/// at nearly every push. `scdflow bench --events 400000 --keys 100000 --displacement
/// 0,1000,100000 --flows bitemporal --systems scdflow,state-loop --budget 0`, five alternating
/// runs each, medians at D = 0 / 1,000 / 100,000: the engine 374 / 434 / 409 k events/s one
/// at a time, 425 / 471 / 449 k by four; the state loop 541 / 551 / 516 k, 591 / 605 / 608 k;
/// state per table row 238-241 bytes, 301-304.
const GROWTH: usize = 4;

/// The entries of one sequence, system time or business row: nearly always one, so it is kept
/// inline, without a heap block of its own (each was a `Vec` with one element, 40 to 100 bytes
/// more per event). Saved as a sequence, as a `Vec` would be.
type One<T> = SmallVec<[T; 1]>;

/// `[__SYSTEM_START_AT, __SYSTEM_END_AT)`; `None` = still believed.
type Interval = (Seq, Option<Seq>);

/// A logged event (its key and business sequence are where it is stored).
#[derive(Debug, Serialize, Deserialize)]
struct Logged {
    system: Seq,
    kind: EventKind,
    image: Row,
    authored: Option<Box<[bool]>>,
}

impl BitemporalState {
    /// An empty state. `tracked[i]` says whether image column `i` opens a new business version
    /// when it changes; `partial` selects field-level folding of upserts (D6).
    pub fn new(image_len: usize, tracked: Vec<bool>, partial: bool) -> Self {
        BitemporalState {
            shape: Shape::new(image_len, tracked, partial),
            keys: KeyMap::default(),
            changed: Changed::default(),
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
}

const TAG: &str = "bitemporal";

impl Durable for BitemporalState {
    fn save(&mut self, out: &mut dyn RecordOut) -> Result<()> {
        write_header(out, TAG, &())?;
        for (key, state) in &self.keys {
            out.write(&(key, state))?;
        }
        self.changed.clear();
        Ok(())
    }

    fn track_changes(&mut self) {
        self.changed.track();
    }

    fn save_changes(&mut self, out: &mut dyn RecordOut) -> Result<()> {
        write_header(out, TAG, &())?;
        write_changes(out, &mut self.changed, &self.keys)
    }

    fn restore_changes(
        &mut self,
        input: &mut dyn RecordIn,
        owns: &dyn Fn(&Row) -> bool,
        _wrote: &dyn Fn(&Row) -> bool,
    ) -> Result<()> {
        read_header::<()>(input, TAG)?;
        read_changes(input, owns, |key, state: Option<KeyState>| {
            self.keys.remove(&key);
            if let Some(mut state) = state {
                state.fit(&self.shape)?;
                self.keys.insert(key, state);
            }
            Ok(())
        })
    }

    fn restore(&mut self, input: &mut dyn RecordIn, owns: &dyn Fn(&Row) -> bool) -> Result<()> {
        read_header::<()>(input, TAG)?;
        read_keys(input, owns, |key, mut state: KeyState| {
            state.fit(&self.shape)?;
            if self.keys.contains_key(&key) {
                return Ok(false);
            }
            self.keys.insert(key, state);
            Ok(true)
        })
    }

    fn table_keys(&self) -> Vec<&Row> {
        self.keys.keys().collect()
    }

    fn key_rows(&self, key: &Row, out: &mut Vec<(Row, isize)>) {
        if let Some(state) = self.keys.get(key) {
            let start = out.len();
            for (row, intervals) in state.rows.iter() {
                out.extend(intervals.iter().map(|i| (versioned(row.row(), i), 1)));
            }
            consolidate_from(out, start);
        }
    }

    /// Bitemporal history keeps every event: there are no tombstones.
    fn live_tombstones(&self) -> u64 {
        0
    }
}

impl CdcState for BitemporalState {
    fn apply(
        &mut self,
        mut events: Vec<Event>,
        _now: i64,
        out: &mut Vec<(Row, isize)>,
        stats: &mut CommitStats,
    ) {
        events.retain(|e| e.kind != EventKind::Truncate);
        let touch = |s: &Self, key: &Row| s.keys.get(key).map_or(0, KeyState::touch);
        for_each_key(self, events, touch, |s, key, events| {
            s.changed.mark(&key);
            let state = s.keys.entry(key).or_default();
            state.apply(events, &s.shape, out, stats);
        });
    }

    fn emits_consolidated(&self) -> bool {
        // Each touched business row is revised once per commit and emits only the intervals
        // that differ; rows of different keys differ in their key columns.
        true
    }

    fn heap_bytes(&self) -> usize {
        self.keys.heap_bytes() + self.changed.heap_bytes()
    }
}

impl HeapSize for KeyState {
    fn heap_bytes(&self) -> usize {
        self.by_seq.heap_bytes()
            + self.by_system.heap_bytes()
            + self.h.heap_bytes()
            + self.rows.heap_bytes()
    }
}

impl HeapSize for Logged {
    fn heap_bytes(&self) -> usize {
        self.system.heap_bytes() + self.image.heap_bytes() + self.authored.heap_bytes()
    }
}

/// An event's system time. A bitemporal source row without one is refused when it is read
/// (`prepare`); an event made without one elsewhere counts as NULL, the least.
fn system_of(e: &Event) -> Seq {
    e.system.clone().unwrap_or_else(|| Seq::from(Value::Null))
}

impl Logged {
    fn from_event(e: Event) -> Self {
        Logged {
            system: system_of(&e),
            kind: e.kind,
            image: e.image,
            authored: e.authored,
        }
    }

    fn rank(&self) -> (EventKind, &Row, Option<&[bool]>) {
        (self.kind, &self.image, self.authored.as_deref())
    }

    fn to_stored(&self) -> Stored {
        Stored::new(self.kind, self.image.clone(), self.authored.clone())
    }
}

impl KeyState {
    /// Applies one commit's events of this key (deduplicated within the commit).
    fn apply(
        &mut self,
        events: &mut Vec<Event>,
        shape: &Shape,
        out: &mut Vec<(Row, isize)>,
        stats: &mut CommitStats,
    ) {
        events.retain(|e| !self.logged(e));
        let Some(s0) = events.iter().map(system_of).min() else {
            return;
        };
        // Each business row whose belief changes at or after `s0`, with the system time and
        // diff of each change (a diff of 0 marks a row the first replay of a late event
        // touched). A vector sorted once, not a map: a commit touches a key's rows a few at a
        // time, and a map allocated a node and a vector per commit and key.
        let mut touched: Vec<(HashedRow, Seq, isize)> = Vec::new();
        let late = self
            .by_system
            .last_before(Unbounded)
            .is_some_and(|(smax, _)| s0 <= *smax);
        if late {
            let seqs = self.sequences_from(&s0);
            self.rewind(&seqs, &s0, shape);
            self.replay(&s0, shape, |s, diffs| {
                let rows = diffs.into_iter().map(|(row, _)| HashedRow::new(row));
                touched.extend(rows.map(|row| (row, s.clone(), 0)));
            });
            self.rewind(&seqs, &s0, shape);
        }
        for event in events.drain(..) {
            self.log(event, stats);
        }
        self.replay(&s0, shape, |s, diffs| {
            let rows = diffs
                .into_iter()
                .map(|(row, diff)| (HashedRow::new(row), diff));
            touched.extend(rows.map(|(row, diff)| (row, s.clone(), diff)));
        });
        // Stable: each row's changes stay in system order.
        touched.sort_by(|a, b| a.0.cmp(&b.0));
        for group in touched.chunk_by_mut(|a, b| a.0 == b.0) {
            let row = std::mem::take(&mut group[0].0);
            let changes = group.iter().filter(|(_, _, diff)| *diff != 0);
            let changes = changes.map(|(_, s, diff)| (s, *diff));
            self.revise(row, &s0, changes, out);
        }
    }

    /// Reads what applying an event reads first, for a read ahead ([`super::for_each_key`]):
    /// where the searches of the log and of the rows start (their middle entries, and that
    /// row's bytes), the last logged event, and the end of the business history.
    fn touch(&self) -> usize {
        let log = [self.by_seq.middle(), self.by_seq.last()]
            .into_iter()
            .flatten();
        let log: usize = log.map(|(_, logged)| logged.len()).sum();
        let rows = self.rows.middle().map_or(0, |(row, _)| row.touch());
        log + rows + self.h.touch()
    }

    /// Checks a restored key against the target's shape and the invariants replays rely on:
    /// logged upserts have the target's width, and the system index points at logged events.
    fn fit(&mut self, shape: &Shape) -> Result<()> {
        self.h.fit(shape)?;
        for (_, logged) in self.by_seq.iter() {
            for l in logged {
                let mask = l
                    .authored
                    .as_ref()
                    .is_none_or(|m| m.len() == shape.image_len());
                if l.kind == EventKind::Upsert && !(l.image.len() == shape.image_len() && mask) {
                    return Err(misfit(format!(
                        "an image does not have the target's {} columns",
                        shape.image_len()
                    )));
                }
            }
        }
        for (system, seqs) in self.by_system.iter() {
            let logged = |seq: &Seq| {
                self.by_seq
                    .get(seq)
                    .is_some_and(|at| at.iter().any(|l| l.system == *system))
            };
            if !seqs.iter().all(logged) {
                return Err(misfit("the system-time index points at no logged event"));
            }
        }
        Ok(())
    }

    /// Whether `e` is already in the log (D1).
    fn logged(&self, e: &Event) -> bool {
        let system = system_of(e);
        self.by_seq.get(&e.seq).is_some_and(|logged| {
            logged
                .iter()
                .any(|l| l.system == system && l.rank() == e.tie_rank())
        })
    }

    /// Adds a new event to the log; it is a sequence tie (D2) if another event of the key has
    /// its business sequence.
    fn log(&mut self, e: Event, stats: &mut CommitStats) {
        let (seq, system) = (e.seq.clone(), system_of(&e));
        match self.by_system.get_mut(&system) {
            Some(seqs) => seqs.push(seq.clone()),
            None => {
                self.by_system.insert(system, smallvec![seq.clone()]);
            }
        }
        match self.by_seq.get_mut(&seq) {
            Some(logged) => {
                stats.sequence_ties += 1;
                logged.push(Logged::from_event(e));
            }
            None => {
                self.by_seq.insert(seq, smallvec![Logged::from_event(e)]);
            }
        }
    }

    /// The distinct business sequences of the logged events with system time `>= s0`.
    fn sequences_from(&self, s0: &Seq) -> Vec<Seq> {
        let mut seqs = Vec::new();
        let mut cursor = Included(s0);
        while let Some((s, at)) = self.by_system.first_from(cursor) {
            seqs.extend_from_slice(at);
            cursor = Excluded(s);
        }
        seqs.sort_unstable();
        seqs.dedup();
        seqs
    }

    /// Rewinds `h` to `H(< s0)`, given every business sequence `seqs` that has logged events at
    /// or after `s0`: each gets back the tie winner among its events before `s0`, or none.
    fn rewind(&mut self, seqs: &[Seq], s0: &Seq, shape: &Shape) {
        let KeyState { by_seq, h, .. } = self;
        let mut discarded = Vec::new();
        for seq in seqs {
            let winner = tie_winner(by_seq.get(seq), |s| s < s0);
            let same = match (winner, h.stored(seq)) {
                (None, None) => true,
                (Some(w), Some(held)) => w.rank() == held.rank(),
                _ => false,
            };
            if same {
                continue;
            }
            let mut before = BTreeMap::new();
            h.replace(seq, winner.map(Logged::to_stored), &mut before);
            h.rederive(seq, seq, shape, before, &mut discarded);
            discarded.clear();
        }
    }

    /// Replays the logged events with system time `>= s0` into `h` (which must hold
    /// `H(< s0)`), in system order, and passes each system time's business-row changes to
    /// `changes`. Afterwards `h` holds `H(smax)`.
    fn replay<F>(&mut self, s0: &Seq, shape: &Shape, mut changes: F)
    where
        F: FnMut(&Seq, Vec<(Row, isize)>),
    {
        let KeyState {
            by_seq,
            by_system,
            h,
            ..
        } = self;
        let mut cursor: Bound<&Seq> = Included(s0);
        while let Some((s, seqs)) = by_system.first_from(cursor) {
            cursor = Excluded(s);
            // One re-derivation per changed sequence keeps a time's events that lie far apart
            // in business time from walking the history between them.
            let mut diffs = Vec::new();
            let mut stored = 0;
            for seq in seqs {
                let best = tie_winner(by_seq.get(seq), |t| t == s)
                    .expect("the system index points at logged events");
                if h.stored(seq).is_some_and(|held| held.rank() >= best.rank()) {
                    continue;
                }
                // An event past the business history (the usual case) is appended to it.
                if h.is_past_last(seq) {
                    h.push_last(seq.clone(), best.to_stored(), shape, &mut diffs);
                } else {
                    let mut before = BTreeMap::new();
                    h.replace(seq, Some(best.to_stored()), &mut before);
                    h.rederive(seq, seq, shape, before, &mut diffs);
                }
                stored += 1;
            }
            if stored > 1 {
                consolidate(&mut diffs);
            }
            if !diffs.is_empty() {
                changes(s, diffs);
            }
        }
    }

    /// Recomputes business row `row`'s system intervals from `s0` on: those that ended before
    /// `s0` stay, the one believed just before `s0` re-opens, and `changes` (the row's
    /// retractions and insertions at or after `s0`, in system order) close and open intervals.
    /// Emits the intervals that differ.
    fn revise<'c>(
        &mut self,
        row: HashedRow,
        s0: &Seq,
        changes: impl Iterator<Item = (&'c Seq, isize)>,
        out: &mut Vec<(Row, isize)>,
    ) {
        // One search for a row already held; a new row takes a second one to be inserted.
        let Some(old) = self.rows.get_mut(&row) else {
            let revised = revised_from(&[], s0, changes);
            emit_difference(row.row(), &[], &revised, out);
            if !revised.is_empty() {
                self.rows.insert(row, revised);
            }
            return;
        };
        // Intervals are disjoint and ascending, so those that ended before `s0` are a prefix.
        let settled = old
            .iter()
            .position(|(_, end)| end.as_ref().is_none_or(|end| end >= s0))
            .unwrap_or(old.len());
        let revised = revised_from(&old[settled..], s0, changes);
        emit_difference(row.row(), &old[settled..], &revised, out);
        old.truncate(settled);
        old.extend(revised);
        if old.is_empty() {
            self.rows.remove(&row);
        }
    }
}

/// A business row's intervals from `s0` on: the one of `unsettled` (its intervals that did not
/// end before `s0`) believed just before `s0` re-opens, and `changes` (its retractions and
/// insertions at or after `s0`, in system order) close and open intervals.
fn revised_from<'c>(
    unsettled: &[Interval],
    s0: &Seq,
    changes: impl Iterator<Item = (&'c Seq, isize)>,
) -> One<Interval> {
    let mut revised: One<Interval> = SmallVec::new();
    if let Some((start, _)) = unsettled.first().filter(|(start, _)| start < s0) {
        revised.push((start.clone(), None));
    }
    for (s, diff) in changes {
        if diff > 0 {
            revised.push((s.clone(), None));
        } else {
            let open = revised
                .last_mut()
                .filter(|(_, end)| end.is_none())
                .expect("a retracted business row was believed");
            open.1 = Some(s.clone());
        }
    }
    revised
}

/// The greatest event by tie rank (D2) among `logged` whose system time passes `keep`.
fn tie_winner(logged: Option<&One<Logged>>, keep: impl Fn(&Seq) -> bool) -> Option<&Logged> {
    logged
        .into_iter()
        .flatten()
        .filter(|l| keep(&l.system))
        .max_by(|a, b| a.rank().cmp(&b.rank()))
}

/// Emits `-` for the intervals of `old` not in `new` and `+` for those of `new` not in `old`;
/// both are ascending by start, and starts are distinct within each.
fn emit_difference(row: &Row, old: &[Interval], new: &[Interval], out: &mut Vec<(Row, isize)>) {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let (mut o, mut n) = (old.iter().peekable(), new.iter().peekable());
    loop {
        let step = match (o.peek(), n.peek()) {
            (None, None) => break,
            (Some(_), None) => Less,
            (None, Some(_)) => Greater,
            (Some(a), Some(b)) => a.0.cmp(&b.0),
        };
        match step {
            Less => out.push((versioned(row, o.next().expect("peeked")), -1)),
            Greater => out.push((versioned(row, n.next().expect("peeked")), 1)),
            Equal => {
                let (a, b) = (o.next().expect("peeked"), n.next().expect("peeked"));
                if a != b {
                    out.push((versioned(row, a), -1));
                    out.push((versioned(row, b), 1));
                }
            }
        }
    }
}

/// The output row: the business row, then `__SYSTEM_START_AT`, `__SYSTEM_END_AT`.
fn versioned(row: &Row, (start, end): &Interval) -> Row {
    Seq::versioned(row, start, end.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model;
    use crate::plan::{ScdType, Target, TargetKind};
    use crate::value::Value;
    use crate::value::{DataType, Schema};
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};

    /// A bitemporal target over STRING `columns` (types do not matter to the model).
    fn target(columns: &[&str], keys: &[usize], tracked: Vec<bool>, partial: bool) -> Target {
        let mut schema: Vec<(String, DataType)> = columns
            .iter()
            .map(|c| (c.to_string(), DataType::String))
            .collect();
        for extra in [
            "__START_AT",
            "__END_AT",
            "__SYSTEM_START_AT",
            "__SYSTEM_END_AT",
        ] {
            schema.push((extra.into(), DataType::Timestamp));
        }
        Target {
            kind: TargetKind::AutoCdc,
            name: "t".into(),
            schema: Schema::new(schema),
            image_len: columns.len(),
            keys: keys.to_vec(),
            scd: ScdType::Bitemporal,
            sequence_type: DataType::Timestamp,
            system_sequence_type: Some(DataType::Timestamp),
            tracked,
            partial,
            tombstone_gc_seconds: 0,
            replace_where: None,
            view_of: None,
            properties: Default::default(),
            line: 1,
        }
    }

    /// The table the updates add up to; every multiplicity must stay 0 or 1.
    fn table(updates: &[(Row, isize)]) -> Vec<Row> {
        let mut acc: BTreeMap<Row, isize> = BTreeMap::new();
        for (r, d) in updates {
            *acc.entry(r.clone()).or_default() += d;
        }
        acc.into_iter()
            .inspect(|(r, d)| assert!(*d == 0 || *d == 1, "multiplicity {d} of {r:?}"))
            .filter(|(_, d)| *d == 1)
            .map(|(r, _)| r)
            .collect()
    }

    /// Applies `commits` in order to a new state and, after each, compares the accumulated
    /// table with the model of the events so far; returns the tables and the counters.
    fn run(t: &Target, commits: &[Vec<Event>]) -> (Vec<Vec<Row>>, CommitStats) {
        let mut state = BitemporalState::new(t.image_len, t.tracked.clone(), t.partial);
        let mut stats = CommitStats::default();
        let (mut all, mut seen, mut tables) = (Vec::new(), Vec::new(), Vec::new());
        for commit in commits {
            let mut updates = Vec::new();
            state.apply(commit.clone(), 0, &mut updates, &mut stats);
            let mut rows: Vec<&Row> = updates.iter().map(|(r, _)| r).collect();
            rows.sort();
            assert!(
                rows.windows(2).all(|w| w[0] != w[1]),
                "consolidated: {updates:?}"
            );
            all.extend(updates);
            seen.extend(commit.iter().cloned());
            let mut expected = model::bitemporal(t, &seen);
            expected.sort();
            let got = table(&all);
            assert_eq!(got, expected, "after commit {commit:?} of {commits:?}");
            tables.push(got);
        }
        (tables, stats)
    }

    fn commit_each(events: &[Event]) -> Vec<Vec<Event>> {
        events.iter().map(|e| vec![e.clone()]).collect()
    }

    /// Splits `events` into commits at random points.
    fn split(events: &[Event], rng: &mut ChaCha8Rng) -> Vec<Vec<Event>> {
        let mut commits: Vec<Vec<Event>> = vec![Vec::new()];
        for e in events {
            if !commits.last().expect("one commit").is_empty() && rng.random_bool(0.5) {
                commits.push(Vec::new());
            }
            commits.last_mut().expect("one commit").push(e.clone());
        }
        commits
    }

    fn shuffle<T>(items: &mut [T], rng: &mut ChaCha8Rng) {
        for i in (1..items.len()).rev() {
            items.swap(i, rng.random_range(0..=i));
        }
    }

    fn permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![Vec::new()];
        }
        let mut all = Vec::new();
        for p in permutations(n - 1) {
            for at in 0..=p.len() {
                let mut q = p.clone();
                q.insert(at, n - 1);
                all.push(q);
            }
        }
        all
    }

    // ---- T8 ----

    fn at(h: i64, m: i64, s: i64) -> Value {
        Value::Timestamp(((h * 60 + m) * 60 + s) * 1_000_000)
    }

    fn a() -> Value {
        Value::Str("A".into())
    }

    fn up(value: &str, bt: Value, st: Value) -> Event {
        Event {
            seq: bt.into(),
            kind: EventKind::Upsert,
            key: Row::from(vec![a()]),
            image: Row::from(vec![a(), Value::Str(value.into())]),
            authored: None,
            system: Some(st.into()),
        }
    }

    /// The four events of T8, in the spec's order.
    fn t8_events() -> Vec<Event> {
        vec![
            up("XFv1", at(10, 1, 0), at(10, 5, 0)),
            up("XFv2", at(12, 15, 43), at(12, 20, 0)),
            up("XFv3", at(12, 5, 0), at(12, 25, 0)),
            Event {
                seq: at(12, 30, 0).into(),
                kind: EventKind::Delete,
                key: Row::from(vec![a()]),
                image: Row::new(),
                authored: None,
                system: Some(at(12, 30, 0).into()),
            },
        ]
    }

    /// A T8 row; `None` ends are NULL.
    fn t8_row(value: &str, bt: [Value; 2], st: [Value; 2]) -> Row {
        let [start, end] = bt;
        let [sstart, send] = st;
        Row::from(vec![
            a(),
            Value::Str(value.into()),
            start,
            end,
            sstart,
            send,
        ])
    }

    /// The tables after each of T8's four steps, as printed in the spec.
    fn t8_tables() -> Vec<Vec<Row>> {
        const N: Value = Value::Null;
        let v1_open_until_1220 = t8_row("XFv1", [at(10, 1, 0), N], [at(10, 5, 0), at(12, 20, 0)]);
        let step1 = vec![t8_row("XFv1", [at(10, 1, 0), N], [at(10, 5, 0), N])];
        let step2 = vec![
            v1_open_until_1220.clone(),
            t8_row("XFv1", [at(10, 1, 0), at(12, 15, 43)], [at(12, 20, 0), N]),
            t8_row("XFv2", [at(12, 15, 43), N], [at(12, 20, 0), N]),
        ];
        let step3_common = [
            v1_open_until_1220,
            t8_row(
                "XFv1",
                [at(10, 1, 0), at(12, 15, 43)],
                [at(12, 20, 0), at(12, 25, 0)],
            ),
            t8_row("XFv1", [at(10, 1, 0), at(12, 5, 0)], [at(12, 25, 0), N]),
            t8_row("XFv3", [at(12, 5, 0), at(12, 15, 43)], [at(12, 25, 0), N]),
        ];
        let mut step3 = step3_common.to_vec();
        step3.push(t8_row("XFv2", [at(12, 15, 43), N], [at(12, 20, 0), N]));
        let mut step4 = step3_common.to_vec();
        step4.push(t8_row(
            "XFv2",
            [at(12, 15, 43), N],
            [at(12, 20, 0), at(12, 30, 0)],
        ));
        step4.push(t8_row(
            "XFv2",
            [at(12, 15, 43), at(12, 30, 0)],
            [at(12, 30, 0), N],
        ));
        let mut tables = vec![step1, step2, step3, step4];
        for t in &mut tables {
            t.sort();
        }
        tables
    }

    fn t8_target() -> Target {
        target(&["id", "value"], &[0], vec![true, true], false)
    }

    #[test]
    fn t8_steps_in_order() {
        let (tables, _) = run(&t8_target(), &commit_each(&t8_events()));
        assert_eq!(tables, t8_tables());
    }

    #[test]
    fn t8_any_arrival_order_and_commit_split() {
        let t = t8_target();
        let events = t8_events();
        let step4 = t8_tables().pop().expect("four steps");
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        for order in permutations(events.len()) {
            let ordered: Vec<Event> = order.iter().map(|&i| events[i].clone()).collect();
            let mut splits = vec![commit_each(&ordered), vec![ordered.clone()]];
            splits.extend((0..4).map(|_| split(&ordered, &mut rng)));
            for commits in splits {
                let (tables, _) = run(&t, &commits);
                assert_eq!(tables.last(), Some(&step4), "order {order:?}");
            }
        }
    }

    #[test]
    fn t9_two_rows() {
        let t = target(&["id", "x", "y", "bt", "st"], &[0], vec![true; 5], false);
        let ev = |x: &str, y: &str, bt: i64, st: i64| Event {
            seq: Seq::from(bt),
            kind: EventKind::Upsert,
            key: Row::from(vec![Value::Int(1)]),
            image: Row::from(vec![
                Value::Int(1),
                Value::Str(x.into()),
                Value::Str(y.into()),
                Value::Int(bt),
                Value::Int(st),
            ]),
            authored: None,
            system: Some(Seq::from(st)),
        };
        let row = |x: &str, y: &str, bt: i64, st: i64, b: [Value; 2], s: [Value; 2]| {
            let mut r = ev(x, y, bt, st).image;
            r.extend(b);
            r.extend(s);
            r
        };
        let (i, n) = (Value::Int, Value::Null);
        let mut expected = vec![
            row("x10", "y10", 10, 100, [i(10), n.clone()], [i(100), i(200)]),
            row("x10", "y10", 10, 100, [i(10), i(20)], [i(200), n.clone()]),
            row("x20", "y20", 20, 200, [i(20), n.clone()], [i(200), n]),
        ];
        expected.sort();
        let (e1, e2) = (ev("x10", "y10", 10, 100), ev("x20", "y20", 20, 200));
        for commits in [
            vec![vec![e1.clone()], vec![e2.clone()]],
            vec![vec![e2.clone()], vec![e1.clone()]],
            vec![vec![e1.clone(), e2.clone()]],
        ] {
            let (tables, _) = run(&t, &commits);
            assert_eq!(tables.last(), Some(&expected));
        }
    }

    #[test]
    fn duplicates_are_ignored_and_new_ties_counted_once() {
        let t = t8_target();
        let e1 = up("XFv1", at(10, 1, 0), at(10, 5, 0));
        // The same business sequence, learned again later with another image: a tie.
        let e2 = up("XFv9", at(10, 1, 0), at(11, 0, 0));
        let commits = vec![
            vec![e1.clone()],
            vec![e1.clone(), e2.clone()],
            vec![e2.clone(), e1],
            vec![e2],
        ];
        let (_, stats) = run(&t, &commits);
        assert_eq!(stats.sequence_ties, 1);
    }

    /// Random event sets of several keys over small business and system ranges (so ties,
    /// equal system times and late events are common), with deletes, replays, tracked-column
    /// masks and partial updates, in random arrival order and commit split: the engine equals
    /// the model after every commit.
    #[test]
    fn random_event_sets_match_the_model() {
        let mut rng = ChaCha8Rng::seed_from_u64(15);
        let pick = |rng: &mut ChaCha8Rng, values: &[&str]| -> Value {
            match values[rng.random_range(0..values.len())] {
                "" => Value::Null,
                v => Value::Str(v.into()),
            }
        };
        for case in 0..400 {
            let partial = rng.random_bool(0.4);
            let tracked = vec![true, rng.random_bool(0.6), rng.random_bool(0.6)];
            let t = target(&["k", "a", "b"], &[0], tracked, partial);
            let mut events: Vec<Event> = Vec::new();
            for _ in 0..rng.random_range(1..=14) {
                if !events.is_empty() && rng.random_bool(0.1) {
                    let again = events[rng.random_range(0..events.len())].clone();
                    events.push(again);
                    continue;
                }
                let k = Value::Int(rng.random_range(0..3));
                let key = Row::from([k.clone()]);
                let seq = Value::Int(rng.random_range(1..=6));
                let system = Value::Int(rng.random_range(1..=5));
                let event = if rng.random_bool(0.2) {
                    Event {
                        seq: seq.into(),
                        kind: EventKind::Delete,
                        key,
                        image: Row::new(),
                        authored: None,
                        system: Some(system.into()),
                    }
                } else {
                    let image = Row::from(vec![
                        k,
                        pick(&mut rng, &["x", "y", ""]),
                        pick(&mut rng, &["p", "q"]),
                    ]);
                    let authored = (partial && rng.random_bool(0.7))
                        .then(|| vec![true, rng.random_bool(0.5), rng.random_bool(0.5)]);
                    Event {
                        seq: seq.into(),
                        kind: EventKind::Upsert,
                        key,
                        image,
                        authored: authored.map(Vec::into_boxed_slice),
                        system: Some(system.into()),
                    }
                };
                events.push(event);
            }
            shuffle(&mut events, &mut rng);
            let commits = if case % 4 == 0 {
                commit_each(&events)
            } else {
                split(&events, &mut rng)
            };
            run(&t, &commits);
        }
    }

    /// A business row believed, dropped and believed again has one interval per belief, in any
    /// arrival order.
    #[test]
    fn a_row_can_be_believed_again() {
        let t = t8_target();
        let i = Value::Int;
        // z from 1 (system 10); m at 5 (system 15) ends it at 5; z at 5 (system 20) wins the tie
        // at 5 and folds into the version from 1, which is open-ended again; a delete at 8
        // (system 30) ends it.
        let events = [
            up("z", i(1), i(10)),
            up("m", i(5), i(15)),
            up("z", i(5), i(20)),
            Event {
                seq: i(8).into(),
                kind: EventKind::Delete,
                key: Row::from(vec![a()]),
                image: Row::new(),
                authored: None,
                system: Some(i(30).into()),
            },
        ];
        let row = |start: i64, end: Option<i64>, sstart: i64, send: Option<i64>| {
            let opt = |v: Option<i64>| v.map_or(Value::Null, Value::Int);
            Row::from(vec![
                a(),
                Value::Str("z".into()),
                i(start),
                opt(end),
                i(sstart),
                opt(send),
            ])
        };
        let mut expected = vec![
            row(1, None, 10, Some(15)),
            row(1, Some(5), 15, Some(20)),
            row(1, None, 20, Some(30)),
            row(1, Some(8), 30, None),
            t8_row("m", [i(5), Value::Null], [i(15), i(20)]),
        ];
        expected.sort();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for order in permutations(events.len()) {
            let ordered: Vec<Event> = order.iter().map(|&k| events[k].clone()).collect();
            for commits in [commit_each(&ordered), split(&ordered, &mut rng)] {
                let (tables, _) = run(&t, &commits);
                assert_eq!(tables.last(), Some(&expected), "order {order:?}");
            }
        }
    }
}

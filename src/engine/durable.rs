//! Persisting per-worker states (`scdflow run --state DIR`): [`Durable`] saves a state key by key
//! and restores it on any number of workers.
//!
//! A shard (one worker's state, written by [`Durable::save`]) is a stream of records
//! ([`RecordOut`]; the app frames them in a checksummed file): first the worker-wide record,
//! `(kind tag, data)`, then one `(key, key state)` record per key. The tag names the state type, so a
//! shard of another operator is refused instead of misread. Configuration (image width, tracked
//! columns, partial folding, retention, replace keys) is not saved: it comes from the pipeline
//! through the state's `new`, and `restore` fills the state it built.
//!
//! A delta shard ([`Durable::save_changes`]) holds what changed since
//! the worker's last save: the worker-wide record of what was added to it (new tombstone queue
//! entries; the truncate point), then `(key, Some(key state))` for every key changed and still
//! held and `(key, None)` for every key dropped. Restoring a base and its deltas in order gives
//! the state at the last delta; a key's records override each other, and worker-wide records
//! merge exactly as shards of several workers do. A state whose keys hold long ordered histories
//! (SCD2) saves less: a changed key's entries from the least position that changed on
//! ([`Changed::mark_from`], [`KeyDelta::From`]), which its restore puts in place of the
//! entries there and after; in-order events make that the new events alone, where a whole
//! key's record grew with its history. States record changed keys only once asked
//! ([`Durable::track_changes`]): tracking copies every changed key, which a run that never
//! saves should not pay for.
//!
//! Restoring on `Q` workers what `P` workers saved: every new worker builds a fresh state and
//! restores every old shard into it, keeping the keys it owns, `|key| worker_of(key, Q) == w`
//! ([`worker_of`] mirrors the operators' exchange). Worker-wide data is merged: tombstone
//! queue entries of owned keys keep their commit times and stay ordered by them, and a truncate
//! point (broadcast, so equal on every old worker) is kept as the maximum.

use super::heap::HeapSize;
use super::records::{RecordIn, RecordOut};
use super::{KeyMap, AHEAD};
use crate::value::Row;
use crate::{Error, ErrorKind, Result};
use differential_dataflow::Hashable;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A per-worker operator state that is saved key by key and restored on any number of workers.
/// `Sync`: a worker reads its table out of it from several threads at once (the runtime's
/// table rendering).
pub trait Durable: Sync {
    /// Writes the worker-wide part (one record), then one record per key, and forgets the
    /// changes recorded so far (this save is the base later deltas apply to).
    fn save(&mut self, out: &mut dyn RecordOut) -> Result<()>;

    /// Starts recording the keys that change, for [`Durable::save_changes`].
    fn track_changes(&mut self);

    /// Writes what changed since the last save (see the module docs) and forgets it.
    fn save_changes(&mut self, out: &mut dyn RecordOut) -> Result<()>;

    /// Applies a delta shard written by `save_changes` (of this or another worker, which owned
    /// the keys `wrote` accepts) on top of what was restored, for the keys `owns` accepts.
    ///
    /// A damaged shard is an [`ErrorKind::State`] error, never a panic; the state is then
    /// partly restored and must be discarded.
    fn restore_changes(
        &mut self,
        input: &mut dyn RecordIn,
        owns: &dyn Fn(&Row) -> bool,
        wrote: &dyn Fn(&Row) -> bool,
    ) -> Result<()>;

    /// Merges a shard written by `save` (of this or another worker, possibly of a run with a
    /// different worker count), keeping only the keys for which `owns(key)` is true and the
    /// worker-wide data that concerns them (tombstone queue entries of owned keys; a truncate
    /// point is worker-wide and kept as the max).
    ///
    /// A damaged shard is an [`ErrorKind::State`] error, never a panic; the state is then
    /// partly restored and must be discarded.
    fn restore(&mut self, input: &mut dyn RecordIn, owns: &dyn Fn(&Row) -> bool) -> Result<()>;

    /// The table rows this state holds, as `(row, count)` (consolidated), in no particular
    /// order.
    fn rows(&self, out: &mut Vec<(Row, isize)>) {
        for key in self.table_keys() {
            self.key_rows(key, out);
        }
    }

    /// The keys whose rows make the table (some may have none), in no particular order: with
    /// [`Durable::key_rows`], a table is read key by key without a copy of all its rows.
    fn table_keys(&self) -> Vec<&Row>;

    /// The table rows of `key`, appended to `out` as `(row, count)` (consolidated).
    fn key_rows(&self, key: &Row, out: &mut Vec<(Row, isize)>);

    /// Tombstones currently held (live, not yet collected).
    fn live_tombstones(&self) -> u64;
}

/// The worker of `workers` that owns `key`: the operators exchange keyed data by
/// `key.hashed()`, which timely routes to worker `hash % workers`. Restore with
/// `owns = |key| worker_of(key, workers) == index`.
pub fn worker_of(key: &Row, workers: usize) -> usize {
    let workers = workers.max(1) as u64;
    // The remainder is below `workers`, which came from a usize.
    (key.hashed() % workers) as usize
}

/// Writes the worker-wide record: `tag` (the state type) and its data.
pub(super) fn write_header<H: Serialize>(
    out: &mut dyn RecordOut,
    tag: &str,
    data: &H,
) -> Result<()> {
    out.write(&(tag, data))
}

/// Reads the worker-wide record written by [`write_header`] with the same `tag`.
pub(super) fn read_header<H: DeserializeOwned>(input: &mut dyn RecordIn, tag: &str) -> Result<H> {
    let (found, data): (String, H) = input.expect("the worker-wide record")?;
    if found != tag {
        return Err(Error::new(
            ErrorKind::State,
            format!("a state shard holds a {found} state where a {tag} state was expected"),
        ));
    }
    Ok(data)
}

/// Reads the `(key, entry)` records up to the end marker and passes those of owned keys to
/// `keep`, which returns false if the key is already held.
pub(super) fn read_keys<E: DeserializeOwned>(
    input: &mut dyn RecordIn,
    owns: &dyn Fn(&Row) -> bool,
    mut keep: impl FnMut(Row, E) -> Result<bool>,
) -> Result<()> {
    while let Some((key, entry)) = input.read::<(Row, E)>()? {
        if owns(&key) && !keep(key, entry)? {
            return Err(Error::new(
                ErrorKind::State,
                "a key is held by two state shards (or twice by one)",
            ));
        }
    }
    Ok(())
}

/// Keys changed since the last save ([`Durable::save_changes`]), each with where its change
/// starts: `None` when the key changed as a whole (or was dropped), the only mark of a state
/// saved key by key (`P = ()`); or, for a state whose keys hold ordered histories (SCD2), the
/// least position (sequence) whose entry changed.
///
/// Invariant: every entry of a key below its mark is as the last save left it, so a delta that
/// gives the entries from the mark on ([`KeyDelta::From`]) gives the key. Every change of an
/// entry (stored, replaced or removed) lowers the mark to it; a key dropped and created again
/// keeps its mark, which is at or below every entry it dropped.
#[derive(Debug)]
pub(crate) struct Changed<P = ()> {
    on: bool,
    keys: HashMap<Row, Option<P>, foldhash::fast::FixedState>,
}

impl<P> Default for Changed<P> {
    fn default() -> Self {
        Changed {
            on: false,
            keys: HashMap::default(),
        }
    }
}

impl<P: HeapSize> HeapSize for Changed<P> {
    fn heap_bytes(&self) -> usize {
        self.keys.heap_bytes()
    }
}

impl<P: Ord + Clone> Changed<P> {
    /// Starts recording.
    pub(crate) fn track(&mut self) {
        self.on = true;
    }

    /// Whether changes are recorded (a run that never saves records none).
    pub(crate) fn tracks(&self) -> bool {
        self.on
    }

    /// Records that `key` changed as a whole (or was dropped).
    pub(crate) fn mark(&mut self, key: &Row) {
        if !self.on {
            return;
        }
        match self.keys.get_mut(key) {
            Some(mark) => *mark = None,
            None => {
                self.keys.insert(key.clone(), None);
            }
        }
    }

    /// Records that `key`'s entries changed from `from` on.
    pub(crate) fn mark_from(&mut self, key: &Row, from: &P) {
        if !self.on {
            return;
        }
        match self.keys.get_mut(key) {
            Some(Some(mark)) if from < mark => *mark = from.clone(),
            Some(_) => {}
            None => {
                self.keys.insert(key.clone(), Some(from.clone()));
            }
        }
    }

    /// Forgets the changes (a save wrote everything).
    pub(crate) fn clear(&mut self) {
        self.keys = Default::default();
    }

    /// Calls `each` with every changed key and its mark, then forgets them (not when `each`
    /// fails). Before each block of [`AHEAD`] keys, `touch` reads their states, as applying
    /// does ([`super::for_each_key`]): a save writes the keys a step changed, spread over the
    /// whole state, and waited on each one's state in turn: 43% of a followed 10,000-event
    /// SCD2 step's save was the first read of each history. Read ahead, the save (its file
    /// synced) took 5.2-5.8 ms where it took 6.7-8.7 (p50 of 30 steps, two alternating runs
    /// each). The map keeps its room: the next commits change about as many keys, and growing it
    /// again rehashed every key it held.
    pub(crate) fn save_each(
        &mut self,
        touch: impl Fn(&Row) -> usize,
        mut each: impl FnMut(&Row, Option<&P>) -> Result<()>,
    ) -> Result<()> {
        let mut ahead = self.keys.keys();
        let mut read = 0usize;
        for (n, (key, mark)) in self.keys.iter().enumerate() {
            if n % AHEAD == 0 {
                read = (ahead.by_ref().take(AHEAD).map(&touch)).fold(read, usize::wrapping_add);
            }
            each(key, mark.as_ref())?;
        }
        // What was read must look used, or the reads go.
        std::hint::black_box(read);
        self.keys.clear();
        Ok(())
    }
}

/// A changed key's record in a delta of a state saved by positions ([`Changed::mark_from`]): `W` is
/// the key's whole state, `F` its entries from a position on (with the position).
#[derive(Serialize, Deserialize)]
pub(super) enum KeyDelta<W, F> {
    /// The key is no longer held.
    Dropped,
    /// The key's state, in place of what was held.
    Whole(W),
    /// The key's entries from a position on, in place of those held there and after; the
    /// entries before it stay.
    From(F),
}

/// Writes `(key, Some(state))` or `(key, None)` for every key in `changed`, and forgets them.
pub(super) fn write_changes<E: Serialize>(
    out: &mut dyn RecordOut,
    changed: &mut Changed,
    keys: &KeyMap<E>,
) -> Result<()> {
    let touch = |key: &Row| usize::from(keys.contains_key(key));
    changed.save_each(touch, |key, _| out.write(&(key, keys.get(key))))
}

/// Reads the `(key, Option<entry>)` records of a delta up to the end marker and passes those of
/// owned keys to `apply`.
pub(super) fn read_changes<E: DeserializeOwned>(
    input: &mut dyn RecordIn,
    owns: &dyn Fn(&Row) -> bool,
    mut apply: impl FnMut(Row, Option<E>) -> Result<()>,
) -> Result<()> {
    while let Some((key, entry)) = input.read::<(Row, Option<E>)>()? {
        if owns(&key) {
            apply(key, entry)?;
        }
    }
    Ok(())
}

/// A [`ErrorKind::State`] error about a restored record that does not fit the pipeline.
pub(super) fn misfit(why: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::State,
        format!("a state shard does not fit this pipeline: {why} (rebuild with --full-refresh)"),
    )
}

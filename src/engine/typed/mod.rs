//! Typed SCD state machines for embedders: keys, sequences and images of the caller's own types.
//!
//! A research dataflow holds `u64` keys and its own structs, not SQL rows. These states keep
//! the semantics of the SQL states (SPEC 3.1-3.3, D2) for whole-image upserts and deletes over
//! any `K`, `S` and `I`: a change is `(key, Change { seq, op })`, the SCD1 table is one
//! `(key, image)` per live key, and the SCD2 table one `(key, Version)` per version; full
//! snapshots become the changes between them ([`TypedSnapshotState`], SPEC 3.7). Nothing
//! here allocates per event beyond what the history stores, and no value is converted: with
//! `u64` keys and fixed-width images a commit costs what a plain sequential loop over the same
//! types costs (measured by `scdflow bench --systems typed,typed-loop`).
//!
//! Invariant: after each commit, the updates appended so far sum to the reference model's
//! table of the changes seen (`crate::model`, through the obvious mapping of types; the
//! property test `prop_typed` checks it for random arrival orders, commit splits and worker
//! counts). A commit emits each row at most once: a key's changes are grouped and applied
//! together.
//!
//! Ties (D2): at equal sequences a delete beats an upsert, and among upserts the greatest image
//! wins; `Op`'s derived order encodes that, the winner being the greatest.
//!
//! Limits, against the SQL states: no partial upserts (COLUMNS TO UPDATE, IGNORE NULL UPDATES:
//! an embedder folds them into whole images), no truncates, tombstones kept forever (a deleted
//! key keeps its delete, so older late upserts stay stale; no D11 retention), and no
//! checkpoints (an embedder's dataflow owns its state). The SQL states are not yet instances of
//! these; they keep their own packed rows.

mod scd1;
mod scd2;
mod snapshot;

pub use scd1::TypedScd1State;
pub use scd2::TypedScd2State;
pub use snapshot::TypedSnapshotState;

use serde::{Deserialize, Serialize};
use std::hash::Hash;

/// What a change does to its key.
///
/// The derived order is D2's tie rule: the greatest of the changes at one sequence wins, so a
/// delete beats every upsert and the greatest image wins among upserts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Op<I> {
    /// Insert or update the key's row to this image.
    Upsert(I),
    /// Delete the key.
    Delete,
}

impl<I> Op<I> {
    /// The image of an upsert.
    pub fn image(&self) -> Option<&I> {
        match self {
            Op::Upsert(image) => Some(image),
            Op::Delete => None,
        }
    }
}

/// One change of a key: what it does, at which sequence (`SEQUENCE BY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Change<S, I> {
    /// Where the change sits in its key's history; arrival order does not matter.
    pub seq: S,
    /// What it does.
    pub op: Op<I>,
}

impl<S, I> Change<S, I> {
    /// An upsert of `image` at `seq`.
    pub fn upsert(seq: S, image: I) -> Self {
        Change {
            seq,
            op: Op::Upsert(image),
        }
    }

    /// A delete at `seq`.
    pub fn delete(seq: S) -> Self {
        Change {
            seq,
            op: Op::Delete,
        }
    }
}

/// One SCD2 version of a key: its image from `start` until `end` (`None` while open). Ordered
/// by `start` first: a key's versions never share one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Version<S, I> {
    /// `__START_AT`: the sequence of the upsert that opened it.
    pub start: S,
    /// `__END_AT`: the sequence of the change that closed it.
    pub end: Option<S>,
    /// The image of its latest upsert.
    pub image: I,
}

/// A typed state: applies one commit's changes (of the keys this worker owns, in any order) and
/// appends the table's row updates, each row at most once.
pub trait TypedState<K, C>: 'static {
    /// A row of the table.
    type Row;

    /// Applies `changes` and appends the resulting updates to `out`. `changes` is left empty,
    /// its buffer kept for the caller.
    fn apply(&mut self, changes: &mut Vec<(K, C)>, out: &mut Vec<(Self::Row, isize)>);

    /// Number of keys held (live rows and deleted keys).
    fn keys(&self) -> usize;

    /// Appends the table's rows to `out`, key by key.
    fn rows(&self, out: &mut Vec<Self::Row>);

    /// The bytes the state's own structures hold on the heap (the map's table, each history's
    /// capacity), beside what keys, sequences and images hold on the heap themselves (nothing,
    /// for plain data such as integers and arrays).
    fn heap_bytes(&self) -> usize;
}

/// The per-key map: a fixed-seed fast hash, for the reasons of [`super::KeyMap`].
type TypedMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;

/// Sorts a commit's changes by key, then change, and drops exact duplicates (D1), so that each
/// key's changes are one slice in sequence order with the winner of a tie last. A commit sorts
/// once where a per-key buffer would allocate per key.
fn by_key<K: Ord, C: Ord>(changes: &mut Vec<(K, C)>) {
    changes.sort_unstable();
    changes.dedup();
}

/// Reads each changed key's state (what `touch` compares with the change) before a commit is
/// applied, as the SQL states do (there block by block, [`super::for_each_key`]): a commit's
/// keys are spread over a state of many megabytes, and these lookups, independent of each
/// other, overlap their cache misses where applying one key after another waits for each.
fn warm<K: Hash + Eq, C, V>(
    map: &TypedMap<K, V>,
    changes: &[(K, C)],
    touch: impl Fn(&V, &C) -> bool,
) {
    let read = (changes.iter())
        .filter(|(k, c)| map.get(k).is_some_and(|v| touch(v, c)))
        .count();
    // What was read must look used, or the reads go.
    std::hint::black_box(read);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The updates a state emitted, summed, against the rows it enumerates.
    fn emitted_equals_rows<St: TypedState<u64, Change<u64, u8>>>(mut state: St)
    where
        St::Row: Ord + Clone + std::fmt::Debug,
    {
        let commits = [
            vec![(1, Change::upsert(5, b'a')), (2, Change::upsert(1, b'x'))],
            vec![(1, Change::upsert(2, b'b')), (1, Change::delete(7))],
            vec![(1, Change::upsert(6, b'a')), (2, Change::upsert(1, b'y'))],
        ];
        let (mut out, mut table) = (Vec::new(), BTreeMap::new());
        for commit in commits {
            state.apply(&mut commit.to_vec(), &mut out);
            for (row, diff) in out.drain(..) {
                *table.entry(row).or_insert(0) += diff;
            }
        }
        table.retain(|_, n| *n != 0);
        assert!(table.values().all(|n| *n == 1), "{table:?}");
        let mut rows = Vec::new();
        state.rows(&mut rows);
        rows.sort();
        assert_eq!(rows, table.into_keys().collect::<Vec<_>>());
        assert_eq!(state.keys(), 2);
        assert!(state.heap_bytes() > 0);
    }

    #[test]
    fn the_rows_of_a_state_are_the_sum_of_its_updates() {
        emitted_equals_rows(TypedScd1State::default());
        emitted_equals_rows(TypedScd2State::default());
    }
}

//! Where each live row of a maintained table is: file and position, by a 128-bit hash of the
//! row's packed bytes (two 64-bit foldhash passes with different seeds; equal rows share a
//! hash and keep one location each).
//!
//! The map is split into [`SHARDS`] hash maps by the hash's top bits, so that growing the
//! index rehashes one shard at a time: one map of 900,000 rows doubling took 40 ms inside a
//! commit, the latency spike of every commit that crossed a power of two.
//!
//! Limits: two different rows with the same 128-bit hash would be taken for each other (about
//! one chance in 2^100 for a billion rows).

use smallvec::SmallVec;
use std::collections::HashMap;
use std::hash::BuildHasher;

/// Maps the index is split into.
const SHARDS: usize = 64;

/// Where a live row is: file id and position in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Location {
    pub file: u32,
    pub row: u32,
}

type Shard = HashMap<u128, SmallVec<[Location; 1]>, foldhash::fast::FixedState>;

/// The index; see the module docs.
pub(super) struct RowIndex {
    shards: Vec<Shard>,
}

/// The hash a row is indexed by.
pub(super) fn hash(bytes: &[u8]) -> u128 {
    let low = foldhash::fast::FixedState::with_seed(0).hash_one(bytes);
    let high = foldhash::fast::FixedState::with_seed(1).hash_one(bytes);
    (u128::from(high) << 64) | u128::from(low)
}

impl Default for RowIndex {
    fn default() -> RowIndex {
        let shard = || HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0));
        RowIndex {
            shards: (0..SHARDS).map(|_| shard()).collect(),
        }
    }
}

impl RowIndex {
    fn shard(&mut self, hash: u128) -> &mut Shard {
        &mut self.shards[(hash >> (128 - SHARDS.ilog2())) as usize]
    }

    /// Records a live row at `at`.
    pub(super) fn place(&mut self, hash: u128, at: Location) {
        self.shard(hash).entry(hash).or_default().push(at);
    }

    /// Takes a live row out; where it was.
    pub(super) fn unplace(&mut self, hash: u128) -> Option<Location> {
        let shard = self.shard(hash);
        let ats = shard.get_mut(&hash)?;
        let at = ats.pop()?;
        if ats.is_empty() {
            shard.remove(&hash);
        }
        Some(at)
    }

    /// Moves a live row from one of the files `from` to `to` (a merge wrote it there).
    pub(super) fn moved(&mut self, hash: u128, from: &[u32], to: Location) {
        let ats = self.shard(hash).get_mut(&hash);
        if let Some(at) = ats.and_then(|ats| ats.iter_mut().find(|at| from.contains(&at.file))) {
            *at = to;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_rows_keep_a_location_each_and_move_one_at_a_time() {
        let mut index = RowIndex::default();
        let (a, b) = (hash(b"a"), hash(b"b"));
        assert_ne!(a, b);
        let at = |file, row| Location { file, row };
        index.place(a, at(0, 0));
        index.place(a, at(1, 3));
        index.place(b, at(0, 1));
        index.moved(a, &[0], at(2, 0));
        assert_eq!(index.unplace(a), Some(at(1, 3)));
        assert_eq!(index.unplace(a), Some(at(2, 0)));
        assert_eq!(index.unplace(a), None);
        assert_eq!(index.unplace(b), Some(at(0, 1)));
        // Spread over every shard, each row is found again.
        let hashes: Vec<u128> = (0..10_000u32).map(|i| hash(&i.to_le_bytes())).collect();
        for (i, h) in hashes.iter().enumerate() {
            index.place(*h, at(9, i as u32));
        }
        assert!(index.shards.iter().all(|s| !s.is_empty()));
        for (i, h) in hashes.iter().enumerate() {
            assert_eq!(index.unplace(*h), Some(at(9, i as u32)));
        }
        assert!(index.shards.iter().all(HashMap::is_empty));
    }
}

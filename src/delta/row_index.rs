//! Where each live row of a maintained table is: file and position, by a 128-bit hash of the
//! row's packed bytes (two 64-bit foldhash passes with different seeds; equal rows share a
//! hash and keep one location each).
//!
//! The map is split into [`SHARDS`] hash maps by the hash's top bits, so that growing the
//! index rehashes one shard at a time: one map of 900,000 rows doubling took 40 ms inside a
//! commit, the latency spike of every commit that crossed a power of two. The shards take
//! unequal shares of the hashes, growing geometrically from one share to twice it: shards of
//! equal shares fill alike and all doubled within the same few commits (a 1M-row SCD2 table's
//! commit placed its 13,000 new rows in 1.3 ms, then 5.6 and 11 ms as its 64 shards passed
//! the same capacity); with shares spread over a factor of two, one shard at a time reaches
//! its capacity as the table grows.
//!
//! Limits: two different rows with the same 128-bit hash would be taken for each other (about
//! one chance in 2^100 for a billion rows).

use smallvec::SmallVec;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::LazyLock;

/// Maps the index is split into.
const SHARDS: usize = 64;

/// Bits of the hash that choose its shard.
const SLOT_BITS: u32 = 12;

/// Shard of each value of the hash's top [`SLOT_BITS`] bits: shard `s` takes a share
/// proportional to `2^(s / SHARDS)` of them (see the module docs).
static SHARD_OF_SLOT: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let weight = |s: usize| (s as f64 / SHARDS as f64).exp2();
    let total: f64 = (0..SHARDS).map(weight).sum();
    let slots = 1usize << SLOT_BITS;
    let mut shard_of_slot = Vec::with_capacity(slots);
    let mut end = 0.0;
    for s in 0..SHARDS {
        end += weight(s) / total * slots as f64;
        let until = if s + 1 == SHARDS {
            slots
        } else {
            end.round() as usize
        };
        shard_of_slot.resize(until.max(shard_of_slot.len()), s as u8);
    }
    shard_of_slot
});

/// The shard holding `hash`.
fn shard_of(hash: u128) -> usize {
    usize::from(SHARD_OF_SLOT[(hash >> (128 - SLOT_BITS)) as usize])
}

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
        &mut self.shards[shard_of(hash)]
    }

    /// Records a live row at `at`.
    pub(super) fn place(&mut self, hash: u128, at: Location) {
        self.shard(hash).entry(hash).or_default().push(at);
    }

    /// Reads the entries of `hashes` ahead of taking them out: the lookups are independent, so
    /// the processor overlaps their cache and TLB misses, and the removals that follow find
    /// them in cache (as the engine's states are warmed before a commit is applied). Placing a
    /// 10,000-event SCD2 commit's ~13,000 removals: 2.4 -> 1.4 ms, this pass included.
    pub(super) fn warm(&self, hashes: &[u128]) {
        let read: usize = (hashes.iter())
            .filter_map(|h| self.shards[shard_of(*h)].get(h))
            .map(|ats| ats.len())
            .fold(0, usize::wrapping_add);
        // What was read must look used, or the reads go.
        std::hint::black_box(read);
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

    #[test]
    fn shards_take_shares_growing_to_twice_the_first() {
        let slots = |s: u8| SHARD_OF_SLOT.iter().filter(|&&t| t == s).count() as f64;
        assert_eq!(SHARD_OF_SLOT.len(), 1 << SLOT_BITS);
        assert!(SHARD_OF_SLOT.windows(2).all(|w| w[0] <= w[1]));
        let (first, last) = (slots(0), slots(SHARDS as u8 - 1));
        assert!((1.8..2.2).contains(&(last / first)), "{first} .. {last}");
        // Grown in commits of 4,096 rows, a few shards pass their capacities in a commit
        // (equal shares: 28 of the 64 in one commit).
        let mut index = RowIndex::default();
        let at = Location { file: 0, row: 0 };
        let mut most_grown_at_once = 0;
        for commit in 0..300u32 {
            let before: Vec<usize> = index.shards.iter().map(HashMap::capacity).collect();
            for i in commit * 4096..(commit + 1) * 4096 {
                index.place(hash(&i.to_le_bytes()), at);
            }
            let grown = (index.shards.iter().zip(&before))
                .filter(|(s, b)| s.capacity() != **b)
                .count();
            if commit >= 32 {
                most_grown_at_once = most_grown_at_once.max(grown);
            }
        }
        assert!(most_grown_at_once <= 8, "{most_grown_at_once}");
    }
}

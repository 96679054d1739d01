//! Where each live row of a maintained table is: file and position, by a 128-bit hash of the
//! row's packed bytes (two 64-bit foldhash passes with different seeds; equal rows share a
//! hash and keep one location each).
//!
//! The index is split into [`SHARDS`] tables by the hash's top bits, so that growing the
//! index rehashes one shard at a time: one map of 900,000 rows doubling took 40 ms inside a
//! commit, the latency spike of every commit that crossed a power of two. The shards take
//! unequal shares of the hashes, growing geometrically from one share to twice it: shards of
//! equal shares fill alike and all doubled within the same few commits (a 1M-row SCD2 table's
//! commit placed its 13,000 new rows in 1.3 ms, then 5.6 and 11 ms as its 64 shards passed
//! the same capacity); with shares spread over a factor of two, one shard at a time reaches
//! its capacity as the table grows.
//!
//! A shard is an open-addressing table of its own, linear probing over 24-byte slots (the hash
//! and the location), not a `HashMap`: the keys are uniform hashes already, so a key's low bits
//! are its home slot, and an operation reads one cache line where a SwissTable reads its
//! control bytes and then its bucket, two misses on an index of a million rows (~100 MB as a
//! `HashMap` of locations, 24 bytes a slot at most three quarters full here). The slots an
//! operation reads can also be read ahead of it ([`RowIndex::warm`]), inserts included, which a
//! `HashMap` cannot offer. Placing a followed 10,000-event SCD2 commit's rows on a 1M-row
//! history, beside the writing of its files (wall time, three alternating runs of 20 steps
//! each): its 13,000 removals took 4.5-5.4 ms with `HashMap`s, 2.5-3.6 ms now; its 20,000 new
//! rows 3.9-4.5 ms, 3.6-3.9 now (the removals read ahead in both). The followed run's RSS fell
//! from 290-308 to 262-264 MB; placing a million rows (as a table's opening does), from 158 to
//! 106 ms (a test of its own, one run each).
//!
//! Limits: two different rows with the same 128-bit hash would be taken for each other (about
//! one chance in 2^100 for a billion rows); a file id must be below `u32::MAX` (an empty slot's).

use std::hash::BuildHasher;
use std::sync::LazyLock;

/// Tables the index is split into.
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

/// The file id of an empty slot.
const EMPTY: u32 = u32::MAX;

/// A row's hash (its two halves, so a slot is 24 bytes, not 32) and its location; empty while
/// its file is [`EMPTY`].
#[derive(Clone, Copy)]
struct Slot {
    low: u64,
    high: u64,
    at: Location,
}

impl Slot {
    const EMPTY: Slot = Slot {
        low: 0,
        high: 0,
        at: Location {
            file: EMPTY,
            row: 0,
        },
    };

    fn is_empty(&self) -> bool {
        self.at.file == EMPTY
    }

    fn holds(&self, hash: u128) -> bool {
        self.low == hash as u64 && self.high == (hash >> 64) as u64
    }
}

/// One shard: linear probing from a hash's home slot (its low bits) to the first empty slot,
/// at most three quarters full (there an insert probes 8.5 slots on average, three cache lines
/// read in order; at seven eighths, as full as a `HashMap` gets, it would be 32). A removal
/// shifts the slots after it back, so no slot is ever a tombstone.
#[derive(Default)]
struct Shard {
    slots: Vec<Slot>,
    len: usize,
}

impl Shard {
    fn home(&self, low: u64) -> usize {
        low as usize & (self.slots.len() - 1)
    }

    fn place(&mut self, slot: Slot) {
        if 4 * (self.len + 1) > 3 * self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(slot.low);
        while !self.slots[i].is_empty() {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
        self.len += 1;
    }

    fn grow(&mut self) {
        let slots = (2 * self.slots.len()).max(64);
        let old = std::mem::replace(&mut self.slots, vec![Slot::EMPTY; slots]);
        self.len = 0;
        for slot in old.into_iter().filter(|slot| !slot.is_empty()) {
            self.place(slot);
        }
    }

    /// The first slot holding `hash` that `accepts`.
    fn find(&self, hash: u128, mut accepts: impl FnMut(Location) -> bool) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash as u64);
        loop {
            let slot = &self.slots[i];
            if slot.is_empty() {
                return None;
            }
            if slot.holds(hash) && accepts(slot.at) {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// Empties slot `i`, moving back each later slot of its run whose home allows it.
    fn remove(&mut self, mut i: usize) {
        let mask = self.slots.len() - 1;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            if self.slots[j].is_empty() {
                break;
            }
            // Slot j stays if its home lies cyclically in (i, j]: at i it would sit before its
            // home, where no search for it looks.
            let home = self.home(self.slots[j].low);
            let stays = match i <= j {
                true => i < home && home <= j,
                false => i < home || home <= j,
            };
            if !stays {
                self.slots[i] = self.slots[j];
                i = j;
            }
        }
        self.slots[i] = Slot::EMPTY;
        self.len -= 1;
    }
}

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
        RowIndex {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
        }
    }
}

impl RowIndex {
    fn shard(&mut self, hash: u128) -> &mut Shard {
        &mut self.shards[shard_of(hash)]
    }

    /// Records a live row at `at`.
    pub(super) fn place(&mut self, hash: u128, at: Location) {
        debug_assert!(at.file != EMPTY, "a file id below u32::MAX");
        let slot = Slot {
            low: hash as u64,
            high: (hash >> 64) as u64,
            at,
        };
        self.shard(hash).place(slot);
    }

    /// Reads the home slots of `hashes` ahead of placing or taking out their rows: the reads
    /// are independent, so the processor overlaps their cache and TLB misses, and the
    /// operations that follow find the slots in cache (as the engine's states are warmed
    /// before a commit is applied).
    pub(super) fn warm(&self, hashes: impl Iterator<Item = u128>) {
        let read = hashes
            .filter_map(|hash| {
                let shard = &self.shards[shard_of(hash)];
                (shard.len > 0).then(|| shard.slots[shard.home(hash as u64)].low)
            })
            .fold(0, u64::wrapping_add);
        // What was read must look used, or the reads go.
        std::hint::black_box(read);
    }

    /// Takes a live row out; where it was.
    pub(super) fn unplace(&mut self, hash: u128) -> Option<Location> {
        let shard = self.shard(hash);
        let i = shard.find(hash, |_| true)?;
        let at = shard.slots[i].at;
        shard.remove(i);
        Some(at)
    }

    /// Moves a live row from one of the files `from` to `to` (a merge wrote it there).
    pub(super) fn moved(&mut self, hash: u128, from: &[u32], to: Location) {
        let shard = self.shard(hash);
        if let Some(i) = shard.find(hash, |at| from.contains(&at.file)) {
            shard.slots[i].at = to;
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
        let mut taken = [index.unplace(a), index.unplace(a)];
        taken.sort_by_key(|at| at.map(|at| at.file));
        assert_eq!(taken, [Some(at(1, 3)), Some(at(2, 0))]);
        assert_eq!(index.unplace(a), None);
        assert_eq!(index.unplace(b), Some(at(0, 1)));
        // Spread over every shard, each row is found again.
        let hashes: Vec<u128> = (0..10_000u32).map(|i| hash(&i.to_le_bytes())).collect();
        for (i, h) in hashes.iter().enumerate() {
            index.place(*h, at(9, i as u32));
        }
        assert!(index.shards.iter().all(|s| s.len > 0));
        for (i, h) in hashes.iter().enumerate() {
            assert_eq!(index.unplace(*h), Some(at(9, i as u32)));
        }
        assert!(index.shards.iter().all(|s| s.len == 0));
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
            let before: Vec<usize> = index.shards.iter().map(|s| s.slots.len()).collect();
            for i in commit * 4096..(commit + 1) * 4096 {
                index.place(hash(&i.to_le_bytes()), at);
            }
            let grown = (index.shards.iter().zip(&before))
                .filter(|(s, b)| s.slots.len() != **b)
                .count();
            if commit >= 32 {
                most_grown_at_once = most_grown_at_once.max(grown);
            }
        }
        assert!(most_grown_at_once <= 8, "{most_grown_at_once}");
    }

    #[test]
    fn crowded_slots_keep_every_row_through_removals_that_wrap() {
        // Every hash in shard 0, homes among the last 24 of 64 slots: runs wrap around the
        // end and removals shift slots back across it. Checked against a list of the rows.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut index = RowIndex::default();
        let mut live: Vec<(u128, Location)> = Vec::new();
        for step in 0..20_000u32 {
            let hash = u128::from(40 + next() % 24) | (u128::from(next() % 6) << 64);
            assert_eq!(shard_of(hash), 0);
            if next() % 3 == 0 || live.len() >= 40 {
                let found = index.unplace(hash);
                let at = live.iter().position(|(h, _)| *h == hash);
                assert_eq!(found.is_some(), at.is_some(), "step {step}");
                if let (Some(found), Some(_)) = (found, at) {
                    let i = live
                        .iter()
                        .position(|e| *e == (hash, found))
                        .expect("a row placed");
                    live.swap_remove(i);
                }
            } else {
                let at = Location {
                    file: step % 5,
                    row: step,
                };
                index.place(hash, at);
                live.push((hash, at));
            }
            assert_eq!(index.shards[0].len, live.len());
        }
        for (hash, at) in live.clone() {
            index.moved(
                hash,
                &[at.file],
                Location {
                    file: 7,
                    row: at.row,
                },
            );
        }
        for (hash, at) in live {
            let found = index.unplace(hash).expect("every live row");
            assert_eq!(found.file, 7, "{at:?}");
        }
        assert_eq!(index.shards[0].len, 0);
    }
}

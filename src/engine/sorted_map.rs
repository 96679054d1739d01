//! An ordered map that stays a sorted vector while small and becomes a B-tree when it grows.
//!
//! Most keys of a CDC table have a short history, and a `BTreeMap` allocates a whole node (room
//! for eleven entries) for the first one: for millions of keys that is most of the state's
//! memory. Up to `N` entries (a parameter of the type, [`SMALL`] unless its owner says
//! otherwise) this map is a sorted `Vec` (binary search, and inserts that shift at most `N`
//! entries); past that it is a `BTreeMap`, so every operation stays O(log n) for long
//! histories.
//!
//! [`SMALL`] is large enough for histories of a hundred events to stay vectors: there,
//! appending in key order (in-order events, the common case) is a push, where a B-tree searches
//! the rightmost path comparing keys and splits a node every few entries; an insert elsewhere
//! shifts at most `N` entries, one memmove of a few kilobytes. An owner whose entries are small
//! and cheap to compare keeps larger vectors (an SCD2 history: `engine::scd2`).
//!
//! The vector grows by an eighth, not by doubling ([`grow`]): a doubled vector is a third
//! empty on average, and these vectors are most of a large state's bytes (a 1M-event SCD2 run
//! peaked at 340 MB with doubling, 290 MB with this). Growth by an eighth keeps the copies
//! amortized O(1) per insert; mimalloc (the binary's allocator) grows a block in place while
//! it fits its size class, which are an eighth apart, so most growths copy nothing. Not at
//! small sizes: there each push of an entry of 48 bytes or more crosses a class, and the
//! vector moves to a new block. An owner that trades memory for fewer moves grows its
//! vectors by at least `G` entries (the bitemporal state, by four).
//!
//! A large map also keeps a *mark*, one key its owner remembers beside the tree
//! ([`SortedMap::mark`]): what the owner can find by a short backward search in a small map
//! (at most `N` entries) but would have to walk a long stretch of a tree for (a history's
//! open run start). A small map has no mark, so small maps stay three words.
//!
//! Serialized (serde) as the sequence of its entries in key order (the mark is not saved);
//! deserializing refuses keys out of order and picks the representation by size.

use serde::de::{Deserialize, Deserializer, Error as _};
use serde::ser::{Serialize, SerializeSeq, Serializer};
use std::collections::BTreeMap;
use std::ops::Bound;

/// Entries kept in a sorted vector before switching to a B-tree, unless the map's owner says
/// otherwise.
pub(crate) const SMALL: usize = 128;

/// Where the entries of `v` (sorted by key) from `bound` on start.
fn start<K: Ord, V>(v: &[(K, V)], bound: Bound<&K>) -> usize {
    match bound {
        Bound::Included(b) => v.partition_point(|(k, _)| k < b),
        Bound::Excluded(b) => v.partition_point(|(k, _)| k <= b),
        Bound::Unbounded => 0,
    }
}

/// Where the entries of `v` (sorted by key) below `bound` end.
fn end<K: Ord, V>(v: &[(K, V)], bound: Bound<&K>) -> usize {
    match bound {
        Bound::Included(b) => v.partition_point(|(k, _)| k <= b),
        Bound::Excluded(b) => v.partition_point(|(k, _)| k < b),
        Bound::Unbounded => v.len(),
    }
}

/// Makes room for `additional` more entries in `v`, growing it by at least an eighth and by at
/// least `least` entries.
fn grow<T>(v: &mut Vec<T>, additional: usize, least: usize) {
    if v.capacity() - v.len() < additional {
        v.reserve_exact(additional.max(v.len() / 8).max(least));
    }
}

/// An ordered map; see the module docs.
#[derive(Clone, Debug)]
pub(crate) enum SortedMap<K, V, const N: usize = SMALL, const G: usize = 1> {
    /// Sorted by key, at most `N` entries.
    Small(Vec<(K, V)>),
    /// Past `N` entries. Boxed: the vector's capacity then gives the enum its tag, and
    /// the map is 24 bytes (32 with the tree inline), inside every key's state.
    Large(Box<Large<K, V>>),
}

/// A [`SortedMap`] past its vector's entries: a B-tree and the owner's mark.
#[derive(Clone, Debug)]
pub(crate) struct Large<K, V> {
    map: BTreeMap<K, V>,
    /// `None` until the owner sets it, and when the map has just become large.
    mark: Option<K>,
}

impl<K, V> Large<K, V> {
    fn new(map: BTreeMap<K, V>) -> Box<Self> {
        Box::new(Large { map, mark: None })
    }
}

impl<K: Ord + Clone, V, const N: usize, const G: usize> Default for SortedMap<K, V, N, G> {
    fn default() -> Self {
        SortedMap::Small(Vec::new())
    }
}

impl<K: Ord + Clone, V, const N: usize, const G: usize> SortedMap<K, V, N, G> {
    /// A map of `entries`, which must be in strictly ascending key order.
    pub(crate) fn from_sorted(entries: Vec<(K, V)>) -> Result<Self, &'static str> {
        if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
            return Err("map keys are not in strictly ascending order");
        }
        Ok(if entries.len() <= N {
            SortedMap::Small(entries)
        } else {
            SortedMap::Large(Large::new(entries.into_iter().collect()))
        })
    }

    /// The entries in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.range_from(Bound::Unbounded)
    }

    /// The entries with keys at or after `bound`, in key order.
    pub(crate) fn range_from(&self, bound: Bound<&K>) -> impl Iterator<Item = (&K, &V)> {
        let (small, large) = match self {
            SortedMap::Small(v) => {
                let from = start(v, bound);
                (Some(v[from..].iter().map(|(k, v)| (k, v))), None)
            }
            SortedMap::Large(m) => (None, Some(m.map.range((bound, Bound::Unbounded)))),
        };
        small
            .into_iter()
            .flatten()
            .chain(large.into_iter().flatten())
    }

    /// The entries with keys below `bound` (`Included` / `Excluded`), in key order; read from
    /// the back to go down from `bound`.
    pub(crate) fn range_to(&self, bound: Bound<&K>) -> impl DoubleEndedIterator<Item = (&K, &V)> {
        let (small, large) = match self {
            SortedMap::Small(v) => {
                let to = end(v, bound);
                (Some(v[..to].iter().map(|(k, v)| (k, v))), None)
            }
            SortedMap::Large(m) => (None, Some(m.map.range((Bound::Unbounded, bound)))),
        };
        small
            .into_iter()
            .flatten()
            .chain(large.into_iter().flatten())
    }

    /// The entries with keys between `from` and `to`, in key order, their values mutably.
    pub(crate) fn range_mut(
        &mut self,
        from: Bound<&K>,
        to: Bound<&K>,
    ) -> impl Iterator<Item = (&K, &mut V)> {
        let (small, large) = match self {
            SortedMap::Small(v) => {
                let (from, to) = (start(v, from), end(v, to));
                let slice = &mut v[from..to.max(from)];
                (Some(slice.iter_mut().map(|(k, v)| (&*k, v))), None)
            }
            SortedMap::Large(m) => (None, Some(m.map.range_mut((from, to)))),
        };
        small
            .into_iter()
            .flatten()
            .chain(large.into_iter().flatten())
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        match self {
            SortedMap::Small(v) => v.len(),
            SortedMap::Large(m) => m.map.len(),
        }
    }

    /// True when empty.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            SortedMap::Small(v) => v.is_empty(),
            SortedMap::Large(m) => m.map.is_empty(),
        }
    }

    /// The value at `key`.
    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        match self {
            SortedMap::Small(v) => v
                .binary_search_by(|(k, _)| k.cmp(key))
                .ok()
                .map(|i| &v[i].1),
            SortedMap::Large(m) => m.map.get(key),
        }
    }

    /// The value at `key`, mutably.
    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        match self {
            SortedMap::Small(v) => match v.binary_search_by(|(k, _)| k.cmp(key)) {
                Ok(i) => Some(&mut v[i].1),
                Err(_) => None,
            },
            SortedMap::Large(m) => m.map.get_mut(key),
        }
    }

    /// The entry with the greatest key.
    pub(crate) fn last(&self) -> Option<(&K, &V)> {
        match self {
            SortedMap::Small(v) => v.last().map(|(k, v)| (k, v)),
            SortedMap::Large(m) => m.map.last_key_value(),
        }
    }

    /// The entry a search of the vector reads first (its middle); `None` for a B-tree, whose
    /// root is not reachable from here. What a read ahead of a search touches.
    pub(crate) fn middle(&self) -> Option<(&K, &V)> {
        match self {
            SortedMap::Small(v) => v.get(v.len() / 2).map(|(k, v)| (k, v)),
            SortedMap::Large(_) => None,
        }
    }

    /// Inserts `value` at `key`, which must be greater than every key present: in the vector
    /// that is a push, without a search.
    pub(crate) fn push(&mut self, key: K, value: V) {
        debug_assert!(self.last().is_none_or(|(last, _)| *last < key));
        match self {
            SortedMap::Small(v) if v.len() < N => {
                grow(v, 1, G);
                v.push((key, value))
            }
            _ => {
                self.insert(key, value);
            }
        }
    }

    /// Inserts `value` at `key`, returning the value it replaces.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self {
            SortedMap::Small(v) => match v.binary_search_by(|(k, _)| k.cmp(&key)) {
                Ok(i) => Some(std::mem::replace(&mut v[i].1, value)),
                Err(i) if v.len() < N => {
                    grow(v, 1, G);
                    v.insert(i, (key, value));
                    None
                }
                Err(_) => {
                    let mut m: BTreeMap<K, V> = std::mem::take(v).into_iter().collect();
                    m.insert(key, value);
                    *self = SortedMap::Large(Large::new(m));
                    None
                }
            },
            SortedMap::Large(m) => m.map.insert(key, value),
        }
    }

    /// Removes `key`, returning its value.
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        match self {
            SortedMap::Small(v) => match v.binary_search_by(|(k, _)| k.cmp(key)) {
                Ok(i) => Some(v.remove(i).1),
                Err(_) => None,
            },
            SortedMap::Large(m) => m.map.remove(key),
        }
    }

    /// Removes the entries with keys at or after `key`.
    pub(crate) fn truncate_from(&mut self, key: &K) {
        match self {
            SortedMap::Small(v) => v.truncate(start(v, Bound::Included(key))),
            SortedMap::Large(m) => {
                m.map.split_off(key);
                if m.mark.as_ref().is_some_and(|mark| mark >= key) {
                    m.mark = None;
                }
            }
        }
    }

    /// The entries with keys at or after `key`, serialized as [`SortedMap`] serializes all of
    /// them (and deserialized as a `Vec<(K, V)>`).
    pub(crate) fn entries_from<'a>(&'a self, key: &'a K) -> EntriesFrom<'a, K, V, N, G> {
        EntriesFrom { map: self, key }
    }

    /// The last entry with a key below `bound` (`Included` / `Excluded`).
    pub(crate) fn last_before(&self, bound: Bound<&K>) -> Option<(&K, &V)> {
        self.range_to(bound).next_back()
    }

    /// The first entry with a key at or after `bound`.
    pub(crate) fn first_from(&self, bound: Bound<&K>) -> Option<(&K, &V)> {
        self.range_from(bound).next()
    }

    /// The mark of a large map, if set since it became large (see the module docs); a small
    /// map has none.
    pub(crate) fn mark(&self) -> Option<&K> {
        match self {
            SortedMap::Small(_) => None,
            SortedMap::Large(m) => m.mark.as_ref(),
        }
    }

    /// Sets the mark of a large map; a small map keeps none.
    pub(crate) fn set_mark(&mut self, mark: Option<K>) {
        if let SortedMap::Large(m) = self {
            m.mark = mark;
        }
    }
}

impl<K: Ord + Clone + Serialize, V: Serialize, const N: usize, const G: usize> Serialize
    for SortedMap<K, V, N, G>
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // With its length up front: postcard writes it before the entries.
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for entry in self.iter() {
            seq.serialize_element(&entry)?;
        }
        seq.end()
    }
}

/// A map's entries from a key on, to serialize ([`SortedMap::entries_from`]).
pub(crate) struct EntriesFrom<'a, K, V, const N: usize, const G: usize> {
    map: &'a SortedMap<K, V, N, G>,
    key: &'a K,
}

impl<K: Ord + Clone + Serialize, V: Serialize, const N: usize, const G: usize> Serialize
    for EntriesFrom<'_, K, V, N, G>
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let entries = || self.map.range_from(Bound::Included(self.key));
        let mut seq = serializer.serialize_seq(Some(entries().count()))?;
        for entry in entries() {
            seq.serialize_element(&entry)?;
        }
        seq.end()
    }
}

impl<'de, K, V, const N: usize, const G: usize> Deserialize<'de> for SortedMap<K, V, N, G>
where
    K: Ord + Clone + Deserialize<'de>,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entries = Vec::<(K, V)>::deserialize(deserializer)?;
        SortedMap::from_sorted(entries).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map round-trips through postcard on both sides of the switch to a B-tree, and a
    /// sequence out of order is refused.
    #[test]
    fn serde_round_trip_keeps_order_and_representation() {
        for n in [0, 1, SMALL, SMALL + 1, 3 * SMALL] {
            let mut map: SortedMap<u32, String> = SortedMap::default();
            for k in (0..n as u32).rev() {
                map.insert(k * 3, format!("v{k}"));
            }
            let bytes = postcard::to_stdvec(&map).unwrap();
            let back: SortedMap<u32, String> = postcard::from_bytes(&bytes).unwrap();
            assert_eq!(
                back.iter().collect::<Vec<_>>(),
                map.iter().collect::<Vec<_>>()
            );
            assert_eq!(back.len(), n);
            assert_eq!(matches!(back, SortedMap::Small(_)), n <= SMALL);
        }
        let unordered = postcard::to_stdvec(&vec![(2u32, 0u8), (1, 0)]).unwrap();
        assert!(postcard::from_bytes::<SortedMap<u32, u8>>(&unordered).is_err());
    }

    /// Truncating keeps the entries below the key, on both sides of the switch to a B-tree,
    /// and the entries from a key serialize as a whole map of them does.
    #[test]
    fn truncating_and_the_entries_from_a_key_split_the_map() {
        for n in [0u32, 1, 5, SMALL as u32, 3 * SMALL as u32] {
            for cut in [0, 1, n / 2, n, n + 1] {
                let all: Vec<(u32, u32)> = (0..n).map(|k| (2 * k, k)).collect();
                let map: SortedMap<u32, u32> = SortedMap::from_sorted(all.clone()).unwrap();
                let below: Vec<_> = all.iter().filter(|(k, _)| *k < 2 * cut).cloned().collect();
                let above: Vec<_> = all.iter().filter(|(k, _)| *k >= 2 * cut).cloned().collect();
                let bytes = postcard::to_stdvec(&map.entries_from(&(2 * cut))).unwrap();
                let read: Vec<(u32, u32)> = postcard::from_bytes(&bytes).unwrap();
                assert_eq!(read, above, "{n} entries from {cut}");
                let whole = SortedMap::<u32, u32>::from_sorted(above).unwrap();
                let whole = postcard::to_stdvec(&whole);
                assert_eq!(bytes, whole.unwrap());
                let mut truncated = map.clone();
                truncated.set_mark(Some(2 * n.saturating_sub(1)));
                truncated.truncate_from(&(2 * cut));
                let kept: Vec<_> = truncated.iter().map(|(k, v)| (*k, *v)).collect();
                assert_eq!(kept, below, "{n} entries truncated at {cut}");
                assert!(truncated.mark().is_none_or(|m| *m < 2 * cut));
            }
        }
    }

    /// A map whose owner sets its vector's size switches to a B-tree past that size, whether
    /// it grows or is read back.
    #[test]
    fn a_map_switches_at_the_size_its_owner_sets() {
        let mut map: SortedMap<u32, u32, 4> = SortedMap::default();
        for k in 0..5 {
            assert!(matches!(map, SortedMap::Small(_)), "{k} entries");
            map.push(k, k);
        }
        assert!(matches!(map, SortedMap::Large(_)));
        let four = SortedMap::<u32, u32, 4>::from_sorted((0..4).map(|k| (k, k)).collect());
        assert!(matches!(four.unwrap(), SortedMap::Small(_)));
        let bytes = postcard::to_stdvec(&map).unwrap();
        let back: SortedMap<u32, u32, 4> = postcard::from_bytes(&bytes).unwrap();
        assert!(matches!(back, SortedMap::Large(_)));
        let back: SortedMap<u32, u32> = postcard::from_bytes(&bytes).unwrap();
        assert!(matches!(back, SortedMap::Small(_)));
    }

    /// Only a large map keeps a mark; it is unset when the map becomes large.
    #[test]
    fn only_a_large_map_keeps_its_mark() {
        let mut map: SortedMap<u32, u32> = SortedMap::default();
        for k in 0..=SMALL as u32 {
            map.set_mark(Some(k));
            assert_eq!(map.mark(), None);
            map.push(k, k);
        }
        assert!(matches!(map, SortedMap::Large(_)));
        assert_eq!(map.mark(), None);
        map.set_mark(Some(7));
        map.push(SMALL as u32 + 1, 0);
        assert_eq!(map.mark(), Some(&7));
    }

    /// A vector grows by an eighth, and by at least `G` entries: one at a time by default, so
    /// that a map of a few entries holds no spare room.
    #[test]
    fn a_vector_grows_by_at_least_g_entries() {
        fn capacities<const G: usize>(keys: std::ops::Range<u32>) -> Vec<usize> {
            let mut map: SortedMap<u32, u32, SMALL, G> = SortedMap::default();
            let mut seen = Vec::new();
            for k in keys {
                // Odd keys are inserted ahead of the last, even ones pushed after it.
                match k % 2 {
                    0 => map.push(1000 + k, k),
                    _ => assert_eq!(map.insert(k, k), None),
                }
                let SortedMap::Small(v) = &map else {
                    unreachable!()
                };
                seen.push(v.capacity());
            }
            seen
        }
        assert_eq!(capacities::<1>(0..6), [1, 2, 3, 4, 5, 6]);
        assert_eq!(capacities::<4>(0..9), [4, 4, 4, 4, 8, 8, 8, 8, 12]);
        // Past eight entries, by an eighth of its length.
        assert_eq!(
            capacities::<1>(0..40)[32..],
            [33, 37, 37, 37, 37, 41, 41, 41]
        );
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_map_is_three_words() {
        assert_eq!(std::mem::size_of::<SortedMap<u64, u64>>(), 24);
    }

    /// The same operations on a `SortedMap` and a `BTreeMap` give the same answers, across the
    /// switch from vector to tree.
    #[test]
    fn agrees_with_btreemap() {
        let mut ours: SortedMap<u32, u32> = SortedMap::default();
        let mut theirs: BTreeMap<u32, u32> = BTreeMap::new();
        let mut x: u32 = 7;
        for step in 0..2000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345) % 97;
            match step % 5 {
                0 | 1 if theirs.last_key_value().is_none_or(|(k, _)| *k < x) => {
                    ours.push(x, step);
                    theirs.insert(x, step);
                }
                0 | 1 => assert_eq!(ours.insert(x, step), theirs.insert(x, step)),
                2 => assert_eq!(ours.remove(&x), theirs.remove(&x)),
                3 => {
                    let a = ours.last_before(Bound::Excluded(&x)).map(|(k, v)| (*k, *v));
                    let b = theirs.range(..x).next_back().map(|(k, v)| (*k, *v));
                    assert_eq!(a, b);
                    let a = ours.first_from(Bound::Included(&x)).map(|(k, v)| (*k, *v));
                    let b = theirs.range(x..).next().map(|(k, v)| (*k, *v));
                    assert_eq!(a, b);
                    for from in [Bound::Included(&x), Bound::Excluded(&x), Bound::Unbounded] {
                        let a: Vec<_> = ours.range_from(from).collect();
                        let b: Vec<_> = theirs.range((from, Bound::Unbounded)).collect();
                        assert_eq!(a, b);
                    }
                }
                _ => {
                    let to = x + 5;
                    for (_, v) in ours.range_mut(Bound::Included(&x), Bound::Excluded(&to)) {
                        *v += 1;
                    }
                    for (_, v) in theirs.range_mut(x..to) {
                        *v += 1;
                    }
                    let a: Vec<_> = ours.range_to(Bound::Included(&x)).rev().collect();
                    let b: Vec<_> = theirs.range(..=x).rev().collect();
                    assert_eq!(a, b);
                }
            }
            assert_eq!(ours.get(&x), theirs.get(&x));
            assert_eq!(ours.last(), theirs.last_key_value());
            assert_eq!(
                ours.iter().collect::<Vec<_>>(),
                theirs.iter().collect::<Vec<_>>()
            );
            assert_eq!(ours.is_empty(), theirs.is_empty());
        }
    }
}

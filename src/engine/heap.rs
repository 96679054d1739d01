//! The bytes a state holds on the heap, counted from its structures: what `scdflow bench` prints
//! per table row ("state B/row").
//!
//! Counted: every collection's allocated capacity (vectors and inline-or-spilled small vectors
//! at their capacity, hash tables at their bucket count with their control bytes, B-trees
//! estimated at two thirds full nodes) and the heap blocks of rows and values. Not counted: the
//! allocator's rounding to its size classes and its metadata (mimalloc's classes are about an
//! eighth apart) and what it keeps after frees. Unlike RSS growth, which also holds the input
//! and the allocator's retained pages, this figure depends only on the state's layout and
//! contents, so it compares layouts run to run.
//!
//! Hand-written rather than a crate's derive (`get-size`, `deepsize`): the states hold a few
//! types of ours whose heap is not their fields' sum (a packed row keeps up to 23 bytes inline,
//! a sorted map is a vector or a tree), and a derive would need those by hand anyway.

use super::sorted_map::SortedMap;
use crate::value::{Row, Seq, Value};
use smallvec::SmallVec;
use std::collections::{HashMap, HashSet, VecDeque};
use std::mem::size_of;

/// A value's heap bytes (module docs).
pub(crate) trait HeapSize {
    /// The bytes on the heap this value owns, beside its own `size_of`.
    fn heap_bytes(&self) -> usize;
}

impl HeapSize for Row {
    fn heap_bytes(&self) -> usize {
        self.spilled_capacity()
    }
}

impl HeapSize for Value {
    fn heap_bytes(&self) -> usize {
        match self {
            Value::Str(s) => s.capacity(),
            Value::Struct(v) | Value::Array(v) => v.heap_bytes(),
            _ => 0,
        }
    }
}

impl HeapSize for Seq {
    fn heap_bytes(&self) -> usize {
        self.boxed()
            .map_or(0, |v| size_of::<Value>() + v.heap_bytes())
    }
}

impl HeapSize for () {
    fn heap_bytes(&self) -> usize {
        0
    }
}

impl HeapSize for bool {
    fn heap_bytes(&self) -> usize {
        0
    }
}

impl HeapSize for u64 {
    fn heap_bytes(&self) -> usize {
        0
    }
}

impl HeapSize for i64 {
    fn heap_bytes(&self) -> usize {
        0
    }
}

impl<A: HeapSize, B: HeapSize> HeapSize for (A, B) {
    fn heap_bytes(&self) -> usize {
        self.0.heap_bytes() + self.1.heap_bytes()
    }
}

impl<A: HeapSize, B: HeapSize, C: HeapSize> HeapSize for (A, B, C) {
    fn heap_bytes(&self) -> usize {
        self.0.heap_bytes() + self.1.heap_bytes() + self.2.heap_bytes()
    }
}

impl<T: HeapSize> HeapSize for Option<T> {
    fn heap_bytes(&self) -> usize {
        self.as_ref().map_or(0, T::heap_bytes)
    }
}

impl<T: HeapSize> HeapSize for Box<T> {
    fn heap_bytes(&self) -> usize {
        size_of::<T>() + (**self).heap_bytes()
    }
}

impl<T: HeapSize> HeapSize for Box<[T]> {
    fn heap_bytes(&self) -> usize {
        self.len() * size_of::<T>() + self.iter().map(T::heap_bytes).sum::<usize>()
    }
}

impl<T: HeapSize> HeapSize for Vec<T> {
    fn heap_bytes(&self) -> usize {
        self.capacity() * size_of::<T>() + self.iter().map(T::heap_bytes).sum::<usize>()
    }
}

impl<T: HeapSize> HeapSize for VecDeque<T> {
    fn heap_bytes(&self) -> usize {
        self.capacity() * size_of::<T>() + self.iter().map(T::heap_bytes).sum::<usize>()
    }
}

impl<T: HeapSize, const N: usize> HeapSize for SmallVec<[T; N]> {
    fn heap_bytes(&self) -> usize {
        let block = if self.spilled() {
            self.capacity() * size_of::<T>()
        } else {
            0
        };
        block + self.iter().map(T::heap_bytes).sum::<usize>()
    }
}

impl<K: HeapSize + Ord + Clone, V: HeapSize, const N: usize, const G: usize> HeapSize
    for SortedMap<K, V, N, G>
{
    fn heap_bytes(&self) -> usize {
        let entries: usize = self
            .iter()
            .map(|(k, v)| k.heap_bytes() + v.heap_bytes())
            .sum();
        let block = match self {
            SortedMap::Small(v) => v.capacity() * size_of::<(K, V)>(),
            // B-tree nodes hold eleven entries and are two thirds full on average.
            SortedMap::Large(_) => {
                let mark = self.mark().map_or(0, K::heap_bytes);
                size_of::<super::sorted_map::Large<K, V>>()
                    + self.len() * size_of::<(K, V)>() * 3 / 2
                    + mark
            }
        };
        block + entries
    }
}

impl<K: HeapSize, V: HeapSize, S> HeapSize for HashMap<K, V, S> {
    fn heap_bytes(&self) -> usize {
        table_bytes::<(K, V)>(self.capacity())
            + self
                .iter()
                .map(|(k, v)| k.heap_bytes() + v.heap_bytes())
                .sum::<usize>()
    }
}

impl<K: HeapSize, S> HeapSize for HashSet<K, S> {
    fn heap_bytes(&self) -> usize {
        table_bytes::<K>(self.capacity()) + self.iter().map(K::heap_bytes).sum::<usize>()
    }
}

/// The bytes of a hash table (std's, hashbrown's SwissTable) that holds `capacity` entries of
/// `T`: a bucket and a control byte per bucket, and one group of control bytes more. Its
/// buckets are a power of two, filled to seven eighths at most (all of them below eight).
pub(super) fn table_bytes<T>(capacity: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        (capacity + 1).next_power_of_two()
    } else {
        (capacity * 8 / 7).next_power_of_two()
    };
    buckets * (size_of::<T>() + 1) + 16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_table_is_counted_at_its_buckets() {
        let mut map: HashMap<i64, i64> = HashMap::new();
        assert_eq!(map.heap_bytes(), 0);
        map.extend((0..100).map(|i| (i, i)));
        // 100 entries need 128 buckets (at most 112 of them used).
        assert_eq!(map.capacity(), 112);
        assert_eq!(map.heap_bytes(), 128 * 17 + 16);
    }

    #[test]
    fn rows_count_only_what_they_spill() {
        let short = Row::from(vec![Value::Int(1), Value::Str("abc".into())]);
        assert_eq!(short.heap_bytes(), 0);
        let long = Row::from(vec![Value::Str("x".repeat(100))]);
        assert!(long.heap_bytes() >= 100);
        let map: SortedMap<Seq, Row> =
            SortedMap::from_sorted(vec![(Seq::from(1), long.clone())]).expect("sorted");
        assert_eq!(
            map.heap_bytes(),
            size_of::<(Seq, Row)>() + long.heap_bytes()
        );
    }
}

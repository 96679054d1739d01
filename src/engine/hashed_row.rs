//! A row ordered by its hash first, for sorted maps of rows whose order means nothing.
//!
//! A bitemporal key keeps its business rows in a sorted map. The rows of one key share their
//! key columns and often most other values, so comparing two walks their packed bytes, and a
//! row longer than 23 bytes keeps them in a heap block of its own: every comparison of a binary
//! search was a cache miss. Searching a key's rows was the largest single share of a
//! bitemporal commit (14% of the state loop's time). Ordered by a 64-bit hash first, a search
//! compares integers held in the map's own vector, and reads a row's bytes only to confirm
//! the entry whose hash matches.
//!
//! Invariant: `hash` is the hash of `row` by [`KeyMap`](super::KeyMap)'s fixed-seed hasher,
//! the same in every process of one build; the order is (hash, row), a total order whose
//! equality is the rows'.
//!
//! Saved as the row alone. The hash is recomputed when read, and [`deserialize_map`] sorts a
//! map's entries after reading them, so a state saved by a build whose hash or order differs
//! (an older one kept its rows in row order) reads back the same.

use super::heap::HeapSize;
use super::sorted_map::SortedMap;
use crate::value::Row;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::hash::BuildHasher;

/// A row and its hash; see the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HashedRow {
    hash: u64,
    row: Row,
}

/// The empty row, hashed as any other (what `mem::take` leaves behind).
impl Default for HashedRow {
    fn default() -> Self {
        HashedRow::new(Row::default())
    }
}

impl HashedRow {
    pub(crate) fn new(row: Row) -> Self {
        let hash = foldhash::fast::FixedState::default().hash_one(&row);
        HashedRow { hash, row }
    }

    pub(crate) fn row(&self) -> &Row {
        &self.row
    }

    /// Reads the hash and the row's first byte, for a read ahead of a search.
    pub(crate) fn touch(&self) -> usize {
        let first = self.row.as_row_ref().as_bytes().first();
        self.hash as usize ^ first.map_or(0, |&b| usize::from(b))
    }
}

impl Ord for HashedRow {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.hash.cmp(&other.hash)).then_with(|| self.row.cmp(&other.row))
    }
}

impl PartialOrd for HashedRow {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl HeapSize for HashedRow {
    fn heap_bytes(&self) -> usize {
        self.row.heap_bytes()
    }
}

impl Serialize for HashedRow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.row.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for HashedRow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Row::deserialize(deserializer).map(HashedRow::new)
    }
}

/// Reads a map saved as its entries in any order (`serde(deserialize_with)`); a row saved
/// twice is refused.
pub(crate) fn deserialize_map<'de, D, V, const N: usize, const G: usize>(
    deserializer: D,
) -> Result<SortedMap<HashedRow, V, N, G>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    let mut entries = Vec::<(HashedRow, V)>::deserialize(deserializer)?;
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    SortedMap::from_sorted(entries).map_err(D::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn row(i: i64) -> Row {
        Row::from([
            Value::Int(i),
            Value::Str("a business row of some width".into()),
        ])
    }

    #[derive(Serialize, Deserialize)]
    struct Held {
        #[serde(deserialize_with = "deserialize_map")]
        map: SortedMap<HashedRow, u8>,
    }

    /// A map saved in row order, as older states were, reads back in hash order with every
    /// entry; a row saved twice is refused.
    #[test]
    fn a_map_saved_in_any_order_reads_back_sorted() {
        let in_row_order: Vec<(Row, u8)> = (0..50).map(|i| (row(i), i as u8)).collect();
        let bytes = postcard::to_stdvec(&(in_row_order,)).unwrap();
        let held: Held = postcard::from_bytes(&bytes).unwrap();
        let keys: Vec<&HashedRow> = held.map.iter().map(|(k, _)| k).collect();
        assert!(keys.windows(2).all(|w| w[0].hash < w[1].hash));
        assert_eq!(held.map.len(), 50);
        for i in 0..50 {
            assert_eq!(held.map.get(&HashedRow::new(row(i))), Some(&(i as u8)));
        }
        let again = postcard::to_stdvec(&held).unwrap();
        let back: Held = postcard::from_bytes(&again).unwrap();
        assert!(back.map.iter().eq(held.map.iter()));

        let twice = postcard::to_stdvec(&(vec![(row(1), 0u8), (row(1), 1)],)).unwrap();
        assert!(postcard::from_bytes::<Held>(&twice).is_err());
    }
}

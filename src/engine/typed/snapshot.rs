//! Typed snapshot diffing (SPEC 3.7): the previous full snapshot's image per key, and the
//! changes between it and the next snapshot.
//!
//! As the SQL state ([`crate::engine::SnapshotState`]): each held image carries the number of
//! the last snapshot that had its key, so a row costs one probe and one pass afterwards deletes
//! the keys the snapshot did not mark. A key that repeats within a snapshot (the SQL driver
//! refuses those; a dataflow cannot) keeps its greatest image, each greater one an upsert at the
//! same sequence, where the SCD states' tie rule (D2) picks the same one.

use super::{Change, TypedMap};
use std::collections::hash_map::Entry;
use std::hash::Hash;

/// The previous snapshot of the keys one worker owns, over keys `K` and images `I`.
///
/// ```
/// use scdflow::engine::typed::{Change, TypedSnapshotState};
///
/// let mut state = TypedSnapshotState::<u64, char>::default();
/// let mut out = Vec::new();
/// state.diff(&mut vec![(1, 'a'), (2, 'b')], 10u64, &mut out);
/// out.clear();
/// state.diff(&mut vec![(2, 'c')], 20, &mut out);
/// out.sort();
/// assert_eq!(out, vec![(1, Change::delete(20)), (2, Change::upsert(20, 'c'))]);
/// ```
#[derive(Debug)]
pub struct TypedSnapshotState<K, I> {
    /// Per key, its image and the number of the last snapshot that had it.
    previous: TypedMap<K, (I, u64)>,
    /// Snapshots diffed so far.
    snapshots: u64,
}

impl<K, I> Default for TypedSnapshotState<K, I> {
    fn default() -> Self {
        TypedSnapshotState {
            previous: TypedMap::default(),
            snapshots: 0,
        }
    }
}

impl<K: Hash + Eq + Clone, I: Ord + Clone> TypedSnapshotState<K, I> {
    /// Diffs `snapshot` (this worker's rows of a full snapshot; left empty) against the
    /// previous one and appends the changes, at sequence `seq`, to `out`.
    pub fn diff<S: Clone>(
        &mut self,
        snapshot: &mut Vec<(K, I)>,
        seq: S,
        out: &mut Vec<(K, Change<S, I>)>,
    ) {
        self.snapshots += 1;
        let this = self.snapshots;
        for (key, image) in snapshot.drain(..) {
            match self.previous.entry(key) {
                Entry::Occupied(mut o) => {
                    let (held, seen) = o.get_mut();
                    let changed = match *seen == this {
                        // A repeat within this snapshot: the greatest image wins.
                        true => image > *held,
                        false => image != *held,
                    };
                    *seen = this;
                    if changed {
                        *held = image.clone();
                        out.push((o.key().clone(), Change::upsert(seq.clone(), image)));
                    }
                }
                Entry::Vacant(v) => {
                    out.push((v.key().clone(), Change::upsert(seq.clone(), image.clone())));
                    v.insert((image, this));
                }
            }
        }
        self.previous.retain(|key, (_, seen)| {
            let kept = *seen == this;
            if !kept {
                out.push((key.clone(), Change::delete(seq.clone())));
            }
            kept
        });
    }

    /// Number of keys held.
    pub fn keys(&self) -> usize {
        self.previous.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key repeated within a snapshot keeps its greatest image, and the changes hold it last
    /// at the snapshot's sequence, where the SCD states' tie rule picks it too.
    #[test]
    fn a_repeated_key_keeps_its_greatest_image() {
        let mut state = TypedSnapshotState::<u64, char>::default();
        let mut out = Vec::new();
        state.diff(&mut vec![(1, 'a'), (1, 'c'), (1, 'b')], 1u64, &mut out);
        assert_eq!(
            out,
            vec![(1, Change::upsert(1, 'a')), (1, Change::upsert(1, 'c'))]
        );
        out.clear();
        state.diff(&mut vec![(1, 'c')], 2, &mut out);
        assert_eq!(out, vec![], "the held image is the greatest");
        state.diff(&mut vec![(1, 'a'), (1, 'c')], 3, &mut out);
        assert_eq!(
            out,
            vec![(1, Change::upsert(3, 'a')), (1, Change::upsert(3, 'c'))]
        );
        assert_eq!(state.keys(), 1);
    }
}

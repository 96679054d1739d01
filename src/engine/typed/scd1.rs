//! Typed SCD type 1: each key's winning change, the greatest by `(seq, op)`.
//!
//! A deleted key keeps its delete as its winner (a tombstone, kept forever), so a late upsert
//! older than the delete stays stale.

use super::{by_key, warm, Change, Op, TypedMap, TypedState};
use crate::engine::heap::table_bytes;
use std::hash::Hash;

/// The SCD1 table of the keys one worker owns, over keys `K`, sequences `S` and images `I`.
///
/// ```
/// use scdflow::engine::typed::{Change, TypedScd1State, TypedState};
///
/// let mut state = TypedScd1State::<u64, u64, [u64; 2]>::default();
/// let mut out = Vec::new();
/// state.apply(&mut vec![(7, Change::upsert(2, [1, 1]))], &mut out);
/// // A late, older change loses to the winner: the table does not move.
/// state.apply(&mut vec![(7, Change::upsert(1, [0, 0]))], &mut out);
/// state.apply(&mut vec![(7, Change::delete(3))], &mut out);
/// assert_eq!(out, vec![((7, [1, 1]), 1), ((7, [1, 1]), -1)]);
/// ```
#[derive(Debug)]
pub struct TypedScd1State<K, S, I> {
    winners: TypedMap<K, Change<S, I>>,
}

impl<K, S, I> Default for TypedScd1State<K, S, I> {
    fn default() -> Self {
        TypedScd1State {
            winners: TypedMap::default(),
        }
    }
}

impl<K, S, I> TypedState<K, Change<S, I>> for TypedScd1State<K, S, I>
where
    K: Hash + Ord + Clone + 'static,
    S: Ord + 'static,
    I: Ord + Clone + 'static,
{
    type Row = (K, I);

    fn apply(&mut self, changes: &mut Vec<(K, Change<S, I>)>, out: &mut Vec<((K, I), isize)>) {
        by_key(changes);
        warm(&self.winners, changes, |w, c| w.seq < c.seq);
        let mut changes = changes.drain(..).peekable();
        while let Some((key, mut winner)) = changes.next() {
            // Sorted: the key's last change is its greatest.
            while let Some((_, next)) = changes.next_if(|(k, _)| *k == key) {
                winner = next;
            }
            match self.winners.get_mut(&key) {
                Some(held) if *held >= winner => {}
                Some(held) => {
                    let old = std::mem::replace(held, winner);
                    if old.op.image() != held.op.image() {
                        if let Op::Upsert(image) = old.op {
                            out.push(((key.clone(), image), -1));
                        }
                        if let Op::Upsert(image) = &held.op {
                            out.push(((key, image.clone()), 1));
                        }
                    }
                }
                None => {
                    if let Op::Upsert(image) = &winner.op {
                        out.push(((key.clone(), image.clone()), 1));
                    }
                    self.winners.insert(key, winner);
                }
            }
        }
    }

    fn keys(&self) -> usize {
        self.winners.len()
    }

    fn rows(&self, out: &mut Vec<(K, I)>) {
        let live =
            (self.winners.iter()).filter_map(|(k, w)| Some((k.clone(), w.op.image()?.clone())));
        out.extend(live);
    }

    fn heap_bytes(&self) -> usize {
        table_bytes::<(K, Change<S, I>)>(self.winners.capacity())
    }
}

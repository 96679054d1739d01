//! A commit's events grouped by key, in key order, for the states to apply key by key.
//!
//! Invariant: every key of the commit comes once, its events in event order with exact
//! duplicates removed, and keys come in the order of their packed rows. Limits: positions are
//! sorted, not events, so the commit's events are held until their key's turn; keys that share
//! their first sixteen packed bytes are ordered by comparing them whole.

use crate::event::Event;
use crate::value::{Row, SortKey};

/// How many events' keys [`for_each_key`] reads ahead of applying them: a block's states stay
/// in the first caches until it is applied (a 10,000-event commit's states outgrow them).
pub(crate) const AHEAD: usize = 256;

/// Calls `each` with every key's events of a commit, grouped and with exact duplicates removed
/// (D1); within a group events are in event order, and the first event of each group has given
/// its key to the group (the states never read an event's own key). Groups come in key order,
/// so that a state's updates come out ordered by key, as a change feed is: labelling them
/// ([`super::changefeed::label`]) then has only each key's own updates to order. Sorting on each
/// key's order prefix first (sixteen bytes: text keys often share their first eight) keeps a
/// large commit's sort away from comparing keys value by value. `each` may take the events out
/// of the group: one buffer serves every group, where a vector per key cost an allocation and
/// a move per event (a tenth of SCD2's state loop on 10,000-event commits).
///
/// Before each block of [`AHEAD`] events is applied, `touch` reads their keys' states in
/// `state` (what applying a key reads first). Applying a key waits for its state to come from
/// memory: a commit's keys are spread over a state of megabytes, and a state restored or left
/// idle between commits is cold. The block's lookups are independent of each other, so the
/// processor overlaps their misses, and applying finds the states in cache. One pass over the
/// whole commit first (the previous form) took a followed 10,000-event SCD2 commit's apply
/// from 11.6-12.5 ms to 8.5-10 ms, but there the states it read were evicted again before they
/// were applied: a plain 1M-event SCD2 run still spent a third of its apply waiting on the
/// first read of a key's bucket and of its history. Read block by block, that run took
/// 1.22-1.39 s where it took 1.38-1.43 (alternating, four runs each), and a followed commit's
/// p50 fell from 26.2 to 23.3-24.7 ms; commits of 1,000 events, whose states stay in cache
/// either way, ran as fast as before. Blocks of 64 events did no better than 256.
pub(super) fn for_each_key<S>(
    state: &mut S,
    events: Vec<Event>,
    touch: impl Fn(&S, &Row) -> usize,
    mut each: impl FnMut(&mut S, Row, &mut Vec<Event>),
) {
    // Sorts positions, not events: an event is large to move. A radix sort by the order
    // prefix (a pass per byte in which the commit's keys differ: integers are packed by
    // magnitude, so keys below 100,000 differ in their tag and four bytes) orders all but the
    // events whose prefixes tie — a key's own events, keys longer than sixteen bytes sharing
    // them — and those runs are sorted by comparison. It replaced a comparison sort on the
    // prefix, which cost 1,000-event SCD1 commits 312 instructions an event: the worker's
    // instructions an event fell from 1,676 to 1,491 for SCD1, from 3,106 to 2,940 for SCD2
    // (callgrind, `scdflow bench --events 400000 --keys 100000 --displacement 1000 --budget
    // 0`, one flow at a time). Sorting a narrower number, the bits in which the prefixes
    // differ, saved `radsort` counting bytes that never differ but not its passes, and cost
    // a pass of its own: 1.6% more instructions.
    let mut order: Vec<Slot> = (events.iter().enumerate())
        .map(|(at, e)| Slot::new(e.key.as_row_ref().sort_key(), at))
        .collect();
    radsort::sort_by_key(&mut order, |slot| (slot.hi, slot.lo));
    for run in order.chunk_by_mut(|a, b| a.prefix() == b.prefix()) {
        if run.len() > 1 {
            run.sort_unstable_by(|a, b| {
                let (a, b) = (&events[a.at()], &events[b.at()]);
                a.key.cmp(&b.key).then_with(|| a.cmp(b))
            });
        }
    }
    order.dedup_by(|b, a| a.prefix() == b.prefix() && events[a.at()] == events[b.at()]);
    // Taken out in sorted order. `Option<Event>` is as large as `Event`, so this keeps the buffer.
    let mut events: Vec<Option<Event>> = events.into_iter().map(Some).collect();
    let mut group: Vec<Event> = Vec::new();
    let mut key: Option<(Row, (u64, u64))> = None;
    for (n, slot) in order.iter().enumerate() {
        if n % AHEAD == 0 {
            let block = order[n..].iter().take(AHEAD);
            // A taken event's key went to its group, which came before this block.
            let read = (block.filter_map(|slot| events[slot.at()].as_ref()))
                .map(|e| touch(state, &e.key))
                .fold(0, usize::wrapping_add);
            // What was read must look used, or the reads go.
            std::hint::black_box(read);
        }
        let mut event = events[slot.at()]
            .take()
            .expect("each position is taken once");
        // A key's events are next to each other, so a prefix that differs starts a new key,
        // and a whole one that ties continues it, unless the rows' lengths differ (a key and
        // the same key with NULLs after it): the keys themselves are compared (a `memcmp`
        // call each, 1.4% of the SCD1 worker's instructions) only where their prefixes do
        // not hold them.
        let same = key.as_ref().is_some_and(|(key, prefix)| {
            *prefix == slot.prefix()
                && match slot.whole {
                    true => key.byte_len() == event.key.byte_len(),
                    false => *key == event.key,
                }
        });
        if !same {
            if let Some((done, _)) = key.take() {
                each(state, done, &mut group);
                group.clear();
            }
            key = Some((std::mem::take(&mut event.key), slot.prefix()));
        }
        group.push(event);
    }
    if let Some((done, _)) = key {
        each(state, done, &mut group);
    }
}

/// An event's place in [`for_each_key`]'s order: its key's order prefix, in two halves (a
/// `u128` would make a slot 32 bytes, where it is 24), whether the prefix holds the whole key,
/// and the event's position in the commit.
struct Slot {
    hi: u64,
    lo: u64,
    at: u32,
    whole: bool,
}

impl Slot {
    fn new(key: SortKey, at: usize) -> Slot {
        let prefix = key.prefix();
        Slot {
            hi: (prefix >> 64) as u64,
            lo: prefix as u64,
            at: u32::try_from(at).expect("a commit's events on one worker fit in u32"),
            whole: key.whole(),
        }
    }

    fn prefix(&self) -> (u64, u64) {
        (self.hi, self.lo)
    }

    fn at(&self) -> usize {
        self.at as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;
    use crate::value::{Seq, Value};

    fn upsert(key: &Value, seq: i64) -> Event {
        Event {
            seq: Seq::from(seq),
            kind: EventKind::Upsert,
            key: Row::from(vec![key.clone()]),
            image: Row::from(vec![Value::Int(seq)]),
            authored: None,
            system: None,
        }
    }

    /// The commit of `(key, sequence)` events, as `for_each_key` hands it over: each key with
    /// its events' sequences.
    fn groups(events: &[(Value, i64)]) -> Vec<(Value, Vec<i64>)> {
        let events = (events.iter())
            .map(|(key, seq)| upsert(key, *seq))
            .collect();
        let mut seen = Vec::new();
        let seq = |e: &Event| match e.seq.to_value().as_ref() {
            Value::Int(seq) => *seq,
            other => panic!("not a test sequence: {other:?}"),
        };
        for_each_key(
            &mut seen,
            events,
            |_, _| 0,
            |seen, key, group| {
                let key = key.as_row_ref().to_values().remove(0);
                seen.push((key, group.iter().map(seq).collect()));
            },
        );
        seen
    }

    #[test]
    fn integer_keys_come_in_order_with_their_events_in_order_and_duplicates_dropped() {
        // The keys differ in their low bytes and in their sign; a key's events are spread
        // over the commit, out of order, one of them twice.
        let (a, b, c) = (Value::Int(-2), Value::Int(7), Value::Int(70_000));
        let events = [
            (c.clone(), 5),
            (b.clone(), 9),
            (c.clone(), 1),
            (a.clone(), 3),
            (c.clone(), 5),
            (b.clone(), 2),
            (c.clone(), 3),
        ];
        assert_eq!(
            groups(&events),
            vec![(a, vec![3]), (b, vec![2, 9]), (c, vec![1, 3, 5])]
        );
    }

    #[test]
    fn a_key_and_the_same_key_with_a_null_after_it_are_two_keys() {
        // Both prefixes hold their whole rows and tie: the NULL's tag is the zero that pads
        // the shorter one.
        let short = Row::from(vec![Value::Int(4)]);
        let long = Row::from(vec![Value::Int(4), Value::Null]);
        let event = |key: &Row, seq: i64| Event {
            key: key.clone(),
            ..upsert(&Value::Int(0), seq)
        };
        let events = vec![event(&long, 1), event(&short, 2), event(&long, 3)];
        let mut seen = Vec::new();
        for_each_key(
            &mut seen,
            events,
            |_, _| 0,
            |seen, key, group| seen.push((key, group.len())),
        );
        assert_eq!(seen, vec![(short, 1), (long, 2)]);
    }

    #[test]
    fn text_keys_sharing_their_first_sixteen_bytes_are_ordered_whole() {
        let key = |tail: &str| Value::Str(format!("customer-number-{tail}"));
        let events = [
            (key("bb"), 2),
            (key("b"), 4),
            (key("a"), 1),
            (key("bb"), 1),
            (key("a"), 1),
        ];
        assert_eq!(
            groups(&events),
            vec![
                (key("a"), vec![1]),
                (key("b"), vec![4]),
                (key("bb"), vec![1, 2])
            ]
        );
    }
}

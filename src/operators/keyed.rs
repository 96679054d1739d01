//! The keyed timely operator shared by the SCD operators: exchange by key, stash per time,
//! apply in time order once complete.
//!
//! The state is shared (`Rc<RefCell<_>>`) with whoever built it, so that the runtime can restore
//! it before the first commit, save it between commits and read its table ([`Durable`]).

use crate::engine::{CdcState, CommitStats, Durable};
use crate::event::{Event, EventKind};
use crate::value::Row;
use differential_dataflow::consolidation::consolidate;
use differential_dataflow::{AsCollection, Hashable, VecCollection};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::{Capability, InputCapability};
use timely::dataflow::Stream;
use timely::order::TotalOrder;
use timely::progress::operate::FrontierInterest;
use timely::progress::Timestamp;

/// Routes `events` to `state` (this worker's) and returns the state's row updates.
/// `clock` gives a time's commit time in microseconds; `on_stats` sees each completed time's
/// counters on this worker. A restored state goes on from where it was; its table is not
/// emitted again (read it with [`Durable::rows`]).
pub(crate) fn keyed_cdc<'s, T, S, C, F>(
    events: VecCollection<'s, T, Event>,
    name: &str,
    state: Rc<RefCell<S>>,
    clock: C,
    mut on_stats: F,
) -> VecCollection<'s, T, Row>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
    S: CdcState + Durable,
    C: Fn(&T) -> i64 + 'static,
    F: FnMut(&T, CommitStats) + 'static,
{
    let (keyed, truncates) = split_truncates(events.inner);
    let truncates = truncates.broadcast();
    let exchange = Exchange::new(|(e, _, _): &(Event, T, isize)| e.key.hashed());
    keyed
        .binary_frontier(truncates, exchange, Pipeline, name, move |_, _| {
            let mut stash: Stash<T, Event> = BTreeMap::new();
            move |(keyed, keyed_frontier), (truncates, truncate_frontier), output| {
                // Retractions of events are not supported (see the module docs): they are dropped.
                keyed.for_each(|cap, data| stash_inserts(&mut stash, &cap, data));
                truncates.for_each(|cap, data| stash_inserts(&mut stash, &cap, data));
                while let Some(entry) = stash.first_entry() {
                    let time = entry.key();
                    if keyed_frontier.less_equal(time) || truncate_frontier.less_equal(time) {
                        break;
                    }
                    let (time, (cap, events)) = entry.remove_entry();
                    // Room for the updates a commit's events make (SCD1 two an event at most,
                    // SCD2 mostly three): grown from empty, the vector was reallocated and
                    // copied ten times a 1,000-event commit, 4% of the SCD1 worker's
                    // instructions. A large commit's room never written is pages never
                    // touched, which take no memory.
                    let mut updates = Vec::with_capacity(3 * events.len());
                    let mut stats = CommitStats::default();
                    let mut state = state.borrow_mut();
                    state.apply(events, clock(&time), &mut updates, &mut stats);
                    on_stats(&time, stats);
                    if !state.emits_consolidated() {
                        consolidate(&mut updates);
                    }
                    let mut updates = at_time(updates.into_iter(), &time);
                    output.session(&cap).give_container(&mut updates);
                }
            }
        })
        .as_collection()
}

/// Routes `input` by `route` (a hash) and calls `apply` with each time's items once the input
/// frontier has passed it, in time order; its updates are the output at that time. The shell of
/// the unary keyed operators (`ReplaceUsing`, the typed SCD operators). Retractions of items
/// are ignored: these operators take insert-only inputs.
pub(crate) fn apply_by_time<'s, T, D, R>(
    input: VecCollection<'s, T, D>,
    name: &str,
    route: impl Fn(&D) -> u64 + 'static,
    mut apply: impl FnMut(Vec<D>, &mut Vec<(R, isize)>) + 'static,
) -> VecCollection<'s, T, R>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
    D: timely::ExchangeData,
    R: Clone + 'static,
{
    let exchange = Exchange::new(move |(item, _, _): &(D, T, isize)| route(item));
    input
        .inner
        .unary_frontier(exchange, name, move |_, _| {
            let mut stash: Stash<T, D> = BTreeMap::new();
            let mut updates = Vec::new();
            move |(input, frontier), output| {
                input.for_each(|cap, data| stash_inserts(&mut stash, &cap, data));
                while let Some(entry) = stash.first_entry() {
                    if frontier.less_equal(entry.key()) {
                        break;
                    }
                    let (time, (cap, items)) = entry.remove_entry();
                    apply(items, &mut updates);
                    let mut updates = at_time(updates.drain(..), &time);
                    output.session(&cap).give_container(&mut updates);
                }
            }
        })
        .as_collection()
}

/// Stashes a message's inserts by time ([`stash_by_time`]); its retractions are dropped (the
/// operators using it take insert-only inputs). A message of one time's inserts for which
/// nothing is stashed yet (a commit's, on the worker that owns all its keys: nearly every
/// message) becomes the time's vector whole, its items moved in place, where each item was
/// moved into a vector of its own. `scdflow bench` with 100,000 events (callgrind, the
/// worker's instructions an event): SCD1 1,678-1,684 where it was 1,745-1,789, SCD2 3,052
/// where it was 3,114. In wall time the gain is inside the bench's noise (medians of six
/// alternating runs 3-8% higher for SCD1 and SCD2 at displacements 0 and 1,000; a later set of
/// three went either way).
pub(crate) fn stash_inserts<T: Timestamp, D>(
    stash: &mut Stash<T, D>,
    cap: &InputCapability<T>,
    data: &mut Vec<(D, T, isize)>,
) {
    if let Some(time) = data.first().map(|(_, t, _)| t.clone()) {
        if !stash.contains_key(&time) && data.iter().all(|(_, t, d)| *d > 0 && *t == time) {
            let items: Vec<D> = std::mem::take(data)
                .into_iter()
                .map(|(d, _, _)| d)
                .collect();
            let capability = cap.delayed(&time, 0);
            stash.insert(time, (capability, items));
            return;
        }
    }
    let inserted = data.drain(..).filter(|u| u.2 > 0).map(|(d, t, _)| (d, t));
    stash_by_time(stash, cap, inserted);
}

/// A commit's updates at its time, as the one container the operator sends of it: given one
/// by one, updates were moved again into buffers of 8 KiB, each a message of its own.
fn at_time<R, T: Clone>(updates: impl Iterator<Item = (R, isize)>, time: &T) -> Vec<(R, T, isize)> {
    updates.map(|(r, diff)| (r, time.clone(), diff)).collect()
}

/// A duration in microseconds, the clock's unit; saturates (a retention of centuries keeps
/// tombstones forever, as it should).
pub(crate) fn micros(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// Splits `events` into keyed events and truncates. A message without truncates (nearly all of
/// them) passes through as it is: a `Partition` would move every event twice, and two filters
/// on one stream would clone every event.
fn split_truncates<'s, T: Timestamp>(events: Updates<'s, T>) -> (Updates<'s, T>, Updates<'s, T>) {
    let mut builder = OperatorBuilder::new("SplitTruncates".to_owned(), events.scope());
    let mut input = builder.new_input(events, Pipeline);
    builder.set_notify_for(0, FrontierInterest::Never);
    let (mut keyed_output, keyed) = builder.new_output();
    let (mut truncate_output, truncates) = builder.new_output();
    builder.build(move |_| {
        move |_frontiers| {
            let mut keyed_output = keyed_output.activate();
            let mut truncate_output = truncate_output.activate();
            input.for_each(|cap, data: &mut Vec<(Event, T, isize)>| {
                let is_truncate = |u: &mut (Event, T, isize)| u.0.kind == EventKind::Truncate;
                if data.iter_mut().any(is_truncate) {
                    let mut truncates: Vec<_> = data.extract_if(.., is_truncate).collect();
                    truncate_output.give(&cap, &mut truncates);
                }
                keyed_output.give(&cap, data);
            });
        }
    });
    (keyed, truncates)
}

/// A stream of event updates.
type Updates<'s, T> = Stream<'s, T, Vec<(Event, T, isize)>>;

/// Items waiting for their time to complete, with a capability to emit at that time.
pub(crate) type Stash<T, D> = BTreeMap<T, (Capability<T>, Vec<D>)>;

/// Adds a message's `(item, time)`s to `stash`, retaining a capability for each new time.
/// Items come in runs of one time (a message is mostly one commit's), so the stash is looked up
/// once per run, not per item: a tree lookup per item cost a fifth of a typed operator's time.
/// The first run's slot makes room for the whole message at once, which is mostly that run:
/// grown item by item, it moved a commit's items again at every doubling.
pub(crate) fn stash_by_time<T: Timestamp, D>(
    stash: &mut Stash<T, D>,
    cap: &InputCapability<T>,
    items: impl Iterator<Item = (D, T)>,
) {
    let mut room = items.size_hint().1.unwrap_or(0);
    let mut run: Option<(T, &mut Vec<D>)> = None;
    for (item, time) in items {
        match &mut run {
            Some((at, slot)) if *at == time => slot.push(item),
            _ => {
                let slot = &mut (stash.entry(time.clone()))
                    .or_insert_with_key(|time| (cap.delayed(time, 0), Vec::new()))
                    .1;
                slot.reserve(std::mem::take(&mut room));
                slot.push(item);
                run = Some((time, slot));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Scd1State;
    use crate::persist::{FileKind, FrameReader, FrameWriter};
    use crate::value::{Seq, Value};
    use differential_dataflow::input::Input;
    use std::sync::{Arc, Mutex};

    fn upsert(key: i64, name: &str, seq: i64) -> Event {
        Event {
            seq: Seq::from(seq),
            kind: EventKind::Upsert,
            key: Row::from(vec![Value::Int(key)]),
            image: Row::from(vec![Value::Int(key), Value::Str(name.into())]),
            authored: None,
            system: None,
        }
    }

    fn row(key: i64, name: &str) -> Row {
        Row::from(vec![Value::Int(key), Value::Str(name.into())])
    }

    /// A state saved by one run and restored in the next goes on from where it was: a late,
    /// older event still changes nothing, and the restored table is not emitted again.
    #[test]
    fn a_restored_state_goes_on_from_where_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shard");
        let mut saved = Scd1State::new(2, false, None);
        let mut out = Vec::new();
        let events = vec![upsert(1, "a", 2), upsert(2, "b", 1)];
        saved.apply(events, 0, &mut out, &mut CommitStats::default());
        let mut writer = FrameWriter::create(&path, FileKind::Shard).unwrap();
        saved.save(&mut writer).unwrap();
        writer.finish().unwrap();

        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        timely::execute_directly(move |worker| {
            let mut restored = Scd1State::new(2, false, None);
            let mut input = FrameReader::open(&path, FileKind::Shard).unwrap();
            restored.restore(&mut input, &|_| true).unwrap();
            let state = Rc::new(RefCell::new(restored));
            let mut events = worker.dataflow::<u64, _, _>(|scope| {
                let (handle, events) = scope.new_collection();
                let sink = Arc::clone(&sink);
                keyed_cdc(events, "Scd1", state, |_| 0, |_, _| {})
                    .inspect(move |u| sink.lock().unwrap().push(u.clone()));
                handle
            });
            events.advance_to(5);
            events.insert(upsert(1, "late and older", 1));
            events.insert(upsert(3, "c", 1));
            events.advance_to(6);
        });
        let mut seen = seen.lock().unwrap().clone();
        seen.sort();
        assert_eq!(seen, vec![(row(3, "c"), 5, 1)]);
    }
}

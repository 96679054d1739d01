//! The keyed timely operator shared by the SCD operators: exchange by key, stash per time,
//! apply in time order once complete.

use crate::engine::{CdcState, CommitStats};
use crate::event::{Event, EventKind};
use crate::value::Row;
use differential_dataflow::consolidation::consolidate;
use differential_dataflow::{AsCollection, Hashable, VecCollection};
use std::collections::BTreeMap;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::{Broadcast, Partition};
use timely::dataflow::operators::{Capability, InputCapability};
use timely::order::TotalOrder;
use timely::progress::Timestamp;

/// Routes `events` to `state` (one per worker) and returns the state's row updates.
/// `clock` gives a time's commit time in microseconds; `on_stats` sees each completed time's
/// counters on this worker.
pub(crate) fn keyed_cdc<'s, T, S, C, F>(
    events: VecCollection<'s, T, Event>,
    name: &str,
    mut state: S,
    clock: C,
    mut on_stats: F,
) -> VecCollection<'s, T, Row>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
    S: CdcState,
    C: Fn(&T) -> i64 + 'static,
    F: FnMut(&T, CommitStats) + 'static,
{
    // One partition moves each event once; two filters on the same stream would clone them all.
    let mut parts = events.inner.partition(2, |update: (Event, T, isize)| {
        (u64::from(update.0.kind == EventKind::Truncate), update)
    });
    let truncates = parts.pop().expect("two parts").broadcast();
    let keyed = parts.pop().expect("two parts");
    let exchange = Exchange::new(|(e, _, _): &(Event, T, isize)| e.key.hashed());
    keyed
        .binary_frontier(truncates, exchange, Pipeline, name, move |_, _| {
            let mut stash: Stash<T, Event> = BTreeMap::new();
            move |(keyed, keyed_frontier), (truncates, truncate_frontier), output| {
                // Retractions of events are not supported (see the module docs): they are dropped.
                keyed.for_each(|cap, data| {
                    let inserted = data.drain(..).filter(|u| u.2 > 0).map(|(e, t, _)| (e, t));
                    stash_by_time(&mut stash, &cap, inserted);
                });
                truncates.for_each(|cap, data| {
                    let inserted = data.drain(..).filter(|u| u.2 > 0).map(|(e, t, _)| (e, t));
                    stash_by_time(&mut stash, &cap, inserted);
                });
                while let Some(entry) = stash.first_entry() {
                    let time = entry.key();
                    if keyed_frontier.less_equal(time) || truncate_frontier.less_equal(time) {
                        break;
                    }
                    let (time, (cap, events)) = entry.remove_entry();
                    let mut updates = Vec::new();
                    let mut stats = CommitStats::default();
                    state.apply(events, clock(&time), &mut updates, &mut stats);
                    on_stats(&time, stats);
                    if !state.emits_consolidated() {
                        consolidate(&mut updates);
                    }
                    let mut session = output.session(&cap);
                    for (row, diff) in updates {
                        session.give((row, time.clone(), diff));
                    }
                }
            }
        })
        .as_collection()
}

/// Items waiting for their time to complete, with a capability to emit at that time.
pub(crate) type Stash<T, D> = BTreeMap<T, (Capability<T>, Vec<D>)>;

/// Adds a message's `(item, time)`s to `stash`, retaining a capability for each new time.
pub(crate) fn stash_by_time<T: Timestamp, D>(
    stash: &mut Stash<T, D>,
    cap: &InputCapability<T>,
    items: impl Iterator<Item = (D, T)>,
) {
    for (item, time) in items {
        let slot = stash
            .entry(time)
            .or_insert_with_key(|time| (cap.delayed(time, 0), Vec::new()));
        slot.1.push(item);
    }
}

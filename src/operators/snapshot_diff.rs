//! `SnapshotDiff`: full snapshots → the change events between consecutive ones (SPEC 3.7).
//!
//! Rows `(key, image)` are exchanged by key; each worker keeps the previous snapshot of its keys
//! in a [`SnapshotState`] (a hash map). When a time carrying snapshot version `v` completes,
//! every key whose image is new or changed becomes an upsert at sequence `v` and every key of the
//! previous snapshot that is missing becomes a delete at `v`; unchanged keys produce nothing, so
//! only changed keys reach the SCD operators. The state is shared with the runtime, which saves
//! and restores it ([`crate::engine::Durable`]); a restored state emits nothing by itself. The version arrives on its own collection, broadcast to every worker (any
//! worker, or all of them, may feed it), so a worker learns of a snapshot (and deletes its keys)
//! even when none of the snapshot's rows are its own.
//!
//! Why a hash map and not an arrangement where the new snapshot meets the retraction of the old
//! one: the arrangement's batcher sorts both snapshots (2N updates) per version, while the map
//! costs one hash probe per row; either way the events are exactly the consolidated difference.
//!
//! Limits: one snapshot per time (rows at a time without a version are dropped); a key must
//! occur once per snapshot (the driver rejects duplicates before feeding); versions must
//! increase with time (the driver skips others, D12).

use super::keyed::{stash_inserts, Stash};
use crate::engine::SnapshotState;
use crate::event::Event;
use crate::value::Row;
use differential_dataflow::{AsCollection, Hashable, VecCollection};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

/// Diffs consecutive full snapshots into change events.
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::event::{Event, EventKind};
/// use scdflow::operators::SnapshotDiff;
/// use scdflow::value::{Row, Seq, Value};
/// use std::sync::{Arc, Mutex};
///
/// let row = |k: i64, city: &str| {
///     (Row::from([Value::Int(k)]), Row::from([Value::Int(k), Value::Str(city.into())]))
/// };
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// timely::execute_directly(move |worker| {
///     let (mut rows, mut versions) = worker.dataflow::<u64, _, _>(|scope| {
///         let (rows, snapshot) = scope.new_collection();
///         let (versions, version) = scope.new_collection();
///         let sink = Arc::clone(&sink);
///         snapshot
///             .snapshot_diff(version)
///             .inspect(move |u| sink.lock().unwrap().push(u.clone()));
///         (rows, versions)
///     });
///     versions.insert(1);
///     rows.insert(row(1, "Oaxaca"));
///     rows.insert(row(2, "Monterrey"));
///     rows.advance_to(1);
///     versions.advance_to(1);
///     versions.insert(2);
///     rows.insert(row(2, "Carmel"));
///     rows.advance_to(2);
///     versions.advance_to(2);
/// });
/// let mut at_version_2: Vec<_> = seen.lock().unwrap().iter().filter(|u| u.1 == 1).map(|u| u.0.clone()).collect();
/// at_version_2.sort();
/// let upsert = Event {
///     seq: Seq::from(2),
///     kind: EventKind::Upsert,
///     key: Row::from([Value::Int(2)]),
///     image: Row::from([Value::Int(2), Value::Str("Carmel".into())]),
///     authored: None,
///     system: None,
/// };
/// let delete = Event {
///     seq: Seq::from(2),
///     kind: EventKind::Delete,
///     key: Row::from([Value::Int(1)]),
///     image: Row::new(),
///     authored: None,
///     system: None,
/// };
/// assert_eq!(at_version_2, vec![upsert, delete]);
/// ```
pub trait SnapshotDiff<'s, T: Timestamp> {
    /// The events between consecutive snapshots of `(key, image)` rows; `versions` carries
    /// each snapshot's version at the snapshot's time (one version per time).
    fn snapshot_diff(self, versions: VecCollection<'s, T, i64>) -> VecCollection<'s, T, Event>;
    /// As [`SnapshotDiff::snapshot_diff`], over this worker's previous snapshot `state`, which
    /// the caller shares: it may restore it before the first time and save it between times.
    /// `clock` gives a time's instant in microseconds, which a REPLACE WHERE state
    /// ([`SnapshotState::replacing`]) evaluates its condition at.
    fn snapshot_diff_core<C>(
        self,
        versions: VecCollection<'s, T, i64>,
        state: Rc<RefCell<SnapshotState>>,
        clock: C,
    ) -> VecCollection<'s, T, Event>
    where
        C: Fn(&T) -> i64 + 'static;
}

impl<'s, T> SnapshotDiff<'s, T> for VecCollection<'s, T, (Row, Row)>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
{
    fn snapshot_diff(self, versions: VecCollection<'s, T, i64>) -> VecCollection<'s, T, Event> {
        let state = Rc::new(RefCell::new(SnapshotState::new()));
        self.snapshot_diff_core(versions, state, |_| 0)
    }

    fn snapshot_diff_core<C>(
        self,
        versions: VecCollection<'s, T, i64>,
        state: Rc<RefCell<SnapshotState>>,
        clock: C,
    ) -> VecCollection<'s, T, Event>
    where
        C: Fn(&T) -> i64 + 'static,
    {
        diff_snapshots(self, versions, state, clock)
    }
}

fn diff_snapshots<'s, T, C>(
    snapshot: VecCollection<'s, T, (Row, Row)>,
    versions: VecCollection<'s, T, i64>,
    state: Rc<RefCell<SnapshotState>>,
    clock: C,
) -> VecCollection<'s, T, Event>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
    C: Fn(&T) -> i64 + 'static,
{
    let route = |(key, _): &(Row, Row)| key.hashed();
    diff_by_snapshot(
        snapshot,
        versions,
        "SnapshotDiff",
        route,
        move |rows, v, time, out| out.extend(state.borrow_mut().diff(rows, v, clock(time))),
    )
}

/// The shell of the snapshot operators: routes `rows` by `route` (a hash), broadcasts
/// `versions`, and once a time that carries a version is complete calls `diff` with the time's
/// rows (possibly none), its version (the greatest, should several workers feed one) and the
/// time; `diff`'s output is the output at that time. Rows at a time without a version are no
/// snapshot: dropped once the time is complete. Retractions are ignored.
pub(super) fn diff_by_snapshot<'s, T, R, S, O>(
    rows: VecCollection<'s, T, R>,
    versions: VecCollection<'s, T, S>,
    name: &str,
    route: impl Fn(&R) -> u64 + 'static,
    mut diff: impl FnMut(Vec<R>, S, &T, &mut Vec<O>) + 'static,
) -> VecCollection<'s, T, O>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
    R: differential_dataflow::ExchangeData,
    S: differential_dataflow::ExchangeData,
    O: Clone + 'static,
{
    let exchange = Exchange::new(move |(row, _, _): &(R, T, isize)| route(row));
    rows.inner
        // Every worker must see every version, whoever fed it (in a cluster only the process
        // that read a snapshot has it), so that it can delete the keys it owns that the
        // snapshot no longer has.
        .binary_frontier(
            versions.inner.broadcast(),
            exchange,
            Pipeline,
            name,
            move |_, _| {
                let mut rows: Stash<T, R> = BTreeMap::new();
                let mut marks: Stash<T, S> = BTreeMap::new();
                let mut changes = Vec::new();
                move |(input, frontier), (version_input, version_frontier), output| {
                    input.for_each(|cap, data| stash_inserts(&mut rows, &cap, data));
                    version_input.for_each(|cap, data| stash_inserts(&mut marks, &cap, data));
                    let complete =
                        |time: &T| !frontier.less_equal(time) && !version_frontier.less_equal(time);
                    while let Some(entry) = marks.first_entry() {
                        if !complete(entry.key()) {
                            break;
                        }
                        let (time, (cap, versions)) = entry.remove_entry();
                        let snapshot = rows.remove(&time).map(|(_, r)| r).unwrap_or_default();
                        let Some(version) = versions.into_iter().max() else {
                            continue;
                        };
                        diff(snapshot, version, &time, &mut changes);
                        let mut session = output.session(&cap);
                        for change in changes.drain(..) {
                            session.give((change, time.clone(), 1));
                        }
                    }
                    while rows.first_entry().is_some_and(|e| complete(e.key())) {
                        rows.pop_first();
                    }
                }
            },
        )
        .as_collection()
}

//! `TypedScd1`, `TypedScd2`: change collections of the caller's own types → SCD tables;
//! `TypedSnapshotDiff`: full snapshots → the changes between them.
//!
//! The typed counterparts of [`Scd1`](super::Scd1) and [`Scd2`](super::Scd2) for research
//! dataflows: a collection of `(key, Change { seq, op })` with keys, sequences and images of any
//! exchangeable types (`u64` keys and fixed-width structs run at a plain loop's speed) becomes
//! the table, `(key, image)` rows for SCD1 and `(key, Version)` rows for SCD2, whose update
//! stream is the change feed. The semantics and limits are the typed states'
//! ([`crate::engine::typed`]): whole images, deletes, any arrival order; no truncates or
//! partial upserts. Changes are exchanged by key hash and applied per time once the input
//! frontier has passed it, in time order. [`TypedSnapshotDiff`] feeds them from full
//! snapshots of `(key, image)` rows, as [`SnapshotDiff`](super::SnapshotDiff) feeds the SQL
//! operators.
//!
//! Limits: inputs are insert-only (a retraction is ignored), and timestamps must be totally
//! ordered; a snapshot's sequence must be greater than the previous snapshot's (the SQL driver
//! skips stale snapshots, D12; here the caller does).

use super::keyed::apply_by_time;
use super::snapshot_diff::diff_by_snapshot;
use crate::engine::typed::{
    Change, TypedScd1State, TypedScd2State, TypedSnapshotState, TypedState, Version,
};
use differential_dataflow::{Data, ExchangeData, Hashable, VecCollection};
use std::cell::RefCell;
use std::rc::Rc;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

/// Maintains a typed SCD type 1 table: one `(key, image)` per live key.
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::engine::typed::Change;
/// use scdflow::operators::TypedScd1;
/// use std::sync::{Arc, Mutex};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// timely::execute_directly(move |worker| {
///     let mut input = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, changes) = scope.new_collection();
///         let sink = Arc::clone(&sink);
///         changes
///             .typed_scd1()
///             .inspect(move |u| sink.lock().unwrap().push(u.clone()));
///         input
///     });
///     input.insert((1u64, Change::<u64, [u32; 2]>::upsert(2, [10, 20])));
///     input.advance_to(1);
///     // Late and older: it changes nothing.
///     input.insert((1u64, Change::upsert(1, [0, 0])));
///     input.advance_to(2);
///     input.insert((1u64, Change::delete(3)));
///     input.advance_to(3);
/// });
/// assert_eq!(*seen.lock().unwrap(), vec![((1, [10, 20]), 0, 1), ((1, [10, 20]), 2, -1)]);
/// ```
pub trait TypedScd1<'s, T: Timestamp, K, S, I> {
    /// The SCD1 table of these changes.
    fn typed_scd1(self) -> VecCollection<'s, T, (K, I)>;
    /// As [`TypedScd1::typed_scd1`], over this worker's `state`, which the caller shares (to
    /// read its size, or to start from a state it built).
    fn typed_scd1_core(
        self,
        state: Rc<RefCell<TypedScd1State<K, S, I>>>,
    ) -> VecCollection<'s, T, (K, I)>;
}

impl<'s, T, K, S, I> TypedScd1<'s, T, K, S, I> for VecCollection<'s, T, (K, Change<S, I>)>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
    K: ExchangeData + std::hash::Hash,
    S: ExchangeData,
    I: ExchangeData,
{
    fn typed_scd1(self) -> VecCollection<'s, T, (K, I)> {
        self.typed_scd1_core(Rc::default())
    }

    fn typed_scd1_core(
        self,
        state: Rc<RefCell<TypedScd1State<K, S, I>>>,
    ) -> VecCollection<'s, T, (K, I)> {
        typed_cdc(self, "TypedScd1", state)
    }
}

/// Maintains a typed SCD type 2 table: one `(key, Version { start, end, image })` per version.
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::engine::typed::{Change, Version};
/// use scdflow::operators::TypedScd2;
/// use std::sync::{Arc, Mutex};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// timely::execute_directly(move |worker| {
///     let mut input = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, changes) = scope.new_collection();
///         let sink = Arc::clone(&sink);
///         changes
///             .typed_scd2()
///             .inspect(move |u| sink.lock().unwrap().push(u.clone()));
///         input
///     });
///     input.insert((1u64, Change::<u64, char>::upsert(5, 'b')));
///     input.advance_to(1);
///     // A late upsert opens the earlier version, which the first one closes.
///     input.insert((1u64, Change::upsert(2, 'a')));
///     input.advance_to(2);
/// });
/// let v = |start, end, image| (1, Version { start, end, image });
/// let mut seen = seen.lock().unwrap().clone();
/// seen.sort();
/// assert_eq!(seen, vec![(v(2, Some(5), 'a'), 1, 1), (v(5, None, 'b'), 0, 1)]);
/// ```
pub trait TypedScd2<'s, T: Timestamp, K, S, I> {
    /// The SCD2 table of these changes; every change of the image opens a version.
    fn typed_scd2(self) -> VecCollection<'s, T, (K, Version<S, I>)>;
    /// As [`TypedScd2::typed_scd2`], over this worker's `state`, which the caller shares: built
    /// with [`TypedScd2State::tracking`] to track history on part of the image.
    fn typed_scd2_core(
        self,
        state: Rc<RefCell<TypedScd2State<K, S, I>>>,
    ) -> VecCollection<'s, T, (K, Version<S, I>)>;
}

impl<'s, T, K, S, I> TypedScd2<'s, T, K, S, I> for VecCollection<'s, T, (K, Change<S, I>)>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
    K: ExchangeData + std::hash::Hash,
    S: ExchangeData,
    I: ExchangeData,
{
    fn typed_scd2(self) -> VecCollection<'s, T, (K, Version<S, I>)> {
        self.typed_scd2_core(Rc::new(RefCell::new(TypedScd2State::default())))
    }

    fn typed_scd2_core(
        self,
        state: Rc<RefCell<TypedScd2State<K, S, I>>>,
    ) -> VecCollection<'s, T, (K, Version<S, I>)> {
        typed_cdc(self, "TypedScd2", state)
    }
}

/// Routes `changes` by key to this worker's `state` and returns its row updates, each time's
/// once the input frontier has passed it.
fn typed_cdc<'s, T, K, C, St>(
    changes: VecCollection<'s, T, (K, C)>,
    name: &str,
    state: Rc<RefCell<St>>,
) -> VecCollection<'s, T, St::Row>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
    K: ExchangeData + std::hash::Hash,
    C: ExchangeData,
    St: TypedState<K, C>,
    St::Row: Data,
{
    let route = |(key, _): &(K, C)| key.hashed();
    apply_by_time(changes, name, route, move |mut changes, updates| {
        state.borrow_mut().apply(&mut changes, updates)
    })
}

/// Diffs consecutive full snapshots of `(key, image)` rows into typed changes: at a time that
/// carries a snapshot's sequence (on `versions`, from any worker), every key whose image is new
/// or changed becomes an upsert at that sequence and every key the snapshot no longer has a
/// delete; a time without a sequence is no snapshot. The semantics are the SQL
/// [`SnapshotDiff`](super::SnapshotDiff)'s (SPEC 3.7); see [`TypedSnapshotState`].
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::engine::typed::Version;
/// use scdflow::operators::{TypedScd2, TypedSnapshotDiff};
/// use std::sync::{Arc, Mutex};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// timely::execute_directly(move |worker| {
///     let (mut rows, mut versions) = worker.dataflow::<u64, _, _>(|scope| {
///         let (rows, snapshot) = scope.new_collection::<(u64, char), isize>();
///         let (versions, version) = scope.new_collection::<u64, isize>();
///         let sink = Arc::clone(&sink);
///         snapshot
///             .typed_snapshot_diff(version)
///             .typed_scd2()
///             .inspect(move |u| sink.lock().unwrap().push(u.clone()));
///         (rows, versions)
///     });
///     versions.insert(10);
///     rows.insert((1, 'a'));
///     rows.advance_to(1);
///     versions.advance_to(1);
///     // The next snapshot no longer has key 1.
///     versions.insert(20);
///     rows.advance_to(2);
///     versions.advance_to(2);
/// });
/// let v = |end| (1, Version { start: 10, end, image: 'a' });
/// assert_eq!(*seen.lock().unwrap(), vec![(v(None), 0, 1), (v(None), 1, -1), (v(Some(20)), 1, 1)]);
/// ```
pub trait TypedSnapshotDiff<'s, T: Timestamp, K, I> {
    /// The changes between consecutive snapshots; `versions` holds each snapshot's sequence.
    fn typed_snapshot_diff<S: ExchangeData>(
        self,
        versions: VecCollection<'s, T, S>,
    ) -> VecCollection<'s, T, (K, Change<S, I>)>;
    /// As [`TypedSnapshotDiff::typed_snapshot_diff`], over this worker's `state`, which the
    /// caller shares.
    fn typed_snapshot_diff_core<S: ExchangeData>(
        self,
        versions: VecCollection<'s, T, S>,
        state: Rc<RefCell<TypedSnapshotState<K, I>>>,
    ) -> VecCollection<'s, T, (K, Change<S, I>)>;
}

impl<'s, T, K, I> TypedSnapshotDiff<'s, T, K, I> for VecCollection<'s, T, (K, I)>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
    K: ExchangeData + std::hash::Hash,
    I: ExchangeData,
{
    fn typed_snapshot_diff<S: ExchangeData>(
        self,
        versions: VecCollection<'s, T, S>,
    ) -> VecCollection<'s, T, (K, Change<S, I>)> {
        self.typed_snapshot_diff_core(versions, Rc::default())
    }

    fn typed_snapshot_diff_core<S: ExchangeData>(
        self,
        versions: VecCollection<'s, T, S>,
        state: Rc<RefCell<TypedSnapshotState<K, I>>>,
    ) -> VecCollection<'s, T, (K, Change<S, I>)> {
        let route = |(key, _): &(K, I)| key.hashed();
        let name = "TypedSnapshotDiff";
        diff_by_snapshot(self, versions, name, route, move |mut rows, seq, _, out| {
            state.borrow_mut().diff(&mut rows, seq, out)
        })
    }
}

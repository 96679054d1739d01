//! `Bitemporal`: a collection of change events with system times → the bitemporal table.

use super::keyed::keyed_cdc;
use crate::engine::{BitemporalState, CommitStats};
use crate::event::Event;
use crate::plan::Target;
use crate::value::Row;
use differential_dataflow::VecCollection;
use std::cell::RefCell;
use std::rc::Rc;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

/// Shape of a bitemporal target. There is no tombstone retention: bitemporal history keeps
/// every event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitemporalConfig {
    /// Number of image columns.
    pub image_len: usize,
    /// Per image column: whether a change opens a new business version.
    pub tracked: Vec<bool>,
    /// Field-level folding of partial upserts (D6).
    pub partial: bool,
}

impl BitemporalConfig {
    /// An empty state of this shape, for [`Bitemporal::bitemporal_core`].
    pub fn state(&self) -> BitemporalState {
        BitemporalState::new(self.image_len, self.tracked.clone(), self.partial)
    }
}

impl From<&Target> for BitemporalConfig {
    fn from(t: &Target) -> Self {
        BitemporalConfig {
            image_len: t.image_len,
            tracked: t.tracked.clone(),
            partial: t.partial,
        }
    }
}

/// Maintains a bitemporal table (SPEC 3.11, D15): the system-time versioning of each key's
/// SCD2 history. Rows are the image followed by `__START_AT`, `__END_AT` (business time) and
/// `__SYSTEM_START_AT`, `__SYSTEM_END_AT` (system time; NULL ends are open). Each event's
/// [`Event::system`] is its `SYSTEM SEQUENCE BY` value and must not be NULL. The table is a
/// function of the set of events: an event late in system time is spliced in, and the order of
/// arrival, the split into times and the number of workers do not matter.
///
/// SPEC T8, steps 1–3, one commit each (system times as plain integers: 1005 stands for
/// 10:05:00):
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::event::{Event, EventKind};
/// use scdflow::operators::{Bitemporal, BitemporalConfig};
/// use scdflow::value::{Row, Seq, Value};
/// use std::collections::BTreeMap;
/// use std::sync::{Arc, Mutex};
///
/// let ev = |value: &str, bt: i64, st: i64| Event {
///     seq: Seq::from(bt),
///     kind: EventKind::Upsert,
///     key: Row::from([Value::Str("A".into())]),
///     image: Row::from([Value::Str("A".into()), Value::Str(value.into())]),
///     authored: None,
///     system: Some(Seq::from(st)),
/// };
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// timely::execute_directly(move |worker| {
///     let mut input = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, events) = scope.new_collection();
///         let sink = Arc::clone(&sink);
///         let config = BitemporalConfig { image_len: 2, tracked: vec![true, true], partial: false };
///         events
///             .bitemporal(config)
///             .inspect(move |u| sink.lock().unwrap().push(u.clone()));
///         input
///     });
///     input.insert(ev("XFv1", 100100, 1005));
///     input.advance_to(1);
///     input.insert(ev("XFv2", 121543, 1220));
///     input.advance_to(2);
///     input.insert(ev("XFv3", 120500, 1225)); // earlier business time, later system time
///     input.advance_to(3);
/// });
/// let mut table: BTreeMap<Row, isize> = BTreeMap::new();
/// for (row, _, diff) in seen.lock().unwrap().iter() {
///     *table.entry(row.clone()).or_default() += diff;
/// }
/// table.retain(|_, diff| *diff != 0);
/// let row = |value: &str, start: i64, end: Option<i64>, sstart: i64, send: Option<i64>| {
///     let opt = |t: Option<i64>| t.map_or(Value::Null, Value::Int);
///     Row::from([
///         Value::Str("A".into()),
///         Value::Str(value.into()),
///         Value::Int(start),
///         opt(end),
///         Value::Int(sstart),
///         opt(send),
///     ])
/// };
/// let expected: BTreeMap<Row, isize> = [
///     row("XFv1", 100100, None, 1005, Some(1220)),
///     row("XFv1", 100100, Some(121543), 1220, Some(1225)),
///     row("XFv1", 100100, Some(120500), 1225, None),
///     row("XFv3", 120500, Some(121543), 1225, None),
///     row("XFv2", 121543, None, 1220, None), // unchanged at 12:25: keeps its system start
/// ]
/// .into_iter()
/// .map(|r| (r, 1))
/// .collect();
/// assert_eq!(table, expected);
/// ```
pub trait Bitemporal<'s, T: Timestamp> {
    /// The bitemporal table of these events.
    fn bitemporal(self, config: BitemporalConfig) -> VecCollection<'s, T, Row>;
    /// As [`Bitemporal::bitemporal`], reporting each completed time's counters on this worker.
    /// `clock` gives each time's commit time in microseconds, as for the other targets; the
    /// bitemporal state collects nothing by age, so it only keeps the signatures alike.
    fn bitemporal_with<C, F>(
        self,
        config: BitemporalConfig,
        clock: C,
        on_stats: F,
    ) -> VecCollection<'s, T, Row>
    where
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static;
    /// As [`Bitemporal::bitemporal_with`], over this worker's `state`, which the caller
    /// shares: it may restore it before the first time, save it between times and read the
    /// table from it ([`Durable`](crate::engine::Durable)). A restored state goes on from where
    /// it was; its table is not emitted again.
    fn bitemporal_core<C, F>(
        self,
        state: Rc<RefCell<BitemporalState>>,
        clock: C,
        on_stats: F,
    ) -> VecCollection<'s, T, Row>
    where
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static;
}

impl<'s, T> Bitemporal<'s, T> for VecCollection<'s, T, Event>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
{
    fn bitemporal(self, config: BitemporalConfig) -> VecCollection<'s, T, Row> {
        self.bitemporal_with(config, |_| 0, |_, _| {})
    }

    fn bitemporal_with<C, F>(
        self,
        config: BitemporalConfig,
        clock: C,
        on_stats: F,
    ) -> VecCollection<'s, T, Row>
    where
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static,
    {
        self.bitemporal_core(Rc::new(RefCell::new(config.state())), clock, on_stats)
    }

    fn bitemporal_core<C, F>(
        self,
        state: Rc<RefCell<BitemporalState>>,
        clock: C,
        on_stats: F,
    ) -> VecCollection<'s, T, Row>
    where
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static,
    {
        keyed_cdc(self, "Bitemporal", state, clock, on_stats)
    }
}

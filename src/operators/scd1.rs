//! `Scd1`: a collection of change events → the SCD type 1 table.

use super::keyed::{keyed_cdc, micros};
use crate::engine::{CommitStats, Scd1State};
use crate::event::Event;
use crate::plan::Target;
use crate::value::Row;
use differential_dataflow::VecCollection;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

/// Shape of an SCD1 target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scd1Config {
    /// Number of image columns.
    pub image_len: usize,
    /// Field-level folding of partial upserts (D6).
    pub partial: bool,
    /// How long tombstones are kept, in the clock's time (D11); `None` keeps them forever.
    pub tombstone_retention: Option<Duration>,
}

impl Scd1Config {
    /// An empty state of this shape, for [`Scd1::scd1_core`].
    pub fn state(&self) -> Scd1State {
        let retention = self.tombstone_retention.map(micros);
        Scd1State::new(self.image_len, self.partial, retention)
    }
}

impl From<&Target> for Scd1Config {
    fn from(t: &Target) -> Self {
        Scd1Config {
            image_len: t.image_len,
            partial: t.partial,
            tombstone_retention: (t.tombstone_gc_seconds > 0)
                .then(|| Duration::from_secs(t.tombstone_gc_seconds)),
        }
    }
}

/// Maintains an SCD type 1 table: one row (the image) per live key.
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::event::{Event, EventKind};
/// use scdflow::operators::{Scd1, Scd1Config};
/// use scdflow::value::{Row, Seq, Value};
/// use std::sync::{Arc, Mutex};
///
/// let ev = |k: i64, name: &str, seq: i64| Event {
///     seq: Seq::from(seq),
///     kind: EventKind::Upsert,
///     key: Row::from([Value::Int(k)]),
///     image: Row::from([Value::Int(k), Value::Str(name.into())]),
///     authored: None,
///     system: None,
/// };
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// timely::execute_directly(move |worker| {
///     let mut input = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, events) = scope.new_collection();
///         let sink = Arc::clone(&sink);
///         events
///             .scd1(Scd1Config { image_len: 2, partial: false, tombstone_retention: None })
///             .inspect(move |u| sink.lock().unwrap().push(u.clone()));
///         input
///     });
///     input.insert(ev(1, "new", 2));
///     input.advance_to(1);
///     input.insert(ev(1, "late and older", 1));
///     input.advance_to(2);
/// });
/// // The late, older event changes nothing: only commit 0 produced a row.
/// let row = Row::from([Value::Int(1), Value::Str("new".into())]);
/// assert_eq!(*seen.lock().unwrap(), vec![(row, 0, 1)]);
/// ```
pub trait Scd1<'s, T: Timestamp> {
    /// The SCD1 table of these events.
    fn scd1(self, config: Scd1Config) -> VecCollection<'s, T, Row>;
    /// As [`Scd1::scd1`], with a clock that gives each time's commit time in microseconds
    /// (never decreasing; it ages tombstones), reporting each completed time's counters on this
    /// worker. Plain [`Scd1::scd1`] uses a clock that never advances, so tombstones never expire.
    fn scd1_with<C, F>(
        self,
        config: Scd1Config,
        clock: C,
        on_stats: F,
    ) -> VecCollection<'s, T, Row>
    where
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static;
    /// As [`Scd1::scd1_with`], over this worker's `state`, which the caller shares: it may
    /// restore it before the first time, save it between times and read the table from it
    /// ([`Durable`](crate::engine::Durable)). A restored state goes on from where it was; its
    /// table is not emitted again.
    fn scd1_core<C, F>(
        self,
        state: Rc<RefCell<Scd1State>>,
        clock: C,
        on_stats: F,
    ) -> VecCollection<'s, T, Row>
    where
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static;
}

impl<'s, T> Scd1<'s, T> for VecCollection<'s, T, Event>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
{
    fn scd1(self, config: Scd1Config) -> VecCollection<'s, T, Row> {
        self.scd1_with(config, |_| 0, |_, _| {})
    }

    fn scd1_with<C, F>(self, config: Scd1Config, clock: C, on_stats: F) -> VecCollection<'s, T, Row>
    where
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static,
    {
        self.scd1_core(Rc::new(RefCell::new(config.state())), clock, on_stats)
    }

    fn scd1_core<C, F>(
        self,
        state: Rc<RefCell<Scd1State>>,
        clock: C,
        on_stats: F,
    ) -> VecCollection<'s, T, Row>
    where
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static,
    {
        keyed_cdc(self, "Scd1", state, clock, on_stats)
    }
}

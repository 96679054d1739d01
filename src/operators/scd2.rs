//! `Scd2`: a collection of change events → the SCD type 2 table.

use super::keyed::{keyed_cdc, micros};
use crate::engine::{CommitStats, Scd2State};
use crate::event::Event;
use crate::plan::Target;
use crate::value::Row;
use differential_dataflow::VecCollection;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

/// Shape of an SCD2 target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scd2Config {
    /// Number of image columns.
    pub image_len: usize,
    /// Per image column: whether a change opens a new version.
    pub tracked: Vec<bool>,
    /// Field-level folding of partial upserts (D6).
    pub partial: bool,
    /// How long tombstones are kept, in the clock's time (D11); `None` keeps them forever.
    pub tombstone_retention: Option<Duration>,
}

impl Scd2Config {
    /// An empty state of this shape, for [`Scd2::scd2_core`].
    pub fn state(&self) -> Scd2State {
        let retention = self.tombstone_retention.map(micros);
        Scd2State::new(
            self.image_len,
            self.tracked.clone(),
            self.partial,
            retention,
        )
    }
}

impl From<&Target> for Scd2Config {
    fn from(t: &Target) -> Self {
        Scd2Config {
            image_len: t.image_len,
            tracked: t.tracked.clone(),
            partial: t.partial,
            tombstone_retention: (t.tombstone_gc_seconds > 0)
                .then(|| Duration::from_secs(t.tombstone_gc_seconds)),
        }
    }
}

/// Maintains an SCD type 2 table: one row per version, the image followed by `__START_AT` and
/// `__END_AT` (NULL while current).
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::event::{Event, EventKind};
/// use scdflow::operators::{Scd2, Scd2Config};
/// use scdflow::value::{Row, Seq, Value};
/// use std::sync::{Arc, Mutex};
///
/// let ev = |city: &str, seq: i64| Event {
///     seq: Seq::from(seq),
///     kind: EventKind::Upsert,
///     key: Row::from([Value::Int(125)]),
///     image: Row::from([Value::Int(125), Value::Str(city.into())]),
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
///             .scd2(Scd2Config { image_len: 2, tracked: vec![true, true], partial: false, tombstone_retention: None })
///             .inspect(move |u| sink.lock().unwrap().push(u.clone()));
///         input
///     });
///     input.insert(ev("Tijuana", 2));
///     input.insert(ev("Guadalajara", 6));
///     input.advance_to(1);
///     input.insert(ev("Mexicali", 5)); // late: splices between 2 and 6
///     input.advance_to(2);
/// });
/// let row = |city: &str, start: i64, end: Option<i64>| {
///     let end = end.map_or(Value::Null, Value::Int);
///     Row::from([Value::Int(125), Value::Str(city.into()), Value::Int(start), end])
/// };
/// let mut at_commit_1: Vec<_> = seen.lock().unwrap().iter().filter(|u| u.1 == 1).cloned().collect();
/// at_commit_1.sort();
/// assert_eq!(
///     at_commit_1,
///     vec![
///         (row("Mexicali", 5, Some(6)), 1, 1),
///         (row("Tijuana", 2, Some(5)), 1, 1),
///         (row("Tijuana", 2, Some(6)), 1, -1),
///     ]
/// );
/// ```
pub trait Scd2<'s, T: Timestamp> {
    /// The SCD2 table of these events.
    fn scd2(self, config: Scd2Config) -> VecCollection<'s, T, Row>;
    /// As [`Scd2::scd2`], with a clock that gives each time's commit time in microseconds
    /// (never decreasing; it ages tombstones), reporting each completed time's counters on this
    /// worker. Plain [`Scd2::scd2`] uses a clock that never advances, so tombstones never expire.
    fn scd2_with<C, F>(
        self,
        config: Scd2Config,
        clock: C,
        on_stats: F,
    ) -> VecCollection<'s, T, Row>
    where
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static;
    /// As [`Scd2::scd2_with`], over this worker's `state`, which the caller shares: it may
    /// restore it before the first time, save it between times and read the table from it
    /// ([`Durable`](crate::engine::Durable)). A restored state goes on from where it was; its
    /// table is not emitted again.
    fn scd2_core<C, F>(
        self,
        state: Rc<RefCell<Scd2State>>,
        clock: C,
        on_stats: F,
    ) -> VecCollection<'s, T, Row>
    where
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static;
}

impl<'s, T> Scd2<'s, T> for VecCollection<'s, T, Event>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
{
    fn scd2(self, config: Scd2Config) -> VecCollection<'s, T, Row> {
        self.scd2_with(config, |_| 0, |_, _| {})
    }

    fn scd2_with<C, F>(self, config: Scd2Config, clock: C, on_stats: F) -> VecCollection<'s, T, Row>
    where
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static,
    {
        self.scd2_core(Rc::new(RefCell::new(config.state())), clock, on_stats)
    }

    fn scd2_core<C, F>(
        self,
        state: Rc<RefCell<Scd2State>>,
        clock: C,
        on_stats: F,
    ) -> VecCollection<'s, T, Row>
    where
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static,
    {
        keyed_cdc(self, "Scd2", state, clock, on_stats)
    }
}

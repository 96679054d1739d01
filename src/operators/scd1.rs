//! `Scd1`: a collection of change events → the SCD type 1 table.

use super::keyed::keyed_cdc;
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
/// use scdflow::value::Value;
/// use std::sync::{Arc, Mutex};
///
/// let ev = |k: i64, name: &str, seq: i64| Event {
///     seq: Value::Int(seq),
///     kind: EventKind::Upsert,
///     key: vec![Value::Int(k)],
///     image: vec![Value::Int(k), Value::Str(name.into())],
///     authored: None,
///     system: Value::Null,
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
/// let row = vec![Value::Int(1), Value::Str("new".into())];
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
        let retention = config
            .tombstone_retention
            .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
        let state = Scd1State::new(config.image_len, config.partial, retention);
        keyed_cdc(self, "Scd1", Rc::new(RefCell::new(state)), clock, on_stats)
    }
}

//! `Scd1`: a collection of change events → the SCD type 1 table.

use super::keyed::keyed_cdc;
use crate::engine::{CommitStats, Scd1State};
use crate::event::Event;
use crate::plan::Target;
use crate::value::Row;
use differential_dataflow::VecCollection;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

/// Shape of an SCD1 target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scd1Config {
    /// Number of image columns.
    pub image_len: usize,
    /// Field-level folding of partial upserts (D6).
    pub partial: bool,
}

impl From<&Target> for Scd1Config {
    fn from(t: &Target) -> Self {
        Scd1Config {
            image_len: t.image_len,
            partial: t.partial,
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
/// };
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// timely::execute_directly(move |worker| {
///     let mut input = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, events) = scope.new_collection();
///         let sink = Arc::clone(&sink);
///         events
///             .scd1(Scd1Config { image_len: 2, partial: false })
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
    /// As [`Scd1::scd1`], also reporting each completed time's counters on this worker.
    fn scd1_with_stats<F>(self, config: Scd1Config, on_stats: F) -> VecCollection<'s, T, Row>
    where
        F: FnMut(&T, CommitStats) + 'static;
}

impl<'s, T> Scd1<'s, T> for VecCollection<'s, T, Event>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
{
    fn scd1(self, config: Scd1Config) -> VecCollection<'s, T, Row> {
        self.scd1_with_stats(config, |_, _| {})
    }

    fn scd1_with_stats<F>(self, config: Scd1Config, on_stats: F) -> VecCollection<'s, T, Row>
    where
        F: FnMut(&T, CommitStats) + 'static,
    {
        let state = Scd1State::new(config.image_len, config.partial);
        keyed_cdc(self, "Scd1", state, on_stats)
    }
}

//! `AutoCdc`: a collection of source rows → the flow's target table and its rejected rows.

use super::built::BuiltFlow;
use crate::event::Event;
use crate::operators::ScdState;
use crate::prepare::InvalidRow;
use crate::value::Row;
use differential_dataflow::{AsCollection, VecCollection};
use timely::dataflow::operators::core::OkErr;
use timely::dataflow::Stream;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

/// Applies a [`BuiltFlow`] to a collection of source rows, whose timestamps are commits.
///
/// Returns the target table, whose update stream is its change feed (see
/// [`operators`](crate::operators) for what the updates at a time mean and for the limits:
/// retracted rows are ignored, times are totally ordered), and the rows that are not events
/// (NULL sequence or key, failing expression, wrong width, ...) with the reason, at the time
/// and with the multiplicity they arrived with. Rejected rows do not stop the flow: deciding
/// whether they fail the commit or are quarantined (D3) is the caller's business.
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::flow_builder::{AutoCdc, AutoCdcFlow};
/// use scdflow::value::{DataType, Row, Schema, Value};
/// use std::sync::{Arc, Mutex};
///
/// let schema = Schema::new([
///     ("id".to_string(), DataType::Int),
///     ("city".to_string(), DataType::String),
///     ("seq".to_string(), DataType::Int),
/// ]);
/// let flow = AutoCdcFlow::new("cities", schema, ["id"], "seq")
///     .except_column_list(["seq"])
///     .build()?;
/// let row = |id: Value, city: &str, seq: i64| {
///     Row::from([id, Value::Str(city.into()), Value::Int(seq)])
/// };
///
/// let (table, rejected) = (Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(Vec::new())));
/// let (table_sink, rejected_sink) = (Arc::clone(&table), Arc::clone(&rejected));
/// timely::execute_directly(move |worker| {
///     let mut input = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, rows) = scope.new_collection();
///         let (cities, invalid) = rows.auto_cdc(&flow);
///         cities.inspect(move |u| table_sink.lock().unwrap().push(u.clone()));
///         invalid.inspect(move |u| rejected_sink.lock().unwrap().push(u.clone()));
///         input
///     });
///     input.insert(row(Value::Int(1), "Oaxaca", 1));
///     input.insert(row(Value::Int(1), "Cancun", 2));
///     input.insert(row(Value::Null, "Nowhere", 3));
///     input.advance_to(1);
/// });
///
/// // SCD type 1: the latest image of key 1, written once at commit 0.
/// let city = Row::from([Value::Int(1), Value::Str("Cancun".into())]);
/// assert_eq!(*table.lock().unwrap(), vec![(city, 0, 1)]);
/// let rejected = rejected.lock().unwrap();
/// assert_eq!(rejected.len(), 1);
/// let ((bad_row, why), time, diff) = &rejected[0];
/// assert_eq!((bad_row, *time, *diff), (&row(Value::Null, "Nowhere", 3), 0, 1));
/// assert_eq!((why.column.as_str(), why.reason.as_str()), ("KEYS (id)", "the key value is NULL"));
/// # Ok::<(), scdflow::Error>(())
/// ```
pub trait AutoCdc<'s, T: Timestamp> {
    /// The target table of `flow` over these source rows, and the rows it rejected.
    fn auto_cdc(
        self,
        flow: &BuiltFlow,
    ) -> (
        VecCollection<'s, T, Row>,
        VecCollection<'s, T, (Row, InvalidRow)>,
    );
}

impl<'s, T> AutoCdc<'s, T> for VecCollection<'s, T, Row>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
{
    fn auto_cdc(
        self,
        flow: &BuiltFlow,
    ) -> (
        VecCollection<'s, T, Row>,
        VecCollection<'s, T, (Row, InvalidRow)>,
    ) {
        let prepare = flow.clone();
        // One pass over the rows: each is classified once, into an event or a rejection.
        let (events, invalid): (
            Stream<'s, T, Vec<(Event, T, isize)>>,
            Stream<'s, T, Vec<((Row, InvalidRow), T, isize)>>,
        ) = self.inner.ok_err(move |(row, time, diff)| {
            let event = prepare.event_of(&row.unpack());
            match event {
                Ok(event) => Ok((event, time, diff)),
                Err(why) => Err(((row, why), time, diff)),
            }
        });
        let events = events.as_collection();
        let table = ScdState::new(flow.target()).render(events, |_| 0, |_, _| {});
        (table, invalid.as_collection())
    }
}

//! `ChangeFeed`: a target's row updates → its change data feed (D14).

use super::keyed::{stash_by_time, Stash};
use crate::engine::changefeed::{label, ChangeType};
use crate::value::{Projection, Row};
use differential_dataflow::{AsCollection, Hashable, VecCollection};
use std::collections::BTreeMap;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

/// Labels a target's updates as change-feed rows: per time, a retraction and an insertion with
/// the same identity become `update_preimage` + `update_postimage`, other insertions `insert`
/// and other retractions `delete`. The result is append-only: each change is a `+1` at the time
/// of the commit that made it.
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::engine::changefeed::ChangeType;
/// use scdflow::operators::ChangeFeed;
/// use scdflow::value::{Projection, Row, Value};
/// use std::sync::{Arc, Mutex};
///
/// let row = |k: i64, v: &str| Row::from([Value::Int(k), Value::Str(v.into())]);
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// timely::execute_directly(move |worker| {
///     let mut input = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, rows) = scope.new_collection();
///         let sink = Arc::clone(&sink);
///         // Identity of a row: its key, the first column.
///         rows.change_feed(Projection::new(vec![0]))
///             .inspect(move |u| sink.lock().unwrap().push(u.clone()));
///         input
///     });
///     input.insert(row(1, "a"));
///     input.advance_to(1);
///     input.remove(row(1, "a"));
///     input.insert(row(1, "b"));
///     input.remove(row(1, "b")); // cancels within the commit: nothing changed for it
///     input.insert(row(1, "b"));
///     input.advance_to(2);
/// });
/// let mut feed = seen.lock().unwrap().clone();
/// feed.sort();
/// assert_eq!(
///     feed,
///     vec![
///         ((ChangeType::UpdatePreimage, row(1, "a")), 1, 1),
///         ((ChangeType::UpdatePostimage, row(1, "b")), 1, 1),
///         ((ChangeType::Insert, row(1, "a")), 0, 1),
///     ]
/// );
/// ```
pub trait ChangeFeed<'s, T: Timestamp> {
    /// The change feed of these row updates; `identity` is the columns that identify a row
    /// (keys for SCD1, keys and `__START_AT` for SCD2: [`crate::engine::changefeed::identity`]).
    fn change_feed(self, identity: Projection) -> VecCollection<'s, T, (ChangeType, Row)>;
}

impl<'s, T> ChangeFeed<'s, T> for VecCollection<'s, T, Row>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
{
    fn change_feed(self, identity: Projection) -> VecCollection<'s, T, (ChangeType, Row)> {
        let route = identity.clone();
        let exchange = Exchange::new(move |(row, _, _): &(Row, T, isize)| {
            route.project(row.as_row_ref()).hashed()
        });
        self.inner
            .unary_frontier(exchange, "ChangeFeed", move |_, _| {
                let mut stash: Stash<T, (Row, isize)> = BTreeMap::new();
                move |(input, frontier), output| {
                    input.for_each(|cap, data| {
                        let updates = data.drain(..).map(|(row, time, diff)| ((row, diff), time));
                        stash_by_time(&mut stash, &cap, updates);
                    });
                    while let Some(entry) = stash.first_entry() {
                        if frontier.less_equal(entry.key()) {
                            break;
                        }
                        let (time, (cap, mut updates)) = entry.remove_entry();
                        differential_dataflow::consolidation::consolidate(&mut updates);
                        let mut session = output.session(&cap);
                        for (kind, row) in label(&identity, updates.iter().map(|(r, d)| (r, *d))) {
                            session.give(((kind, row.clone()), time.clone(), 1));
                        }
                    }
                }
            })
            .as_collection()
    }
}

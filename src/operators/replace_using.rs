//! `ReplaceUsing`: partial snapshots keyed by replace-key values (SPEC 1.6, 3.12).
//!
//! Rows are exchanged by their replace-key values (NULL matches NULL, as `Value` equality does).
//! Each worker keeps, per key, the highest sequence seen and the rows carrying it. A completed
//! time's rows for a key keep only their highest sequence `s`; against the stored sequence they
//! replace all of the key's rows (`s` higher), are appended (`s` equal) or are ignored (`s`
//! lower). Keys absent from a time are untouched. The table is therefore, per key, every row
//! ever offered with the key's highest sequence — a function of the multiset of rows, whatever
//! their arrival order or split into commits.
//!
//! Limits: rows are insert-only; a NULL sequence is the caller's to reject (it sorts lowest).

use super::keyed::{stash_by_time, Stash};
use crate::engine::KeyMap;
use crate::value::{Row, Value};
use differential_dataflow::{AsCollection, Hashable, VecCollection};
use std::collections::BTreeMap;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

/// Which columns of a row are the replace keys and which is the sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplaceConfig {
    /// Replace-key column indices.
    pub keys: Vec<usize>,
    /// The sequence column index.
    pub sequence: usize,
}

impl ReplaceConfig {
    fn key(&self, row: &Row) -> Row {
        self.keys.iter().map(|&k| row[k].clone()).collect()
    }
}

/// Maintains a REPLACE USING table from a collection of incoming rows.
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::operators::{ReplaceConfig, ReplaceUsing};
/// use scdflow::value::Value;
/// use std::sync::{Arc, Mutex};
///
/// // (region, device, seq)
/// let row = |r: i64, d: &str, s: i64| vec![Value::Int(r), Value::Str(d.into()), Value::Int(s)];
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// timely::execute_directly(move |worker| {
///     let mut input = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, rows) = scope.new_collection();
///         let sink = Arc::clone(&sink);
///         rows.replace_using(ReplaceConfig { keys: vec![0], sequence: 2 })
///             .inspect(move |u| sink.lock().unwrap().push(u.clone()));
///         input
///     });
///     input.insert(row(1, "iOS", 1));
///     input.insert(row(1, "Android", 1));
///     input.advance_to(1);
///     input.insert(row(1, "desktop", 2)); // replaces region 1
///     input.insert(row(3, "iOS", 1)); // only the highest sequence of a key is applied:
///     input.insert(row(3, "desktop", 2));
///     input.advance_to(2);
/// });
/// let mut table = std::collections::BTreeMap::new();
/// for (row, _, diff) in seen.lock().unwrap().iter() {
///     *table.entry(row.clone()).or_insert(0) += diff;
/// }
/// table.retain(|_, n| *n != 0);
/// let rows: Vec<_> = table.into_keys().collect();
/// assert_eq!(rows, vec![row(1, "desktop", 2), row(3, "desktop", 2)]);
/// ```
pub trait ReplaceUsing<'s, T: Timestamp> {
    /// The REPLACE USING table of these rows.
    fn replace_using(self, config: ReplaceConfig) -> VecCollection<'s, T, Row>;
}

impl<'s, T> ReplaceUsing<'s, T> for VecCollection<'s, T, Row>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
{
    fn replace_using(self, config: ReplaceConfig) -> VecCollection<'s, T, Row> {
        let route = config.clone();
        let exchange = Exchange::new(move |(row, _, _): &(Row, T, isize)| route.key(row).hashed());
        self.inner
            .unary_frontier(exchange, "ReplaceUsing", move |_, _| {
                let mut stash: Stash<T, Row> = BTreeMap::new();
                let mut state: KeyMap<(Value, Vec<Row>)> = KeyMap::default();
                move |(input, frontier), output| {
                    input.for_each(|cap, data| {
                        let inserted = data.drain(..).filter(|u| u.2 > 0).map(|(r, t, _)| (r, t));
                        stash_by_time(&mut stash, &cap, inserted);
                    });
                    while let Some(entry) = stash.first_entry() {
                        if frontier.less_equal(entry.key()) {
                            break;
                        }
                        let (time, (cap, rows)) = entry.remove_entry();
                        let mut updates = Vec::new();
                        for (key, rows) in by_key(&config, rows) {
                            replace(&mut state, &config, key, rows, &mut updates);
                        }
                        differential_dataflow::consolidation::consolidate(&mut updates);
                        let mut session = output.session(&cap);
                        for (row, diff) in updates {
                            session.give((row, time.clone(), diff));
                        }
                    }
                }
            })
            .as_collection()
    }
}

/// Groups rows by replace key.
fn by_key(config: &ReplaceConfig, rows: Vec<Row>) -> BTreeMap<Row, Vec<Row>> {
    let mut groups: BTreeMap<Row, Vec<Row>> = BTreeMap::new();
    for row in rows {
        groups.entry(config.key(&row)).or_default().push(row);
    }
    groups
}

/// Applies one time's rows of one key against the stored rows of that key.
fn replace(
    state: &mut KeyMap<(Value, Vec<Row>)>,
    config: &ReplaceConfig,
    key: Row,
    rows: Vec<Row>,
    updates: &mut Vec<(Row, isize)>,
) {
    let Some(top) = rows.iter().map(|r| &r[config.sequence]).max().cloned() else {
        return;
    };
    let winners: Vec<Row> = rows
        .into_iter()
        .filter(|r| r[config.sequence] == top)
        .collect();
    let stored = state
        .entry(key)
        .or_insert_with(|| (top.clone(), Vec::new()));
    if top > stored.0 {
        updates.extend(stored.1.drain(..).map(|r| (r, -1)));
        stored.0 = top;
    } else if top < stored.0 {
        return;
    }
    updates.extend(winners.iter().cloned().map(|r| (r, 1)));
    stored.1.extend(winners);
}

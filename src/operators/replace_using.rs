//! `ReplaceUsing`: partial snapshots keyed by replace-key values (SPEC 1.6, 3.12).
//!
//! Rows are exchanged by their replace-key values (NULL matches NULL, as `Value` equality does)
//! to a [`ReplaceState`] per worker, which applies each completed time's rows (see there for the
//! rules). The state is shared with the runtime, which saves and restores it
//! ([`crate::engine::Durable`]); a restored state goes on from where it was.
//!
//! Limits: rows are insert-only; a NULL sequence is the caller's to reject (it sorts lowest).

use super::keyed::apply_by_time;
use crate::engine::ReplaceState;
use crate::value::Row;
use differential_dataflow::{Hashable, VecCollection};
use std::cell::RefCell;
use std::rc::Rc;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

pub use crate::engine::ReplaceConfig;

/// Maintains a REPLACE USING table from a collection of incoming rows.
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::operators::{ReplaceConfig, ReplaceUsing};
/// use scdflow::value::{Row, Value};
/// use std::sync::{Arc, Mutex};
///
/// // (region, device, seq)
/// let row = |r: i64, d: &str, s: i64| {
///     Row::from([Value::Int(r), Value::Str(d.into()), Value::Int(s)])
/// };
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
    /// As [`ReplaceUsing::replace_using`], over this worker's `state` (which holds the
    /// configuration), shared with the caller: it may restore it before the first time, save
    /// it between times and read the table from it.
    fn replace_using_core(self, state: Rc<RefCell<ReplaceState>>) -> VecCollection<'s, T, Row>;
}

impl<'s, T> ReplaceUsing<'s, T> for VecCollection<'s, T, Row>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
{
    fn replace_using(self, config: ReplaceConfig) -> VecCollection<'s, T, Row> {
        self.replace_using_core(Rc::new(RefCell::new(ReplaceState::new(config))))
    }

    fn replace_using_core(self, state: Rc<RefCell<ReplaceState>>) -> VecCollection<'s, T, Row> {
        replace(self, state)
    }
}

fn replace<'s, T>(
    rows: VecCollection<'s, T, Row>,
    state: Rc<RefCell<ReplaceState>>,
) -> VecCollection<'s, T, Row>
where
    T: Timestamp + TotalOrder + timely::ExchangeData,
{
    let route = state.borrow().config().clone();
    apply_by_time(
        rows,
        "ReplaceUsing",
        move |row: &Row| route.key(row).hashed(),
        move |rows, updates| state.borrow_mut().apply(rows, updates),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Durable;
    use crate::persist::{FileKind, FrameReader, FrameWriter};
    use crate::value::Value;
    use differential_dataflow::input::Input;
    use std::sync::{Arc, Mutex};

    /// `(region, device, seq)`.
    fn row(region: i64, device: &str, seq: i64) -> Row {
        Row::from(vec![
            Value::Int(region),
            Value::Str(device.into()),
            Value::Int(seq),
        ])
    }

    /// A restored state goes on from where it was: later rows replace its rows as usual.
    #[test]
    fn a_restored_state_goes_on_from_where_it_was() {
        let config = ReplaceConfig {
            keys: vec![0],
            sequence: 2,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shard");
        let mut saved = ReplaceState::new(config.clone());
        let rows = vec![row(1, "iOS", 1), row(1, "Android", 1), row(2, "iOS", 1)];
        saved.apply(rows, &mut Vec::new());
        let mut writer = FrameWriter::create(&path, FileKind::Shard).unwrap();
        saved.save(&mut writer).unwrap();
        writer.finish().unwrap();

        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        timely::execute_directly(move |worker| {
            let mut restored = ReplaceState::new(config);
            let mut input = FrameReader::open(&path, FileKind::Shard).unwrap();
            restored.restore(&mut input, &|_| true).unwrap();
            let state = Rc::new(RefCell::new(restored));
            let mut rows = worker.dataflow::<u64, _, _>(|scope| {
                let (handle, rows) = scope.new_collection();
                let sink = Arc::clone(&sink);
                rows.replace_using_core(state)
                    .inspect(move |u| sink.lock().unwrap().push(u.clone()));
                handle
            });
            rows.advance_to(4);
            rows.insert(row(1, "desktop", 2));
            rows.advance_to(5);
        });
        let mut seen = seen.lock().unwrap().clone();
        seen.sort();
        assert_eq!(
            seen,
            vec![
                (row(1, "Android", 1), 4, -1),
                (row(1, "desktop", 2), 4, 1),
                (row(1, "iOS", 1), 4, -1),
            ]
        );
    }
}

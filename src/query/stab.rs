//! Interval stabbing: the rows of a flat SCD2 or bitemporal table visible at a point.
//!
//! A row is visible at business time `b` when `__START_AT <= b < __END_AT` and at system time
//! `s` when `__SYSTEM_START_AT <= s < __SYSTEM_END_AT` (D10: half-open, a NULL end is open).
//! This is the definition every as-of read answers to; [`crate::operators::AsOf`] is checked
//! against it. It builds nothing: one pass over the rows, so a read costs O(rows) whatever the
//! point, with no set-up.

use crate::plan::AsOfLayout;
use crate::value::{Row, Value};

/// Whether `point` lies in `[start, end)`; a NULL `end` is open (a NULL `start`, which valid
/// tables never hold, is unbounded below since NULL sorts lowest).
pub fn contains(start: &Value, end: &Value, point: &Value) -> bool {
    start <= point && (end.is_null() || point < end)
}

/// The rows of `rows` visible at the given point, sorted by key, `__START_AT`,
/// `__SYSTEM_START_AT`, then the whole row; each keeps all its columns (its image is its
/// first `layout.image_len` values).
///
/// * `system`: `Some(s)` keeps the rows believed at `s`; `None` keeps the current belief
///   (`__SYSTEM_END_AT IS NULL`). Ignored for SCD2 layouts (`layout.system == None`).
/// * `business`: `Some(b)` keeps the rows whose business interval contains `b`; `None` keeps
///   every business row (the whole history as believed at `system`).
/// * `filter`: `(column, value)` pairs the row must equal (plain [`Value`] equality).
///
/// For a valid bitemporal table and a given key, at most one row is visible at a `(s, b)`
/// point: the SCD1 value at `b` as known at `s`.
///
/// ```
/// use scdflow::plan::AsOfLayout;
/// use scdflow::query::visible;
/// use scdflow::value::Row;
/// use scdflow::value::Value::{self, Int, Null};
///
/// // (key, value, __START_AT, __END_AT, __SYSTEM_START_AT, __SYSTEM_END_AT)
/// let row = |v: &str, b: (i64, Value), s: (i64, Value)| {
///     Row::from([Int(1), Value::Str(v.into()), Int(b.0), b.1, Int(s.0), s.1])
/// };
/// let rows = vec![
///     row("v1", (10, Null), (100, Int(200))),
///     row("v1", (10, Int(20)), (200, Null)),
///     row("v2", (20, Null), (200, Null)),
/// ];
/// let layout = AsOfLayout { keys: vec![0], image_len: 2, business: (2, 3), system: Some((4, 5)) };
/// let at = |s: Option<i64>, b: i64| visible(&rows, &layout, s.map(Int).as_ref(), Some(&Int(b)), &[]);
/// assert_eq!(at(Some(150), 25), vec![rows[0].clone()]); // before the correction: v1 forever
/// assert_eq!(at(None, 25), vec![rows[2].clone()]);      // now: v2 from 20
/// assert!(at(Some(99), 25).is_empty());                  // nothing known yet
/// ```
pub fn visible(
    rows: &[Row],
    layout: &AsOfLayout,
    system: Option<&Value>,
    business: Option<&Value>,
    filter: &[(usize, Value)],
) -> Vec<Row> {
    let believed = |row: &Row| match (layout.system, system) {
        (None, _) => true,
        (Some((_, end)), None) => row.value(end).is_null(),
        (Some((start, end)), Some(s)) => contains(&row.value(start), &row.value(end), s),
    };
    let valid = |row: &Row| {
        let (start, end) = layout.business;
        business.is_none_or(|b| contains(&row.value(start), &row.value(end), b))
    };
    let wanted = |row: &Row| filter.iter().all(|(c, v)| row.value(*c) == *v);
    let mut out: Vec<Row> = rows
        .iter()
        .filter(|r| wanted(r) && believed(r) && valid(r))
        .cloned()
        .collect();
    sort(layout, &mut out);
    out
}

/// Sorts rows by key, `__START_AT`, `__SYSTEM_START_AT` (if any), then the whole row.
pub fn sort(layout: &AsOfLayout, rows: &mut [Row]) {
    let starts = std::iter::once(layout.business.0).chain(layout.system.map(|s| s.0));
    let order: Vec<usize> = layout.keys.iter().copied().chain(starts).collect();
    crate::driver::sort_by_columns(rows, &order);
}

//! `AsOf`: a bitemporal as-of index, kept as a differential arrangement over a product-lattice
//! time, answering "the rows as known at system time `s` and valid at business time `b`".
//!
//! # Mathematics
//!
//! A row valid on business `[b1, b2)` and believed on system `[s1, s2)` (NULL ends open, D10) is
//! the indicator of a quadrant difference in the plane of `(system, business)` points. Under the
//! product order, `[(s1, b1), ∞)` is the up-set of one point, so the rectangle is the signed sum
//! of four up-sets, one per corner:
//!
//! ```text
//! +1 at (s1, b1)    −1 at (s1, b2) if b2 is not NULL
//! −1 at (s2, b1)    +1 at (s2, b2) if both ends are not NULL  (inclusion–exclusion)
//! ```
//!
//! Accumulating a trace at `(s, b)` sums the updates at times `<= (s, b)`, so the accumulation
//! of these four updates is 1 exactly when `s1 <= s < s2` and `b1 <= b < b2`: the trace
//! accumulated at a point holds the rows visible there, each with multiplicity one (for a valid
//! table, one row per key). The index stores `(key, image)` with the corner updates, so equal
//! images of one key share corners and cancel where one row continues another.
//!
//! # Times
//!
//! The input is a collection timestamped by commit (`u64`), the engine's time: a row inserted at
//! commit `c` and retracted at `c'` (because a late event corrected it) contributes its corners
//! at `c` and their negations at `c'`. The index lives in a nested scope of time
//! [`AsOfTime`] `= Product<u64, Product<Instant, Instant>>`: progress is carried by the commit
//! coordinate alone (the data's system and business times may lie anywhere, including before
//! the times already seen), and each update enters at `Product(c, (s, b))` — `enter_at` with the
//! corner as the inner time. The capability `Product(c, (NULL, NULL))` is below every corner,
//! because NULL is the minimum [`Instant`]. Reads accumulate over every complete commit.
//!
//! [`Instant`] wraps a [`Value`]: system and business columns hold any orderable type
//! (TIMESTAMP, INT, DATE, STRING, STRUCT, ...), and mapping them to integers would need a
//! global rank that changes as data arrive. [`Value`]'s order is total, so `Instant` is a
//! totally ordered lattice (join = max, meet = min) with NULL as its minimum; its path summary
//! is the identity, as nothing in the index advances these coordinates.
//!
//! # Limits
//!
//! * The arrangement is sharded by key hash across workers: each worker's [`AsOfIndex`] answers
//!   for the keys it owns. A whole-table read concatenates the workers' answers.
//! * Holding the trace pins compaction: [`AsOfIndex::compact`] (which every read calls) lets the
//!   trace merge everything up to the commit frontier, and [`AsOfIndex::set_retention`] gives
//!   up history on the system and business axes. Without retention the index keeps one update
//!   per distinct corner forever, like the flat table keeps its rows.
//! * Building costs four updates per row through an arrangement; a one-shot read is cheaper by
//!   stabbing the flat rows ([`crate::query::visible`]); see `benches/as_of.rs`.

use crate::plan::AsOfLayout;
use crate::value::{Datum, Row, Value};
use crate::{Error, ErrorKind, Result};
use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::arrange::TraceAgent;
use differential_dataflow::trace::cursor::cursor_list;
use differential_dataflow::trace::implementations::ValSpine;
use differential_dataflow::trace::{Cursor, TraceReader};
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::order::{PartialOrder, Product, TotalOrder};
use timely::progress::timestamp::PathSummary;
use timely::progress::{Antichain, Timestamp};

/// A point on the system or business axis: a [`Value`] in its SQL order, NULL the minimum.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Instant(pub Value);

/// The path summary of [`Instant`]: the identity (no operator of the index moves these
/// coordinates).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Unchanged;

impl PartialOrder for Instant {
    fn less_equal(&self, other: &Self) -> bool {
        self <= other
    }
}

impl TotalOrder for Instant {}

impl Timestamp for Instant {
    type Summary = Unchanged;
    fn minimum() -> Self {
        Instant(Value::Null)
    }
}

impl PartialOrder for Unchanged {
    fn less_equal(&self, _: &Self) -> bool {
        true
    }
}

impl PathSummary<Instant> for Unchanged {
    fn results_in(&self, src: &Instant) -> Option<Instant> {
        Some(src.clone())
    }
    fn followed_by(&self, _: &Self) -> Option<Self> {
        Some(Unchanged)
    }
}

impl Lattice for Instant {
    fn join(&self, other: &Self) -> Self {
        self.max(other).clone()
    }
    fn meet(&self, other: &Self) -> Self {
        self.min(other).clone()
    }
}

/// A `(system, business)` point, in the product order.
pub type AsOfPoint = Product<Instant, Instant>;

/// The index's time: the commit, then the `(system, business)` point.
pub type AsOfTime = Product<u64, AsOfPoint>;

/// The index's trace: key columns → image, at [`AsOfTime`]s.
pub type AsOfTrace = TraceAgent<ValSpine<Row, Row, AsOfTime, isize>>;

/// Builds an [`AsOfIndex`] from a collection of flat SCD2 or bitemporal rows timestamped by
/// commit.
///
/// Checks SPEC T8's point-in-time table on its step-4 rows:
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::operators::AsOf;
/// use scdflow::plan::AsOfLayout;
/// use scdflow::temporal::parse_timestamp;
/// use scdflow::value::{Row, Value};
///
/// let t = |hms: &str| Value::Timestamp(parse_timestamp(&format!("2025-07-18 {hms}")).unwrap());
/// let open = || Value::Null;
/// let row = |v: &str, b: (Value, Value), s: (Value, Value)| {
///     Row::from([Value::Str("A".into()), Value::Str(v.into()), b.0, b.1, s.0, s.1])
/// };
/// let step4 = vec![
///     row("XFv1", (t("10:01:00"), open()), (t("10:05:00"), t("12:20:00"))),
///     row("XFv1", (t("10:01:00"), t("12:15:43")), (t("12:20:00"), t("12:25:00"))),
///     row("XFv1", (t("10:01:00"), t("12:05:00")), (t("12:25:00"), open())),
///     row("XFv3", (t("12:05:00"), t("12:15:43")), (t("12:25:00"), open())),
///     row("XFv2", (t("12:15:43"), open()), (t("12:20:00"), t("12:30:00"))),
///     row("XFv2", (t("12:15:43"), t("12:30:00")), (t("12:30:00"), open())),
/// ];
/// let layout = AsOfLayout { keys: vec![0], image_len: 2, business: (2, 3), system: Some((4, 5)) };
/// timely::execute_directly(move |worker| {
///     let (mut input, mut index) = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, rows) = scope.new_collection();
///         (input, rows.arrange_as_of(&layout))
///     });
///     for r in step4 {
///         input.insert(r);
///     }
///     input.advance_to(1);
///     input.flush();
///     while !index.is_complete(0) {
///         worker.step();
///     }
///     let mut seen = |s: &str, b: &str| {
///         let rows = index.as_of(Some(&t(s)), &t(b), None).unwrap();
///         rows.iter().map(|r| r.value(1)).collect::<Vec<_>>()
///     };
///     let value = |v: &str| vec![Value::Str(v.into())];
///     assert_eq!(seen("10:06:00", "13:00:00"), value("XFv1"));
///     assert_eq!(seen("12:22:00", "12:10:00"), value("XFv1"));
///     assert_eq!(seen("12:22:00", "13:00:00"), value("XFv2"));
///     assert_eq!(seen("12:26:00", "12:10:00"), value("XFv3"));
///     assert_eq!(seen("12:31:00", "12:40:00"), vec![]); // deleted
///     assert_eq!(seen("12:31:00", "12:20:00"), value("XFv2"));
/// });
/// ```
pub trait AsOf {
    /// The as-of index of these rows, laid out as `layout` says.
    fn arrange_as_of(self, layout: &AsOfLayout) -> AsOfIndex;
    /// As [`AsOf::arrange_as_of`], naming the nested scope and its arrangement.
    fn arrange_as_of_named(self, name: &str, layout: &AsOfLayout) -> AsOfIndex;
}

impl AsOf for VecCollection<'_, u64, Row> {
    fn arrange_as_of(self, layout: &AsOfLayout) -> AsOfIndex {
        self.arrange_as_of_named("AsOf", layout)
    }

    fn arrange_as_of_named(self, name: &str, layout: &AsOfLayout) -> AsOfIndex {
        let layout = layout.clone();
        let trace = self.scope().scoped::<AsOfTime, _, _>(name, |inner| {
            self.explode(move |row| corners(&layout, row))
                .enter_at(inner, |(point, _)| point.clone())
                .map(|(_, entry)| entry)
                .arrange_by_key_named(&format!("Arrange: {name}"))
                .trace
        });
        AsOfIndex {
            trace,
            retention: Product::new(Instant::minimum(), Instant::minimum()),
        }
    }
}

/// The four corner updates of a row (fewer with open ends), as `((point, (key, image)), sign)`.
fn corners(layout: &AsOfLayout, row: Row) -> Vec<((AsOfPoint, (Row, Row)), isize)> {
    let values = row.unpack();
    let (b1, b2) = (values[layout.business.0], values[layout.business.1]);
    // SCD2 rows are believed from the beginning of system time, forever.
    let (s1, s2) = match layout.system {
        Some((start, end)) => (values[start], values[end]),
        None => (Datum::Null, Datum::Null),
    };
    let at = |s: Datum, b: Datum| Product::new(Instant(s.to_value()), Instant(b.to_value()));
    let mut points = vec![(at(s1, b1), 1)];
    if !b2.is_null() {
        points.push((at(s1, b2), -1));
    }
    if !s2.is_null() {
        points.push((at(s2, b1), -1));
        if !b2.is_null() {
            points.push((at(s2, b2), 1));
        }
    }
    let key = layout.key(&row);
    let image: Row = values[..layout.image_len].iter().copied().collect();
    let entry = (key, image);
    points
        .into_iter()
        .map(|(point, sign)| ((point, entry.clone()), sign))
        .collect()
}

/// One worker's as-of index: its trace plus the retention it was given.
pub struct AsOfIndex {
    trace: AsOfTrace,
    retention: AsOfPoint,
}

impl AsOfIndex {
    /// Whether every commit up to `commit` is in the trace (its upper has passed `commit` on the
    /// commit coordinate; the other coordinates carry no progress).
    pub fn is_complete(&mut self, commit: u64) -> bool {
        let mut upper = Antichain::new();
        self.trace.read_upper(&mut upper);
        upper.elements().iter().all(|t| t.outer > commit)
    }

    /// The images visible at system time `system` (`None`: the current belief) and business
    /// time `business`, of one key (`key`, in `KEYS` order) or of every key this worker owns;
    /// sorted. Reads every complete commit, then lets the trace compact up to them.
    ///
    /// # Errors
    ///
    /// If the point is before the retention ([`AsOfIndex::set_retention`]) on either axis.
    pub fn as_of(
        &mut self,
        system: Option<&Value>,
        business: &Value,
        key: Option<&Row>,
    ) -> Result<Vec<Row>> {
        let rows = as_of(&mut self.trace, system, business, key);
        self.compact();
        rows
    }

    /// Gives up the history before `system_before` on the system axis and before
    /// `business_before` on the business axis (`None` leaves an axis as it is): afterwards the
    /// trace may merge updates whose times differ only below these points, and reads are
    /// answered only at points at or after both. Retention never moves back; an earlier point
    /// than the current one is ignored.
    pub fn set_retention(&mut self, system_before: Option<Value>, business_before: Option<Value>) {
        let advance = |axis: &mut Instant, to: Option<Value>| {
            if let Some(to) = to.map(Instant) {
                *axis = axis.join(&to);
            }
        };
        advance(&mut self.retention.outer, system_before);
        advance(&mut self.retention.inner, business_before);
        self.compact();
    }

    /// Lets the trace merge every complete commit (physical compaction to the trace's upper)
    /// and forget the distinctions between commits and below the retention (logical compaction
    /// to `Product(frontier commit, retention)`). Reads call it; call it after commits when the
    /// index is not read for a while.
    pub fn compact(&mut self) {
        let mut upper = Antichain::new();
        self.trace.read_upper(&mut upper);
        let commit = upper.elements().iter().map(|t| t.outer).min();
        let logical = Product::new(commit.unwrap_or(u64::MAX), self.retention.clone());
        self.trace
            .set_logical_compaction(Antichain::from_elem(logical).borrow());
        self.trace.set_physical_compaction(upper.borrow());
    }

    /// The underlying trace, e.g. to import it into another dataflow.
    pub fn trace(&mut self) -> &mut AsOfTrace {
        &mut self.trace
    }
}

/// Reads `trace` at the point (`system`, `business`): the images whose accumulated count there
/// is positive, repeated by that count, sorted; `system = None` reads the current belief (after
/// every system time). `key` restricts the read to one key (a seek instead of a scan). Reads
/// every commit the trace holds completely.
///
/// # Errors
///
/// If the point is not at or after the trace's logical compaction frontier, where the
/// accumulation would no longer be exact.
pub fn as_of(
    trace: &mut AsOfTrace,
    system: Option<&Value>,
    business: &Value,
    key: Option<&Row>,
) -> Result<Vec<Row>> {
    let readable = trace
        .get_logical_compaction()
        .iter()
        .any(|f| system.is_none_or(|s| f.inner.outer.0 <= *s) && f.inner.inner.0 <= *business);
    if !readable {
        return Err(Error::new(
            ErrorKind::Validation,
            "as-of point is before the index's retention",
        ));
    }
    let mut upper = Antichain::new();
    trace.read_upper(&mut upper);
    let batches = trace
        .batches_through(upper.borrow())
        .expect("a trace is readable through its own upper");
    let (mut cursor, storage) = cursor_list(batches);
    if let Some(key) = key {
        cursor.seek_key(&storage, key);
    }
    let mut out = Vec::new();
    while let Some(k) = cursor.get_key(&storage) {
        if key.is_some_and(|want| want != k) {
            break;
        }
        while let Some(image) = cursor.get_val(&storage) {
            let mut count = 0isize;
            cursor.map_times(&storage, |t, diff| {
                let point = &t.inner;
                if system.is_none_or(|s| point.outer.0 <= *s) && point.inner.0 <= *business {
                    count += *diff;
                }
            });
            out.extend(std::iter::repeat_n(image, count.max(0) as usize).cloned());
            cursor.step_val(&storage);
        }
        cursor.step_key(&storage);
    }
    out.sort();
    Ok(out)
}

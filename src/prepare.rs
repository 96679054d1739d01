//! Source rows → change events of a flow (SPEC 3.1).
//!
//! Sequence and predicates are evaluated on the raw source row, before column selection. A row
//! whose sequence is NULL, whose key has a NULL (upserts and deletes, D4), whose expressions fail,
//! or whose `COLUMNS TO UPDATE` names an unknown column (D7) is invalid: the caller fails the
//! update or quarantines the row (D3).

use crate::event::{Event, EventKind};
use crate::plan::{CdcFlow, PartialUpdates, Target};
use crate::value::{Datum, Decoded, Row, Schema, Seq};
use serde::{Deserialize, Serialize};

/// Why a row cannot become an event. Ordered, hashable and serializable so that rejected rows
/// can form a differential collection of their own.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct InvalidRow {
    /// The clause or column at fault, e.g. `SEQUENCE BY` or `KEYS (userId)`.
    pub column: String,
    /// What is wrong.
    pub reason: String,
}

impl InvalidRow {
    fn new(column: impl Into<String>, reason: impl Into<String>) -> Self {
        InvalidRow {
            column: column.into(),
            reason: reason.into(),
        }
    }
}

/// A source row as [`to_event`] reads it: its values by position, and rows of some of them.
pub trait ByPosition {
    /// The values, in the source table's column order.
    fn values(&self) -> &[Datum<'_>];
    /// The row of the values at `columns`, in that order.
    fn pick(&self, columns: &[usize]) -> Row;
}

impl ByPosition for [Datum<'_>] {
    fn values(&self) -> &[Datum<'_>] {
        self
    }

    fn pick(&self, columns: &[usize]) -> Row {
        columns.iter().map(|&c| self[c]).collect()
    }
}

/// A packed row's key and image are its values' bytes copied, where the values were encoded
/// again: preparing an event from a row read from a file took 1,763 instructions so, 1,674
/// with the bytes copied (`valgrind --tool=callgrind` over `scdflow run` of 200,000 SCD1
/// events in 20 files, all threads).
impl ByPosition for Decoded<'_, '_> {
    fn values(&self) -> &[Datum<'_>] {
        self.datums()
    }

    fn pick(&self, columns: &[usize]) -> Row {
        self.project(columns)
    }
}

/// Turns one source row of `flow` (in the source table's `schema`) into an event for
/// `target`.
pub fn to_event<R: ByPosition + ?Sized>(
    flow: &CdcFlow,
    target: &Target,
    schema: &Schema,
    source: &R,
) -> Result<Event, InvalidRow> {
    let row = source.values();
    let seq = flow
        .sequence
        .eval(row)
        .map_err(|e| InvalidRow::new("SEQUENCE BY", e))?;
    if seq.is_null() {
        return Err(InvalidRow::new("SEQUENCE BY", "the sequence value is NULL"));
    }
    let seq = Seq::from(seq);
    let system = match &flow.system_sequence {
        None => None,
        Some(expr) => {
            let system = expr
                .eval(row)
                .map_err(|e| InvalidRow::new("SYSTEM SEQUENCE BY", e))?;
            if system.is_null() {
                return Err(InvalidRow::new(
                    "SYSTEM SEQUENCE BY",
                    "the system sequence value is NULL",
                ));
            }
            Some(Seq::from(system))
        }
    };
    if holds(flow.truncate_when.as_ref(), row, "APPLY AS TRUNCATE WHEN")? {
        return Ok(Event {
            seq,
            kind: EventKind::Truncate,
            key: Row::new(),
            image: Row::new(),
            authored: None,
            system: None,
        });
    }
    if let Some(i) = flow.keys.iter().position(|&k| row[k].is_null()) {
        let name = &schema.columns[flow.keys[i]].name;
        return Err(InvalidRow::new(
            format!("KEYS ({name})"),
            "the key value is NULL",
        ));
    }
    if holds(flow.delete_when.as_ref(), row, "APPLY AS DELETE WHEN")? {
        return Ok(Event {
            seq,
            kind: EventKind::Delete,
            key: source.pick(&flow.keys),
            image: Row::new(),
            authored: None,
            system,
        });
    }
    let authored = authored(flow, target, row)?;
    Ok(Event {
        seq,
        kind: EventKind::Upsert,
        key: source.pick(&flow.keys),
        image: source.pick(&flow.columns),
        authored,
        system,
    })
}

fn holds(
    predicate: Option<&crate::expr::Expr>,
    row: &[Datum<'_>],
    clause: &str,
) -> Result<bool, InvalidRow> {
    match predicate {
        None => Ok(false),
        Some(p) => p
            .eval_predicate(row)
            .map_err(|e| InvalidRow::new(clause, e)),
    }
}

/// Which image columns an upsert sets (SPEC 3.5, D6, D7); keys are always set.
fn authored(
    flow: &CdcFlow,
    target: &Target,
    row: &[Datum<'_>],
) -> Result<Option<Box<[bool]>>, InvalidRow> {
    let mut mask: Vec<bool> = match &flow.partial {
        PartialUpdates::Off => return Ok(None),
        PartialUpdates::IgnoreNull(ignore) => ignore
            .iter()
            .zip(&flow.columns)
            .map(|(ignored, &c)| !(*ignored && row[c].is_null()))
            .collect(),
        PartialUpdates::ColumnsToUpdate(c) => listed_columns(row[*c], target)?,
    };
    for &k in &target.keys {
        mask[k] = true;
    }
    Ok(Some(mask.into_boxed_slice()))
}

fn listed_columns(list: Datum<'_>, target: &Target) -> Result<Vec<bool>, InvalidRow> {
    let names: Vec<&str> = match list {
        Datum::Null => Vec::new(),
        Datum::Str(s) => s
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect(),
        Datum::Array(items) => items
            .iter()
            .filter_map(|v| match v {
                Datum::Str(s) => Some(s),
                _ => None,
            })
            .collect(),
        other => {
            return Err(InvalidRow::new(
                "COLUMNS TO UPDATE",
                format!(
                    "expected a list of column names, found {:?}",
                    other.to_value()
                ),
            ))
        }
    };
    let image = &target.schema.columns[..target.image_len];
    let mut mask = vec![false; target.image_len];
    for name in names {
        match image.iter().position(|c| c.name.eq_ignore_ascii_case(name)) {
            Some(i) => mask[i] = true,
            None => {
                let hint = crate::value::closest(name, image.iter().map(|c| c.name.as_str()))
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                return Err(InvalidRow::new(
                    "COLUMNS TO UPDATE",
                    format!("unknown column `{name}` in target `{}`{hint}", target.name),
                ));
            }
        }
    }
    Ok(mask)
}

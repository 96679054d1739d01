//! SCD type 1 reference: one row per live key (see the rules in the [module docs](super)).

use super::{authors, by_key, sort_rows, truncate_seq};
use crate::event::{Event, EventKind};
use crate::plan::Target;
use crate::value::{Row, Seq, Value};
use std::collections::BTreeSet;

/// The SCD1 table of `target` after `events`: image rows (`target.image_len` values), sorted by
/// the key columns, then the whole row.
pub fn scd1(target: &Target, events: &[Event]) -> Vec<Row> {
    let t_star = truncate_seq(events);
    let mut rows: Vec<Row> = by_key(events)
        .values()
        .filter_map(|group| {
            if target.partial {
                partial_row(target, group, t_star)
            } else {
                whole_row(group, t_star)
            }
        })
        .collect();
    sort_rows(target, &mut rows, &[]);
    rows
}

/// Whole images: the key's winner by `(seq, tie rank)`, if it is an upsert newer than `t*`.
fn whole_row(group: &BTreeSet<&Event>, t_star: Option<&Seq>) -> Option<Row> {
    let winner = group.iter().max_by_key(|e| (&e.seq, e.tie_rank()))?;
    let after_truncate = t_star.is_none_or(|t| winner.seq > *t);
    (winner.kind == EventKind::Upsert && after_truncate).then(|| winner.image.clone())
}

/// Partial images (D6): each column from the latest upsert after the last reset that authors it.
fn partial_row(target: &Target, group: &BTreeSet<&Event>, t_star: Option<&Seq>) -> Option<Row> {
    let last_delete = group
        .iter()
        .filter(|e| e.kind == EventKind::Delete)
        .map(|e| &e.seq)
        .max();
    let reset = last_delete.max(t_star);
    let live: Vec<&Event> = group
        .iter()
        .copied()
        .filter(|e| e.kind == EventKind::Upsert && reset.is_none_or(|r| e.seq > *r))
        .collect();
    if live.is_empty() {
        return None;
    }
    let row = (0..target.image_len)
        .map(|i| {
            live.iter()
                .filter(|e| authors(target, e, i))
                .map(|e| (&e.seq, e.image.value(i)))
                .max()
                .map_or(Value::Null, |(_, v)| v)
        })
        .collect();
    Some(row)
}

//! SCD type 2 reference: one row per version of each key (see the rules in the
//! [module docs](super)).

use super::{authors, by_key, sort_rows, tie_winners, tracked, version};
use crate::event::{Event, EventKind};
use crate::plan::Target;
use crate::value::{Row, Value};

/// The SCD2 table of `target` after `events`: image rows followed by `__START_AT` and
/// `__END_AT` (NULL for the open version), sorted by the key columns, then `__START_AT`.
pub fn scd2(target: &Target, events: &[Event]) -> Vec<Row> {
    let mut rows = Vec::new();
    for group in by_key(events).values() {
        history(target, &tie_winners(group), &mut rows);
    }
    sort_rows(target, &mut rows, &[target.image_len]);
    rows
}

/// Folds one key's surviving events (ascending by sequence) into versions, appended to `out`.
fn history(target: &Target, events: &[&Event], out: &mut Vec<Row>) {
    let nulls = Row::nulls(target.image_len);
    let mut folded: Row = nulls.clone();
    let mut open: Option<(Value, Row)> = None;
    for e in events {
        match e.kind {
            EventKind::Upsert => {
                let new = overlay(target, &folded, e);
                open = match open.take() {
                    None => Some((e.seq.to_value().into_owned(), new.clone())),
                    Some((start, image)) if tracked(target, &image) == tracked(target, &new) => {
                        Some((start, new.clone()))
                    }
                    Some((start, image)) => {
                        let seq = e.seq.to_value().into_owned();
                        out.push(version(image, start, seq.clone()));
                        Some((seq, new.clone()))
                    }
                };
                folded = new;
            }
            EventKind::Delete => {
                if let Some((start, image)) = open.take() {
                    out.push(version(image, start, e.seq.to_value().into_owned()));
                }
                folded = nulls.clone();
            }
            EventKind::Truncate => {}
        }
    }
    if let Some((start, image)) = open {
        out.push(version(image, start, Value::Null));
    }
}

/// The key's full image after upsert `e`: `folded` overlaid with the columns `e` authors.
fn overlay(target: &Target, folded: &Row, e: &Event) -> Row {
    if !target.partial {
        return e.image.clone();
    }
    (0..target.image_len)
        .map(|i| {
            if authors(target, e, i) {
                e.image.value(i)
            } else {
                folded.value(i)
            }
        })
        .collect()
}

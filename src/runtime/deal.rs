//! Dealing one commit's input to this process's workers.
//!
//! Which worker feeds an event does not matter (the operators exchange events by key), so each
//! worker gets a contiguous slice: with one worker a commit's vectors move as they are, with
//! more each is split once instead of being pushed event by event. Every worker is told each
//! snapshot version, so that it deletes the keys it owns that the snapshot no longer has.
//! A REPLACE WHERE target's rows are keyed by the whole row and its occurrence number among
//! the equal rows of the snapshot, so that equal rows stay apart; when its condition does not
//! read the clock, only the rows it holds for are dealt.

use super::CommitEvents;
use crate::event::Event;
use crate::plan::{ReplaceWhere, Target};
use crate::value::{Row, Value};
use std::collections::HashMap;

/// One worker's input for one target in one commit.
#[derive(Debug, Default)]
pub(super) struct TargetShare {
    pub(super) events: Vec<Event>,
    pub(super) snapshot: Vec<(Row, Row)>,
    pub(super) version: Option<i64>,
    pub(super) rows: Vec<Row>,
}

/// A commit's input dealt to `workers` workers: per worker, per target.
pub(super) fn deal(
    commit: CommitEvents,
    targets: &[Target],
    workers: usize,
) -> Vec<Vec<TargetShare>> {
    let mut shares: Vec<Vec<TargetShare>> = (0..workers)
        .map(|_| targets.iter().map(|_| TargetShare::default()).collect())
        .collect();
    for (t, events) in commit.events.into_iter().enumerate().take(targets.len()) {
        for (w, part) in split(events, workers).into_iter().enumerate() {
            shares[w][t].events = part;
        }
    }
    for (t, rows) in commit.rows.into_iter().enumerate().take(targets.len()) {
        for (w, part) in split(rows, workers).into_iter().enumerate() {
            shares[w][t].rows = part;
        }
    }
    for (t, snapshot) in commit.snapshots.into_iter().enumerate().take(targets.len()) {
        let Some(snapshot) = snapshot else { continue };
        let keyed = match &targets[t].replace_where {
            Some(condition) => occurrence_keyed(in_slice(condition, snapshot.rows)),
            None => {
                let keys = &targets[t].keys;
                let rows = snapshot.rows.into_iter();
                rows.map(|row| (row.project(keys), row)).collect()
            }
        };
        for (w, part) in split(keyed, workers).into_iter().enumerate() {
            shares[w][t].snapshot = part;
            shares[w][t].version = Some(snapshot.version);
        }
    }
    shares
}

/// The rows a REPLACE WHERE condition may hold for: [`crate::engine::SnapshotState`] skips
/// the others, so they are dropped before they are keyed and exchanged. A condition that reads
/// the clock keeps every row: in a cluster the instant the workers agree on may be later than
/// this process's.
fn in_slice(condition: &ReplaceWhere, rows: Vec<Row>) -> Vec<Row> {
    let Some(condition) = condition.timeless() else {
        return rows;
    };
    rows.into_iter()
        .filter(|row| condition.eval_predicate(&row.unpack()).unwrap_or(false))
        .collect()
}

/// Each row keyed by itself followed by how many equal rows came before it.
fn occurrence_keyed(rows: Vec<Row>) -> Vec<(Row, Row)> {
    let mut seen: HashMap<Row, i64> = HashMap::new();
    rows.into_iter()
        .map(|row| {
            let n = seen.entry(row.clone()).or_insert(0);
            let mut key = row.clone();
            key.push(Value::Int(*n));
            *n += 1;
            (key, row)
        })
        .collect()
}

/// `items` cut into `parts` contiguous parts of nearly equal length.
fn split<T>(mut items: Vec<T>, parts: usize) -> Vec<Vec<T>> {
    let mut out = Vec::with_capacity(parts);
    for p in (1..parts).rev() {
        let keep = items.len() - items.len() / (p + 1);
        out.push(items.split_off(keep));
    }
    out.push(items);
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn parts_are_contiguous_and_cover_everything() {
        for n in 0..20usize {
            for parts in 1..5 {
                let cut = split((0..n).collect::<Vec<_>>(), parts);
                assert_eq!(cut.len(), parts);
                assert_eq!(cut.concat(), (0..n).collect::<Vec<_>>());
                let (min, max) = (
                    cut.iter().map(Vec::len).min().unwrap(),
                    cut.iter().map(Vec::len).max().unwrap(),
                );
                assert!(max - min <= 1, "n {n}, parts {parts}: {cut:?}");
            }
        }
    }
}

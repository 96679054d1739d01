//! What a run feeds: the events of an AUTO CDC flow, or the full snapshots of a snapshot flow.
//!
//! A snapshot flow's source is a table that the workload's events change in arrival order: an
//! upsert sets the key's row (a partial one only its authored columns), a delete removes it.
//! Commit `i` hands over a full snapshot of that table after commit `i`'s events, at version
//! `i + 1`. Only each commit's changes are held ([`Changes`]); a share's snapshot is copied from
//! its [`Table`] when the commit is handed over, before the timed span starts in a closed loop
//! (an open loop times from the due time, so there the copy counts). The displacement D
//! changes which keys a snapshot changes, not the work of diffing it: every snapshot costs
//! O(rows of the table).

use super::typed::TypedChange;
use crate::engine::KeyMap;
use crate::event::{Event, EventKind};
use crate::runtime::CommitEvents;
use crate::value::Row;
use std::collections::hash_map::Entry;

/// One commit's changes to a snapshot flow's source table: `(key, Some(row))` sets the key's
/// row, `(key, None)` removes it.
pub type Changes = Vec<(Row, Option<Row>)>;

/// The commits of one run.
#[derive(Clone, Debug)]
pub enum Commits {
    /// An AUTO CDC flow's events, per commit in arrival order.
    Events(Vec<Vec<Event>>),
    /// A snapshot flow's source changes, per commit.
    Snapshots(Vec<Changes>),
}

impl Commits {
    /// The source changes of a snapshot flow whose source table gets `commits`' events (of the
    /// first target, as [`crate::gen::events`] makes them: truncates are not SCD2 events),
    /// with partial upserts folded onto the key's row (columns never set are NULL).
    pub fn snapshots(commits: Vec<CommitEvents>, image_len: usize) -> Commits {
        let mut rows: KeyMap<Row> = KeyMap::default();
        let changes = first_target(commits)
            .into_iter()
            .map(|events| {
                events
                    .into_iter()
                    .filter_map(|e| match e.kind {
                        EventKind::Upsert => {
                            let row =
                                fold(&mut rows, e.key.clone(), e.image, e.authored, image_len);
                            Some((e.key, Some(row)))
                        }
                        EventKind::Delete => {
                            rows.remove(&e.key);
                            Some((e.key, None))
                        }
                        EventKind::Truncate => None,
                    })
                    .collect()
            })
            .collect();
        Commits::Snapshots(changes)
    }

    /// The number of commits.
    pub fn len(&self) -> usize {
        match self {
            Commits::Events(c) => c.len(),
            Commits::Snapshots(c) => c.len(),
        }
    }

    /// Whether there are no commits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The workload events behind each commit (a snapshot carries the whole table, but
    /// throughput counts the events that changed it).
    pub fn sizes(&self) -> Vec<u64> {
        match self {
            Commits::Events(c) => c.iter().map(|e| e.len() as u64).collect(),
            Commits::Snapshots(c) => c.iter().map(|e| e.len() as u64).collect(),
        }
    }
}

impl From<Vec<CommitEvents>> for Commits {
    /// The events of each commit's first target.
    fn from(commits: Vec<CommitEvents>) -> Commits {
        Commits::Events(first_target(commits))
    }
}

fn first_target(commits: Vec<CommitEvents>) -> Vec<Vec<Event>> {
    commits
        .into_iter()
        .map(|c| c.events.into_iter().next().unwrap_or_default())
        .collect()
}

/// The key's row after an upsert of `image`: the image itself, or with `authored`, the
/// authored columns over the key's previous row.
fn fold(
    rows: &mut KeyMap<Row>,
    key: Row,
    image: Row,
    authored: Option<Box<[bool]>>,
    image_len: usize,
) -> Row {
    let row = match rows.entry(key) {
        Entry::Occupied(o) => o.into_mut(),
        Entry::Vacant(v) => v.insert(Row::nulls(image_len)),
    };
    match authored {
        None => *row = image,
        Some(mask) => {
            let folded: Row = row
                .iter()
                .zip(&image)
                .zip(mask)
                .map(|((old, new), set)| if set { new } else { old })
                .collect();
            *row = folded;
        }
    }
    row.clone()
}

/// A snapshot flow's source table, or one worker's share of it.
#[derive(Debug, Default)]
pub(super) struct Table {
    rows: KeyMap<Row>,
}

impl Table {
    pub(super) fn apply(&mut self, changes: Changes) {
        for (key, row) in changes {
            match row {
                Some(row) => {
                    self.rows.insert(key, row);
                }
                None => {
                    self.rows.remove(&key);
                }
            }
        }
    }

    /// The table's rows.
    pub(super) fn rows(&self) -> Vec<Row> {
        self.rows.values().cloned().collect()
    }

    fn snapshot(&self) -> Vec<(Row, Row)> {
        self.rows
            .iter()
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect()
    }
}

/// What one commit hands to one worker's inputs.
pub(super) enum Batch {
    /// Events.
    Events(Vec<Event>),
    /// The worker's share of a full snapshot, as `(key, row)`.
    Snapshot(Vec<(Row, Row)>),
    /// Changes of the typed instance.
    Typed(Vec<TypedChange>),
}

/// One worker's share of a run's commits.
pub(super) enum Share {
    /// Its events of each commit.
    Events(std::vec::IntoIter<Vec<Event>>),
    /// The changes to its keys, and its share of the source table.
    Snapshots(std::vec::IntoIter<Changes>, Table),
    /// Its changes of each commit, typed ([`super::typed`]).
    Typed(std::vec::IntoIter<Vec<TypedChange>>),
}

impl Share {
    /// The next commit's batch (for a snapshot share, applying the commit's changes first).
    pub(super) fn next(&mut self) -> Option<Batch> {
        match self {
            Share::Events(commits) => commits.next().map(Batch::Events),
            Share::Typed(commits) => commits.next().map(Batch::Typed),
            Share::Snapshots(commits, table) => {
                table.apply(commits.next()?);
                Some(Batch::Snapshot(table.snapshot()))
            }
        }
    }
}

/// Deals `commits` to `workers` shares: events round-robin (as the runtime deals them), a
/// snapshot's keys each to the share that first saw it (a share owns its rows, as a reader
/// owns its file's).
pub(super) fn deal(commits: Commits, workers: usize) -> Vec<Share> {
    let workers = workers.max(1);
    match commits {
        Commits::Events(commits) => split(commits, workers, |i, _| i % workers)
            .into_iter()
            .map(|s| Share::Events(s.into_iter()))
            .collect(),
        Commits::Snapshots(commits) => {
            let mut owner: KeyMap<usize> = KeyMap::default();
            let owner_of = |_, (key, _): &(Row, Option<Row>)| {
                let next = owner.len() % workers;
                *owner.entry(key.clone()).or_insert(next)
            };
            split(commits, workers, owner_of)
                .into_iter()
                .map(|s| Share::Snapshots(s.into_iter(), Table::default()))
                .collect()
        }
    }
}

/// Splits every commit among `workers` shares: item `i` of a commit goes to `share(i, item)`.
pub(super) fn split<T>(
    commits: Vec<Vec<T>>,
    workers: usize,
    mut share: impl FnMut(usize, &T) -> usize,
) -> Vec<Vec<Vec<T>>> {
    let mut shares: Vec<Vec<Vec<T>>> = (0..workers)
        .map(|_| Vec::with_capacity(commits.len()))
        .collect();
    for commit in commits {
        for s in &mut shares {
            s.push(Vec::with_capacity(commit.len() / workers + 1));
        }
        for (i, item) in commit.into_iter().enumerate() {
            let w = share(i, &item);
            shares[w].last_mut().expect("pushed above").push(item);
        }
    }
    shares
}

//! AUTO CDC FROM SNAPSHOT reference: full snapshots diffed against the current state, one
//! version at a time (see the rules in the [module docs](super)).

use super::{sort_rows, tracked};
use crate::plan::{ScdType, Target};
use crate::value::{Row, Value};
use std::collections::BTreeMap;
use std::fmt;

/// Why a sequence of snapshots cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotError {
    /// Snapshot `version` holds two rows with key `key` (SPEC 3.7, D12): the update fails.
    DuplicateKey {
        /// The version of the offending snapshot.
        version: i64,
        /// The repeated key, in `KEYS` order.
        key: Row,
    },
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::DuplicateKey { version, key } => {
                write!(
                    f,
                    "snapshot version {version} has two rows with key {key:?}"
                )
            }
        }
    }
}

impl std::error::Error for SnapshotError {}

/// The result of [`snapshots_with_skips`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotOutcome {
    /// The target's table, laid out and sorted as [`snapshots`] returns it.
    pub rows: Vec<Row>,
    /// How many snapshots were skipped because their version was `<=` the last applied one
    /// (`num_skipped_snapshots`, D12).
    pub skipped: u64,
}

/// The table of snapshot target `target` after applying `snapshots` in the given (arrival)
/// order. Each entry is `(version, rows)` with rows in the image layout. SCD1 rows are images;
/// SCD2 rows are images followed by `__START_AT` and `__END_AT` (NULL for the current version).
/// Sorted by the key columns, then `__START_AT` (SCD2), then the whole row.
pub fn snapshots(
    target: &Target,
    snapshots: &[(i64, Vec<Row>)],
) -> Result<Vec<Row>, SnapshotError> {
    snapshots_with_skips(target, snapshots).map(|outcome| outcome.rows)
}

/// [`snapshots`], also counting the snapshots skipped for a stale version.
pub fn snapshots_with_skips(
    target: &Target,
    snapshots: &[(i64, Vec<Row>)],
) -> Result<SnapshotOutcome, SnapshotError> {
    let mut state = State::default();
    let mut last: Option<i64> = None;
    let mut skipped = 0;
    for (version, rows) in snapshots {
        if last.is_some_and(|l| *version <= l) {
            skipped += 1;
            continue;
        }
        state.apply(target, *version, &by_key(target, *version, rows)?);
        last = Some(*version);
    }
    Ok(SnapshotOutcome {
        rows: state.table(target),
        skipped,
    })
}

/// The target between snapshots.
#[derive(Default)]
struct State {
    /// Per live key: the start version and image of its current row (the start is unused for
    /// SCD1).
    current: BTreeMap<Row, (i64, Row)>,
    /// SCD2: the closed versions, as output rows.
    closed: Vec<Row>,
}

impl State {
    /// Diffs snapshot `version` (keyed by [`by_key`]) against the current rows (SPEC 3.7).
    fn apply(&mut self, target: &Target, version: i64, snapshot: &BTreeMap<Row, &Row>) {
        let before = std::mem::take(&mut self.current);
        for (key, (start, old)) in &before {
            if !snapshot.contains_key(key) && target.scd == ScdType::Type2 {
                self.closed.push(super::version(
                    old.clone(),
                    Value::Int(*start),
                    Value::Int(version),
                ));
            }
        }
        for (key, &image) in snapshot {
            let next = self.update(target, version, before.get(key), image);
            self.current.insert(key.clone(), next);
        }
    }

    /// The current row of a key that snapshot `version` holds with `image`, given its current
    /// row before the snapshot. SCD1 overwrites; SCD2 overwrites in place (keeping the start)
    /// unless a tracked column changed, in which case the old version is closed at `version`.
    fn update(
        &mut self,
        target: &Target,
        version: i64,
        current: Option<&(i64, Row)>,
        image: &Row,
    ) -> (i64, Row) {
        let Some((start, old)) = current else {
            return (version, image.clone());
        };
        let in_place =
            target.scd == ScdType::Type1 || tracked(target, old) == tracked(target, image);
        if !in_place {
            self.closed.push(super::version(
                old.clone(),
                Value::Int(*start),
                Value::Int(version),
            ));
            return (version, image.clone());
        }
        (*start, image.clone())
    }

    /// The output table: SCD1 images, or SCD2 closed versions plus the open ones.
    fn table(self, target: &Target) -> Vec<Row> {
        // Snapshot targets are SCD1 or SCD2, never bitemporal (SPEC 2.5).
        let mut rows: Vec<Row> = if target.scd == ScdType::Type1 {
            self.current.into_values().map(|(_, image)| image).collect()
        } else {
            let open = self.current.into_values();
            let open =
                open.map(|(start, image)| super::version(image, Value::Int(start), Value::Null));
            self.closed.into_iter().chain(open).collect()
        };
        let then: &[usize] = if target.scd == ScdType::Type1 {
            &[]
        } else {
            &[target.image_len]
        };
        sort_rows(target, &mut rows, then);
        rows
    }
}

/// A snapshot's rows by key; two rows with one key (even identical rows) are an error.
fn by_key<'a>(
    target: &Target,
    version: i64,
    rows: &'a [Row],
) -> Result<BTreeMap<Row, &'a Row>, SnapshotError> {
    let mut keyed = BTreeMap::new();
    for row in rows {
        let key: Row = row.project(&target.keys);
        if keyed.contains_key(&key) {
            return Err(SnapshotError::DuplicateKey { version, key });
        }
        keyed.insert(key, row);
    }
    Ok(keyed)
}

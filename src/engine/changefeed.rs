//! A target's change data feed, derived from its differential updates (D14).
//!
//! Within one commit, a row retracted and a row inserted with the same identity (keys for SCD1;
//! keys and `__START_AT` for SCD2; keys, `__START_AT` and `__SYSTEM_START_AT` for bitemporal
//! targets) form an `update_preimage` / `update_postimage` pair; other
//! insertions are `insert`s and other retractions `delete`s. Rows are ordered by commit, then
//! identity, then change type, so the feed is the same for any number of workers.

use crate::plan::{ScdType, Target, TargetKind};
use crate::value::{DataType, Row, Schema};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The kind of a change-feed row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ChangeType {
    /// The row before an update.
    UpdatePreimage,
    /// The row after an update.
    UpdatePostimage,
    /// A removed row.
    Delete,
    /// A new row.
    Insert,
}

impl ChangeType {
    /// The `_change_type` text.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeType::UpdatePreimage => "update_preimage",
            ChangeType::UpdatePostimage => "update_postimage",
            ChangeType::Delete => "delete",
            ChangeType::Insert => "insert",
        }
    }

    /// How the change counts in a flow's metrics (D13): `(upserted, deleted)` rows.
    pub fn counts(self) -> (u64, u64) {
        match self {
            ChangeType::Insert | ChangeType::UpdatePostimage => (1, 0),
            ChangeType::Delete => (0, 1),
            ChangeType::UpdatePreimage => (0, 0),
        }
    }
}

/// One change: the target row, its kind and its commit version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Commit version.
    pub version: u64,
    /// Kind of change.
    pub kind: ChangeType,
    /// The target row.
    pub row: Row,
}

/// The schema of a target's change feed: the target's columns, then `_change_type`,
/// `_commit_version`, `_commit_timestamp`.
pub fn schema(target: &Target) -> Schema {
    let mut schema = target.schema.clone();
    schema.columns.extend(
        Schema::new([
            ("_change_type".to_string(), DataType::String),
            ("_commit_version".to_string(), DataType::BigInt),
            ("_commit_timestamp".to_string(), DataType::Timestamp),
        ])
        .columns,
    );
    schema
}

/// The identity of a target's rows: its keys, for SCD2 its `__START_AT`, and for bitemporal
/// targets `__START_AT` and `__SYSTEM_START_AT` (D14).
/// REPLACE USING rows have no identity beyond themselves (a key holds many rows), so their
/// changes are inserts and deletes only.
pub fn identity(target: &Target) -> impl Fn(&Row) -> Row + Clone + 'static {
    let keys = match target.kind {
        TargetKind::ReplaceUsing { .. } => (0..target.image_len).collect(),
        _ => target.keys.clone(),
    };
    let starts = interval_starts(target);
    let columns: Vec<usize> = keys.into_iter().chain(starts).collect();
    move |row: &Row| row.project(&columns)
}

/// Positions of the interval starts: `__START_AT` (SCD2 and bitemporal), then
/// `__SYSTEM_START_AT` (bitemporal).
pub fn interval_starts(target: &Target) -> Vec<usize> {
    match target.scd {
        ScdType::Type1 => Vec::new(),
        ScdType::Type2 => vec![target.image_len],
        ScdType::Bitemporal => vec![target.image_len, target.image_len + 2],
    }
}

/// Labels the consolidated updates of one commit, in feed order (by identity, then kind). The
/// rows are moved, or borrowed when `R` is `&Row`. One sort of the updates by identity (each
/// identity computed once) groups them; a group's retractions pair with its insertions.
pub fn label<R, F, I>(identity: F, updates: I) -> Vec<(ChangeType, R)>
where
    R: std::borrow::Borrow<Row> + Ord + Clone,
    F: Fn(&Row) -> Row,
    I: IntoIterator<Item = (R, isize)>,
{
    let mut keyed: Vec<(Row, isize, R)> = updates
        .into_iter()
        .map(|(row, diff)| (identity(row.borrow()), diff, row))
        .collect();
    // Within an identity: retractions first, each side sorted by row.
    keyed.sort_unstable_by(|a, b| {
        (a.0.cmp(&b.0))
            .then_with(|| (a.1 > 0).cmp(&(b.1 > 0)))
            .then_with(|| a.2.cmp(&b.2))
    });
    let mut feed = Vec::with_capacity(keyed.len());
    let mut rest = keyed.into_iter().peekable();
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    while let Some((id, diff, row)) = rest.next() {
        let side = if diff < 0 { &mut removed } else { &mut added };
        side.extend(std::iter::repeat_n(row, diff.unsigned_abs()));
        if rest.peek().is_some_and(|next| next.0 == id) {
            continue;
        }
        let pairs = removed.len().min(added.len());
        for (pre, post) in removed.drain(..pairs).zip(added.drain(..pairs)) {
            feed.push((ChangeType::UpdatePreimage, pre));
            feed.push((ChangeType::UpdatePostimage, post));
        }
        feed.extend(removed.drain(..).map(|r| (ChangeType::Delete, r)));
        feed.extend(added.drain(..).map(|r| (ChangeType::Insert, r)));
    }
    feed
}

/// The change-feed rows of target `t`'s consolidated updates of one commit, in feed order.
pub fn commit_changes(target: &Target, updates: Vec<(Row, isize)>) -> Vec<(ChangeType, Row)> {
    label(identity(target), updates)
}

/// How many change-feed rows one commit's consolidated updates make: `(upserted, deleted)`
/// (insert or update_postimage, delete).
pub fn counts(target: &Target, updates: &[(Row, isize)]) -> (u64, u64) {
    label(identity(target), updates.iter().map(|(r, d)| (r, *d)))
        .into_iter()
        .map(|(kind, _)| kind.counts())
        .fold((0, 0), |(u, d), (du, dd)| (u + du, d + dd))
}

/// The changes of consolidated `updates` (`(row, version, diff)`), in feed order.
pub fn changes(target: &Target, updates: &[(Row, u64, isize)]) -> Vec<Change> {
    let mut by_version: BTreeMap<u64, Vec<(&Row, isize)>> = BTreeMap::new();
    for (row, version, diff) in updates {
        by_version.entry(*version).or_default().push((row, *diff));
    }
    let identity = identity(target);
    by_version
        .into_iter()
        .flat_map(|(version, updates)| {
            label(&identity, updates)
                .into_iter()
                .map(move |(kind, row)| Change {
                    version,
                    kind,
                    row: row.clone(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Target;
    use crate::value::{Row, Value};

    fn target(scd: ScdType) -> Target {
        let mut cols = vec![
            ("id".to_string(), DataType::Int),
            ("v".to_string(), DataType::String),
        ];
        if scd == ScdType::Type2 {
            cols.push(("__START_AT".to_string(), DataType::Int));
            cols.push(("__END_AT".to_string(), DataType::Int));
        }
        Target {
            kind: TargetKind::AutoCdc,
            name: "t".into(),
            schema: Schema::new(cols),
            image_len: 2,
            keys: vec![0],
            scd,
            sequence_type: DataType::Int,
            system_sequence_type: None,
            tracked: vec![true, true],
            partial: false,
            tombstone_gc_seconds: 0,
            line: 1,
        }
    }

    #[test]
    fn scd1_update_is_a_pre_post_pair() {
        let t = target(ScdType::Type1);
        let a = Row::from(vec![Value::Int(1), Value::Str("a".into())]);
        let b = Row::from(vec![Value::Int(1), Value::Str("b".into())]);
        let c = Row::from(vec![Value::Int(2), Value::Str("c".into())]);
        let feed = changes(
            &t,
            &[
                (a.clone(), 1, 1),
                (a.clone(), 2, -1),
                (b.clone(), 2, 1),
                (c.clone(), 2, 1),
            ],
        );
        let kinds: Vec<_> = feed.iter().map(|c| (c.version, c.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                (1, ChangeType::Insert),
                (2, ChangeType::UpdatePreimage),
                (2, ChangeType::UpdatePostimage),
                (2, ChangeType::Insert),
            ]
        );
    }

    #[test]
    fn scd2_close_and_open_is_update_plus_insert() {
        let t = target(ScdType::Type2);
        let r = |v: &str, s: i64, e: Option<i64>| {
            Row::from(vec![
                Value::Int(1),
                Value::Str(v.into()),
                Value::Int(s),
                e.map_or(Value::Null, Value::Int),
            ])
        };
        let feed = changes(
            &t,
            &[
                (r("a", 1, None), 1, -1),
                (r("a", 1, Some(2)), 1, 1),
                (r("b", 2, None), 1, 1),
            ],
        );
        let kinds: Vec<_> = feed.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            vec![
                ChangeType::UpdatePreimage,
                ChangeType::UpdatePostimage,
                ChangeType::Insert
            ]
        );
    }
}

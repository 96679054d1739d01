//! A target's change data feed, derived from its differential updates (D14).
//!
//! Within one commit, a row retracted and a row inserted with the same identity (keys for SCD1;
//! keys and `__START_AT` for SCD2; keys, `__START_AT` and `__SYSTEM_START_AT` for bitemporal
//! targets) form an `update_preimage` / `update_postimage` pair; other
//! insertions are `insert`s and other retractions `delete`s. Rows are ordered by commit, then
//! identity, then change type, so the feed is the same for any number of workers.

use crate::plan::{ScdType, Target, TargetKind};
use crate::value::{DataType, Projection, Row, RowRef, Schema, SortKey};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
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

    /// The update the change stands for: a row added (`1`) or removed (`-1`).
    pub fn diff(self) -> isize {
        match self {
            ChangeType::Insert | ChangeType::UpdatePostimage => 1,
            ChangeType::Delete | ChangeType::UpdatePreimage => -1,
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

    /// The metrics' counts of a feed's changes: `(upserted, deleted)` rows
    /// ([`ChangeType::counts`]).
    pub fn tally(kinds: impl IntoIterator<Item = ChangeType>) -> (u64, u64) {
        kinds
            .into_iter()
            .map(ChangeType::counts)
            .fold((0, 0), |(u, d), (du, dd)| (u + du, d + dd))
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
    with_feed_columns(&target.schema)
}

/// How many columns a change data feed adds to its table's ([`with_feed_columns`]).
pub const FEED_COLUMNS: usize = 3;

/// The names of the columns a change data feed adds, which Delta reserves: a table with one
/// of them cannot record its feed.
pub const FEED_COLUMN_NAMES: [&str; FEED_COLUMNS] =
    ["_change_type", "_commit_version", "_commit_timestamp"];

/// `schema`'s columns, then the change data feed's `_change_type`, `_commit_version`,
/// `_commit_timestamp` (Delta's names and types, which every reader of a feed shows).
pub fn with_feed_columns(schema: &Schema) -> Schema {
    let mut schema = schema.clone();
    schema.columns.extend(
        Schema::new(
            FEED_COLUMN_NAMES
                .iter()
                .zip([DataType::String, DataType::BigInt, DataType::Timestamp])
                .map(|(name, ty)| (name.to_string(), ty)),
        )
        .columns,
    );
    schema
}

/// The identity of a target's rows: its keys, for SCD2 its `__START_AT`, and for bitemporal
/// targets `__START_AT` and `__SYSTEM_START_AT` (D14).
/// REPLACE USING rows have no identity beyond themselves (a key holds many rows), so their
/// changes are inserts and deletes only.
pub fn identity(target: &Target) -> Projection {
    let keys = match target.kind {
        TargetKind::ReplaceUsing { .. } => (0..target.image_len).collect(),
        _ => target.keys.clone(),
    };
    let starts = interval_starts(target);
    Projection::new(keys.into_iter().chain(starts).collect())
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
/// rows are moved, or borrowed when `R` is `&Row`. One sort of the updates by identity, read
/// in place ([`Projection`]), groups them; a group's retractions pair with its insertions.
/// Feeds labelled apart (by workers that own disjoint keys, so every identity's changes are in
/// one feed) with their keys ([`label_keyed`]) [`merge`] into the feed of them all.
pub fn label<R, I>(identity: &Projection, updates: I) -> Vec<(ChangeType, R)>
where
    R: std::borrow::Borrow<Row> + Ord + Clone,
    I: IntoIterator<Item = (R, isize)>,
{
    label_into(identity, updates, None)
}

/// As [`label`], with each row's sort key by identity ([`Projection::sort_key`], made for the
/// sort anyway), which [`merge`] compares.
pub fn label_keyed<R, I>(identity: &Projection, updates: I) -> KeyedFeed<R>
where
    R: std::borrow::Borrow<Row> + Ord + Clone,
    I: IntoIterator<Item = (R, isize)>,
{
    let mut keys = Vec::new();
    (label_into(identity, updates, Some(&mut keys)), keys)
}

/// [`label`], and the rows' keys into `keys` if given.
fn label_into<R, I>(
    identity: &Projection,
    updates: I,
    mut keys: Option<&mut Vec<SortKey>>,
) -> Vec<(ChangeType, R)>
where
    R: std::borrow::Borrow<Row> + Ord + Clone,
    I: IntoIterator<Item = (R, isize)>,
{
    let mut updates: Vec<Option<(R, isize)>> = updates.into_iter().map(Some).collect();
    let row = |slot: &Slot| -> RowRef<'_> {
        let (row, _) = updates[slot.at as usize]
            .as_ref()
            .expect("taken once, after the sort");
        row.borrow().as_row_ref()
    };
    let mut order: Vec<Slot> = (updates.iter().enumerate())
        .map(|(at, update)| {
            let (r, diff) = update.as_ref().expect("not taken yet");
            Slot::new(identity.sort_key(r.borrow().as_row_ref()), at, *diff)
        })
        .collect();
    // The sort moves small slots, not rows, and reads a row only where keys tie: a sort of the
    // updates themselves was bound by cache misses. A radix sort by the sixteen-byte keys
    // (a pass per byte that differs between keys: eight for an SCD2 identity of two integers)
    // orders all but the slots whose keys tie, and those runs (an update's pre- and
    // post-image, identities longer than their keys) are sorted by comparison: 1.2 -> 0.85 ms
    // for the 26,000 updates of a 10,000-event SCD2 commit. Within an identity retractions
    // come first, each side sorted by row. The states emit their updates in key order, so the
    // slots are nearly sorted already and a bounded insertion sort usually finishes the job:
    // a plain 1M-event SCD2 run 1.22-1.28 -> 1.08-1.15 s, SCD1 0.67-0.80 -> 0.66-0.72 s
    // (alternating, four runs each; the feeds are the same, byte for byte).
    if !sort_nearly_sorted(&mut order) {
        radsort::sort_by_key(&mut order, |slot| (slot.hi, slot.lo));
    }
    let by_identity = |a: &Slot, b: &Slot| {
        a.prefix()
            .cmp(&b.prefix())
            .then_with(|| match a.whole && b.whole {
                true => Ordering::Equal,
                false => identity.cmp(row(a), row(b)),
            })
    };
    for run in order.chunk_by_mut(|a, b| a.prefix() == b.prefix()) {
        if run.len() > 1 {
            run.sort_unstable_by(|a, b| {
                by_identity(a, b)
                    .then_with(|| b.retracts.cmp(&a.retracts))
                    .then_with(|| row(a).cmp(&row(b)))
            });
        }
    }
    for i in 0..order.len() {
        let ends = order
            .get(i + 1)
            .is_none_or(|next| by_identity(&order[i], next).is_ne());
        order[i].ends_group = ends;
    }
    let mut feed = Vec::with_capacity(order.len());
    if let Some(keys) = keys.as_mut() {
        keys.reserve(order.len());
    }
    let mut take = |slot: &Slot| {
        let (row, diff) = updates[slot.at as usize]
            .take()
            .expect("each update is taken once");
        (row, diff.unsigned_abs())
    };
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    for group in order.split_inclusive(|slot| slot.ends_group) {
        // A group's retractions come first. Updates of one row each (nearly all) pair by
        // position, without staging the rows, which was a sixth of the labelling:
        // `scdflow bench` (400,000 events, 100,000 keys, 1,000 per commit, alternating, three
        // runs each) SCD1 1.65-2.02 -> 2.32-2.38 M events/s, SCD2 1.09-1.23 -> 1.22-1.42.
        let retractions = group.partition_point(|slot| slot.retracts);
        let (gone, new) = group.split_at(retractions);
        if group.iter().all(|slot| slot.single) {
            let pairs = gone.len().min(new.len());
            for (pre, post) in gone[..pairs].iter().zip(&new[..pairs]) {
                feed.push((ChangeType::UpdatePreimage, take(pre).0));
                feed.push((ChangeType::UpdatePostimage, take(post).0));
            }
            feed.extend(
                gone[pairs..]
                    .iter()
                    .map(|s| (ChangeType::Delete, take(s).0)),
            );
            feed.extend(new[pairs..].iter().map(|s| (ChangeType::Insert, take(s).0)));
        } else {
            for (slots, side) in [(gone, &mut removed), (new, &mut added)] {
                for (row, n) in slots.iter().map(&mut take) {
                    side.extend(std::iter::repeat_n(row, n));
                }
            }
            let pairs = removed.len().min(added.len());
            for (pre, post) in removed.drain(..pairs).zip(added.drain(..pairs)) {
                feed.push((ChangeType::UpdatePreimage, pre));
                feed.push((ChangeType::UpdatePostimage, post));
            }
            feed.extend(removed.drain(..).map(|r| (ChangeType::Delete, r)));
            feed.extend(added.drain(..).map(|r| (ChangeType::Insert, r)));
        }
        if let (Some(keys), Some(slot)) = (keys.as_mut(), group.last()) {
            // A group's rows share its identity, and so its key.
            let prefix = (u128::from(slot.hi) << 64) | u128::from(slot.lo);
            keys.resize(feed.len(), SortKey::from_parts(prefix, slot.whole));
        }
    }
    feed
}

/// Sorts `order` by key prefix if it is nearly sorted: by insertion, giving up (false) once it
/// has moved slots past as many others as there are slots. The states apply keys in key order
/// (`super::for_each_key`), so only a key's own updates can be out of place, next to each
/// other: an SCD2 key whose late event re-derives its versions emits them out of start order
/// (39-100 slots out of place in each commit of 10,000-14,000 updates in a 1M-event run).
fn sort_nearly_sorted(order: &mut [Slot]) -> bool {
    let mut budget = order.len();
    for i in 1..order.len() {
        let mut j = i;
        while j > 0 && order[j - 1].prefix() > order[j].prefix() {
            let Some(left) = budget.checked_sub(1) else {
                return false;
            };
            budget = left;
            order.swap(j - 1, j);
            j -= 1;
        }
    }
    true
}

/// An update's place in [`label`]'s sort: its identity's sort key and its position.
struct Slot {
    /// The key's number in two halves: a `u128` would make a slot 32 bytes.
    hi: u64,
    lo: u64,
    at: u32,
    whole: bool,
    retracts: bool,
    /// The update adds or removes one row (its diff is 1 or -1).
    single: bool,
    /// The last slot of its identity, once sorted.
    ends_group: bool,
}

impl Slot {
    fn new(key: SortKey, at: usize, diff: isize) -> Slot {
        let prefix = key.prefix();
        Slot {
            hi: (prefix >> 64) as u64,
            lo: prefix as u64,
            at: u32::try_from(at).expect("a commit's updates on one worker fit in u32"),
            whole: key.whole(),
            retracts: diff < 0,
            single: diff.unsigned_abs() == 1,
            ends_group: false,
        }
    }

    fn prefix(&self) -> (u64, u64) {
        (self.hi, self.lo)
    }
}

/// A labelled feed with each row's sort key ([`label_keyed`]).
pub type KeyedFeed<R> = (Vec<(ChangeType, R)>, Vec<SortKey>);

/// Merges two labelled feeds ([`label_keyed`]) whose identities are disjoint into one in feed
/// order. Rows are compared by the keys their labelling made, and whole only where keys tie:
/// comparing identities read both rows at every step, and merging two workers' feeds of a
/// 10,000-event SCD2 commit (about 27,000 rows) took two milliseconds of a followed step.
pub fn merge<R: std::borrow::Borrow<Row>>(
    identity: &Projection,
    a: KeyedFeed<R>,
    b: KeyedFeed<R>,
) -> KeyedFeed<R> {
    if a.0.is_empty() || b.0.is_empty() {
        return if a.0.is_empty() { b } else { a };
    }
    let n = a.0.len() + b.0.len();
    let (mut merged, mut keys) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut a = a.0.into_iter().zip(a.1).peekable();
    let mut b = b.0.into_iter().zip(b.1).peekable();
    loop {
        let b_first = match (a.peek(), b.peek()) {
            (Some((x, kx)), Some((y, ky))) => match ky.prefix().cmp(&kx.prefix()) {
                Ordering::Equal if !(kx.whole() && ky.whole()) => {
                    let (x, y) = (x.1.borrow().as_row_ref(), y.1.borrow().as_row_ref());
                    identity.cmp(y, x).is_lt()
                }
                order => order.is_lt(),
            },
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (None, None) => break,
        };
        let (change, key) = match b_first {
            true => b.next(),
            false => a.next(),
        }
        .expect("peeked");
        merged.push(change);
        keys.push(key);
    }
    (merged, keys)
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
            replace_where: None,
            view_of: None,
            properties: Default::default(),
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

    /// An update of several copies of a row (a REPLACE USING key's duplicate rows) labels as
    /// that many changes, paired in order; in a group beside updates of single rows too.
    #[test]
    fn copies_of_a_row_label_as_that_many_changes() {
        let identity = identity(&target(ScdType::Type1));
        let row = |k: i64, v: &str| Row::from(vec![Value::Int(k), Value::Str(v.into())]);
        let updates = vec![
            (row(3, "z"), 3),
            (row(1, "c"), 1),
            (row(2, "x"), 2),
            (row(1, "a"), -2),
            (row(3, "y"), -1),
            (row(1, "b"), 1),
            (row(4, "w"), -1),
        ];
        use ChangeType::*;
        let expected = vec![
            (UpdatePreimage, row(1, "a")),
            (UpdatePostimage, row(1, "b")),
            (UpdatePreimage, row(1, "a")),
            (UpdatePostimage, row(1, "c")),
            (Insert, row(2, "x")),
            (Insert, row(2, "x")),
            (UpdatePreimage, row(3, "y")),
            (UpdatePostimage, row(3, "z")),
            (Insert, row(3, "z")),
            (Insert, row(3, "z")),
            (Delete, row(4, "w")),
        ];
        assert_eq!(label(&identity, updates), expected);
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

    /// The feed is the same whatever order the updates come in: in key order with each key's
    /// own updates out of order (what a state emits; sorted by insertion), reversed (the
    /// insertion gives up and the radix sort orders them) or shuffled.
    #[test]
    fn a_feed_does_not_depend_on_the_order_of_its_updates() {
        let t = target(ScdType::Type2);
        let identity = identity(&t);
        let r = |k: i64, v: &str, s: i64, e: Option<i64>| {
            let end = e.map_or(Value::Null, Value::Int);
            Row::from(vec![
                Value::Int(k),
                Value::Str(v.into()),
                Value::Int(s),
                end,
            ])
        };
        let per_key = |k: i64| {
            vec![
                (r(k, "b", 5, None), 1),
                (r(k, "a", 1, Some(5)), 1),
                (r(k, "a", 1, None), -1),
            ]
        };
        let in_key_order: Vec<(Row, isize)> = (0..40).flat_map(per_key).collect();
        let reversed: Vec<(Row, isize)> = in_key_order.iter().rev().cloned().collect();
        let shuffled: Vec<(Row, isize)> = (0..in_key_order.len())
            .map(|i| in_key_order[i * 37 % in_key_order.len()].clone())
            .collect();
        let slots = |updates: &[(Row, isize)]| -> Vec<Slot> {
            (updates.iter().enumerate())
                .map(|(at, (row, diff))| Slot::new(identity.sort_key(row.as_row_ref()), at, *diff))
                .collect()
        };
        assert!(sort_nearly_sorted(&mut slots(&in_key_order)));
        assert!(!sort_nearly_sorted(&mut slots(&reversed)));
        let feed = label(&identity, in_key_order.clone());
        assert_eq!(feed.len(), 40 * 3);
        assert_eq!(feed[0].0, ChangeType::UpdatePreimage);
        assert_eq!(label(&identity, reversed), feed);
        assert_eq!(label(&identity, shuffled), feed);
    }

    /// Feeds labelled apart by key (as workers label them) merge into the feed of them all,
    /// with keys that their sort keys hold whole (integers) and keys they cut (long texts with a
    /// common head, compared whole where the sort keys tie).
    #[test]
    fn feeds_labelled_apart_merge_into_the_whole_feed() {
        let t = target(ScdType::Type2);
        let identity = identity(&t);
        let keys: [fn(i64) -> Value; 2] = [Value::Int, |k| {
            Value::Str(format!("a key longer than its sort key {k:02}"))
        }];
        for key in keys {
            let r = |k: i64, v: &str, s: i64, e: Option<i64>| {
                let end = e.map_or(Value::Null, Value::Int);
                Row::from(vec![key(k), Value::Str(v.into()), Value::Int(s), end])
            };
            let updates: Vec<(i64, (Row, isize))> = (0..12)
                .flat_map(|k| {
                    [
                        (k, (r(k, "a", 1, None), -1)),
                        (k, (r(k, "a", 1, Some(5)), 1)),
                        (k, (r(k, "b", 5, None), 1 + k as isize % 2)),
                    ]
                })
                .collect();
            let whole = label_keyed(&identity, updates.iter().map(|(_, u)| u.clone()));
            // Keys split unevenly and interleaved, as a hash would deal them.
            let (one, other): (Vec<_>, Vec<_>) = updates.into_iter().partition(|(k, _)| k % 3 == 0);
            let apart = |part: Vec<(i64, (Row, isize))>| {
                label_keyed(&identity, part.into_iter().map(|(_, u)| u))
            };
            let merged = merge(&identity, apart(one), apart(other));
            assert_eq!(merged, whole);
            assert_eq!(whole.0.len(), 12 * 3 + 6);
        }
    }
}

//! The SPEC section 4 vectors for snapshot flows (T5, T6, T16) and REPLACE USING (T7 and its
//! derived vectors), against the model.

use super::tests::{i, s, N};
use super::{replace_using, snapshots, snapshots_with_skips, SnapshotError, SnapshotOutcome};
use crate::plan::{ScdType, Target, TargetKind, DEFAULT_TOMBSTONE_GC_SECONDS};
use crate::value::{DataType, Row, Schema};

/// A target of `kind` over `columns` (all declared STRING: types do not matter to the model),
/// with BIGINT sequences; `tracked` defaults to every column.
fn target(
    kind: TargetKind,
    columns: &[&str],
    keys: &[usize],
    scd: ScdType,
    tracked: Option<Vec<bool>>,
) -> Target {
    let mut schema: Vec<(String, DataType)> = columns
        .iter()
        .map(|c| (c.to_string(), DataType::String))
        .collect();
    if scd == ScdType::Type2 {
        schema.push(("__START_AT".into(), DataType::BigInt));
        schema.push(("__END_AT".into(), DataType::BigInt));
    }
    Target {
        kind,
        name: "t".into(),
        schema: Schema::new(schema),
        image_len: columns.len(),
        keys: keys.to_vec(),
        scd,
        sequence_type: DataType::BigInt,
        system_sequence_type: None,
        tracked: tracked.unwrap_or_else(|| vec![true; columns.len()]),
        partial: false,
        tombstone_gc_seconds: DEFAULT_TOMBSTONE_GC_SECONDS,
        replace_where: None,
        view_of: None,
        properties: Default::default(),
        line: 1,
    }
}

// ---- AUTO CDC FROM SNAPSHOT ----

/// A `(userId, city)` snapshot target keyed by `userId`.
fn users(scd: ScdType) -> Target {
    target(TargetKind::Snapshot, &["userId", "city"], &[0], scd, None)
}

/// `(userId, city)` rows.
fn cities(rows: &[(i64, &str)]) -> Vec<Row> {
    rows.iter().map(|&(k, c)| Row::from([i(k), s(c)])).collect()
}

/// An SCD2 `(userId, city, __START_AT, __END_AT)` row; `end` `None` is NULL (the open version).
fn v(k: i64, city: &str, start: i64, end: Option<i64>) -> Row {
    Row::from([i(k), s(city), i(start), end.map_or(N, i)])
}

/// T5 run 1 (version 0) and run 2 (version 1).
fn t5_snapshots() -> Vec<(i64, Vec<Row>)> {
    vec![
        (
            0,
            cities(&[(1, "Oaxaca"), (2, "Monterrey"), (3, "Tijuana")]),
        ),
        (
            1,
            cities(&[
                (2, "Carmel"),
                (3, "Los Angeles"),
                (4, "Death Valley"),
                (6, "Kings Canyon"),
            ]),
        ),
    ]
}

#[test]
fn t5_scd2() {
    let t = users(ScdType::Type2);
    let all = t5_snapshots();
    assert_eq!(
        snapshots(&t, &all[..1]).unwrap(),
        vec![
            v(1, "Oaxaca", 0, None),
            v(2, "Monterrey", 0, None),
            v(3, "Tijuana", 0, None),
        ]
    );
    assert_eq!(
        snapshots(&t, &all).unwrap(),
        vec![
            v(1, "Oaxaca", 0, Some(1)),
            v(2, "Monterrey", 0, Some(1)),
            v(2, "Carmel", 1, None),
            v(3, "Tijuana", 0, Some(1)),
            v(3, "Los Angeles", 1, None),
            v(4, "Death Valley", 1, None),
            v(6, "Kings Canyon", 1, None),
        ]
    );
}

#[test]
fn t5_scd1() {
    let t = users(ScdType::Type1);
    let all = t5_snapshots();
    // The SCD1 table after version v equals snapshot v.
    assert_eq!(snapshots(&t, &all[..1]).unwrap(), all[0].1);
    assert_eq!(snapshots(&t, &all).unwrap(), all[1].1);
}

/// T6 `snapshot_1.csv` (version 1) and `snapshot_2.csv` (version 2).
fn t6_snapshots() -> Vec<(i64, Vec<Row>)> {
    vec![
        (
            1,
            cities(&[(1, "Oaxaca"), (2, "Monterrey"), (3, "Tijuana")]),
        ),
        (
            2,
            cities(&[(2, "Carmel"), (3, "Los Angeles"), (4, "Death Valley")]),
        ),
    ]
}

/// The T6 SCD2 table after version 2.
fn t6_after_2() -> Vec<Row> {
    vec![
        v(1, "Oaxaca", 1, Some(2)),
        v(2, "Monterrey", 1, Some(2)),
        v(2, "Carmel", 2, None),
        v(3, "Tijuana", 1, Some(2)),
        v(3, "Los Angeles", 2, None),
        v(4, "Death Valley", 2, None),
    ]
}

#[test]
fn t6_scd2() {
    let t = users(ScdType::Type2);
    let all = t6_snapshots();
    assert_eq!(
        snapshots(&t, &all[..1]).unwrap(),
        vec![
            v(1, "Oaxaca", 1, None),
            v(2, "Monterrey", 1, None),
            v(3, "Tijuana", 1, None),
        ]
    );
    assert_eq!(snapshots(&t, &all).unwrap(), t6_after_2());
}

#[test]
fn t6_scd1() {
    let t = users(ScdType::Type1);
    let all = t6_snapshots();
    assert_eq!(snapshots(&t, &all).unwrap(), all[1].1);
}

/// T6-out-of-order. The spec gives no contents for `snapshot_3.csv` / `snapshot_4.csv`; these
/// are ours. Version 4 keeps 2 and 4 unchanged, drops 3 and adds 5; version 3 would bring back
/// 1 and change 2, but arrives after 4 and is skipped.
#[test]
fn t6_out_of_order() {
    let mut all = t6_snapshots();
    all.push((
        4,
        cities(&[(2, "Carmel"), (4, "Death Valley"), (5, "Yosemite")]),
    ));
    let snapshot_3 = (3, cities(&[(1, "Oaxaca"), (2, "Fresno")]));
    let scd2_after_4 = vec![
        v(1, "Oaxaca", 1, Some(2)),
        v(2, "Monterrey", 1, Some(2)),
        v(2, "Carmel", 2, None),
        v(3, "Tijuana", 1, Some(2)),
        v(3, "Los Angeles", 2, Some(4)),
        v(4, "Death Valley", 2, None),
        v(5, "Yosemite", 4, None),
    ];
    let t = users(ScdType::Type2);
    assert_eq!(snapshots(&t, &all).unwrap(), scd2_after_4);
    let mut late = all.clone();
    late.push(snapshot_3);
    assert_eq!(
        snapshots_with_skips(&t, &late).unwrap(),
        SnapshotOutcome {
            rows: scd2_after_4,
            skipped: 1
        }
    );

    let t1 = users(ScdType::Type1);
    let outcome = snapshots_with_skips(&t1, &late).unwrap();
    assert_eq!((outcome.rows, outcome.skipped), (all[2].1.clone(), 1));
}

#[test]
fn equal_version_is_skipped_unread() {
    let t = users(ScdType::Type2);
    let mut all = t6_snapshots();
    // A re-delivered version 2 with different content, and one with a duplicate key: both are
    // skipped before they are read, so neither changes the table nor fails.
    all.push((2, cities(&[(9, "Reno")])));
    all.push((1, cities(&[(1, "a"), (1, "b")])));
    let outcome = snapshots_with_skips(&t, &all).unwrap();
    assert_eq!(outcome.rows, t6_after_2());
    assert_eq!(outcome.skipped, 2);
}

#[test]
fn t16_snapshot_scd2_partial_tracking() {
    let t = target(
        TargetKind::Snapshot,
        &["k", "name", "city"],
        &[0],
        ScdType::Type2,
        Some(vec![false, false, true]),
    );
    let snap =
        |version, name: &str, city: &str| (version, vec![Row::from([i(1), s(name), s(city)])]);
    let all = [snap(1, "Ann", "Oslo"), snap(2, "Anna", "Oslo")];
    assert_eq!(
        snapshots(&t, &all).unwrap(),
        vec![vec![i(1), s("Anna"), s("Oslo"), i(1), N]]
    );
    // A tracked change then closes the (overwritten) version.
    let more = [all[0].clone(), all[1].clone(), snap(3, "Anna", "Bergen")];
    assert_eq!(
        snapshots(&t, &more).unwrap(),
        vec![
            vec![i(1), s("Anna"), s("Oslo"), i(1), i(3)],
            vec![i(1), s("Anna"), s("Bergen"), i(3), N],
        ]
    );
}

#[test]
fn duplicate_key_fails() {
    for scd in [ScdType::Type1, ScdType::Type2] {
        let t = users(scd);
        let mut all = t6_snapshots();
        all.push((3, cities(&[(1, "Oaxaca"), (4, "Reno"), (1, "Oaxaca")])));
        all.push((4, cities(&[(1, "Oaxaca")])));
        let expected = SnapshotError::DuplicateKey {
            version: 3,
            key: Row::from([i(1)]),
        };
        assert_eq!(snapshots(&t, &all), Err(expected.clone()));
        assert_eq!(snapshots_with_skips(&t, &all), Err(expected));
    }
}

#[test]
fn key_reappears_with_a_new_version() {
    let all = [
        (1, cities(&[(1, "a"), (2, "b")])),
        (2, cities(&[(2, "b")])),
        (3, vec![]),
        (5, cities(&[(1, "a"), (2, "c")])),
    ];
    assert_eq!(
        snapshots(&users(ScdType::Type2), &all).unwrap(),
        vec![
            v(1, "a", 1, Some(2)),
            v(1, "a", 5, None),
            v(2, "b", 1, Some(3)),
            v(2, "c", 5, None),
        ]
    );
    let t1 = users(ScdType::Type1);
    assert_eq!(snapshots(&t1, &all[..3]).unwrap(), Vec::<Row>::new());
    assert_eq!(snapshots(&t1, &all).unwrap(), all[3].1);
}

#[test]
fn composite_keys_sort_in_keys_order() {
    // KEYS (b, a): rows sort by b, then a.
    let t = target(
        TargetKind::Snapshot,
        &["a", "b", "v"],
        &[1, 0],
        ScdType::Type1,
        None,
    );
    let rows = vec![
        Row::from([i(1), i(2), s("x")]),
        Row::from([i(2), i(1), s("y")]),
    ];
    assert_eq!(
        snapshots(&t, &[(1, rows.clone())]).unwrap(),
        vec![rows[1].clone(), rows[0].clone()]
    );
}

// ---- REPLACE USING ----

/// The T7 target: `REPLACE USING (region_id) SEQUENCE BY seq`.
fn regions() -> Target {
    target(
        TargetKind::ReplaceUsing { sequence: SEQ },
        &["region_id", "device_type", "event_type", "seq"],
        &[0],
        ScdType::Type1,
        None,
    )
}

/// The `SEQUENCE BY` column of [`regions`].
const SEQ: usize = 3;

/// A `(region_id, device_type, event_type, seq)` row; `region` `None` is a NULL key.
fn r(region: Option<i64>, device: &str, event: &str, seq: i64) -> Row {
    Row::from([region.map_or(N, i), s(device), s(event), i(seq)])
}

/// Asserts `replace_using` gives `expected` for `rows`, every rotation of them and their
/// reversals: the table is a function of the multiset of offered rows.
fn check(rows: &[Row], expected: &[Row]) {
    let t = regions();
    for turn in 0..rows.len().max(1) {
        let mut rotated = rows.to_vec();
        rotated.rotate_left(turn);
        assert_eq!(replace_using(&t, SEQ, &rotated), expected, "{rotated:?}");
        rotated.reverse();
        assert_eq!(replace_using(&t, SEQ, &rotated), expected, "{rotated:?}");
    }
}

fn t7_batch_1() -> Vec<Row> {
    vec![
        r(Some(1), "iOS", "click", 1),
        r(Some(1), "Android", "conversion", 1),
        r(Some(2), "iOS", "click", 1),
        r(Some(2), "desktop", "click", 1),
    ]
}

fn t7_batch_2() -> Vec<Row> {
    vec![
        r(Some(1), "iOS", "click", 2),
        r(Some(1), "Android", "conversion", 2),
        r(Some(1), "desktop", "click", 2),
        r(Some(3), "iOS", "click", 1),
        r(Some(3), "desktop", "click", 2),
    ]
}

/// Batches 1 and 2 of T7, offered rows in order.
fn t7_rows() -> Vec<Row> {
    t7_batch_1().into_iter().chain(t7_batch_2()).collect()
}

fn t7_expected() -> Vec<Row> {
    vec![
        r(Some(1), "Android", "conversion", 2),
        r(Some(1), "desktop", "click", 2),
        r(Some(1), "iOS", "click", 2),
        r(Some(2), "desktop", "click", 1),
        r(Some(2), "iOS", "click", 1),
        r(Some(3), "desktop", "click", 2),
    ]
}

#[test]
fn t7_replace_using() {
    check(
        &t7_batch_1(),
        &[
            r(Some(1), "Android", "conversion", 1),
            r(Some(1), "iOS", "click", 1),
            r(Some(2), "desktop", "click", 1),
            r(Some(2), "iOS", "click", 1),
        ],
    );
    check(&t7_rows(), &t7_expected());
}

#[test]
fn t7_equal_sequence_appends() {
    let mut rows = t7_rows();
    rows.push(r(Some(2), "Android", "conversion", 1));
    let mut expected = t7_expected();
    expected.insert(3, r(Some(2), "Android", "conversion", 1));
    check(&rows, &expected);
    // Duplicates are kept: the same row offered twice at the key's maximum is two rows.
    rows.push(r(Some(3), "desktop", "click", 2));
    expected.push(r(Some(3), "desktop", "click", 2));
    check(&rows, &expected);
}

#[test]
fn t7_lower_sequence_is_ignored() {
    let mut rows = t7_rows();
    rows.push(r(Some(1), "web", "click", 1));
    check(&rows, &t7_expected());
}

#[test]
fn t7_drop_sets_no_floor() {
    // `expect_or_drop("valid", "event_type <> 'bad'")` runs before the model: the rows it
    // drops are never offered.
    let valid = |row: &Row| row.value(2) != s("bad");
    let mut offered = t7_rows();
    offered.push(r(Some(2), "iOS", "bad", 9));
    let kept: Vec<Row> = offered.iter().filter(|row| valid(row)).cloned().collect();
    // Batch 5: region 2 untouched.
    check(&kept, &t7_expected());

    // A later valid seq-5 row replaces region 2 although 5 < 9.
    offered.push(r(Some(2), "iOS", "click", 5));
    let kept: Vec<Row> = offered.iter().filter(|row| valid(row)).cloned().collect();
    let mut expected = t7_expected();
    expected.splice(3..5, [r(Some(2), "iOS", "click", 5)]);
    check(&kept, &expected);

    // Had the seq-9 row been offered, it would have set the floor.
    let mut unfiltered = expected;
    unfiltered[3] = r(Some(2), "iOS", "bad", 9);
    assert_eq!(replace_using(&regions(), SEQ, &offered), unfiltered);
}

#[test]
fn t7_null_key() {
    let rows = [r(None, "iOS", "click", 1), r(None, "web", "click", 2)];
    check(&rows, &[r(None, "web", "click", 2)]);
    // With other keys: the NULL group sorts first and is independent of them.
    let mut all = t7_rows();
    all.extend(rows);
    let mut expected = vec![r(None, "web", "click", 2)];
    expected.extend(t7_expected());
    check(&all, &expected);
}

#[test]
fn replace_using_empty_input() {
    check(&[], &[]);
}

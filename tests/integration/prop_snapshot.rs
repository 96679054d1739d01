//! Snapshot flows, REPLACE WHERE flows and REPLACE USING flows equal the reference model after
//! every commit, for random snapshot sequences / random rows, random commit splits and 1, 2 or
//! 4 workers.

use crate::util::{multiset_at, table_at, target};
use proptest::prelude::*;
use scdflow::plan::{ReplaceWhere, ScdType, Target, TargetKind};
use scdflow::runtime::{execute, CommitEvents, Snapshot};
use scdflow::value::{Row, Value};

fn snapshot_target(scd: ScdType, tracked: Vec<bool>) -> Target {
    let mut t = target(scd, 2, tracked, false);
    t.kind = TargetKind::Snapshot;
    t.sequence_type = scdflow::value::DataType::BigInt;
    t
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![1 => Just(Value::Null), 3 => (0..3u8).prop_map(|v| Value::Str(format!("v{v}")))]
}

/// A snapshot: a set of keys 0..6, each with two values.
fn snapshot_rows() -> impl Strategy<Value = Vec<Row>> {
    proptest::collection::btree_map(0..6i64, (value(), value()), 0..6).prop_map(|m| {
        m.into_iter()
            .map(|(k, (a, b))| Row::from(vec![Value::Int(k), a, b]))
            .collect()
    })
}

/// Snapshots with increasing versions, each possibly preceded by empty commits.
fn snapshots() -> impl Strategy<Value = (Vec<(i64, Vec<Row>, usize)>, usize)> {
    let one = (1..4i64, snapshot_rows(), 0..2usize);
    (
        proptest::collection::vec(one, 1..8),
        prop_oneof![Just(1usize), Just(2), Just(4)],
    )
        .prop_map(|(raw, workers)| {
            let mut version = 0;
            let snaps = raw
                .into_iter()
                .map(|(gap, rows, empty)| {
                    version += gap;
                    (version, rows, empty)
                })
                .collect();
            (snaps, workers)
        })
}

fn check_snapshots(
    t: &Target,
    snaps: Vec<(i64, Vec<Row>, usize)>,
    workers: usize,
) -> Result<(), TestCaseError> {
    let mut commits = Vec::new();
    let mut after = Vec::new();
    for (i, (version, rows, empty)) in snaps.iter().enumerate() {
        for _ in 0..*empty {
            commits.push(CommitEvents::default());
        }
        let snapshot = Snapshot {
            version: *version,
            rows: rows.clone(),
        };
        commits.push(CommitEvents {
            snapshots: vec![Some(snapshot)],
            ..CommitEvents::default()
        });
        after.push((commits.len() as u64, i + 1));
    }
    let updates = execute(std::slice::from_ref(t), commits, workers, None).expect("execute");
    let applied: Vec<(i64, Vec<Row>)> = snaps.into_iter().map(|(v, r, _)| (v, r)).collect();
    for (commit, n) in after {
        let expected = scdflow::model::snapshots(t, &applied[..n]).expect("no duplicate keys");
        prop_assert_eq!(
            table_at(t, &updates.rows[0], commit),
            expected,
            "after snapshot {} ({} workers)",
            n,
            workers
        );
    }
    Ok(())
}

/// REPLACE USING rows `(region, device, seq)`; regions include NULL.
fn replace_rows() -> impl Strategy<Value = (Vec<Row>, Vec<usize>, usize)> {
    let region = prop_oneof![1 => Just(Value::Null), 3 => (0..3i64).prop_map(Value::Int)];
    let row = (region, 0..3u8, 0..4i64)
        .prop_map(|(r, d, s)| Row::from(vec![r, Value::Str(format!("d{d}")), Value::Int(s)]));
    proptest::collection::vec(row, 1..30).prop_flat_map(|rows| {
        let n = rows.len();
        (
            Just(rows),
            proptest::collection::vec(0..n, 0..5),
            prop_oneof![Just(1usize), Just(2), Just(4)],
        )
    })
}

fn replace_target() -> Target {
    let mut t = target(ScdType::Type1, 2, vec![true; 3], false);
    t.kind = TargetKind::ReplaceUsing { sequence: 2 };
    t.keys = vec![0];
    t
}

const DAY: i64 = 86_400_000_000;

/// A REPLACE WHERE target of rows `(k, d DATE, v)` with a condition that reads the clock
/// (`d >= DATE_SUB(CURRENT_DATE(), 1)`: the last two days) or one that does not (the runtime
/// deals only the rows it holds for).
const CONDITIONS: [&str; 2] = [
    "c0 >= date_sub(current_date(), 1)",
    "c0 >= DATE '2024-10-08' OR c1 = 'v1'",
];

fn replace_where_target(condition: &str) -> Target {
    let mut t = target(ScdType::Type1, 2, vec![true; 3], false);
    t.schema.columns[1].ty = scdflow::value::DataType::Date;
    t.kind = TargetKind::Snapshot;
    t.sequence_type = scdflow::value::DataType::BigInt;
    t.keys = vec![0, 1, 2];
    let dialect = sqlparser::dialect::DatabricksDialect {};
    let condition = sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(condition)
        .and_then(|mut p| p.parse_expr())
        .expect("condition parses");
    t.replace_where = Some(ReplaceWhere {
        condition,
        schema: scdflow::value::Schema::new(
            t.schema
                .columns
                .iter()
                .map(|c| (c.name.clone(), c.ty.clone())),
        ),
        materialized_view: false,
    });
    t
}

/// Updates on days that do not go back, each the query's rows then: keys 0..3, dates within
/// three days of the update's, values from two, equal rows repeating.
fn replace_where_updates() -> impl Strategy<Value = (Vec<(i64, Vec<Row>, usize)>, usize)> {
    let row = (0..3i64, -3..1i64, 0..2u8);
    let update = (0..2i64, proptest::collection::vec(row, 0..8), 0..2usize);
    (
        proptest::collection::vec(update, 1..8),
        prop_oneof![Just(1usize), Just(2), Just(4)],
    )
        .prop_map(|(raw, workers)| {
            let mut day = 20_000;
            let updates = raw
                .into_iter()
                .map(|(step, rows, empty)| {
                    day += step;
                    let rows = rows
                        .into_iter()
                        .map(|(k, back, v)| {
                            let d = Value::Date((day + back) as i32);
                            Row::from(vec![Value::Int(k), d, Value::Str(format!("v{v}"))])
                        })
                        .collect();
                    (day, rows, empty)
                })
                .collect();
            (updates, workers)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn replace_where_equals_model((updates, workers) in replace_where_updates(), which in 0..2usize) {
        let t = replace_where_target(CONDITIONS[which]);
        let condition = t.replace_where.clone().expect("a REPLACE WHERE target");
        let mut commits = Vec::new();
        let mut after = Vec::new();
        let mut applied = Vec::new();
        for (i, (day, rows, empty)) in updates.iter().enumerate() {
            // Empty commits at the same instant, then the update, at noon of its day.
            let timestamp = day * DAY + DAY / 2;
            for _ in 0..*empty {
                commits.push(CommitEvents { timestamp, ..CommitEvents::default() });
            }
            let snapshot = Snapshot { version: i as i64 + 1, rows: rows.clone() };
            commits.push(CommitEvents { snapshots: vec![Some(snapshot)], timestamp, ..CommitEvents::default() });
            applied.push((condition.at(timestamp).expect("compiles"), rows.clone()));
            after.push((commits.len() as u64, i + 1));
        }
        let out = execute(std::slice::from_ref(&t), commits, workers, None).expect("execute");
        for (commit, n) in after {
            let expected = scdflow::model::replace_where(&applied[..n]);
            prop_assert_eq!(multiset_at(&t, &out.rows[0], commit), expected, "after update {} ({} workers, {})", n, workers, CONDITIONS[which]);
        }
    }

    #[test]
    fn snapshot_scd1_equals_model((snaps, workers) in snapshots()) {
        check_snapshots(&snapshot_target(ScdType::Type1, vec![true; 3]), snaps, workers)?;
    }

    #[test]
    fn snapshot_scd2_equals_model((snaps, workers) in snapshots()) {
        check_snapshots(&snapshot_target(ScdType::Type2, vec![true; 3]), snaps, workers)?;
    }

    #[test]
    fn snapshot_scd2_partial_tracking_equals_model((snaps, workers) in snapshots()) {
        check_snapshots(&snapshot_target(ScdType::Type2, vec![true, true, false]), snaps, workers)?;
    }

    #[test]
    fn replace_using_equals_model((rows, mut cuts, workers) in replace_rows()) {
        let t = replace_target();
        cuts.sort();
        cuts.dedup();
        let mut commits = Vec::new();
        let mut prefixes = Vec::new();
        let mut from = 0;
        for cut in cuts.into_iter().chain(std::iter::once(rows.len())) {
            commits.push(CommitEvents { rows: vec![rows[from..cut].to_vec()], ..CommitEvents::default() });
            prefixes.push(cut);
            from = cut;
        }
        let updates = execute(std::slice::from_ref(&t), commits, workers, None).expect("execute");
        for (c, prefix) in prefixes.iter().enumerate() {
            let expected = scdflow::model::replace_using(&t, 2, &rows[..*prefix]);
            prop_assert_eq!(multiset_at(&t, &updates.rows[0], c as u64 + 1), expected, "after commit {}", c + 1);
        }
    }
}

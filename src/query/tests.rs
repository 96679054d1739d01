//! Both read paths (stabbing, the product-lattice index) on SPEC T8 and on random bitemporal
//! tables against the reference model; query resolution and its errors.

use super::*;
use crate::driver::Evaluation;
use crate::event::{Event, EventKind};
use crate::model;
use crate::operators::AsOf;
use crate::plan::{SourceInput, SourceTable, TargetKind, DEFAULT_TOMBSTONE_GC_SECONDS};
use crate::temporal::parse_timestamp;
use crate::value::Seq;
use differential_dataflow::input::Input;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::path::PathBuf;

/// A target `(id, value)` keyed by `id`, with history columns after the image.
fn company(scd: ScdType, seq: DataType) -> Target {
    let mut columns = vec![
        ("id".to_string(), DataType::String),
        ("value".to_string(), DataType::String),
    ];
    if scd.has_history() {
        columns.push(("__START_AT".into(), seq.clone()));
        columns.push(("__END_AT".into(), seq.clone()));
    }
    if scd == ScdType::Bitemporal {
        columns.push(("__SYSTEM_START_AT".into(), seq.clone()));
        columns.push(("__SYSTEM_END_AT".into(), seq.clone()));
    }
    Target {
        name: "company_bitemporal".into(),
        kind: TargetKind::AutoCdc,
        schema: Schema::new(columns),
        image_len: 2,
        keys: vec![0],
        scd,
        sequence_type: seq.clone(),
        system_sequence_type: (scd == ScdType::Bitemporal).then_some(seq),
        tracked: vec![true, true],
        partial: false,
        tombstone_gc_seconds: DEFAULT_TOMBSTONE_GC_SECONDS,
        replace_where: None,
        view_of: None,
        properties: Default::default(),
        line: 1,
    }
}

fn ts(hms: &str) -> Value {
    Value::Timestamp(parse_timestamp(&format!("2025-07-18 {hms}")).unwrap())
}

fn text(s: &str) -> Value {
    Value::Str(s.into())
}

/// SPEC T8's four events.
fn t8_events() -> Vec<Event> {
    let up = |v: &str, bt: &str, st: &str| Event {
        seq: ts(bt).into(),
        kind: EventKind::Upsert,
        key: Row::from([text("A")]),
        image: Row::from([text("A"), text(v)]),
        authored: None,
        system: Some(ts(st).into()),
    };
    let mut delete = up("", "12:30:00", "12:30:00");
    delete.kind = EventKind::Delete;
    delete.image = Row::new();
    vec![
        up("XFv1", "10:01:00", "10:05:00"),
        up("XFv2", "12:15:43", "12:20:00"),
        up("XFv3", "12:05:00", "12:25:00"),
        delete,
    ]
}

/// SPEC T8's step-4 table, in the model's order (key, `__START_AT`, `__SYSTEM_START_AT`).
fn t8_table() -> Vec<Row> {
    let n = Value::Null;
    let row = |v: &str, b: (Value, Value), s: (Value, Value)| {
        Row::from([text("A"), text(v), b.0, b.1, s.0, s.1])
    };
    vec![
        row(
            "XFv1",
            (ts("10:01:00"), n.clone()),
            (ts("10:05:00"), ts("12:20:00")),
        ),
        row(
            "XFv1",
            (ts("10:01:00"), ts("12:15:43")),
            (ts("12:20:00"), ts("12:25:00")),
        ),
        row(
            "XFv1",
            (ts("10:01:00"), ts("12:05:00")),
            (ts("12:25:00"), n.clone()),
        ),
        row(
            "XFv3",
            (ts("12:05:00"), ts("12:15:43")),
            (ts("12:25:00"), n.clone()),
        ),
        row(
            "XFv2",
            (ts("12:15:43"), n.clone()),
            (ts("12:20:00"), ts("12:30:00")),
        ),
        row(
            "XFv2",
            (ts("12:15:43"), ts("12:30:00")),
            (ts("12:30:00"), n),
        ),
    ]
}

/// SPEC T8's point-in-time checks: (system, business, value seen).
const T8_CHECKS: [(&str, &str, Option<&str>); 6] = [
    ("10:06:00", "13:00:00", Some("XFv1")),
    ("12:22:00", "12:10:00", Some("XFv1")),
    ("12:22:00", "13:00:00", Some("XFv2")),
    ("12:26:00", "12:10:00", Some("XFv3")),
    ("12:31:00", "12:40:00", None),
    ("12:31:00", "12:20:00", Some("XFv2")),
];

/// A read of the index: system point (`None`: current), business point, key.
type Point = (Option<Value>, Value, Option<Row>);

/// Builds the index over `commits` (commit `c` applies its `(row, diff)` updates), optionally
/// sets a retention, and answers `points` after the last commit (each sorted; `None` where the
/// read was refused).
fn index_answers(
    layout: &AsOfLayout,
    commits: Vec<Vec<(Row, isize)>>,
    retention: Option<(Value, Value)>,
    points: Vec<Point>,
) -> Vec<Option<Vec<Row>>> {
    let layout = layout.clone();
    timely::execute_directly(move |worker| {
        let (mut input, mut index) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, rows) = scope.new_collection::<Row, isize>();
            (input, rows.arrange_as_of(&layout))
        });
        let last = commits.len() as u64;
        for (c, updates) in commits.into_iter().enumerate() {
            input.advance_to(c as u64);
            for (row, diff) in updates {
                input.update(row, diff);
            }
            input.advance_to(c as u64 + 1);
            input.flush();
            while !index.is_complete(c as u64) {
                worker.step();
            }
            // Compacting between commits exercises merges across commits.
            index.compact();
        }
        assert!(index.is_complete(last.saturating_sub(1)));
        if let Some((s, b)) = retention {
            index.set_retention(Some(s), Some(b));
            for _ in 0..10 {
                worker.step();
            }
        }
        points
            .iter()
            .map(|(s, b, key)| index.as_of(s.as_ref(), b, key.as_ref()).ok())
            .collect()
    })
}

fn images(layout: &AsOfLayout, rows: Vec<Row>) -> Vec<Row> {
    let mut images: Vec<Row> = rows
        .into_iter()
        .map(|r| r.iter().take(layout.image_len).collect())
        .collect();
    images.sort();
    images
}

#[test]
fn t8_model_gives_the_step_4_table() {
    let target = company(ScdType::Bitemporal, DataType::Timestamp);
    assert_eq!(model::bitemporal(&target, &t8_events()), t8_table());
}

#[test]
fn t8_point_in_time_checks_by_stabbing() {
    let layout = AsOfLayout::of(&company(ScdType::Bitemporal, DataType::Timestamp)).unwrap();
    let table = t8_table();
    for (s, b, seen) in T8_CHECKS {
        let rows = visible(&table, &layout, Some(&ts(s)), Some(&ts(b)), &[]);
        let values: Vec<Value> = rows.iter().map(|r| r.value(1)).collect();
        assert_eq!(
            values,
            seen.map(text).into_iter().collect::<Vec<_>>(),
            "{s} {b}"
        );
    }
    // The current belief: XFv1 until 12:05, XFv3 until 12:15:43, XFv2 until 12:30.
    assert_eq!(
        visible(&table, &layout, None, None, &[]),
        table[2..4]
            .iter()
            .chain(&table[5..])
            .cloned()
            .collect::<Vec<_>>()
    );
    assert_eq!(
        visible(
            &table,
            &layout,
            None,
            Some(&ts("12:29:59")),
            &[(0, text("A"))]
        ),
        vec![table[5].clone()]
    );
    assert!(visible(
        &table,
        &layout,
        None,
        Some(&ts("12:10:00")),
        &[(0, text("B"))]
    )
    .is_empty());
}

#[test]
fn t8_point_in_time_checks_through_the_index() {
    let layout = AsOfLayout::of(&company(ScdType::Bitemporal, DataType::Timestamp)).unwrap();
    // Step 2's table at commit 0, corrected to step 4's at commit 1 (retractions included).
    let step2: Vec<Row> = {
        let mut t = model::bitemporal(
            &company(ScdType::Bitemporal, DataType::Timestamp),
            &t8_events()[..2],
        );
        t.sort();
        t
    };
    let step4 = t8_table();
    let mut correction: Vec<(Row, isize)> = step2
        .iter()
        .filter(|r| !step4.contains(r))
        .map(|r| (r.clone(), -1))
        .collect();
    correction.extend(
        step4
            .iter()
            .filter(|r| !step2.contains(r))
            .map(|r| (r.clone(), 1)),
    );
    let commits = vec![step2.iter().map(|r| (r.clone(), 1)).collect(), correction];
    let mut points: Vec<Point> = T8_CHECKS
        .iter()
        .map(|(s, b, _)| (Some(ts(s)), ts(b), None))
        .collect();
    points.push((None, ts("12:10:00"), Some(Row::from([text("A")]))));
    points.push((None, ts("12:10:00"), Some(Row::from([text("B")]))));
    let answers: Vec<Vec<Row>> = index_answers(&layout, commits, None, points)
        .into_iter()
        .map(Option::unwrap)
        .collect();
    for ((s, b, seen), answer) in T8_CHECKS.iter().zip(&answers) {
        let values: Vec<Value> = answer.iter().map(|r| r.value(1)).collect();
        assert_eq!(
            values,
            seen.map(text).into_iter().collect::<Vec<_>>(),
            "{s} {b}"
        );
    }
    assert_eq!(answers[6], vec![vec![text("A"), text("XFv3")]]);
    assert!(answers[7].is_empty());
}

/// Random events on a few keys with INT business and system times (ties included).
fn random_events(rng: &mut ChaCha8Rng) -> Vec<Event> {
    let n = rng.random_range(0..25);
    (0..n)
        .map(|_| {
            let k = Value::Int(rng.random_range(0..3));
            let delete = rng.random_range(0..5) == 0;
            Event {
                seq: Seq::from(rng.random_range(0..12)),
                kind: if delete {
                    EventKind::Delete
                } else {
                    EventKind::Upsert
                },
                key: Row::from([k.clone()]),
                image: if delete {
                    Row::new()
                } else {
                    Row::from([k, Value::Int(rng.random_range(0..3))])
                },
                authored: None,
                system: Some(Seq::from(rng.random_range(0..12))),
            }
        })
        .collect()
}

/// Per key, the images of the SCD2 rows of `H(s)` containing `b` (the model's SCD1 as-of).
fn model_as_of(target: &Target, events: &[Event], s: Option<&Value>, b: &Value) -> Vec<Row> {
    let known: Vec<Event> = events
        .iter()
        .filter(|e| s.is_none_or(|s| e.system.as_ref().map(Seq::to_value).as_deref() <= Some(s)))
        .cloned()
        .collect();
    let n = target.image_len;
    let mut images: Vec<Row> = model::scd2(target, &known)
        .into_iter()
        .filter(|r| contains(&r.value(n), &r.value(n + 1), b))
        .map(|r| r.iter().take(n).collect())
        .collect();
    images.sort();
    images
}

#[test]
fn index_and_stabbing_agree_with_the_model_at_random_points() {
    // Column types do not matter to either path or the model.
    let target = company(ScdType::Bitemporal, DataType::Int);
    let layout = AsOfLayout::of(&target).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut nonempty = 0;
    for case in 0..200 {
        let events = random_events(&mut rng);
        let cut = rng.random_range(0..=events.len());
        let before = model::bitemporal(&target, &events[..cut]);
        let table = model::bitemporal(&target, &events);
        let mut commits = vec![before.iter().map(|r| (r.clone(), 1)).collect::<Vec<_>>()];
        commits.push(
            before
                .iter()
                .map(|r| (r.clone(), -1))
                .chain(table.iter().map(|r| (r.clone(), 1)))
                .collect(),
        );
        let point = |rng: &mut ChaCha8Rng| {
            let s = (rng.random_range(0..6) > 0).then(|| Value::Int(rng.random_range(-1..13)));
            let key = (rng.random_range(0..3) == 0)
                .then(|| Row::from([Value::Int(rng.random_range(0..3))]));
            (s, Value::Int(rng.random_range(-1..13)), key)
        };
        let points: Vec<Point> = (0..30).map(|_| point(&mut rng)).collect();
        let retained = rng.random_range(0..2) == 0;
        let retention = retained.then_some((Value::Int(4), Value::Int(3)));
        let answers = index_answers(&layout, commits, retention, points.clone());
        for ((s, b, key), answer) in points.iter().zip(answers) {
            let filter: Vec<(usize, Value)> = key.iter().map(|k| (0, k.value(0))).collect();
            let stabbed = images(
                &layout,
                visible(&table, &layout, s.as_ref(), Some(b), &filter),
            );
            let mut expected = model_as_of(&target, &events, s.as_ref(), b);
            expected.retain(|image| key.as_ref().is_none_or(|k| image.value(0) == k.value(0)));
            assert_eq!(
                stabbed, expected,
                "case {case}: stabbing at {s:?} {b:?} {key:?}\n{events:?}"
            );
            nonempty += usize::from(!expected.is_empty());
            let refused =
                retained && (s.as_ref().is_some_and(|s| s < &Value::Int(4)) || b < &Value::Int(3));
            assert_eq!(
                answer,
                (!refused).then_some(expected),
                "case {case}: index at {s:?} {b:?} {key:?}\n{events:?}"
            );
        }
    }
    // Not vacuous: most reads see something.
    assert!(nonempty > 3000, "{nonempty} non-empty reads");
}

#[test]
fn reads_before_the_retention_are_refused() {
    let layout = AsOfLayout::of(&company(ScdType::Bitemporal, DataType::Timestamp)).unwrap();
    let commits: Vec<(Row, isize)> = t8_table().into_iter().map(|r| (r, 1)).collect();
    let layout2 = layout.clone();
    let refused = timely::execute_directly(move |worker| {
        let (mut input, mut index) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, rows) = scope.new_collection::<Row, isize>();
            (input, rows.arrange_as_of(&layout2))
        });
        for (row, diff) in commits {
            input.update(row, diff);
        }
        input.advance_to(1);
        input.flush();
        while !index.is_complete(0) {
            worker.step();
        }
        index.set_retention(Some(ts("12:00:00")), None);
        let before = index.as_of(Some(&ts("11:00:00")), &ts("13:00:00"), None);
        let after = index
            .as_of(Some(&ts("12:22:00")), &ts("13:00:00"), None)
            .unwrap();
        // Moving retention back is ignored.
        index.set_retention(Some(ts("10:00:00")), None);
        let still = index.as_of(Some(&ts("11:00:00")), &ts("13:00:00"), None);
        (before.unwrap_err().to_string(), after, still.is_err())
    });
    assert_eq!(refused.0, "as-of point is before the index's retention");
    assert_eq!(refused.1, vec![vec![text("A"), text("XFv2")]]);
    assert!(refused.2);
}

// ---- query resolution ----

fn source(name: &str) -> SourceTable {
    SourceTable {
        name: name.into(),
        schema: Schema::default(),
        input: SourceInput::Table(0),
        projection: None,
        filter: None,
        once: false,
        published: None,
        expectations: vec![],
        line: 1,
    }
}

fn pipeline(targets: Vec<Target>) -> Pipeline {
    Pipeline {
        file: PathBuf::from("p.sql"),
        tables: vec![source("company_events")],
        targets,
        flows: vec![],
        snapshot_flows: vec![],
        replace_flows: vec![],
        warnings: vec![],
    }
}

fn evaluation(
    results: Vec<(Vec<Row>, Vec<(Row, u64, isize)>)>,
    commit_timestamps: Vec<i64>,
) -> Evaluation {
    Evaluation {
        targets: results
            .into_iter()
            .map(|(rows, updates)| TargetResult {
                rows,
                updates,
                changes: vec![],
            })
            .collect(),
        flows: vec![],
        metrics: vec![],
        table_metrics: vec![],
        quarantined: vec![],
        warnings: vec![],
        commit_timestamps,
        events: 0,
        live_tombstones: vec![],
    }
}

#[test]
fn queries_a_bitemporal_target_on_both_axes() {
    let p = pipeline(vec![company(ScdType::Bitemporal, DataType::Timestamp)]);
    let table = t8_table();
    let e = evaluation(vec![(table.clone(), vec![])], vec![]);
    let run = |sql: &str| query(&p, &e, sql).unwrap().1;
    for (s, b, seen) in T8_CHECKS {
        let rows = run(&format!(
            "SELECT * FROM company_bitemporal FOR SYSTEM_TIME AS OF '2025-07-18 {s}' FOR BUSINESS_TIME AS OF TIMESTAMP '2025-07-18T{b}Z'"
        ));
        assert_eq!(
            rows.iter().map(|r| r.value(1)).collect::<Vec<_>>(),
            seen.map(text).into_iter().collect::<Vec<_>>()
        );
    }
    // Only FOR SYSTEM_TIME: every business row believed then.
    assert_eq!(
        run("SELECT * FROM Company_Bitemporal FOR SYSTEM_TIME AS OF '2025-07-18 12:22:00'"),
        vec![table[1].clone(), table[4].clone()]
    );
    // Neither: the current belief.
    assert_eq!(
        run("select * from company_bitemporal where VALUE = 'XFv2'"),
        vec![table[5].clone()]
    );
    let (schema, _) = query(&p, &e, "SELECT * FROM company_bitemporal").unwrap();
    assert_eq!(schema, p.targets[0].schema);
}

#[test]
fn scd2_targets_use_commit_time_as_system_time() {
    let t = company(ScdType::Type2, DataType::Int);
    let p = pipeline(vec![t]);
    let row = |v: &str, start: i64, end: Option<i64>| {
        Row::from([
            text("A"),
            text(v),
            Value::Int(start),
            end.map_or(Value::Null, Value::Int),
        ])
    };
    // Commit 1 at 10:00 opens v1; commit 2 at 11:00 splices v2 in from 5.
    let updates = vec![
        (row("v1", 1, None), 1, 1),
        (row("v1", 1, None), 2, -1),
        (row("v1", 1, Some(5)), 2, 1),
        (row("v2", 5, None), 2, 1),
    ];
    let finals = vec![row("v1", 1, Some(5)), row("v2", 5, None)];
    let micros = |v: &Value| match v {
        Value::Timestamp(t) => *t,
        _ => unreachable!(),
    };
    let e = evaluation(
        vec![(finals.clone(), updates)],
        vec![micros(&ts("10:00:00")), micros(&ts("11:00:00"))],
    );
    let run = |sql: &str| query(&p, &e, sql).unwrap().1;
    let at = |s: &str, b: i64| {
        run(&format!("SELECT * FROM company_bitemporal FOR BUSINESS_TIME AS OF {b} FOR SYSTEM_TIME AS OF '2025-07-18 {s}'"))
    };
    assert_eq!(at("10:30:00", 7), vec![row("v1", 1, None)]);
    assert_eq!(at("11:00:00", 7), vec![row("v2", 5, None)]);
    assert!(at("09:59:59", 7).is_empty());
    assert_eq!(
        run("SELECT * FROM company_bitemporal FOR BUSINESS_TIME AS OF 4"),
        vec![row("v1", 1, Some(5))]
    );
    assert_eq!(run("SELECT * FROM company_bitemporal"), finals);
}

#[test]
fn scd1_targets_read_at_commit_time_and_refuse_business_time() {
    let p = pipeline(vec![company(ScdType::Type1, DataType::Int)]);
    let row = |id: &str, v: &str| Row::from([text(id), text(v)]);
    let updates = vec![
        (row("B", "b1"), 1, 1),
        (row("A", "a1"), 2, 1),
        (row("B", "b1"), 2, -1),
    ];
    let e = evaluation(vec![(vec![row("A", "a1")], updates)], vec![100, 200]);
    let q = |sql: &str| query(&p, &e, sql).map(|r| r.1);
    assert_eq!(
        q("SELECT * FROM company_bitemporal FOR SYSTEM_TIME AS OF '1970-01-01 00:00:00.000150'")
            .unwrap(),
        vec![row("B", "b1")]
    );
    assert_eq!(
        q("SELECT * FROM company_bitemporal WHERE id = 'A'").unwrap(),
        vec![row("A", "a1")]
    );
    assert_eq!(
        q("SELECT * FROM company_bitemporal FOR BUSINESS_TIME AS OF 3").unwrap_err().to_string(),
        "query: FOR BUSINESS_TIME AS OF: `company_bitemporal` is an SCD type 1 table and has no business time"
    );
}

#[test]
fn resolution_errors_are_exact() {
    let p = pipeline(vec![company(ScdType::Bitemporal, DataType::Timestamp)]);
    let cases = [
        (
            "SELECT * FROM company_bitemporl",
            "query: FROM: unknown table `company_bitemporl` (did you mean `company_bitemporal`?)",
        ),
        (
            "SELECT * FROM nothing_like_it",
            "query: FROM: unknown table `nothing_like_it`",
        ),
        (
            "SELECT * FROM company_events",
            "query: FROM: `company_events` is a source table; only targets of flows can be queried",
        ),
        (
            "SELECT * FROM company_bitemporal WHERE vlue = 'x'",
            "query: WHERE: unknown column `vlue` in `company_bitemporal` (did you mean `value`?)",
        ),
        (
            "SELECT * FROM company_bitemporal FOR SYSTEM_TIME AS OF 'noon'",
            "query: FOR SYSTEM_TIME AS OF: `noon` is not a valid TIMESTAMP",
        ),
        (
            "SELECT * FROM company_bitemporal FOR BUSINESS_TIME AS OF 12",
            "query: FOR BUSINESS_TIME AS OF: `12` is not a valid TIMESTAMP",
        ),
        (
            "SELECT * FROM company_bitemporal WHERE __START_AT = 1",
            "query: WHERE: `1` is not a valid TIMESTAMP",
        ),
    ];
    for (text, message) in cases {
        let e = prepare(&p, text).unwrap_err();
        assert_eq!(e.to_string(), message, "{text}");
        assert_eq!(e.kind(), ErrorKind::Validation, "{text}");
    }
    let ok = prepare(
        &p,
        "SELECT * FROM company_bitemporal WHERE __START_AT = '2025-07-18 10:01:00'",
    )
    .unwrap();
    assert_eq!(ok.target(), 0);
}

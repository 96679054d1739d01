use super::*;
use crate::io::OutputFormat;
use crate::value::Datum;
use std::path::Path;

/// Column indices in `schema(w)` for a workload of width `width`.
struct Cols {
    op: usize,
    seq: usize,
    st: usize,
    cols: usize,
}

fn cols(w: &Workload) -> Cols {
    Cols {
        op: w.width + 1,
        seq: w.width + 2,
        st: w.width + 3,
        cols: w.width + 4,
    }
}

fn small() -> Workload {
    Workload {
        events: 2_000,
        keys: 100,
        deletes: 0.1,
        truncates: 0.05,
        partial: 0.2,
        width: 3,
        displacement: 50,
        stragglers: 0.05,
        straggler_distance: 500,
        system_late: 0.05,
        system_lag: 300,
        commits: 7,
        seed: 7,
    }
}

fn seq(row: &Row, c: &Cols) -> u64 {
    match row.value(c.seq) {
        Value::Int(s) => s as u64,
        other => panic!("sequence {other:?}"),
    }
}

fn st(row: &Row, c: &Cols) -> u64 {
    match row.value(c.st) {
        Value::Int(s) => s as u64,
        other => panic!("system time {other:?}"),
    }
}

fn op<'a>(row: &'a Row, c: &Cols) -> &'a str {
    match row.get(c.op) {
        Some(Datum::Str(s)) => s,
        other => panic!("op {other:?}"),
    }
}

/// `row` without its value at `index` (panics when the row is shorter, as `Vec::remove` does).
fn without(row: &Row, index: usize) -> Row {
    assert!(index < row.len(), "removing value {index} of {row:?}");
    row.iter()
        .enumerate()
        .filter(|&(i, _)| i != index)
        .map(|(_, d)| d)
        .collect()
}

#[test]
fn the_same_seed_gives_the_same_rows_and_another_seed_others() {
    let w = small();
    assert_eq!(rows(&w), rows(&w));
    let other = Workload { seed: 8, ..small() };
    assert_ne!(rows(&w), rows(&other));
}

#[test]
fn order_knobs_reorder_the_same_events() {
    let w = small();
    let reordered = Workload {
        displacement: 0,
        stragglers: 0.3,
        commits: 3,
        ..small()
    };
    let c = cols(&w);
    // System times belong to arrival positions (module docs), so only they move with the order.
    let sorted = |w: &Workload| {
        let mut all: Vec<Row> = rows(w).into_iter().flatten().collect();
        all.sort_by_key(|r| seq(r, &c));
        all.iter().map(|r| without(r, c.st)).collect::<Vec<_>>()
    };
    assert_eq!(sorted(&w), sorted(&reordered));
}

#[test]
fn without_stragglers_every_event_arrives_within_d_positions() {
    for displacement in [0, 1, 7, 200, 2_000, u64::MAX] {
        let w = Workload {
            displacement,
            stragglers: 0.0,
            ..small()
        };
        let c = cols(&w);
        let mut farthest = 0;
        for (p, row) in rows(&w).iter().flatten().enumerate() {
            farthest = farthest.max((p as u64).abs_diff(seq(row, &c)));
        }
        assert!(farthest <= displacement, "D = {displacement}: {farthest}");
        // Not trivially: displacements spread over about +-D/2 (module docs), a shuffle's over
        // all positions.
        let expected = if displacement >= w.events {
            w.events * 9 / 10
        } else {
            displacement * 4 / 10
        };
        assert!(farthest >= expected, "D = {displacement}: only {farthest}");
    }
}

#[test]
fn system_times_are_arrival_positions_unless_late_and_change_nothing_else() {
    let w = small();
    let c = cols(&w);
    let on_time = Workload {
        system_late: 0.0,
        ..small()
    };
    let (late_rows, on_time_rows): (Vec<Row>, Vec<Row>) = (
        rows(&w).into_iter().flatten().collect(),
        rows(&on_time).into_iter().flatten().collect(),
    );
    let mut late = 0;
    for ((row, plain), p) in late_rows.iter().zip(&on_time_rows).zip(0u64..) {
        assert_eq!(st(plain, &c), p);
        let s = st(row, &c);
        if s != p {
            late += 1;
            assert!(s < p && p - s <= w.system_lag, "position {p}: st {s}");
        }
        let without_st = |r: &Row| without(r, c.st);
        assert_eq!(without_st(row), without_st(plain));
    }
    // 5% of 2,000.
    assert!((70..=130).contains(&late), "{late}");
}

/// A bitemporal target's events carry `st` as their system time, and some reach the engine after
/// events with greater system times (the point of `system_late`); other targets' carry NULL.
#[test]
fn bitemporal_events_carry_the_system_time() {
    let w = small();
    let system: Vec<Value> = events(&w, &target(&w, ScdType::Bitemporal))
        .into_iter()
        .flat_map(|c| c.events.into_iter().flatten())
        .map(|e| e.system.map_or(Value::Null, |s| s.to_value().into_owned()))
        .collect();
    let mut greatest = i64::MIN;
    let mut behind = 0;
    for s in &system {
        let Value::Int(s) = *s else {
            panic!("system time {s:?}")
        };
        behind += usize::from(s < greatest);
        greatest = greatest.max(s);
    }
    assert!(behind > 50, "{behind} events late in system time");
    for scd in [ScdType::Type1, ScdType::Type2] {
        let all = events(&w, &target(&w, scd));
        assert!(all
            .iter()
            .flat_map(|c| &c.events[0])
            .all(|e| e.system.is_none()));
    }
}

#[test]
fn sequences_are_unique_and_cover_zero_to_events() {
    let w = small();
    let c = cols(&w);
    let mut seqs: Vec<u64> = rows(&w).iter().flatten().map(|r| seq(r, &c)).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..w.events).collect::<Vec<_>>());
}

#[test]
fn commits_have_equal_sizes() {
    let sizes: Vec<usize> = rows(&small()).iter().map(Vec::len).collect();
    assert_eq!(sizes.len(), 7);
    assert!(sizes.iter().all(|&s| s == 285 || s == 286), "{sizes:?}");
    let empty = Workload {
        events: 2,
        commits: 4,
        ..small()
    };
    let sizes: Vec<usize> = rows(&empty).iter().map(Vec::len).collect();
    assert_eq!(sizes, vec![0, 1, 0, 1]);
}

#[test]
fn fractions_hold_within_tolerance_over_ten_thousand_events() {
    let w = Workload {
        events: 10_000,
        keys: 1_000,
        deletes: 0.1,
        truncates: 0.05,
        partial: 0.2,
        width: 3,
        displacement: 10,
        stragglers: 0.1,
        straggler_distance: 1_000,
        system_late: 0.01,
        system_lag: 100,
        commits: 10,
        seed: 42,
    };
    let c = cols(&w);
    let all: Vec<Row> = rows(&w).into_iter().flatten().collect();
    let share = |pred: &dyn Fn(&Row) -> bool| {
        all.iter().filter(|r| pred(r)).count() as f64 / all.len() as f64
    };
    let near = |got: f64, want: f64| (got - want).abs() < 0.015;
    let full = Value::Str("c0,c1,c2".into());
    let deletes = share(&|r| op(r, &c) == "DELETE");
    let truncates = share(&|r| op(r, &c) == "TRUNCATE");
    let partial = share(&|r| op(r, &c) == "UPSERT" && r.value(c.cols) != full);
    assert!(near(deletes, 0.1), "{deletes}");
    assert!(near(truncates, 0.05), "{truncates}");
    // A partial upsert sets all three columns with probability 1/8 and then looks full.
    assert!(near(partial, 0.2 * 7.0 / 8.0), "{partial}");
    // Stragglers arrive ~1,000 positions late, everyone else within ~D plus the gaps they
    // leave; the last 500 positions cannot be that late, hence 0.1 * 0.95.
    let late = all
        .iter()
        .enumerate()
        .filter(|(p, r)| *p as u64 >= seq(r, &c) + 500)
        .count() as f64
        / all.len() as f64;
    assert!(near(late, 0.095), "{late}");
    let system_late = all
        .iter()
        .zip(0u64..)
        .filter(|(r, p)| st(r, &c) != *p)
        .count() as f64
        / all.len() as f64;
    assert!((system_late - 0.01).abs() < 0.004, "{system_late}");
    let keys: std::collections::BTreeSet<Value> = all.iter().map(|r| r.value(0)).collect();
    assert_eq!(keys.len(), 1_001, "every key and NULL (truncates)");
}

#[test]
fn rows_follow_the_op_conventions() {
    let w = small();
    let c = cols(&w);
    let payload = 1..=w.width;
    for row in rows(&w).iter().flatten() {
        assert_eq!(row.len(), schema(&w).len());
        let values = row.unpack();
        let nulls = values[payload.clone()]
            .iter()
            .filter(|v| v.is_null())
            .count();
        match op(row, &c) {
            "TRUNCATE" => {
                assert!(values[0].is_null() && values[c.cols].is_null());
                assert_eq!(nulls, w.width);
            }
            "DELETE" => {
                assert!(!values[0].is_null() && values[c.cols].is_null());
                assert_eq!(nulls, w.width);
            }
            "UPSERT" => {
                let Datum::Str(listed) = values[c.cols] else {
                    panic!("upsert without cols: {row:?}")
                };
                assert!(!listed.is_empty());
                for j in 0..w.width {
                    let set = listed.split(',').any(|n| n == format!("c{j}"));
                    assert_eq!(set, !values[1 + j].is_null(), "{row:?}");
                }
            }
            other => panic!("op {other}"),
        }
    }
}

#[test]
fn invalid_workloads_are_rejected_with_the_knob_named() {
    let cases = [
        (
            Workload {
                deletes: 1.5,
                ..small()
            },
            "deletes",
        ),
        (
            Workload {
                stragglers: -0.1,
                ..small()
            },
            "stragglers",
        ),
        (
            Workload {
                partial: f64::NAN,
                ..small()
            },
            "partial",
        ),
        (
            Workload {
                deletes: 0.5,
                truncates: 0.3,
                partial: 0.3,
                ..small()
            },
            "at most 1",
        ),
        (Workload { keys: 0, ..small() }, "keys"),
        (
            Workload {
                commits: 0,
                ..small()
            },
            "commits",
        ),
        (
            Workload {
                width: 0,
                ..small()
            },
            "width",
        ),
        (
            Workload {
                system_late: 2.0,
                ..small()
            },
            "system_late",
        ),
        (
            Workload {
                system_lag: 0,
                ..small()
            },
            "system_lag",
        ),
    ];
    for (w, needle) in cases {
        let err = w.validate().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Validation);
        assert!(err.message().contains(needle), "{err}");
    }
    let rounding = Workload {
        deletes: 0.1,
        truncates: 0.2,
        partial: 0.7,
        ..small()
    };
    assert!(rounding.validate().is_ok());
    let on_time = Workload {
        system_late: 0.0,
        system_lag: 0,
        ..small()
    };
    assert!(
        on_time.validate().is_ok(),
        "no lag needed when nothing is late"
    );
    assert!(Workload::default().validate().is_ok());
    assert_eq!(Workload::default().straggler_distance, 100_000);
    assert_eq!(Workload::default_straggler_distance(5_000, 0), 500);
}

/// The module's promise: the files of `rows`, read through `pipeline`'s SQL, are `events`.
#[test]
fn rows_through_the_pipeline_are_the_events() {
    for partial in [0.0, 0.2] {
        let w = Workload { partial, ..small() };
        for scd in [ScdType::Type1, ScdType::Type2, ScdType::Bitemporal] {
            let sql = pipeline(&w, scd, OutputFormat::Csv);
            let p = crate::sql::parse(&sql, Path::new("gen/pipeline.sql"))
                .unwrap_or_else(|e| panic!("{e}\n{sql}"));
            assert_eq!(p.targets.len(), 1);
            let (parsed, expected) = (&p.targets[0], target(&w, scd));
            assert_eq!(parsed.name, expected.name);
            assert_eq!(parsed.schema, expected.schema);
            assert_eq!(parsed.image_len, expected.image_len);
            assert_eq!(parsed.keys, expected.keys);
            assert_eq!(parsed.scd, expected.scd);
            assert_eq!(parsed.sequence_type, expected.sequence_type);
            assert_eq!(parsed.system_sequence_type, expected.system_sequence_type);
            assert_eq!(parsed.tracked, expected.tracked);
            assert_eq!(parsed.partial, expected.partial);
            assert_eq!(parsed.tombstone_gc_seconds, expected.tombstone_gc_seconds);

            let flow = &p.flows[0];
            let source = &p.tables[flow.source];
            let through_sql: Vec<Vec<Event>> = rows(&w)
                .iter()
                .map(|commit| {
                    commit
                        .iter()
                        .filter(|row| {
                            source
                                .filter
                                .as_ref()
                                .is_none_or(|f| f.eval_predicate(&row.unpack()).unwrap())
                        })
                        .map(|row| {
                            crate::prepare::to_event(
                                flow,
                                parsed,
                                &source.schema,
                                &row.unpack()[..],
                            )
                            .unwrap()
                        })
                        .collect()
                })
                .collect();
            let direct: Vec<Vec<Event>> = events(&w, &expected)
                .into_iter()
                .map(|mut c| c.events.remove(0))
                .collect();
            assert_eq!(through_sql, direct, "{scd:?}, partial {partial}");
        }
    }
}

#[test]
fn jsonl_pipelines_parse() {
    let sql = pipeline(&small(), ScdType::Type2, OutputFormat::Jsonl);
    assert!(sql.contains("format => 'json'"), "{sql}");
    crate::sql::parse(&sql, Path::new("p.sql")).unwrap();
}

/// Pins the generator's output: a change here changes every benchmark's workload, so it must be
/// deliberate (a new `rand` / `chacha20` version can cause it).
#[test]
fn the_output_is_pinned() {
    let c = cols(&small());
    let late: Vec<(u64, u64)> = (0u64..)
        .zip(rows(&small()).iter().flatten())
        .filter(|(p, r)| st(r, &c) != *p)
        .map(|(p, r)| (p, st(r, &c)))
        .take(3)
        .collect();
    assert_eq!(
        late,
        vec![(17, 0), (55, 38), (56, 0)],
        "(position, system time) of the first events late in system time"
    );
    let first: Vec<Row> = rows(&small())[0][..3].to_vec();
    let s = |v: &str| Value::Str(v.into());
    assert_eq!(
        first,
        vec![
            vec![
                Value::Int(8),
                s("v255600"),
                s("v849289"),
                s("v359613"),
                s("UPSERT"),
                Value::Int(1),
                Value::Int(0),
                s("c0,c1,c2"),
            ],
            vec![
                Value::Int(98),
                s("v075769"),
                s("v674927"),
                s("v322892"),
                s("UPSERT"),
                Value::Int(4),
                Value::Int(1),
                s("c0,c1,c2"),
            ],
            vec![
                Value::Int(70),
                Value::Null,
                Value::Null,
                Value::Null,
                s("DELETE"),
                Value::Int(11),
                Value::Int(2),
                Value::Null,
            ],
        ]
    );
}

//! The SPEC section 4 vectors (T1–T4, T11–T19) and the section 8 decisions, against the model.

use super::{evaluate, scd1, scd2};
use crate::event::{Event, EventKind};
use crate::plan::{ScdType, Target, TargetKind, DEFAULT_TOMBSTONE_GC_SECONDS};
use crate::value::{DataType, Row, Schema, Value};

pub(super) const N: Value = Value::Null;

pub(super) fn i(n: i64) -> Value {
    Value::Int(n)
}

pub(super) fn s(x: &str) -> Value {
    Value::Str(x.to_string())
}

/// A target over `columns` with INT sequences; `tracked` defaults to every column. Column types
/// do not matter to the model, so all are declared STRING.
fn target(
    columns: &[&str],
    keys: &[usize],
    scd: ScdType,
    tracked: Option<Vec<bool>>,
    partial: bool,
) -> Target {
    let mut schema: Vec<(String, DataType)> = columns
        .iter()
        .map(|c| (c.to_string(), DataType::String))
        .collect();
    if scd == ScdType::Type2 {
        schema.push(("__START_AT".into(), DataType::Int));
        schema.push(("__END_AT".into(), DataType::Int));
    }
    Target {
        kind: TargetKind::AutoCdc,
        name: "t".into(),
        schema: Schema::new(schema),
        image_len: columns.len(),
        keys: keys.to_vec(),
        scd,
        sequence_type: DataType::Int,
        system_sequence_type: None,
        tracked: tracked.unwrap_or_else(|| vec![true; columns.len()]),
        partial,
        tombstone_gc_seconds: DEFAULT_TOMBSTONE_GC_SECONDS,
        replace_where: None,
        view_of: None,
        properties: Default::default(),
        line: 1,
    }
}

fn upsert_at(t: &Target, seq: Value, image: impl Into<Row>, authored: Option<Vec<bool>>) -> Event {
    let image = image.into();
    Event {
        seq: seq.into(),
        kind: EventKind::Upsert,
        key: t.keys.iter().map(|&k| image.value(k)).collect(),
        image,
        authored: authored.map(Vec::into_boxed_slice),
        system: None,
    }
}

fn up(t: &Target, seq: i64, image: impl Into<Row>) -> Event {
    upsert_at(t, i(seq), image, None)
}

fn del(key: impl Into<Row>, seq: i64) -> Event {
    Event {
        seq: i(seq).into(),
        kind: EventKind::Delete,
        key: key.into(),
        image: Row::new(),
        authored: None,
        system: None,
    }
}

fn truncate(seq: i64) -> Event {
    Event {
        seq: i(seq).into(),
        kind: EventKind::Truncate,
        key: Row::new(),
        image: Row::new(),
        authored: None,
        system: None,
    }
}

/// The authored mask `IGNORE NULL UPDATES [ON ...]` gives an upsert: a NULL in an ignored
/// column is not authored.
fn ignore_null(image: &[Value], ignore: &[bool]) -> Option<Vec<bool>> {
    Some(
        image
            .iter()
            .zip(ignore)
            .map(|(v, &ig)| !(ig && v.is_null()))
            .collect(),
    )
}

/// Asserts `evaluate` gives `expected` for `events`, reversed, rotated and replayed twice.
fn check(t: &Target, events: &[Event], expected: &[Vec<Value>]) {
    let mut reversed = events.to_vec();
    reversed.reverse();
    let mut rotated = events.to_vec();
    rotated.rotate_left(events.len() / 2);
    let doubled: Vec<Event> = events.iter().chain(&reversed).cloned().collect();
    for input in [events.to_vec(), reversed, rotated, doubled] {
        assert_eq!(evaluate(t, &input), expected, "input: {input:?}");
    }
}

// ---- T0–T4: the users_cdf seed ----

fn users(scd: ScdType, tracked: Option<Vec<bool>>) -> Target {
    target(&["userId", "name", "city"], &[0], scd, tracked, false)
}

/// T0 rows 1–8.
fn users_cdf(t: &Target) -> Vec<Event> {
    vec![
        up(t, 1, vec![i(124), s("Raul"), s("Oaxaca")]),
        up(t, 1, vec![i(123), s("Isabel"), s("Monterrey")]),
        up(t, 2, vec![i(125), s("Mercedes"), s("Tijuana")]),
        up(t, 2, vec![i(126), s("Lily"), s("Cancun")]),
        del(vec![i(123)], 6),
        up(t, 6, vec![i(125), s("Mercedes"), s("Guadalajara")]),
        up(t, 5, vec![i(125), s("Mercedes"), s("Mexicali")]),
        up(t, 5, vec![i(123), s("Isabel"), s("Chihuahua")]),
    ]
}

#[test]
fn t1_scd1() {
    let t = users(ScdType::Type1, None);
    let events = users_cdf(&t);
    let expected = vec![
        vec![i(124), s("Raul"), s("Oaxaca")],
        vec![i(125), s("Mercedes"), s("Guadalajara")],
        vec![i(126), s("Lily"), s("Cancun")],
    ];
    check(&t, &events, &expected);
    // T1-split: update A = rows 1–6 already gives the table; update B changes nothing.
    assert_eq!(scd1(&t, &events[..6]), expected);
}

#[test]
fn t2_scd1_truncate() {
    let t = users(ScdType::Type1, None);
    let mut events = users_cdf(&t);
    events.push(truncate(3));
    check(
        &t,
        &events,
        &[vec![i(125), s("Mercedes"), s("Guadalajara")]],
    );
}

#[test]
fn t3_scd2() {
    let t = users(ScdType::Type2, None);
    let row = |k, n: &str, c: &str, start, end: Value| vec![i(k), s(n), s(c), i(start), end];
    check(
        &t,
        &users_cdf(&t),
        &[
            row(123, "Isabel", "Monterrey", 1, i(5)),
            row(123, "Isabel", "Chihuahua", 5, i(6)),
            row(124, "Raul", "Oaxaca", 1, N),
            row(125, "Mercedes", "Tijuana", 2, i(5)),
            row(125, "Mercedes", "Mexicali", 5, i(6)),
            row(125, "Mercedes", "Guadalajara", 6, N),
            row(126, "Lily", "Cancun", 2, N),
        ],
    );
}

#[test]
fn t4_scd2_track_history_except_city() {
    let t = users(ScdType::Type2, Some(vec![true, true, false]));
    let row = |k, n: &str, c: &str, start, end: Value| vec![i(k), s(n), s(c), i(start), end];
    check(
        &t,
        &users_cdf(&t),
        &[
            row(123, "Isabel", "Chihuahua", 1, i(6)),
            row(124, "Raul", "Oaxaca", 1, N),
            row(125, "Mercedes", "Guadalajara", 2, N),
            row(126, "Lily", "Cancun", 2, N),
        ],
    );
}

// ---- T11: three runs; each run's table is the model of the union of all runs so far ----

#[test]
fn t11_three_runs() {
    let t = target(
        &["id", "name", "version"],
        &[0],
        ScdType::Type1,
        None,
        false,
    );
    let ev = |id, name: &str, v| up(&t, v, vec![i(id), s(name), i(v)]);
    let run1 = vec![ev(1, "alice", 1), ev(2, "bob", 1)];
    let run2 = vec![
        ev(1, "alicia", 2),
        ev(1, "alice", 1),
        del(vec![i(2)], 2),
        ev(3, "carol", 1),
    ];
    let run3 = vec![ev(1, "alice", 1)];

    let mut all = run1.clone();
    check(
        &t,
        &all,
        &[vec![i(1), s("alice"), i(1)], vec![i(2), s("bob"), i(1)]],
    );
    all.extend(run2);
    let after_run2 = vec![vec![i(1), s("alicia"), i(2)], vec![i(3), s("carol"), i(1)]];
    check(&t, &all, &after_run2);
    all.extend(run3);
    check(&t, &all, &after_run2);
}

// ---- T12–T19 ----

#[test]
fn t12_scd2_noop_update() {
    let t = target(&["k", "v"], &[0], ScdType::Type2, None, false);
    let events = [up(&t, 1, vec![i(1), s("a")]), up(&t, 2, vec![i(1), s("a")])];
    check(&t, &events, &[vec![i(1), s("a"), i(1), N]]);
}

#[test]
fn t13_scd2_delete_and_reinsert() {
    let t = target(&["k", "v"], &[0], ScdType::Type2, None, false);
    let events = [
        up(&t, 1, vec![i(1), s("a")]),
        del(vec![i(1)], 2),
        up(&t, 3, vec![i(1), s("b")]),
    ];
    check(
        &t,
        &events,
        &[vec![i(1), s("a"), i(1), i(2)], vec![i(1), s("b"), i(3), N]],
    );
}

/// (k, c1, c2) events of T14 with the masks `IGNORE NULL UPDATES [ON ...]` gives them.
fn t14_events(t: &Target, ignore: &[bool], second: Vec<Value>) -> Vec<Event> {
    [(1, vec![i(1), s("x"), s("y")]), (2, second)]
        .into_iter()
        .map(|(seq, image)| {
            let mask = ignore_null(&image, ignore);
            upsert_at(t, i(seq), image, mask)
        })
        .collect()
}

#[test]
fn t14_ignore_null_updates() {
    let partial = target(&["k", "c1", "c2"], &[0], ScdType::Type1, None, true);
    let events = t14_events(&partial, &[true, true, true], vec![i(1), N, s("z")]);
    check(&partial, &events, &[vec![i(1), s("x"), s("z")]]);

    // Without the clause: whole images.
    let whole = target(&["k", "c1", "c2"], &[0], ScdType::Type1, None, false);
    let events = [
        up(&whole, 1, vec![i(1), s("x"), s("y")]),
        up(&whole, 2, vec![i(1), N, s("z")]),
    ];
    check(&whole, &events, &[vec![i(1), N, s("z")]]);
}

#[test]
fn t14b_ignore_null_folded_in_one_batch() {
    // The model sees only the event set, so one batch and two batches are the same input; the
    // arrival orders `check` tries cover the in-batch disorder.
    let t = target(&["k", "c1", "c2"], &[0], ScdType::Type1, None, true);
    let mut events = t14_events(&t, &[true, true, true], vec![i(1), N, s("z")]);
    events.reverse();
    check(&t, &events, &[vec![i(1), s("x"), s("z")]]);
}

#[test]
fn t14c_ignore_null_on_list() {
    let t = target(&["k", "c1", "c2"], &[0], ScdType::Type1, None, true);
    let events = t14_events(&t, &[false, true, false], vec![i(1), N, N]);
    check(&t, &events, &[vec![i(1), s("x"), N]]);
}

#[test]
fn t14_partial_delete_resets_all_columns() {
    let t = target(&["k", "c1", "c2"], &[0], ScdType::Type1, None, true);
    let all = [true, true, true];
    let first = vec![i(1), s("x"), s("y")];
    let third = vec![i(1), N, s("z")];
    let events = [
        upsert_at(&t, i(1), first.clone(), ignore_null(&first, &all)),
        del(vec![i(1)], 2),
        upsert_at(&t, i(3), third.clone(), ignore_null(&third, &all)),
    ];
    check(&t, &events, &[vec![i(1), N, s("z")]]);
    // A delete at the sequence of the latest upsert beats it.
    check(&t, &[events[0].clone(), del(vec![i(1)], 1)], &[]);
}

/// The authored mask of `COLUMNS TO UPDATE`: the listed columns plus the keys.
fn columns_to_update(listed: &[usize], keys: &[usize], len: usize) -> Option<Vec<bool>> {
    Some(
        (0..len)
            .map(|c| listed.contains(&c) || keys.contains(&c))
            .collect(),
    )
}

#[test]
fn t15_columns_to_update() {
    let t = target(&["k", "c1", "c2"], &[0], ScdType::Type1, None, true);
    let events = [
        upsert_at(
            &t,
            i(1),
            vec![i(1), s("x"), s("y")],
            columns_to_update(&[1, 2], &[0], 3),
        ),
        upsert_at(
            &t,
            i(2),
            vec![i(1), N, s("q")],
            columns_to_update(&[1], &[0], 3),
        ),
    ];
    check(&t, &events, &[vec![i(1), N, s("y")]]);

    // A new key: unlisted columns are NULL.
    let fresh = [upsert_at(
        &t,
        i(1),
        vec![i(2), s("x"), s("y")],
        columns_to_update(&[2], &[0], 3),
    )];
    check(&t, &fresh, &[vec![i(2), N, s("y")]]);
    // An empty list still sets the keys: the key is live with every other column NULL.
    let empty = [upsert_at(
        &t,
        i(1),
        vec![i(3), s("x"), s("y")],
        columns_to_update(&[], &[0], 3),
    )];
    check(&t, &empty, &[vec![i(3), N, N]]);
}

#[test]
fn t17_struct_sequence() {
    let t = target(&["k", "v"], &[0], ScdType::Type1, None, false);
    let at =
        |ts, n, v: &str| upsert_at(&t, Value::Struct(vec![i(ts), i(n)]), vec![i(1), s(v)], None);
    let events = [at(10, 2, "a"), at(10, 1, "b"), at(9, 9, "c")];
    check(&t, &events, &[vec![i(1), s("a")]]);

    // SCD2 intervals carry the struct sequence (same keys, so the same events serve).
    let t2 = target(&["k", "v"], &[0], ScdType::Type2, None, false);
    let seq = |ts, n| Value::Struct(vec![i(ts), i(n)]);
    check(
        &t2,
        &events,
        &[
            vec![i(1), s("c"), seq(9, 9), seq(10, 1)],
            vec![i(1), s("b"), seq(10, 1), seq(10, 2)],
            vec![i(1), s("a"), seq(10, 2), N],
        ],
    );
}

#[test]
fn t18_late_truncate() {
    let t = target(&["k", "v"], &[0], ScdType::Type1, None, false);
    let mut events = vec![up(&t, 1, vec![i(1), s("a")]), up(&t, 5, vec![i(2), s("b")])];
    events.push(truncate(3));
    let after = [vec![i(2), s("b")]];
    check(&t, &events, &after);
    events.push(up(&t, 2, vec![i(3), s("c")]));
    check(&t, &events, &after);
}

#[test]
fn d5_truncate_wins_equality() {
    let t = target(&["k", "v"], &[0], ScdType::Type1, None, false);
    let events = [
        up(&t, 3, vec![i(1), s("a")]),
        up(&t, 4, vec![i(2), s("b")]),
        truncate(3),
        truncate(1),
    ];
    check(&t, &events, &[vec![i(2), s("b")]]);

    // Partial mode: the truncate resets every field, like a delete of every key.
    let p = target(&["k", "c1", "c2"], &[0], ScdType::Type1, None, true);
    let mask = Some(vec![true, true, false]);
    let events = [
        upsert_at(&p, i(2), vec![i(1), s("x"), s("y")], None),
        truncate(3),
        upsert_at(&p, i(4), vec![i(1), s("z"), N], mask),
    ];
    check(&p, &events, &[vec![i(1), s("z"), N]]);
}

#[test]
fn t19_delete_of_unknown_key_then_older_upsert() {
    let t = target(&["k", "v"], &[0], ScdType::Type1, None, false);
    let events = [del(vec![i(9)], 5), up(&t, 4, vec![i(9), s("z")])];
    check(&t, &events, &[]);
    // SCD2: the older upsert opens a version the delete closes.
    let t2 = target(&["k", "v"], &[0], ScdType::Type2, None, false);
    let events = [del(vec![i(9)], 5), up(&t2, 4, vec![i(9), s("z")])];
    check(&t2, &events, &[vec![i(9), s("z"), i(4), i(5)]]);
}

// ---- D1, D2 ----

#[test]
fn d1_replays_are_noops() {
    for scd in [ScdType::Type1, ScdType::Type2] {
        let t = users(scd, None);
        let events = users_cdf(&t);
        let replayed: Vec<Event> = events
            .iter()
            .chain(&events)
            .chain(&events)
            .cloned()
            .collect();
        assert_eq!(evaluate(&t, &replayed), evaluate(&t, &events));
    }
}

#[test]
fn d2_ties_scd1() {
    let t = target(&["k", "v"], &[0], ScdType::Type1, None, false);
    let a = up(&t, 1, vec![i(1), s("a")]);
    let b = up(&t, 1, vec![i(1), s("b")]);
    check(&t, &[a.clone(), b.clone()], &[vec![i(1), s("b")]]);
    check(&t, &[a.clone(), del(vec![i(1)], 1), b], &[]);
    // An older delete does not beat a newer upsert.
    check(&t, &[a, del(vec![i(1)], 0)], &[vec![i(1), s("a")]]);
}

#[test]
fn d2_ties_scd2() {
    let t = target(&["k", "v"], &[0], ScdType::Type2, None, false);
    let a = up(&t, 1, vec![i(1), s("a")]);
    let b = up(&t, 2, vec![i(1), s("b")]);
    let c = up(&t, 2, vec![i(1), s("c")]);
    check(
        &t,
        &[a.clone(), b.clone(), c],
        &[vec![i(1), s("a"), i(1), i(2)], vec![i(1), s("c"), i(2), N]],
    );
    // Delete beats upsert: no zero-length version.
    check(
        &t,
        &[a, b.clone(), del(vec![i(1)], 2)],
        &[vec![i(1), s("a"), i(1), i(2)]],
    );
    check(&t, &[b, del(vec![i(1)], 2)], &[]);
}

#[test]
fn d2_partial_ties_merge_per_column() {
    let t = target(&["k", "c1", "c2"], &[0], ScdType::Type1, None, true);
    let c1 = Some(vec![true, true, false]);
    let c2 = Some(vec![true, false, true]);
    let events = [
        upsert_at(&t, i(2), vec![i(1), s("p"), N], c1.clone()),
        upsert_at(&t, i(2), vec![i(1), N, s("q")], c2),
        upsert_at(&t, i(2), vec![i(1), s("b"), N], c1.clone()),
        upsert_at(&t, i(1), vec![i(1), s("z"), s("z")], None),
    ];
    // c1: "p" vs "b" at seq 2, the greater value wins; c2 from the seq-2 event authoring it.
    check(&t, &events, &[vec![i(1), s("p"), s("q")]]);
}

#[test]
fn scd2_partial_overlays_and_delete_resets() {
    let t = target(&["k", "c1", "c2"], &[0], ScdType::Type2, None, true);
    let all = [true, true, true];
    let ev = |seq, image: Vec<Value>| {
        let mask = ignore_null(&image, &all);
        upsert_at(&t, i(seq), image, mask)
    };
    let events = [
        ev(1, vec![i(1), s("x"), s("y")]),
        ev(2, vec![i(1), N, s("z")]),
        del(vec![i(1)], 3),
        ev(4, vec![i(1), N, s("w")]),
    ];
    check(
        &t,
        &events,
        &[
            vec![i(1), s("x"), s("y"), i(1), i(2)],
            vec![i(1), s("x"), s("z"), i(2), i(3)],
            vec![i(1), N, s("w"), i(4), N],
        ],
    );
}

#[test]
fn output_sorted_by_key_then_start() {
    let t = target(&["a", "b", "v"], &[1, 0], ScdType::Type2, None, false);
    let events = [
        up(&t, 1, vec![i(2), i(1), s("x")]),
        up(&t, 1, vec![i(1), i(2), s("y")]),
        up(&t, 2, vec![i(1), i(2), s("z")]),
    ];
    // Keys compare in KEYS order: (b, a).
    assert_eq!(
        scd2(&t, &events),
        vec![
            vec![i(2), i(1), s("x"), i(1), N],
            vec![i(1), i(2), s("y"), i(1), i(2)],
            vec![i(1), i(2), s("z"), i(2), N],
        ]
    );
}

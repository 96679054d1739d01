//! The engine equals the reference model after every commit, for random event sets (ties,
//! deletes, truncates, partial updates, NULL values, STRUCT sequences), random arrival orders,
//! random commit splits and 1, 2 or 4 workers.

use crate::util::{table_at, target};
use proptest::prelude::*;
use scdflow::event::{Event, EventKind};
use scdflow::plan::{ScdType, Target};
use scdflow::runtime::{execute, CommitEvents};
use scdflow::value::Value;

const VALUES: usize = 2;

#[derive(Clone, Copy, Debug)]
enum Mode {
    Scd1,
    Scd1Partial,
    Scd2,
    Scd2Partial,
    Scd2Untracked,
}

impl Mode {
    fn target(self) -> Target {
        match self {
            Mode::Scd1 => target(ScdType::Type1, VALUES, vec![true; 3], false),
            Mode::Scd1Partial => target(ScdType::Type1, VALUES, vec![true; 3], true),
            Mode::Scd2 => target(ScdType::Type2, VALUES, vec![true; 3], false),
            Mode::Scd2Partial => target(ScdType::Type2, VALUES, vec![true; 3], true),
            Mode::Scd2Untracked => target(ScdType::Type2, VALUES, vec![true, true, false], false),
        }
    }

    fn truncates(self) -> bool {
        matches!(self, Mode::Scd1 | Mode::Scd1Partial)
    }
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        4 => (0..3u8).prop_map(|v| Value::Str(format!("v{v}"))),
    ]
}

fn seq(structured: bool) -> BoxedStrategy<Value> {
    if structured {
        (
            0..4i64,
            prop_oneof![Just(Value::Null), (0..3i64).prop_map(Value::Int)],
        )
            .prop_map(|(a, b)| Value::Struct(vec![Value::Int(a), b]))
            .boxed()
    } else {
        (0..12i64).prop_map(Value::Int).boxed()
    }
}

fn event(mode: Mode, structured: bool) -> impl Strategy<Value = Event> {
    let kinds = if mode.truncates() { 12u8 } else { 11 };
    (
        0..4i64,
        seq(structured),
        0..kinds,
        proptest::collection::vec(value(), VALUES),
        any::<[bool; VALUES]>(),
    )
        .prop_map(move |(k, seq, kind, values, mask)| {
            let key = vec![Value::Int(k)];
            let partial = matches!(mode, Mode::Scd1Partial | Mode::Scd2Partial);
            match kind {
                0..=7 => {
                    let mut image = key.clone();
                    image.extend(values);
                    let authored = partial.then(|| {
                        let mut m = vec![true];
                        m.extend(mask);
                        m
                    });
                    Event {
                        seq,
                        kind: EventKind::Upsert,
                        key,
                        image,
                        authored,
                        system: Value::Null,
                    }
                }
                8..=10 => Event {
                    seq,
                    kind: EventKind::Delete,
                    key,
                    image: Vec::new(),
                    authored: None,
                    system: Value::Null,
                },
                _ => Event {
                    seq,
                    kind: EventKind::Truncate,
                    key: Vec::new(),
                    image: Vec::new(),
                    authored: None,
                    system: Value::Null,
                },
            }
        })
}

/// Events (duplicated sometimes, to exercise D1), an arrival order and commit boundaries.
fn workload(mode: Mode) -> impl Strategy<Value = (Vec<Event>, Vec<usize>, usize)> {
    any::<bool>()
        .prop_flat_map(move |structured| proptest::collection::vec(event(mode, structured), 1..40))
        .prop_flat_map(|events| {
            let n = events.len();
            let with_replays = (
                Just(events.clone()),
                proptest::sample::subsequence(events, 0..=n.min(5)),
            )
                .prop_map(|(mut e, replays)| {
                    e.extend(replays);
                    e
                });
            with_replays.prop_flat_map(|events| {
                let n = events.len();
                (
                    Just(events).prop_shuffle(),
                    proptest::collection::vec(0..n, 0..6),
                    prop_oneof![Just(1usize), Just(2), Just(4)],
                )
            })
        })
}

fn check(
    mode: Mode,
    events: Vec<Event>,
    mut cuts: Vec<usize>,
    workers: usize,
) -> Result<(), TestCaseError> {
    let target = mode.target();
    cuts.sort();
    cuts.dedup();
    let mut commits = Vec::new();
    let mut prefixes = Vec::new();
    let mut from = 0;
    for cut in cuts.into_iter().chain(std::iter::once(events.len())) {
        commits.push(CommitEvents {
            events: vec![events[from..cut].to_vec()],
            timestamp: 0,
            ..CommitEvents::default()
        });
        prefixes.push(cut);
        from = cut;
    }
    let updates = execute(std::slice::from_ref(&target), commits, workers, None).expect("execute");
    // Each commit's updates are consolidated: a row is retracted or inserted at most once.
    let mut seen = std::collections::BTreeSet::new();
    for (row, version, _) in &updates.rows[0] {
        prop_assert!(
            seen.insert((row, *version)),
            "{:?} twice in commit {}",
            row,
            version
        );
    }
    for (c, prefix) in prefixes.iter().enumerate() {
        let expected = scdflow::model::evaluate(&target, &events[..*prefix]);
        let actual = table_at(&target, &updates.rows[0], c as u64 + 1);
        prop_assert_eq!(
            actual,
            expected,
            "after commit {} of {:?} with {} workers",
            c + 1,
            mode,
            workers
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn scd1_equals_model((events, cuts, workers) in workload(Mode::Scd1)) {
        check(Mode::Scd1, events, cuts, workers)?;
    }

    #[test]
    fn scd1_partial_equals_model((events, cuts, workers) in workload(Mode::Scd1Partial)) {
        check(Mode::Scd1Partial, events, cuts, workers)?;
    }

    #[test]
    fn scd2_equals_model((events, cuts, workers) in workload(Mode::Scd2)) {
        check(Mode::Scd2, events, cuts, workers)?;
    }

    #[test]
    fn scd2_partial_equals_model((events, cuts, workers) in workload(Mode::Scd2Partial)) {
        check(Mode::Scd2Partial, events, cuts, workers)?;
    }

    #[test]
    fn scd2_untracked_equals_model((events, cuts, workers) in workload(Mode::Scd2Untracked)) {
        check(Mode::Scd2Untracked, events, cuts, workers)?;
    }
}

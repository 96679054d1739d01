//! The engine equals the reference model after every commit, for random event sets (ties,
//! deletes, truncates, partial updates, NULL values, STRUCT sequences, independent business and
//! system times), random arrival orders, random commit splits and 1, 2 or 4 workers.

use crate::util::{arrivals, equals_the_model_after_every_commit, table_at, target};
use proptest::prelude::*;
use scdflow::event::{Event, EventKind};
use scdflow::plan::{ScdType, Target};
use scdflow::runtime::{execute, CommitEvents};
use scdflow::value::{Row, Seq, Value};

const VALUES: usize = 2;

#[derive(Clone, Copy, Debug)]
enum Mode {
    Scd1,
    Scd1Partial,
    Scd2,
    Scd2Partial,
    Scd2Untracked,
    Bitemporal,
    BitemporalPartial,
    BitemporalUntracked,
}

impl Mode {
    fn target(self) -> Target {
        match self {
            Mode::Scd1 => target(ScdType::Type1, VALUES, vec![true; 3], false),
            Mode::Scd1Partial => target(ScdType::Type1, VALUES, vec![true; 3], true),
            Mode::Scd2 => target(ScdType::Type2, VALUES, vec![true; 3], false),
            Mode::Scd2Partial => target(ScdType::Type2, VALUES, vec![true; 3], true),
            Mode::Scd2Untracked => target(ScdType::Type2, VALUES, vec![true, true, false], false),
            Mode::Bitemporal => target(ScdType::Bitemporal, VALUES, vec![true; 3], false),
            Mode::BitemporalPartial => target(ScdType::Bitemporal, VALUES, vec![true; 3], true),
            Mode::BitemporalUntracked => {
                target(ScdType::Bitemporal, VALUES, vec![true, false, true], false)
            }
        }
    }

    fn partial(self) -> bool {
        matches!(
            self,
            Mode::Scd1Partial | Mode::Scd2Partial | Mode::BitemporalPartial
        )
    }

    fn bitemporal(self) -> bool {
        matches!(
            self,
            Mode::Bitemporal | Mode::BitemporalPartial | Mode::BitemporalUntracked
        )
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
    // A few system times, so that several events share one (D15).
    let systems: i64 = if mode.bitemporal() { 6 } else { 1 };
    (
        0..4i64,
        seq(structured),
        0..kinds,
        proptest::collection::vec(value(), VALUES),
        any::<[bool; VALUES]>(),
        0..systems,
    )
        .prop_map(move |(k, seq, kind, values, mask, system)| {
            let key = Row::from([Value::Int(k)]);
            let seq = Seq::from(seq);
            let partial = mode.partial();
            let system = mode.bitemporal().then(|| Seq::from(system));
            match kind {
                0..=7 => {
                    let mut image = key.clone();
                    image.extend(values);
                    let authored = partial.then(|| {
                        let mut m = vec![true];
                        m.extend(mask);
                        m.into_boxed_slice()
                    });
                    Event {
                        seq,
                        kind: EventKind::Upsert,
                        key,
                        image,
                        authored,
                        system,
                    }
                }
                8..=10 => Event {
                    seq,
                    kind: EventKind::Delete,
                    key,
                    image: Row::new(),
                    authored: None,
                    system,
                },
                _ => Event {
                    seq,
                    kind: EventKind::Truncate,
                    key: Row::new(),
                    image: Row::new(),
                    authored: None,
                    system: None,
                },
            }
        })
}

/// Events (duplicated sometimes, to exercise D1), an arrival order and commit boundaries.
fn workload(mode: Mode) -> impl Strategy<Value = (Vec<Event>, Vec<usize>, usize)> {
    any::<bool>()
        .prop_flat_map(move |structured| proptest::collection::vec(event(mode, structured), 1..40))
        .prop_flat_map(arrivals)
}

/// Runs `events` cut into commits at `cuts` (their order is the arrival order); returns the
/// updates and, per commit, the length of the prefix of `events` it completes.
fn run(
    mode: Mode,
    events: &[Event],
    mut cuts: Vec<usize>,
    workers: usize,
) -> (Vec<(Row, u64, isize)>, Vec<usize>) {
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
    let mut updates =
        execute(std::slice::from_ref(&target), commits, workers, None).expect("execute");
    (std::mem::take(&mut updates.rows[0]), prefixes)
}

fn check(
    mode: Mode,
    events: Vec<Event>,
    cuts: Vec<usize>,
    workers: usize,
) -> Result<(), TestCaseError> {
    let target = mode.target();
    let (updates, prefixes) = run(mode, &events, cuts, workers);
    let run = format!("{mode:?} with {workers} workers");
    equals_the_model_after_every_commit(&target, &events, &updates, &prefixes, &run)?;
    if mode.bitemporal() {
        let last = prefixes.len() as u64;
        believed_histories_are_scd2(&target, &events, &table_at(&target, &updates, last))?;
    }
    Ok(())
}

/// SPEC 7 item 3: at every system time `s`, the rows believed at `s` (their business columns)
/// are the SCD2 table of the events known at `s`.
fn believed_histories_are_scd2(
    target: &Target,
    events: &[Event],
    table: &[Row],
) -> Result<(), TestCaseError> {
    let n = target.image_len;
    let mut scd2 = target.clone();
    scd2.scd = ScdType::Type2;
    scd2.system_sequence_type = None;
    scd2.schema.columns.truncate(n + 2);
    let system = |e: &Event| {
        e.system
            .as_ref()
            .map_or(Value::Null, |s| s.to_value().into_owned())
    };
    let times: std::collections::BTreeSet<Value> = events.iter().map(system).collect();
    for s in times {
        let believed = |r: &&Row| {
            let (start, end) = (r.value(n + 2), r.value(n + 3));
            start <= s && (end.is_null() || s < end)
        };
        let mut rows: Vec<Row> = table
            .iter()
            .filter(believed)
            .map(|r| r.iter().take(n + 2).collect())
            .collect();
        rows.sort();
        let known: Vec<Event> = events.iter().filter(|e| system(e) <= s).cloned().collect();
        let mut expected = scdflow::model::scd2(&scd2, &known);
        expected.sort();
        prop_assert_eq!(rows, expected, "rows believed at system time {:?}", s);
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

    #[test]
    fn bitemporal_equals_model((events, cuts, workers) in workload(Mode::Bitemporal)) {
        check(Mode::Bitemporal, events, cuts, workers)?;
    }

    #[test]
    fn bitemporal_partial_equals_model((events, cuts, workers) in workload(Mode::BitemporalPartial)) {
        check(Mode::BitemporalPartial, events, cuts, workers)?;
    }

    #[test]
    fn bitemporal_untracked_equals_model(
        (events, cuts, workers) in workload(Mode::BitemporalUntracked)
    ) {
        check(Mode::BitemporalUntracked, events, cuts, workers)?;
    }

    /// SPEC 7 item 3: when system time arrives in order, rows are never edited except to set
    /// `__SYSTEM_END_AT` once.
    #[test]
    fn bitemporal_rows_only_close_when_system_time_is_in_order(
        (mut events, cuts, workers) in workload(Mode::Bitemporal)
    ) {
        events.sort_by(|a, b| a.system.cmp(&b.system));
        // Commits end between system times: a commit never adds to a system time already seen.
        let cuts = cuts
            .into_iter()
            .filter(|&c| c > 0 && events[c - 1].system < events[c].system)
            .collect();
        let updates = run(Mode::Bitemporal, &events, cuts, workers).0;
        only_closes(&updates)?;
    }
}

/// Every retracted row is open in system time and comes back closed in the same commit.
fn only_closes(updates: &[(Row, u64, isize)]) -> Result<(), TestCaseError> {
    let n = updates.first().map_or(0, |(r, _, _)| r.len());
    let head = |r: &Row| -> Row { r.iter().take(n - 1).collect() };
    let inserted: std::collections::BTreeSet<(Row, u64)> = updates
        .iter()
        .filter(|u| u.2 > 0)
        .map(|(r, v, _)| (head(r), *v))
        .collect();
    for (row, version, diff) in updates {
        if *diff < 0 {
            prop_assert_eq!(
                row.value(n - 1),
                Value::Null,
                "a closed row changed: {:?}",
                row
            );
            prop_assert!(
                inserted.contains(&(head(row), *version)),
                "{:?} retracted in commit {} without being closed",
                row,
                version
            );
        }
    }
    Ok(())
}

//! The typed operators (`TypedScd1`, `TypedScd2`) equal the reference model after every commit,
//! for random changes (ties, deletes, replays), arrival orders, commit splits and 1, 2 or 4
//! workers; fed by `TypedSnapshotDiff`, after every snapshot of a random sequence. Typed changes
//! map to the model's events as `u64` key `k` → key `(k)`, image `(a, b)` → `(k, a, b)`.

use crate::util::{arrivals, equals_the_model_after_every_commit, table_at, target};
use differential_dataflow::input::Input;
use proptest::prelude::*;
use scdflow::engine::typed::{Change, Op, TypedScd2State, Version};
use scdflow::event::{Event, EventKind};
use scdflow::operators::{TypedScd1, TypedScd2, TypedSnapshotDiff};
use scdflow::plan::{ScdType, Target};
use scdflow::value::{Row, Value};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

type Image = (u64, u64);
type Typed = (u64, Change<u64, Image>);

#[derive(Clone, Copy, Debug)]
enum Mode {
    Scd1,
    Scd2,
    /// SCD2 tracking history on the image's first value only.
    Scd2Untracked,
}

impl Mode {
    fn target(self) -> Target {
        match self {
            Mode::Scd1 => target(ScdType::Type1, 2, vec![true; 3], false),
            Mode::Scd2 => target(ScdType::Type2, 2, vec![true; 3], false),
            Mode::Scd2Untracked => target(ScdType::Type2, 2, vec![true, true, false], false),
        }
    }
}

fn int(v: u64) -> Value {
    Value::Int(v as i64)
}

/// The model's event of a typed change.
fn event((key, change): &Typed) -> Event {
    let (kind, image) = match change.op {
        Op::Upsert((a, b)) => (EventKind::Upsert, Row::from([int(*key), int(a), int(b)])),
        Op::Delete => (EventKind::Delete, Row::new()),
    };
    Event {
        seq: int(change.seq).into(),
        kind,
        key: Row::from([int(*key)]),
        image,
        authored: None,
        system: None,
    }
}

fn scd1_row((key, (a, b)): (u64, Image)) -> Row {
    Row::from([int(key), int(a), int(b)])
}

fn scd2_row((key, v): (u64, Version<u64, Image>)) -> Row {
    let (a, b) = v.image;
    let end = v.end.map_or(Value::Null, int);
    Row::from([int(key), int(a), int(b), int(v.start), end])
}

/// A change of one of 4 keys at one of `seqs` sequences; images take few values, so runs of
/// equal images (one version) are common.
fn change(seqs: u64) -> impl Strategy<Value = Typed> {
    (0..4u64, 0..seqs, 0..11u8, 0..3u64, 0..2u64).prop_map(|(key, seq, kind, a, b)| {
        let change = match kind {
            0..=7 => Change::upsert(seq, (a, b)),
            _ => Change::delete(seq),
        };
        (key, change)
    })
}

/// Up to `len` changes (replayed sometimes, to exercise D1), an arrival order, commit cuts and
/// workers.
fn workload(seqs: u64, len: usize) -> impl Strategy<Value = (Vec<Typed>, Vec<usize>, usize)> {
    proptest::collection::vec(change(seqs), 1..len).prop_flat_map(arrivals)
}

/// Runs `changes` cut into commits (times 1, 2, ...) at `cuts` through the mode's operator on
/// `workers` workers; returns the updates as model rows and the prefix each commit completes.
fn run(
    mode: Mode,
    changes: &[Typed],
    mut cuts: Vec<usize>,
    workers: usize,
) -> (Vec<(Row, u64, isize)>, Vec<usize>) {
    cuts.sort();
    cuts.dedup();
    cuts.push(changes.len());
    let commits: Vec<Vec<Typed>> = (cuts.iter())
        .scan(0, |from, &cut| {
            let commit = changes[*from..cut].to_vec();
            *from = cut;
            Some(commit)
        })
        .collect();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    timely::execute(timely::Config::process(workers), move |worker| {
        let sink = Arc::clone(&sink);
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, changes) = scope.new_collection::<Typed, isize>();
            let rows = match mode {
                Mode::Scd1 => changes.typed_scd1().map(scd1_row),
                Mode::Scd2 => changes.typed_scd2().map(scd2_row),
                Mode::Scd2Untracked => {
                    let state = TypedScd2State::tracking(|x: &Image, y: &Image| x.0 == y.0);
                    changes
                        .typed_scd2_core(Rc::new(RefCell::new(state)))
                        .map(scd2_row)
                }
            };
            rows.inspect(move |u| sink.lock().unwrap().push(u.clone()));
            input
        });
        input.advance_to(1);
        // Worker 0 feeds every commit: the operators exchange by key.
        for (i, commit) in commits.iter().enumerate() {
            if worker.index() == 0 {
                for change in commit {
                    input.insert(*change);
                }
            }
            input.advance_to(i as u64 + 2);
        }
    })
    .expect("timely runs");
    let updates = std::mem::take(&mut *seen.lock().unwrap());
    (updates, cuts)
}

fn check(
    mode: Mode,
    changes: Vec<Typed>,
    cuts: Vec<usize>,
    workers: usize,
) -> Result<(), TestCaseError> {
    let target = mode.target();
    let (updates, prefixes) = run(mode, &changes, cuts, workers);
    let events: Vec<Event> = changes.iter().map(event).collect();
    let run = format!("{mode:?} with {workers} workers");
    equals_the_model_after_every_commit(&target, &events, &updates, &prefixes, &run)
}

/// Snapshots at increasing versions, each of distinct keys among 6, and workers.
fn snapshots() -> impl Strategy<Value = (Vec<(u64, Vec<(u64, Image)>)>, usize)> {
    let snapshot = (
        1..4u64,
        proptest::collection::btree_map(0..6u64, (0..3u64, 0..2u64), 0..6),
    );
    (
        proptest::collection::vec(snapshot, 1..8),
        prop_oneof![Just(1usize), Just(2), Just(4)],
    )
        .prop_map(|(snapshots, workers)| {
            let mut version = 0;
            let snapshots = (snapshots.into_iter())
                .map(|(gap, rows)| {
                    version += gap;
                    (version, rows.into_iter().collect())
                })
                .collect();
            (snapshots, workers)
        })
}

/// Feeds snapshot `i` at time `i + 1`, its rows dealt round-robin to the workers and its
/// version fed by every worker (each may; one snapshot results), through the snapshot diff
/// and the mode's operator; returns the updates as model rows.
fn run_snapshots(
    mode: Mode,
    snapshots: &[(u64, Vec<(u64, Image)>)],
    workers: usize,
) -> Vec<(Row, u64, isize)> {
    let snapshots = snapshots.to_vec();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    timely::execute(timely::Config::process(workers), move |worker| {
        let sink = Arc::clone(&sink);
        let (mut rows, mut versions) = worker.dataflow::<u64, _, _>(|scope| {
            let (rows, snapshot) = scope.new_collection::<(u64, Image), isize>();
            let (versions, version) = scope.new_collection::<u64, isize>();
            let changes = snapshot.typed_snapshot_diff(version);
            let table = match mode {
                Mode::Scd1 => changes.typed_scd1().map(scd1_row),
                _ => changes.typed_scd2().map(scd2_row),
            };
            table.inspect(move |u| sink.lock().unwrap().push(u.clone()));
            (rows, versions)
        });
        rows.advance_to(1);
        versions.advance_to(1);
        let (me, n) = (worker.index(), worker.peers());
        for (i, (version, snapshot)) in snapshots.iter().enumerate() {
            versions.insert(*version);
            for row in snapshot.iter().skip(me).step_by(n) {
                rows.insert(*row);
            }
            rows.advance_to(i as u64 + 2);
            versions.advance_to(i as u64 + 2);
        }
    })
    .expect("timely runs");
    let updates = std::mem::take(&mut *seen.lock().unwrap());
    updates
}

proptest! {
    #[test]
    fn typed_scd1_equals_the_model((changes, cuts, workers) in workload(12, 40)) {
        check(Mode::Scd1, changes, cuts, workers)?;
    }

    #[test]
    fn typed_scd2_equals_the_model((changes, cuts, workers) in workload(12, 40)) {
        check(Mode::Scd2, changes, cuts, workers)?;
    }

    #[test]
    fn typed_scd2_tracking_part_of_the_image_equals_the_model(
        (changes, cuts, workers) in workload(12, 40)
    ) {
        check(Mode::Scd2Untracked, changes, cuts, workers)?;
    }

    /// Long histories: late changes land deep inside runs and windows span many versions.
    #[test]
    fn typed_scd2_over_long_histories_equals_the_model(
        (changes, cuts, workers) in workload(200, 300)
    ) {
        check(Mode::Scd2, changes, cuts, workers)?;
    }

    #[test]
    fn typed_snapshot_diffs_equal_the_model((snapshots, workers) in snapshots(), scd2: bool) {
        let mode = if scd2 { Mode::Scd2 } else { Mode::Scd1 };
        let target = mode.target();
        let updates = run_snapshots(mode, &snapshots, workers);
        let model: Vec<(i64, Vec<Row>)> = (snapshots.iter())
            .map(|(v, rows)| (*v as i64, rows.iter().map(|r| scd1_row(*r)).collect()))
            .collect();
        for c in 0..snapshots.len() {
            let expected = scdflow::model::snapshots(&target, &model[..=c]).expect("distinct keys");
            let actual = table_at(&target, &updates, c as u64 + 1);
            prop_assert_eq!(actual, expected, "after snapshot {} on {} workers", c + 1, workers);
        }
    }
}

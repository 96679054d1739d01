//! Save/restore round trips of every [`Durable`] state, and the tombstone counting they rely on.
//!
//! Each case runs the same commits three ways: on one uninterrupted state; on `P` states (keys
//! routed by [`worker_of`]) that record their changes, saved whole after `k0` commits and as
//! deltas after `k1` and `k` commits (`k0 <= k1 <= k`), `P` shards each; then on `Q` fresh
//! states that restore every shard, base then deltas (keeping the keys they own), and take the
//! remaining commits.
//! The restored states' rows must be the table after `k` commits, every later commit must give
//! the uninterrupted run's updates and counters (so tombstones expire at the same commits), and
//! the tombstone deltas summed over commits and workers must stay the count a scan finds.

use super::edits::{edit, HistoryRules, KeyEdit};
use super::scd2::SMALL_HISTORY;
use super::{
    worker_of, BitemporalState, CdcState, CommitStats, Durable, ReplaceConfig, ReplaceState,
    Scd1State, Scd2State, SnapshotState,
};
use crate::event::{Event, EventKind};
use crate::model;
use crate::persist::{FileKind, FrameReader, FrameWriter};
use crate::plan::{ScdType, Target, TargetKind};
use crate::value::{DataType, Row, Schema, Seq, Value};
use crate::ErrorKind;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

/// Tombstone retention of the random cases, in the commit clock's units. Commits are 1 to 8
/// apart, so tombstones expire a few commits after they are recorded, and a commit time off by
/// one would often move the commit that collects them.
const RETENTION: i64 = 10;

/// A state driven by the harness: how its inputs route and apply.
trait Step: Durable {
    type In: Clone + Debug;
    type Out: Ord + Clone + Debug;
    /// True when [`Durable::rows`] is the table its outputs add up to.
    const TABLE: bool;
    /// The key that routes `input` to a worker; `None`: every worker gets it.
    fn route(&self, input: &Self::In) -> Option<Row>;
    fn step(&mut self, inputs: Vec<Self::In>, now: i64, out: &mut Outputs<Self>);
    /// [`Durable::rows`] as outputs.
    fn table(&self) -> Vec<(Self::Out, isize)>;
    /// The tombstones, counted by a scan.
    fn scan_tombstones(&self) -> u64 {
        0
    }
}

/// One commit's outputs and counters on one worker.
struct Outputs<S: Step + ?Sized> {
    updates: Vec<(S::Out, isize)>,
    stats: CommitStats,
}

type Table<D> = BTreeMap<D, isize>;

fn add<D: Ord>(table: &mut Table<D>, updates: impl IntoIterator<Item = (D, isize)>) {
    for (d, n) in updates {
        *table.entry(d).or_default() += n;
    }
    table.retain(|_, n| *n != 0);
}

macro_rules! cdc_step {
    ($state:ty, $scan:expr) => {
        impl Step for $state {
            type In = Event;
            type Out = Row;
            const TABLE: bool = true;
            fn route(&self, e: &Event) -> Option<Row> {
                (e.kind != EventKind::Truncate).then(|| e.key.clone())
            }
            fn step(&mut self, events: Vec<Event>, now: i64, out: &mut Outputs<Self>) {
                self.apply(events, now, &mut out.updates, &mut out.stats);
                if self.emits_consolidated() {
                    assert_consolidated(&out.updates);
                }
            }
            fn table(&self) -> Vec<(Row, isize)> {
                let mut rows = Vec::new();
                self.rows(&mut rows);
                rows
            }
            fn scan_tombstones(&self) -> u64 {
                $scan(self)
            }
        }
    };
}

/// What `CdcState::emits_consolidated` promises: each row at most once in a commit's output.
fn assert_consolidated(updates: &[(Row, isize)]) {
    let mut rows: Vec<&Row> = updates.iter().map(|(r, _)| r).collect();
    rows.sort();
    let n = rows.len();
    rows.dedup();
    assert_eq!(rows.len(), n, "not consolidated: {updates:?}");
}

cdc_step!(Scd1State, Scd1State::count_tombstones);
cdc_step!(Scd2State, Scd2State::count_tombstones);
cdc_step!(BitemporalState, |_: &BitemporalState| 0);

/// A snapshot's version (every worker gets it) or one of its `(key, image)` rows.
#[derive(Clone, Debug)]
enum Snap {
    Version(i64),
    Row(Row, Row),
}

impl Step for SnapshotState {
    type In = Snap;
    type Out = Event;
    const TABLE: bool = false;
    fn route(&self, input: &Snap) -> Option<Row> {
        match input {
            Snap::Version(_) => None,
            Snap::Row(key, _) => Some(key.clone()),
        }
    }
    fn step(&mut self, inputs: Vec<Snap>, _now: i64, out: &mut Outputs<Self>) {
        let (mut version, mut rows) = (None, Vec::new());
        for input in inputs {
            match input {
                Snap::Version(v) => version = version.max(Some(v)),
                Snap::Row(key, image) => rows.push((key, image)),
            }
        }
        if let Some(v) = version {
            out.updates
                .extend(self.diff(rows, v, 0).into_iter().map(|e| (e, 1)));
        }
    }
    fn table(&self) -> Vec<(Event, isize)> {
        let mut rows = Vec::new();
        self.rows(&mut rows);
        assert!(rows.is_empty(), "a snapshot state has no table");
        Vec::new()
    }
}

impl Step for ReplaceState {
    type In = Row;
    type Out = Row;
    const TABLE: bool = true;
    fn route(&self, row: &Row) -> Option<Row> {
        Some(self.config().key(row))
    }
    fn step(&mut self, rows: Vec<Row>, _now: i64, out: &mut Outputs<Self>) {
        self.apply(rows, &mut out.updates);
    }
    fn table(&self) -> Vec<(Row, isize)> {
        let mut rows = Vec::new();
        self.rows(&mut rows);
        rows
    }
}

/// Applies one commit on `workers` (inputs routed by key) and returns its consolidated updates
/// and merged counters.
fn commit<S: Step>(workers: &mut [S], now: i64, inputs: &[S::In]) -> (Table<S::Out>, CommitStats) {
    let n = workers.len();
    let mut parts: Vec<Vec<S::In>> = vec![Vec::new(); n];
    for input in inputs {
        match workers[0].route(input) {
            Some(key) => parts[worker_of(&key, n)].push(input.clone()),
            None => parts.iter_mut().for_each(|p| p.push(input.clone())),
        }
    }
    let (mut updates, mut stats) = (Table::new(), CommitStats::default());
    for (worker, part) in workers.iter_mut().zip(parts) {
        let mut out = Outputs {
            updates: Vec::new(),
            stats: CommitStats::default(),
        };
        worker.step(part, now, &mut out);
        add(&mut updates, out.updates);
        stats.merge(&out.stats);
    }
    (updates, stats)
}

/// The deltas summed so far are the tombstones held, and a scan finds as many.
fn check_tombstones<S: Step>(workers: &[S], delta: i64, context: &str) {
    let live: u64 = workers.iter().map(Durable::live_tombstones).sum();
    let scanned: u64 = workers.iter().map(Step::scan_tombstones).sum();
    assert_eq!(scanned, live, "{context}: live_tombstones against a scan");
    assert_eq!(
        i64::try_from(live).unwrap(),
        delta,
        "{context}: summed deltas"
    );
}

fn shard(dir: &Path, w: usize) -> PathBuf {
    dir.join(format!("shard-{w}"))
}

fn save<S: Durable>(state: &mut S, path: &Path) {
    let mut out = FrameWriter::create(path, FileKind::Shard).unwrap();
    state.save(&mut out).unwrap();
    out.finish().unwrap();
}

fn save_changes<S: Durable>(state: &mut S, path: &Path) {
    let mut out = FrameWriter::create(path, FileKind::Delta).unwrap();
    state.save_changes(&mut out).unwrap();
    out.finish().unwrap();
}

fn restore_changes<S: Durable>(
    state: &mut S,
    path: &Path,
    owns: &dyn Fn(&Row) -> bool,
    wrote: &dyn Fn(&Row) -> bool,
) {
    let mut input = FrameReader::open(path, FileKind::Delta).unwrap();
    state.restore_changes(&mut input, owns, wrote).unwrap();
}

fn restore<S: Durable>(
    state: &mut S,
    path: &Path,
    owns: &dyn Fn(&Row) -> bool,
) -> crate::Result<()> {
    let mut input = FrameReader::open(path, FileKind::Shard)?;
    state.restore(&mut input, owns)
}

/// Runs `commits` uninterrupted, and on `p` workers saved after `k` commits (a base after
/// `k0`, deltas after `k1` and `k`) and restored on `q`; asserts they agree (see the module
/// docs) and returns the final table.
fn round_trip<S: Step>(
    make: &dyn Fn() -> S,
    commits: &[(i64, Vec<S::In>)],
    (k, p, q): (usize, usize, usize),
) -> Table<S::Out> {
    let (k0, k1) = (k / 3, 2 * k / 3);
    let context =
        |i: usize| format!("commit {i} of {commits:?}, saved after {k0}/{k1}/{k} on {p}, on {q}");
    let mut whole = vec![make()];
    let (mut table, mut delta) = (Table::new(), 0);
    let mut expected = Vec::new();
    let mut tables = vec![Table::new()];
    for (i, (now, inputs)) in commits.iter().enumerate() {
        let (updates, stats) = commit(&mut whole, *now, inputs);
        delta += stats.tombstones_delta;
        check_tombstones(&whole, delta, &context(i));
        add(&mut table, updates.clone());
        assert!(table.values().all(|n| *n > 0), "{}", context(i));
        tables.push(table.clone());
        expected.push((updates, stats));
    }

    let mut old: Vec<S> = (0..p).map(|_| make()).collect();
    old.iter_mut().for_each(Durable::track_changes);
    let mut old_delta = 0;
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    for (i, (now, inputs)) in commits[..k].iter().enumerate() {
        if i == k0 {
            for (w, state) in old.iter_mut().enumerate() {
                save(state, &shard(dirs[0].path(), w));
            }
        }
        if i == k1 {
            for (w, state) in old.iter_mut().enumerate() {
                save_changes(state, &shard(dirs[1].path(), w));
            }
        }
        let got = commit(&mut old, *now, inputs);
        old_delta += got.1.tombstones_delta;
        check_tombstones(&old, old_delta, &context(i));
        assert_eq!(got, expected[i], "{}", context(i));
    }
    // Save points at the end (k0 or k1 equal to k) come here, in order.
    for (w, state) in old.iter_mut().enumerate() {
        if k0 == k {
            save(state, &shard(dirs[0].path(), w));
        }
        if k1 == k {
            save_changes(state, &shard(dirs[1].path(), w));
        }
        save_changes(state, &shard(dirs[2].path(), w));
    }

    let mut new: Vec<S> = (0..q).map(|_| make()).collect();
    let mut restored = Table::new();
    for (w, state) in new.iter_mut().enumerate() {
        let owns = |key: &Row| worker_of(key, q) == w;
        for from in 0..p {
            restore(state, &shard(dirs[0].path(), from), &owns).unwrap();
        }
        for delta in &dirs[1..] {
            for from in 0..p {
                let wrote = |key: &Row| worker_of(key, p) == from;
                restore_changes(state, &shard(delta.path(), from), &owns, &wrote);
            }
        }
        let rows = state.table();
        let mut distinct: Vec<&S::Out> = rows.iter().map(|(r, _)| r).collect();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), rows.len(), "rows() is consolidated");
        assert!(rows.iter().all(|(_, n)| *n > 0));
        add(&mut restored, rows);
    }
    let at_k = if S::TABLE { &tables[k] } else { &Table::new() };
    assert_eq!(&restored, at_k, "restored rows, {}", context(k));
    check_tombstones(&new, old_delta, &context(k));

    let mut new_delta = old_delta;
    for (i, (now, inputs)) in commits.iter().enumerate().skip(k) {
        let got = commit(&mut new, *now, inputs);
        new_delta += got.1.tombstones_delta;
        check_tombstones(&new, new_delta, &context(i));
        assert_eq!(got, expected[i], "{}", context(i));
    }
    table
}

/// Random `(k, p, q)`: a save point and old and new worker counts.
fn split(rng: &mut ChaCha8Rng, commits: usize) -> (usize, usize, usize) {
    (
        rng.random_range(0..=commits),
        rng.random_range(1..=3),
        rng.random_range(1..=4),
    )
}

fn pick(rng: &mut ChaCha8Rng, values: &[&str]) -> Value {
    match values[rng.random_range(0..values.len())] {
        "" => Value::Null,
        v => Value::Str(v.into()),
    }
}

fn upsert(key: i64, seq: i64, image: Row, authored: Option<Vec<bool>>, system: Value) -> Event {
    Event {
        seq: Seq::from(seq),
        kind: EventKind::Upsert,
        key: Row::from(vec![Value::Int(key)]),
        image,
        authored: authored.map(Vec::into_boxed_slice),
        system: Some(system.into()),
    }
}

fn delete(key: i64, seq: i64, system: Value) -> Event {
    Event {
        seq: Seq::from(seq),
        kind: EventKind::Delete,
        key: Row::from(vec![Value::Int(key)]),
        image: Row::new(),
        authored: None,
        system: Some(system.into()),
    }
}

/// Random commits of events `(k, a, b)` over few keys and sequences (ties, replays, late and
/// older events are common), 1 to 8 apart in commit time. `truncates` adds a few truncates;
/// `bitemporal` gives events system times.
fn events(
    rng: &mut ChaCha8Rng,
    partial: bool,
    truncates: bool,
    bitemporal: bool,
) -> Vec<(i64, Vec<Event>)> {
    let mut seen: Vec<Event> = Vec::new();
    let mut commits = Vec::new();
    let mut now = 0;
    for _ in 0..rng.random_range(3..=9) {
        let mut events = Vec::new();
        for _ in 0..rng.random_range(0..=6) {
            if !seen.is_empty() && rng.random_bool(0.1) {
                events.push(seen[rng.random_range(0..seen.len())].clone());
                continue;
            }
            let key = rng.random_range(0..6);
            let seq = rng.random_range(1..=12);
            let system = if bitemporal {
                Value::Int(rng.random_range(1..=6))
            } else {
                Value::Null
            };
            let event = if truncates && rng.random_bool(0.05) {
                Event {
                    seq: Seq::from(seq),
                    kind: EventKind::Truncate,
                    key: Row::new(),
                    image: Row::new(),
                    authored: None,
                    system: Some(system.into()),
                }
            } else if rng.random_bool(0.3) {
                delete(key, seq, system)
            } else {
                let image = Row::from(vec![
                    Value::Int(key),
                    pick(rng, &["x", "y", ""]),
                    pick(rng, &["p", "q"]),
                ]);
                let authored = (partial && rng.random_bool(0.7))
                    .then(|| vec![true, rng.random_bool(0.5), rng.random_bool(0.5)]);
                upsert(key, seq, image, authored, system)
            };
            events.push(event);
        }
        seen.extend(events.iter().cloned());
        now += rng.random_range(1..=8);
        commits.push((now, events));
    }
    commits
}

/// A target over `(k, a, b)` for the model.
fn target(scd: ScdType, tracked: Vec<bool>, partial: bool) -> Target {
    let mut schema: Vec<(String, DataType)> = ["k", "a", "b"]
        .iter()
        .map(|c| (c.to_string(), DataType::String))
        .collect();
    let extra: &[&str] = match scd {
        ScdType::Type1 => &[],
        ScdType::Type2 => &["__START_AT", "__END_AT"],
        ScdType::Bitemporal => &[
            "__START_AT",
            "__END_AT",
            "__SYSTEM_START_AT",
            "__SYSTEM_END_AT",
        ],
    };
    schema.extend(extra.iter().map(|c| (c.to_string(), DataType::Int)));
    Target {
        kind: TargetKind::AutoCdc,
        name: "t".into(),
        schema: Schema::new(schema),
        image_len: 3,
        keys: vec![0],
        scd,
        sequence_type: DataType::Int,
        system_sequence_type: (scd == ScdType::Bitemporal).then_some(DataType::Int),
        tracked,
        partial,
        tombstone_gc_seconds: 0,
        replace_where: None,
        view_of: None,
        properties: Default::default(),
        line: 1,
    }
}

/// Without tombstone collection the table is the model's.
fn assert_model<D: Ord + Clone + Debug>(t: &Target, table: &Table<D>, expected: Vec<D>) {
    let mut got: Vec<D> = Vec::new();
    for (row, n) in table {
        got.extend(std::iter::repeat_n(
            row.clone(),
            usize::try_from(*n).unwrap(),
        ));
    }
    let mut expected = expected;
    expected.sort();
    assert_eq!(got, expected, "{t:?}");
}

fn all_events<I: Clone>(commits: &[(i64, Vec<I>)]) -> Vec<I> {
    commits
        .iter()
        .flat_map(|(_, e)| e.iter().cloned())
        .collect()
}

#[test]
fn scd1_restores_on_any_worker_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for case in 0..150 {
        let partial = rng.random_bool(0.4);
        let retention = (case % 4 != 0).then_some(RETENTION);
        let commits = events(&mut rng, partial, true, false);
        let make = || Scd1State::new(3, partial, retention);
        let table = round_trip(&make, &commits, split(&mut rng, commits.len()));
        if retention.is_none() {
            let t = target(ScdType::Type1, vec![true; 3], partial);
            assert_model(&t, &table, model::scd1(&t, &all_events(&commits)));
        }
    }
}

/// Commits of events on two keys whose histories outgrow a small map (an SCD2 history's
/// [`SMALL_HISTORY`] entries): mostly
/// in order, some late, few deletes, and a tracked column that seldom changes, so open runs of
/// hundreds of untracked changes cross the switch to a B-tree.
fn long_events(rng: &mut ChaCha8Rng) -> Vec<(i64, Vec<Event>)> {
    let mut commits = Vec::new();
    let (mut next, mut now) = (1, 0);
    for _ in 0..rng.random_range(8..=14) {
        let mut events = Vec::new();
        for _ in 0..rng.random_range(0..=60 * SMALL_HISTORY / 128) {
            let key = rng.random_range(0..2);
            let seq = match rng.random_bool(0.1) {
                true => rng.random_range(1..=next),
                false => {
                    next += rng.random_range(1..=3);
                    next
                }
            };
            let event = match rng.random_bool(0.03) {
                true => delete(key, seq, Value::Null),
                false => {
                    let tracked = pick(rng, &["x", "x", "x", "x", "x", "x", "x", "y"]);
                    let untracked = Value::Str(format!("u{}", rng.random_range(0..1000)));
                    upsert(
                        key,
                        seq,
                        Row::from(vec![Value::Int(key), tracked, untracked]),
                        None,
                        Value::Null,
                    )
                }
            };
            events.push(event);
        }
        now += rng.random_range(1..=8);
        commits.push((now, events));
    }
    commits
}

#[test]
fn scd2_long_histories_restore_on_any_worker_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut longest = 0;
    for _ in 0..24 {
        let tracked = vec![true, true, false];
        let commits = long_events(&mut rng);
        let events = all_events(&commits);
        for key in 0..2 {
            let key = Row::from(vec![Value::Int(key)]);
            let seqs: std::collections::BTreeSet<_> = (events.iter())
                .filter(|e| e.key == key)
                .map(|e| e.seq.clone())
                .collect();
            longest = longest.max(seqs.len());
        }
        let make = || Scd2State::new(3, tracked.clone(), false, None);
        let table = round_trip(&make, &commits, split(&mut rng, commits.len()));
        let t = target(ScdType::Type2, tracked.clone(), false);
        assert_model(&t, &table, model::scd2(&t, &all_events(&commits)));
    }
    assert!(
        longest > SMALL_HISTORY,
        "no history outgrew its vector: {longest} events"
    );
}

#[test]
fn scd2_restores_on_any_worker_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for case in 0..150 {
        let partial = rng.random_bool(0.4);
        let tracked = vec![true, rng.random_bool(0.6), rng.random_bool(0.6)];
        let retention = (case % 4 != 0).then_some(RETENTION);
        let commits = events(&mut rng, partial, false, false);
        let make = || Scd2State::new(3, tracked.clone(), partial, retention);
        let table = round_trip(&make, &commits, split(&mut rng, commits.len()));
        if retention.is_none() {
            let t = target(ScdType::Type2, tracked.clone(), partial);
            assert_model(&t, &table, model::scd2(&t, &all_events(&commits)));
        }
    }
}

#[test]
fn bitemporal_restores_on_any_worker_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for _ in 0..100 {
        let partial = rng.random_bool(0.4);
        let tracked = vec![true, rng.random_bool(0.6), rng.random_bool(0.6)];
        let commits = events(&mut rng, partial, false, true);
        let make = || BitemporalState::new(3, tracked.clone(), partial);
        let table = round_trip(&make, &commits, split(&mut rng, commits.len()));
        let t = target(ScdType::Bitemporal, tracked.clone(), partial);
        assert_model(&t, &table, model::bitemporal(&t, &all_events(&commits)));
    }
}

#[test]
fn snapshot_state_restores_on_any_worker_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for _ in 0..150 {
        let commits: Vec<(i64, Vec<Snap>)> = (0..rng.random_range(2..=7))
            .map(|c| {
                let mut inputs = vec![Snap::Version(c + 1)];
                for key in 0..8 {
                    if rng.random_bool(0.6) {
                        let image =
                            Row::from(vec![Value::Int(key), pick(&mut rng, &["a", "b", ""])]);
                        inputs.push(Snap::Row(Row::from([Value::Int(key)]), image));
                    }
                }
                (10 * (c + 1), inputs)
            })
            .collect();
        round_trip(
            &SnapshotState::new,
            &commits,
            split(&mut rng, commits.len()),
        );
    }
}

#[test]
fn replace_state_restores_on_any_worker_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let config = ReplaceConfig {
        keys: vec![0],
        sequence: 2,
    };
    for _ in 0..150 {
        let commits: Vec<(i64, Vec<Row>)> = (0..rng.random_range(2..=7))
            .map(|c| {
                let rows = (0..rng.random_range(0..=5))
                    .map(|_| {
                        let region = match rng.random_range(0..5) {
                            4 => Value::Null,
                            r => Value::Int(r),
                        };
                        let device = pick(&mut rng, &["iOS", "Android"]);
                        Row::from(vec![region, device, Value::Int(rng.random_range(1..=4))])
                    })
                    .collect();
                (10 * (c + 1), rows)
            })
            .collect();
        let make = || ReplaceState::new(config.clone());
        let table = round_trip(&make, &commits, split(&mut rng, commits.len()));
        let t = target(ScdType::Type1, vec![true; 3], false);
        assert_model(
            &t,
            &table,
            model::replace_using(&t, 2, &all_events(&commits)),
        );
    }
}

/// A delete of a key never seen, saved before it expires, is collected at the same commit
/// after the restore; then a late upsert older than it re-creates the key.
#[test]
fn tombstones_age_across_a_restore() {
    const RETENTION: i64 = 25;
    let image = |v: &str| {
        Row::from(vec![
            Value::Int(9),
            Value::Str(v.into()),
            Value::Str("p".into()),
        ])
    };
    let commits: Vec<(i64, Vec<Event>)> = vec![
        (10, vec![upsert(1, 1, image("a"), None, Value::Null)]),
        (20, vec![delete(9, 7, Value::Null)]),
        (30, vec![]),
        (40, vec![]),
        (50, vec![]),
        (60, vec![upsert(9, 6, image("late"), None, Value::Null)]),
    ];
    let collected_at = |make: &dyn Fn() -> Box<dyn CdcState>| {
        let mut state = make();
        let mut at = Vec::new();
        for (now, events) in &commits {
            let mut stats = CommitStats::default();
            state.apply(events.clone(), *now, &mut Vec::new(), &mut stats);
            at.push(stats.tombstones_collected);
        }
        at
    };
    let expected = vec![0, 0, 0, 0, 1, 0];
    let scd1 = || Scd1State::new(3, false, Some(RETENTION));
    let scd2 = || Scd2State::new(3, vec![true; 3], false, Some(RETENTION));
    assert_eq!(collected_at(&|| Box::new(scd1())), expected);
    assert_eq!(collected_at(&|| Box::new(scd2())), expected);
    for (k, p, q) in [(2, 1, 1), (2, 2, 3), (3, 3, 2), (4, 1, 4)] {
        let table = round_trip(&scd1, &commits, (k, p, q));
        assert_eq!(table.get(&image("late")), Some(&1), "SCD1 saved after {k}");
        let table = round_trip(&scd2, &commits, (k, p, q));
        let mut version = image("late");
        version.extend([Value::Int(6), Value::Null]);
        assert_eq!(table.get(&version), Some(&1), "SCD2 saved after {k}");
    }
}

/// A delta of events that extend SCD2 histories in order holds those events, not the histories
/// they extend: its size follows the change, and restored it gives the same rows.
#[test]
fn an_scd2_delta_of_in_order_events_holds_them_alone() {
    let image = |n: i64| {
        Row::from(vec![
            Value::Int(n),
            Value::Str(format!("city {n}")),
            Value::Str("p".into()),
        ])
    };
    let make = || Scd2State::new(3, vec![true; 3], false, None);
    let mut state = make();
    state.track_changes();
    let history = (0..200).flat_map(|seq| (0..50).map(move |key| (key, seq)));
    let events = history.map(|(key, seq)| upsert(key, seq, image(seq), None, Value::Null));
    let mut stats = CommitStats::default();
    state.apply(events.collect(), 10, &mut Vec::new(), &mut stats);
    let dir = tempfile::tempdir().unwrap();
    let (base, delta) = (dir.path().join("base"), dir.path().join("delta"));
    save(&mut state, &base);
    let next = (0..50).map(|key| upsert(key, 200, image(200), None, Value::Null));
    state.apply(next.collect(), 11, &mut Vec::new(), &mut stats);
    save_changes(&mut state, &delta);
    let size = |path: &Path| std::fs::metadata(path).unwrap().len();
    // One new event per key where the base holds 200: about a hundredth of its bytes (each
    // record repeats its key and a header); a delta of whole histories would be larger.
    assert!(
        size(&delta) * 50 < size(&base),
        "{} {}",
        size(&delta),
        size(&base)
    );
    let mut restored = make();
    restore(&mut restored, &base, &|_| true).unwrap();
    restore_changes(&mut restored, &delta, &|_| true, &|_| true);
    let (mut want, mut got) = (Vec::new(), Vec::new());
    state.rows(&mut want);
    restored.rows(&mut got);
    want.sort();
    got.sort();
    assert_eq!(got, want);
}

/// An SCD2 key edited by hand (DML) between two saves is saved whole in the delta: restored,
/// the base and the delta give the edited rows and the events after the edit, not the base's
/// events below the edit's first sequence beside them.
#[test]
fn an_edited_scd2_key_restores_from_a_delta() {
    let image = |city: &str| {
        Row::from(vec![
            Value::Int(1),
            Value::Str(city.into()),
            Value::Str("p".into()),
        ])
    };
    let version = |city: &str, start: i64, end: Option<i64>| {
        let mut row = image(city);
        row.extend([Value::Int(start), end.map_or(Value::Null, Value::Int)]);
        row
    };
    let make = || Scd2State::new(3, vec![true; 3], false, None);
    let rows = |state: &Scd2State| {
        let mut rows = Vec::new();
        state.rows(&mut rows);
        rows.sort();
        rows
    };
    let commit = |state: &mut Scd2State, now: i64, events: Vec<Event>| {
        state.apply(events, now, &mut Vec::new(), &mut CommitStats::default());
    };
    let mut state = make();
    state.track_changes();
    let upserts = [(1, "a"), (5, "b"), (9, "c")];
    let events = upserts.map(|(seq, city)| upsert(1, seq, image(city), None, Value::Null));
    commit(&mut state, 10, events.to_vec());
    let dir = tempfile::tempdir().unwrap();
    let (base, delta) = (dir.path().join("base"), dir.path().join("delta"));
    save(&mut state, &base);
    let schema = ["id", "city", "p", "__START_AT", "__END_AT"].map(|name| {
        let string = matches!(name, "city" | "p");
        let data_type = if string {
            DataType::String
        } else {
            DataType::Int
        };
        (name.to_string(), data_type)
    });
    let rules = HistoryRules {
        scd: ScdType::Type2,
        schema: Schema::new(schema),
        image_len: 3,
        keys: vec![0],
        tracked: vec![true; 3],
    };
    let fix = KeyEdit {
        key: Row::from(vec![Value::Int(1)]),
        removed: vec![
            version("a", 1, Some(5)),
            version("b", 5, Some(9)),
            version("c", 9, None),
        ],
        added: vec![version("z", 3, Some(7))],
    };
    edit(&mut state, &rules, &fix, 10, 2).unwrap();
    commit(
        &mut state,
        11,
        vec![upsert(1, 8, image("d"), None, Value::Null)],
    );
    let want = vec![(version("d", 8, None), 1), (version("z", 3, Some(7)), 1)];
    assert_eq!(rows(&state), want);
    save_changes(&mut state, &delta);
    let mut restored = make();
    restore(&mut restored, &base, &|_| true).unwrap();
    restore_changes(&mut restored, &delta, &|_| true, &|_| true);
    assert_eq!(rows(&restored), want);
}

/// Every truncation of a shard or a delta is the frame reader's State error, never a panic; so
/// is a shard of another state type.
#[test]
fn damaged_shards_are_state_errors() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let dir = tempfile::tempdir().unwrap();
    let path = shard(dir.path(), 0);
    let commits = events(&mut rng, true, true, false);
    let mut scd1 = vec![Scd1State::new(3, true, Some(RETENTION))];
    let mut scd2 = vec![Scd2State::new(3, vec![true; 3], true, Some(RETENTION))];
    let mut bitemporal = vec![BitemporalState::new(3, vec![true; 3], true)];
    let mut snapshot = vec![SnapshotState::new()];
    let mut replace = vec![ReplaceState::new(ReplaceConfig {
        keys: vec![0],
        sequence: 0,
    })];
    scd1[0].track_changes();
    scd2[0].track_changes();
    bitemporal[0].track_changes();
    snapshot[0].track_changes();
    replace[0].track_changes();
    for (c, (now, events)) in commits.iter().enumerate() {
        let plain: Vec<Event> = events
            .iter()
            .filter(|e| e.kind != EventKind::Truncate)
            .cloned()
            .collect();
        commit(&mut scd1, *now, events);
        commit(&mut scd2, *now, &plain);
        let mut timed = plain.clone();
        timed
            .iter_mut()
            .for_each(|e| e.system = Some(Value::Int(c as i64).into()));
        commit(&mut bitemporal, *now, &timed);
        let mut snap: Vec<Snap> = vec![Snap::Version(c as i64 + 1)];
        snap.extend(
            plain
                .iter()
                .map(|e| Snap::Row(e.key.clone(), e.image.clone())),
        );
        snap.dedup_by(|a, b| matches!((a, b), (Snap::Row(x, _), Snap::Row(y, _)) if x == y));
        commit(&mut snapshot, *now, &snap);
        let rows: Vec<Row> = plain.iter().map(|e| e.key.clone()).collect();
        commit(&mut replace, *now, &rows);
    }
    fn every_cut<S: Durable>(state: &mut S, fresh: &dyn Fn() -> S, path: &Path) {
        let delta =
            |s: &mut S, input: &mut FrameReader| s.restore_changes(input, &|_| true, &|_| true);
        let base = |s: &mut S, input: &mut FrameReader| s.restore(input, &|_| true);
        type Restore<S> = dyn Fn(&mut S, &mut FrameReader) -> crate::Result<()>;
        let cases: [(FileKind, &Restore<S>); 2] =
            [(FileKind::Delta, &delta), (FileKind::Shard, &base)];
        for (kind, restore) in cases {
            match kind {
                FileKind::Delta => save_changes(state, path),
                _ => save(state, path),
            }
            let bytes = std::fs::read(path).unwrap();
            let mut input = FrameReader::open(path, kind).unwrap();
            restore(&mut fresh(), &mut input).expect("the whole file restores");
            for cut in 0..bytes.len() {
                std::fs::write(path, &bytes[..cut]).unwrap();
                let e = FrameReader::open(path, kind)
                    .and_then(|mut input| restore(&mut fresh(), &mut input))
                    .expect_err("a cut file is refused");
                assert_eq!(e.kind(), ErrorKind::State, "{kind:?} cut at {cut}: {e}");
            }
        }
    }
    every_cut(
        &mut scd1[0],
        &|| Scd1State::new(3, true, Some(RETENTION)),
        &path,
    );
    every_cut(
        &mut scd2[0],
        &|| Scd2State::new(3, vec![true; 3], true, None),
        &path,
    );
    every_cut(
        &mut bitemporal[0],
        &|| BitemporalState::new(3, vec![true; 3], true),
        &path,
    );
    every_cut(&mut snapshot[0], &SnapshotState::new, &path);
    let config = ReplaceConfig {
        keys: vec![0],
        sequence: 0,
    };
    every_cut(
        &mut replace[0],
        &|| ReplaceState::new(config.clone()),
        &path,
    );

    save(&mut scd1[0], &path);
    let other = restore(
        &mut Scd2State::new(3, vec![true; 3], true, None),
        &path,
        &|_| true,
    );
    assert_eq!(other.unwrap_err().kind(), ErrorKind::State);
    let narrower = restore(&mut Scd1State::new(2, true, None), &path, &|_| true);
    assert_eq!(narrower.unwrap_err().kind(), ErrorKind::State);
}

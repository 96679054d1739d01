use super::source::{deal, Batch};
use super::*;
use crate::event::{Event, EventKind};
use crate::plan::ScdType;
use crate::runtime::CommitEvents;
use crate::value::{Row, Seq, Value};

fn suite(displacements: Vec<u64>, keys: Vec<u64>) -> Suite {
    Suite {
        workload: Workload {
            events: 1_000,
            ..Workload::default()
        },
        default_straggler_distance: true,
        batch: 100,
        displacements,
        keys,
        flows: Flow::ALL.to_vec(),
        systems: System::ALL.to_vec(),
        workers: 1,
        rate: None,
        budget: None,
        warmup: 0,
    }
}

#[test]
fn summary_percentiles() {
    let latencies: Vec<Duration> = (1..=1000).map(Duration::from_micros).collect();
    let s = Summary::of(&latencies);
    assert_eq!(s.count, 1000);
    assert_eq!((s.p50_us, s.p90_us, s.p99_us), (500, 900, 990));
    assert_eq!((s.p999_us, s.max_us), (999, 1000));
    // Far past the histogram's initial range: it grows rather than clamps.
    let s = Summary::of(&[Duration::from_secs(30), Duration::from_millis(1)]);
    assert_eq!((s.p50_us, s.max_us), (1_000, 30_000_000));
    assert!(s.p99_us.abs_diff(30_000_000) <= 30_000, "{s:?}");
    assert_eq!(Summary::of(&[]), Summary::default());
}

#[test]
fn sweeps_share_their_common_point() {
    let s = suite(vec![100_000, 0, 1_000], vec![100, 1_000, 100_000]);
    assert_eq!(s.displacement_sweep_keys(), 100_000);
    assert_eq!(s.history_sweep_displacement(), 1_000);
    assert_eq!(
        s.points(),
        vec![
            (100_000, 100_000),
            (0, 100_000),
            (1_000, 100_000),
            (1_000, 100),
            (1_000, 1_000)
        ]
    );
    let w = s.workload((0, 100));
    assert_eq!((w.keys, w.displacement, w.commits), (100, 0, 10));
    assert_eq!(w.straggler_distance, 100, "events / 10 at D = 0");
}

#[test]
fn invalid_suites_are_rejected() {
    let mut s = suite(vec![0], vec![10]);
    s.batch = 0;
    assert!(s.validate().is_err());
    let mut s = suite(vec![0], vec![10]);
    s.rate = Some(0.0);
    assert!(s.validate().is_err());
    let s = suite(vec![0], vec![0]);
    assert!(s.validate().is_err(), "keys must be at least 1");
    let s = suite(vec![], vec![10]);
    assert!(s.validate().is_err());
    // The typed systems have no partial upserts.
    let mut s = suite(vec![0], vec![10]);
    s.workload.partial = 0.1;
    let e = s.validate().unwrap_err();
    assert!(e.to_string().contains("typed systems"), "{e}");
    s.systems = vec![System::Scdflow];
    s.validate().unwrap();
}

/// Every system, closed and open loop, one and two workers: a latency per commit and the same
/// table size as the state loop (`Suite::run` checks the sizes; the typed systems' tables come
/// from the same events as `u64`s).
#[test]
fn every_system_measures_every_commit() {
    for (workers, rate) in [(1, None), (2, None), (1, Some(200_000.0)), (2, Some(1e9))] {
        let mut s = suite(vec![300], vec![20]);
        s.workers = workers;
        s.rate = rate;
        let mut seen = 0;
        let records = s.run(|_| {}, |_| seen += 1).expect("run");
        // Three systems measure every flow, the typed ones SCD1 and SCD2.
        assert_eq!(records.len(), 4 * 3 + 2 * 2);
        assert_eq!(seen, records.len());
        for r in &records {
            assert_eq!(r.commits, 10, "{r}");
            assert_eq!(r.latency.count, 10, "{r}");
            assert!(r.rows.unwrap() > 0, "{r}");
            assert!(r.latency.p50_us <= r.latency.max_us, "{r}");
        }
    }
}

/// An open loop offering 20 commits at 2,000 events/s takes about a second: commits are handed
/// over at their due times, not back to back.
#[test]
fn open_loop_waits_for_due_times() {
    let w = Workload {
        events: 2_000,
        keys: 50,
        commits: 20,
        ..Workload::default()
    };
    let target = gen::target(&w, ScdType::Type1);
    let commits = gen::events(&w, &target);
    for system in [System::Scdflow, System::StateLoop] {
        let feed = Feed {
            pacing: Pacing::open(100, 2_000.0),
            ..Feed::closed(1)
        };
        let m = measure(system, &target, commits.clone(), feed).unwrap();
        // The last commit is due at 19 * 50 ms.
        assert!(
            m.total >= Duration::from_millis(950),
            "{system}: {:?}",
            m.total
        );
        assert_eq!(m.latencies.len(), 20);
    }
}

#[test]
fn tables_have_a_row_per_record_and_ratios_per_point() {
    let s = suite(vec![0], vec![20]);
    let records = s.run(|_| {}, |_| {}).unwrap();
    let table = markdown_table(&records);
    assert_eq!(table.lines().count(), 2 + records.len(), "{table}");
    let ratios = ratios_table(&records);
    assert_eq!(ratios.lines().count(), 2 + 4, "{ratios}");
    assert!(ratios.contains("throughput vs state loop"), "{ratios}");
}

/// A budget stops the hand-over early: the figures cover the commits handed over, on one or
/// two workers, closed or open loop.
#[test]
fn budget_stops_early() {
    let w = Workload {
        events: 2_000,
        keys: 50,
        commits: 20,
        ..Workload::default()
    };
    let target = gen::target(&w, ScdType::Type2);
    let commits = gen::events(&w, &target);
    for (workers, pacing) in [
        (1, Pacing::Closed),
        (2, Pacing::Closed),
        (2, Pacing::open(100, 1_000.0)),
    ] {
        for system in System::ALL {
            let feed = Feed {
                workers,
                pacing,
                budget: Some(Duration::from_millis(250)),
            };
            let m = measure(system, &target, commits.clone(), feed).unwrap();
            let n = m.latencies.len();
            assert_eq!(m.planned, 20);
            if pacing != Pacing::Closed {
                // Due every 100 ms: commits 0, 1, 2 are due within 250 ms.
                assert_eq!(n, 3, "{system}");
                assert!(!m.complete());
            }
            assert!(n >= 1, "{system}");
            assert_eq!(
                m.events,
                commits[..n]
                    .iter()
                    .map(|c| c.events[0].len() as u64)
                    .sum::<u64>()
            );
        }
    }
}

#[test]
fn warmup_commits_are_not_counted() {
    let slow = Duration::from_millis(50);
    let fast = Duration::from_micros(10);
    let m = Measurement {
        events: 1_000,
        planned: 10,
        latencies: [vec![slow; 5], vec![fast; 5]].concat(),
        total: Duration::from_secs(1),
        rows: 7,
        rss: None,
        state: None,
    };
    let w = Workload::default();
    let all = Record::new(Flow::Scd1, &w, System::Scdflow, &m, 0);
    let warm = Record::new(Flow::Scd1, &w, System::Scdflow, &m, 5);
    assert!(all.latency.p90_us >= 49_000, "{:?}", all.latency);
    assert_eq!((warm.latency.count, warm.latency.max_us), (5, 10));
    assert_eq!(
        (warm.commits, warm.events),
        (10, 1_000),
        "throughput covers every commit"
    );
    let mut s = suite(vec![0], vec![10]);
    s.warmup = 10;
    assert!(s.validate().is_err(), "no commit left to measure");
    s.warmup = 9;
    s.validate().unwrap();
}

fn upsert(key: i64, city: Option<&str>, authored: Option<Vec<bool>>) -> Event {
    Event {
        seq: Seq::from(0),
        kind: EventKind::Upsert,
        key: Row::from([Value::Int(key)]),
        image: Row::from([
            Value::Int(key),
            city.map_or(Value::Null, |c| Value::Str(c.into())),
        ]),
        authored: authored.map(Vec::into_boxed_slice),
        system: None,
    }
}

fn snapshot_of(batch: Batch) -> Vec<(Row, Row)> {
    let Batch::Snapshot(mut rows) = batch else {
        panic!("a snapshot share makes snapshots")
    };
    rows.sort();
    rows
}

/// A snapshot flow's source table: whole upserts set a row, partial ones only their authored
/// columns (over NULLs for a new key), deletes remove it; each commit sees the whole table.
#[test]
fn snapshots_are_the_source_table_after_each_commit() {
    let delete = Event {
        kind: EventKind::Delete,
        image: Row::new(),
        ..upsert(1, None, None)
    };
    let commits = vec![
        vec![
            upsert(1, Some("Oaxaca"), None),
            upsert(2, Some("Puebla"), None),
        ],
        vec![upsert(2, None, Some(vec![true, false])), delete],
        vec![upsert(3, Some("Tula"), Some(vec![true, true]))],
        vec![upsert(3, None, Some(vec![true, false]))],
    ];
    let commits = commits
        .into_iter()
        .map(|e| CommitEvents {
            events: vec![e],
            ..CommitEvents::default()
        })
        .collect();
    let row = |k: i64, city: &str| {
        (
            Row::from([Value::Int(k)]),
            Row::from([Value::Int(k), Value::Str(city.into())]),
        )
    };
    let mut share = deal(Commits::snapshots(commits, 2), 1).pop().unwrap();
    assert_eq!(
        snapshot_of(share.next().unwrap()),
        [row(1, "Oaxaca"), row(2, "Puebla")]
    );
    assert_eq!(
        snapshot_of(share.next().unwrap()),
        [row(2, "Puebla")],
        "a partial upsert keeps the other columns"
    );
    assert_eq!(
        snapshot_of(share.next().unwrap()),
        [row(2, "Puebla"), row(3, "Tula")]
    );
    assert_eq!(
        snapshot_of(share.next().unwrap()),
        [row(2, "Puebla"), row(3, "Tula")]
    );
    assert!(share.next().is_none());
}

/// Dealt to three workers, a snapshot's shares are disjoint and together the whole snapshot.
#[test]
fn snapshot_shares_partition_the_table() {
    let w = Workload {
        events: 3_000,
        keys: 200,
        commits: 15,
        partial: 0.3,
        ..Workload::default()
    };
    let commits = || {
        Commits::snapshots(
            gen::events(&w, &gen::target(&w, ScdType::Type2)),
            1 + w.width,
        )
    };
    let mut whole = deal(commits(), 1).pop().unwrap();
    let mut shares = deal(commits(), 3);
    for _ in 0..w.commits {
        let expected = snapshot_of(whole.next().unwrap());
        let parts: Vec<Vec<(Row, Row)>> = shares
            .iter_mut()
            .map(|s| snapshot_of(s.next().unwrap()))
            .collect();
        assert!(parts.iter().all(|p| !p.is_empty()), "every worker has keys");
        let mut union = parts.concat();
        union.sort();
        assert_eq!(union, expected);
    }
}

/// The snapshot flow on one and two workers: every system ends with the state loop's table
/// size (`Suite::run` checks), and the table has history (more rows than keys).
#[test]
fn snapshot_flows_agree_across_systems() {
    for workers in [1, 2] {
        let mut s = suite(vec![100], vec![30]);
        s.flows = vec![Flow::Snapshot];
        s.workers = workers;
        let records = s.run(|_| {}, |_| {}).expect("run");
        assert_eq!(records.len(), 3);
        for r in &records {
            assert_eq!(r.flow, Flow::Snapshot);
            assert!(r.rows.unwrap() > 30, "{r}");
        }
    }
}

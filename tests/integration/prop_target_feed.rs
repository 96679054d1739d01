//! A target's change data feed read in its own pipeline, through the SQL front end and the
//! driver: for random change feeds (ties, deletes, NULL values), arrival orders, commit splits
//! and 1, 2 or 4 workers, an SCD2 target equals the model, and the SCD1 copy rebuilt from its
//! feed in the same commit — and a second copy rebuilt from the first copy's feed, a stage
//! later — equal it after every commit.

use crate::util::table_at;
use proptest::prelude::*;
use scdflow::driver::{evaluate, Evaluation, Options};
use scdflow::event::{Event, EventKind};
use scdflow::plan::Pipeline;
use scdflow::value::{Row, Seq, Value};

const PIPELINE: &str = "
CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('data', format => 'csv',
  header => true, schema => 'k BIGINT, v STRING, op STRING, seq BIGINT');
CREATE STREAMING TABLE hist;
CREATE FLOW h AS AUTO CDC INTO hist FROM STREAM(src) KEYS (k)
  APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE 2;
CREATE STREAMING TABLE feed AS SELECT k, v, __START_AT AS started, __END_AT AS ended,
  _change_type, _commit_version FROM STREAM(hist) WITH (readChangeFeed = true)
  WHERE _change_type <> 'update_preimage';
CREATE STREAMING TABLE copy;
CREATE FLOW c AS AUTO CDC INTO copy FROM STREAM(feed) KEYS (k, started)
  APPLY AS DELETE WHEN _change_type = 'delete' SEQUENCE BY _commit_version
  COLUMNS * EXCEPT (_change_type, _commit_version) STORED AS SCD TYPE 1;
CREATE STREAMING TABLE feed2 AS SELECT k, v, started, ended, _change_type, _commit_version
  FROM STREAM(copy) WITH (readChangeFeed = true) WHERE _change_type <> 'update_preimage';
CREATE STREAMING TABLE copy2;
CREATE FLOW c2 AS AUTO CDC INTO copy2 FROM STREAM(feed2) KEYS (k, started)
  APPLY AS DELETE WHEN _change_type = 'delete' SEQUENCE BY _commit_version
  COLUMNS * EXCEPT (_change_type, _commit_version) STORED AS SCD TYPE 1;
";

/// `(key, value, delete, sequence)`.
pub(crate) type Change = (i64, Option<u8>, bool, i64);

fn change() -> impl Strategy<Value = Change> {
    (
        0..4i64,
        prop_oneof![1 => Just(None), 4 => (0..3u8).prop_map(Some)],
        prop::bool::weighted(0.2),
        0..12i64,
    )
}

/// Changes in arrival order, cut into files (commits), and a worker count.
pub(crate) fn feeds() -> impl Strategy<Value = (Vec<Change>, Vec<usize>, usize)> {
    proptest::collection::vec(change(), 1..40)
        .prop_flat_map(|changes| {
            let n = changes.len();
            (
                Just(changes).prop_shuffle(),
                proptest::collection::vec(0..=n, 0..5),
                prop_oneof![Just(1usize), Just(2), Just(4)],
            )
        })
        .prop_map(|(changes, mut cuts, workers)| {
            cuts.push(changes.len());
            cuts.sort_unstable();
            cuts.dedup();
            (changes, cuts, workers)
        })
}

/// `sql`, a pipeline reading `data/` beside it, planned and run on `workers` workers over
/// `changes` written as files cut at `cuts`.
pub(crate) fn evaluated(
    sql: &str,
    changes: &[Change],
    cuts: &[usize],
    workers: usize,
) -> (Pipeline, Evaluation) {
    let dir = tempfile::tempdir().unwrap();
    write_files(&dir.path().join("data"), changes, cuts);
    let p = scdflow::sql::parse(sql, &dir.path().join("pipeline.sql")).unwrap();
    let options = Options {
        workers,
        ..Options::default()
    };
    let run = evaluate(&p, &options, None).unwrap();
    (p, run)
}

/// The files of `changes` cut at `cuts`, in `data`.
fn write_files(data: &std::path::Path, changes: &[Change], cuts: &[usize]) {
    std::fs::create_dir_all(data).unwrap();
    let mut from = 0;
    for (i, &to) in cuts.iter().enumerate() {
        std::fs::write(data.join(format!("b_{i:03}.csv")), csv(&changes[from..to])).unwrap();
        from = to;
    }
}

fn csv(changes: &[Change]) -> String {
    let mut text = String::from("k,v,op,seq\n");
    for (k, v, delete, seq) in changes {
        let v = v.map(|v| format!("v{v}")).unwrap_or_default();
        let op = if *delete { "D" } else { "U" };
        text.push_str(&format!("{k},{v},{op},{seq}\n"));
    }
    text
}

fn event((k, v, delete, seq): &Change) -> Event {
    let key = Row::from([Value::Int(*k)]);
    let value = v.map_or(Value::Null, |v| Value::Str(format!("v{v}")));
    Event {
        seq: Seq::from(*seq),
        kind: if *delete {
            EventKind::Delete
        } else {
            EventKind::Upsert
        },
        image: Row::from([Value::Int(*k), value]),
        key,
        authored: None,
        system: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn a_feed_in_its_own_pipeline_rebuilds_the_target_at_every_commit(
        (changes, cuts, workers) in feeds()
    ) {
        let (p, run) = evaluated(PIPELINE, &changes, &cuts, workers);
        let [hist, copy, copy2] = &run.targets[..] else { panic!("three targets") };
        for version in 1..=cuts.len() as u64 {
            let expected = table_at(&p.targets[0], &hist.updates, version);
            prop_assert_eq!(&table_at(&p.targets[1], &copy.updates, version), &expected);
            prop_assert_eq!(&table_at(&p.targets[2], &copy2.updates, version), &expected);
        }
        let events: Vec<Event> = changes.iter().map(event).collect();
        prop_assert_eq!(&hist.rows, &scdflow::model::scd2(&p.targets[0], &events));
    }
}

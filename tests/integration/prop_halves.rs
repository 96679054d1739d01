//! Reading a commit's file in two halves on two threads (`Options::read_halves_over`) gives
//! what one read gives: for random CSV files — valid changes, quoted values spanning lines,
//! rows that do not parse (set aside), rows an expectation drops — and commit splits, the
//! targets' updates and change feeds, the metrics and the set-aside rows are those of reading
//! every file whole, on 1 and 2 workers.

use proptest::prelude::*;
use scdflow::driver::{evaluate, Evaluation, OnInvalid, Options};

const PIPELINE: &str = "
CREATE STREAMING TABLE src (CONSTRAINT known EXPECT (v <> 'drop') ON VIOLATION DROP ROW)
  AS SELECT * FROM STREAM read_files('data', format => 'csv', header => true,
  schema => 'k BIGINT, v STRING, op STRING, seq BIGINT');
CREATE STREAMING TABLE hist;
CREATE FLOW h AS AUTO CDC INTO hist FROM STREAM(src) KEYS (k)
  APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE 2;
CREATE STREAMING TABLE latest;
CREATE FLOW l AS AUTO CDC INTO latest FROM STREAM(src) KEYS (k)
  APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE 1;
";

/// One CSV record of `src`'s file.
fn line() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        Just(String::new()),
        Just("a".to_string()),
        Just("b".to_string()),
        Just("drop".to_string()),
        Just("\"two\nlines\"".to_string()),
        Just("\"a \"\"quote\"\", then\r\nmore\"".to_string()),
    ];
    prop_oneof![
        8 => (0..6i64, value, prop::bool::weighted(0.2), 0..20i64).prop_map(|(k, v, d, s)| {
            format!("{k},{v},{},{s}\n", if d { "D" } else { "U" })
        }),
        1 => Just("x,a,U,1\n".to_string()),
        1 => Just("1,a,U\n".to_string()),
        1 => Just("1,a,U,2,extra\n".to_string()),
    ]
}

/// Files of records (at least one), each a commit.
fn files() -> impl Strategy<Value = Vec<Vec<String>>> {
    proptest::collection::vec(proptest::collection::vec(line(), 1..30), 1..4)
}

fn run(dir: &std::path::Path, workers: usize, read_halves_over: u64) -> Evaluation {
    let p = scdflow::sql::parse(PIPELINE, &dir.join("pipeline.sql")).unwrap();
    let options = Options {
        workers,
        on_invalid: OnInvalid::Quarantine,
        read_halves_over,
        ..Options::default()
    };
    evaluate(&p, &options, None).unwrap()
}

/// What a run produced, but for its commit times.
fn produced(run: &Evaluation) -> String {
    let targets: Vec<_> = (run.targets.iter())
        .map(|t| (&t.rows, &t.updates, &t.changes))
        .collect();
    let quarantined: Vec<_> = (run.quarantined.iter()).map(|q| format!("{q:?}")).collect();
    format!(
        "{targets:?}\n{:?}\n{:?}\n{quarantined:?}\n{:?}\n{}",
        run.metrics, run.table_metrics, run.warnings, run.events
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn halves_read_what_one_read_reads(files in files(), workers in 1..=2usize) {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        for (i, lines) in files.iter().enumerate() {
            let text = format!("k,v,op,seq\n{}", lines.concat());
            std::fs::write(data.join(format!("b_{i:03}.csv")), text).unwrap();
        }
        let whole = produced(&run(dir.path(), workers, 0));
        // Every file of at least a byte is a candidate; whether it is read in halves depends on
        // whether a commit is in flight, so each run mixes both reads.
        prop_assert_eq!(produced(&run(dir.path(), workers, 1)), whole);
    }
}

//! Materialized views over targets of their own pipeline, through the SQL front end and the
//! driver: for random change feeds (ties, deletes, NULL values), arrival orders, commit splits
//! and 1, 2 or 4 workers, each view equals its query evaluated over its target's rows after
//! every commit — over an SCD2 target (current rows, renamed columns), over an SCD1 target
//! (an expression, a filter that NULL fails), and over another view.

use crate::prop_target_feed::{evaluated, feeds};
use crate::util::table_at;
use proptest::prelude::*;
use scdflow::driver::sort_rows;
use scdflow::plan::Target;
use scdflow::value::{Row, Value};

const PIPELINE: &str = "
CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('data', format => 'csv',
  header => true, schema => 'k BIGINT, v STRING, op STRING, seq BIGINT');
CREATE STREAMING TABLE hist;
CREATE FLOW h AS AUTO CDC INTO hist FROM STREAM(src) KEYS (k)
  APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE 2;
CREATE STREAMING TABLE latest;
CREATE FLOW l AS AUTO CDC INTO latest FROM STREAM(src) KEYS (k)
  APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE 1;
CREATE MATERIALIZED VIEW current AS
  SELECT v AS value, k, __START_AT AS since FROM hist WHERE __END_AT IS NULL;
CREATE MATERIALIZED VIEW shouted AS SELECT k, UPPER(v) AS loud FROM latest WHERE v <> 'v0';
CREATE MATERIALIZED VIEW named AS SELECT * FROM current WHERE value IS NOT NULL;
";

/// `query` over `rows` (as its values), sorted as `target`'s rows are.
fn view(target: &Target, rows: &[Row], query: impl Fn(&[Value]) -> Option<Vec<Value>>) -> Vec<Row> {
    let mut out: Vec<Row> = (rows.iter())
        .filter_map(|r| query(&r.to_values()))
        .map(Row::from)
        .collect();
    sort_rows(target, &mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn views_over_targets_equal_their_queries_at_every_commit(
        (changes, cuts, workers) in feeds()
    ) {
        let (p, run) = evaluated(PIPELINE, &changes, &cuts, workers);
        let [hist, latest, current, shouted, named] = &run.targets[..] else {
            panic!("five targets")
        };
        let t = &p.targets;
        for version in 1..=cuts.len() as u64 {
            let hist_rows = table_at(&t[0], &hist.updates, version);
            let current_rows = view(&t[2], &hist_rows, |r| {
                r[3].is_null().then(|| vec![r[1].clone(), r[0].clone(), r[2].clone()])
            });
            prop_assert_eq!(&table_at(&t[2], &current.updates, version), &current_rows);
            let latest_rows = table_at(&t[1], &latest.updates, version);
            let shouted_rows = view(&t[3], &latest_rows, |r| match &r[1] {
                Value::Str(v) if v != "v0" => Some(vec![r[0].clone(), Value::Str(v.to_uppercase())]),
                _ => None,
            });
            prop_assert_eq!(&table_at(&t[3], &shouted.updates, version), &shouted_rows);
            let named_rows = view(&t[4], &current_rows, |r| (!r[0].is_null()).then(|| r.to_vec()));
            prop_assert_eq!(&table_at(&t[4], &named.updates, version), &named_rows);
        }
    }
}

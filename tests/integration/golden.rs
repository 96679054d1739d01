//! Golden tests: the spec's worked examples (SPEC section 4, `tests/data/seed_vectors.json`, a
//! copy of `shared/spec/seed_vectors.json`) and decision vectors T12–T19, run through the SQL
//! front end and the driver with 1, 2 and 4 workers; tables must match to the row.

use scdflow::driver::{evaluate, Options};
use scdflow::io::value_to_json;
use scdflow::plan::Pipeline;
use serde_json::{json, Value as Json};
use std::path::Path;

/// A pipeline over one JSON-lines source directory with one file per batch.
pub struct Case {
    /// Source table name.
    pub source: String,
    /// `read_files` schema.
    pub schema: String,
    /// Target table name.
    pub target: String,
    /// The flow statement.
    pub flow: String,
    /// Rows per batch.
    pub batches: Vec<Vec<Json>>,
}

/// Runs `sql` (in `dir`, next to its data) and returns the first target's table after commit
/// `version` (all commits when `None`), as sorted JSON objects.
pub fn run_sql(dir: &Path, sql: &str, workers: usize, version: Option<u64>) -> Vec<Json> {
    let file = dir.join("pipeline.sql");
    std::fs::write(&file, sql).unwrap();
    let p = scdflow::sql::parse(sql, &file).unwrap_or_else(|e| panic!("{e}\n{sql}"));
    table_json(&p, workers, version)
}

impl Case {
    /// Writes the data and the pipeline into `dir` and parses it.
    pub fn pipeline(&self, dir: &Path) -> Pipeline {
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        for (i, batch) in self.batches.iter().enumerate() {
            let text: String = batch.iter().map(|r| format!("{r}\n")).collect();
            std::fs::write(data.join(format!("batch_{:03}.jsonl", i + 1)), text).unwrap();
        }
        // The inline form (`CREATE ... STREAMING TABLE t FLOW ...`) declares its own target.
        let declare = if self.flow.to_ascii_uppercase().contains("STREAMING TABLE") {
            String::new()
        } else {
            format!("CREATE STREAMING TABLE {};\n", self.target)
        };
        let sql = format!(
            "CREATE STREAMING TABLE {} AS SELECT * FROM STREAM read_files('data', format => 'json', schema => '{}');\n\
             {declare}{}\n",
            self.source, self.schema, self.flow
        );
        let file = dir.join("pipeline.sql");
        std::fs::write(&file, &sql).unwrap();
        scdflow::sql::parse(&sql, &file).unwrap_or_else(|e| panic!("{e}\n{sql}"))
    }
}

/// The target's rows after commit `version` (all commits when `None`) as JSON objects, sorted.
pub fn table_json(p: &Pipeline, workers: usize, version: Option<u64>) -> Vec<Json> {
    let eval = evaluate(
        p,
        &Options {
            workers,
            ..Options::default()
        },
        None,
    )
    .unwrap();
    let target = &p.targets[0];
    let updates: Vec<_> = eval.targets[0]
        .updates
        .iter()
        .filter(|(_, v, _)| version.is_none_or(|max| *v <= max))
        .cloned()
        .collect();
    let rows = scdflow::driver::final_rows(target, &updates);
    let mut out: Vec<Json> = rows
        .iter()
        .map(|row| {
            let fields = target
                .schema
                .columns
                .iter()
                .zip(row)
                .map(|(c, v)| (c.name.clone(), value_to_json(&v.to_value(), &c.ty)))
                .collect();
            Json::Object(fields)
        })
        .collect();
    out.sort_by_key(|j| j.to_string());
    out
}

pub fn sorted(mut rows: Vec<Json>) -> Vec<Json> {
    rows.sort_by_key(|j| j.to_string());
    rows
}

/// Runs a case with 1, 2 and 4 workers and checks the final table.
pub fn check(case: &Case, expected: Vec<Json>) {
    let dir = tempfile::tempdir().unwrap();
    let p = case.pipeline(dir.path());
    let expected = sorted(expected);
    for workers in [1, 2, 4] {
        assert_eq!(
            table_json(&p, workers, None),
            expected,
            "{} with {workers} workers",
            case.target
        );
    }
}

pub fn seed_cases() -> Vec<Json> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/seed_vectors.json"),
    )
    .unwrap();
    serde_json::from_str::<Vec<Json>>(&text).unwrap()
}

pub fn seed_case(v: &Json) -> Case {
    let flow = &v["flow"];
    let schema = v["source_schema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["name"].as_str().unwrap(),
                c["type"].as_str().unwrap()
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    Case {
        source: flow["source"].as_str().unwrap().to_string(),
        schema,
        target: flow["target"].as_str().unwrap().to_string(),
        flow: v["sql_equivalent"].as_str().unwrap().to_string(),
        batches: v["batches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["rows"].as_array().unwrap().clone())
            .collect(),
    }
}

pub fn run_seed(name: &str) {
    let cases = seed_cases();
    let v = cases
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no seed vector {name}"));
    let case = seed_case(v);
    let dir = tempfile::tempdir().unwrap();
    let p = case.pipeline(dir.path());
    let expected = sorted(v["expected_final"]["rows"].as_array().unwrap().clone());
    for workers in [1, 2, 4] {
        assert_eq!(
            table_json(&p, workers, None),
            expected,
            "{name} with {workers} workers"
        );
    }
    for step in v["expected_intermediate"].as_array().unwrap() {
        let after = step["after_batch"].as_u64().unwrap();
        let expected = sorted(step["rows"].as_array().unwrap().clone());
        assert_eq!(
            table_json(&p, 1, Some(after)),
            expected,
            "{name} after batch {after}"
        );
    }
}

#[test]
fn t1_scd1() {
    run_seed("T1_scd1");
}

#[test]
fn t1_split_scd1() {
    run_seed("T1_split_scd1");
}

#[test]
fn t2_scd1_truncate() {
    run_seed("T2_scd1_truncate");
}

#[test]
fn t3_scd2() {
    run_seed("T3_scd2");
}

#[test]
fn t3_split_scd2() {
    run_seed("T3_split_scd2");
}

#[test]
fn t4_scd2_track_except_city() {
    run_seed("T4_scd2_track_except_city");
}

#[test]
fn t4_split_scd2_track_except_city() {
    run_seed("T4_split_scd2_track_except_city");
}

#[test]
fn t11_three_runs_scd1() {
    run_seed("T11_three_runs_scd1");
}

fn kv(flow: &str, schema: &str, batches: Vec<Vec<Json>>) -> Case {
    Case {
        source: "src".into(),
        schema: schema.into(),
        target: "t".into(),
        flow: flow.into(),
        batches,
    }
}

const KV_SCHEMA: &str = "k INT, v STRING, op STRING, seq INT";

#[test]
fn t12_noop_scd2_update() {
    let flow =
        "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (k) APPLY AS DELETE WHEN op = 'D' \
                SEQUENCE BY seq COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE 2;";
    let rows = vec![
        json!({"k":1,"v":"a","op":"U","seq":1}),
        json!({"k":1,"v":"a","op":"U","seq":2}),
    ];
    check(
        &kv(flow, KV_SCHEMA, vec![rows]),
        vec![json!({"k":1,"v":"a","__START_AT":1,"__END_AT":null})],
    );
}

#[test]
fn t13_delete_and_reinsert_scd2() {
    let flow =
        "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (k) APPLY AS DELETE WHEN op = 'D' \
                SEQUENCE BY seq COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE 2;";
    let rows = vec![
        json!({"k":1,"v":"b","op":"U","seq":3}),
        json!({"k":1,"v":null,"op":"D","seq":2}),
        json!({"k":1,"v":"a","op":"U","seq":1}),
    ];
    check(
        &kv(flow, KV_SCHEMA, vec![rows]),
        vec![
            json!({"k":1,"v":"a","__START_AT":1,"__END_AT":2}),
            json!({"k":1,"v":"b","__START_AT":3,"__END_AT":null}),
        ],
    );
}

const C12_SCHEMA: &str = "k INT, c1 STRING, c2 STRING, seq INT";

fn t14_rows() -> (Json, Json) {
    (
        json!({"k":1,"c1":"x","c2":"y","seq":1}),
        json!({"k":1,"c1":null,"c2":"z","seq":2}),
    )
}

#[test]
fn t14_ignore_null_updates() {
    let flow = "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (k) IGNORE NULL UPDATES \
                SEQUENCE BY seq COLUMNS * EXCEPT (seq) STORED AS SCD TYPE 1;";
    let (a, b) = t14_rows();
    let expected = vec![json!({"k":1,"c1":"x","c2":"z"})];
    check(
        &kv(flow, C12_SCHEMA, vec![vec![a.clone()], vec![b.clone()]]),
        expected.clone(),
    );
    // T14b: both events in one commit, and in reverse arrival order.
    check(
        &kv(flow, C12_SCHEMA, vec![vec![b.clone(), a.clone()]]),
        expected,
    );
    let plain = "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (k) \
                 SEQUENCE BY seq COLUMNS * EXCEPT (seq) STORED AS SCD TYPE 1;";
    check(
        &kv(plain, C12_SCHEMA, vec![vec![a], vec![b]]),
        vec![json!({"k":1,"c1":null,"c2":"z"})],
    );
}

#[test]
fn t14c_ignore_null_updates_on_list() {
    let flow =
        "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (k) IGNORE NULL UPDATES ON (c1) \
                SEQUENCE BY seq COLUMNS * EXCEPT (seq) STORED AS SCD TYPE 1;";
    let rows = vec![
        json!({"k":1,"c1":"x","c2":"y","seq":1}),
        json!({"k":1,"c1":null,"c2":null,"seq":2}),
    ];
    check(
        &kv(flow, C12_SCHEMA, vec![rows]),
        vec![json!({"k":1,"c1":"x","c2":null})],
    );
}

#[test]
fn t15_columns_to_update() {
    let flow = "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (k) SEQUENCE BY seq \
                COLUMNS * EXCEPT (cu, seq) STORED AS SCD TYPE 1 COLUMNS TO UPDATE cu;";
    let schema = "k INT, c1 STRING, c2 STRING, cu ARRAY<STRING>, seq INT";
    let rows = vec![
        json!({"k":1,"c1":null,"c2":"q","cu":["c1"],"seq":2}),
        json!({"k":1,"c1":"x","c2":"y","cu":["c1","c2"],"seq":1}),
    ];
    check(
        &kv(flow, schema, vec![rows]),
        vec![json!({"k":1,"c1":null,"c2":"y"})],
    );
}

#[test]
fn t17_struct_sequence() {
    let flow =
        "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (k) SEQUENCE BY STRUCT(ts, n) \
                COLUMNS * EXCEPT (ts, n) STORED AS SCD TYPE 1;";
    let schema = "k INT, v STRING, ts INT, n INT";
    let rows = vec![
        json!({"k":1,"v":"a","ts":10,"n":2}),
        json!({"k":1,"v":"b","ts":10,"n":1}),
        json!({"k":1,"v":"c","ts":9,"n":9}),
    ];
    check(&kv(flow, schema, vec![rows]), vec![json!({"k":1,"v":"a"})]);
}

#[test]
fn t19_delete_of_unknown_key_blocks_older_upsert() {
    let flow =
        "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (k) APPLY AS DELETE WHEN op = 'D' \
                SEQUENCE BY seq COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE 1;";
    let batches = vec![
        vec![json!({"k":9,"v":null,"op":"D","seq":5})],
        vec![json!({"k":9,"v":"z","op":"U","seq":4})],
    ];
    check(&kv(flow, KV_SCHEMA, batches), vec![]);
}

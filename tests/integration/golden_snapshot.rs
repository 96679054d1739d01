//! Golden tests for snapshot flows (T5, T6, T16) and REPLACE USING flows (T7 and its derived
//! vectors), through SQL and the driver with 1, 2 and 4 workers.

use crate::golden::{run_seed, run_sql, seed_cases, sorted};
use serde_json::{json, Value as Json};
use std::path::Path;

/// Writes `snapshot_<version>.csv` files (header `userId,city`) into `dir/snaps`.
fn write_snapshots(dir: &Path, batches: &[(i64, Vec<(i64, &str)>)]) {
    let snaps = dir.join("snaps");
    std::fs::create_dir_all(&snaps).unwrap();
    for (version, rows) in batches {
        let text: String = std::iter::once("userId,city\n".to_string())
            .chain(rows.iter().map(|(k, c)| format!("{k},{c}\n")))
            .collect();
        std::fs::write(snaps.join(format!("snapshot_{version}.csv")), text).unwrap();
    }
}

/// A snapshot flow over `snaps/snapshot_<version>.csv` into `target`, SCD type `scd`.
pub fn snapshot_sql(scd: u8) -> String {
    format!(
        "CREATE STREAMING TABLE target;\n\
         CREATE FLOW target_flow AS AUTO CDC INTO target\n\
         FROM SNAPSHOT read_files('snaps', format => 'csv', header => true,\n\
           schema => 'userId INT, city STRING', version => 'snapshot_([0-9]+)[.]csv')\n\
         KEYS (userId) STORED AS SCD TYPE {scd};\n"
    )
}

/// A seed snapshot vector: its batches as versioned files, checked after each version.
fn seed_snapshots(name: &str, scd: u8) {
    let cases = seed_cases();
    let v = cases.iter().find(|c| c["name"] == name).unwrap();
    let batches: Vec<(i64, Vec<(i64, String)>)> = v["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let rows = b["rows"].as_array().unwrap();
            let rows = rows.iter().map(|r| {
                (
                    r["userId"].as_i64().unwrap(),
                    r["city"].as_str().unwrap().to_string(),
                )
            });
            (b["version"].as_i64().unwrap(), rows.collect())
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let borrowed: Vec<(i64, Vec<(i64, &str)>)> = batches
        .iter()
        .map(|(v, rows)| (*v, rows.iter().map(|(k, c)| (*k, c.as_str())).collect()))
        .collect();
    write_snapshots(dir.path(), &borrowed);
    let sql = snapshot_sql(scd);
    let expected = sorted(v["expected_final"]["rows"].as_array().unwrap().clone());
    for workers in [1, 2, 4] {
        assert_eq!(
            run_sql(dir.path(), &sql, workers, None),
            expected,
            "{name} with {workers} workers"
        );
    }
    for step in v["expected_intermediate"].as_array().unwrap() {
        let after = step["after_batch"].as_u64().unwrap();
        let expected = sorted(step["rows"].as_array().unwrap().clone());
        assert_eq!(
            run_sql(dir.path(), &sql, 1, Some(after)),
            expected,
            "{name} after batch {after}"
        );
    }
}

#[test]
fn t5_snapshot_scd2() {
    seed_snapshots("T5_snapshot_scd2", 2);
}

#[test]
fn t5_snapshot_scd1() {
    seed_snapshots("T5_snapshot_scd1", 1);
}

#[test]
fn t6_snapshot_files_scd2() {
    seed_snapshots("T6_snapshot_files_scd2", 2);
}

#[test]
fn t6_snapshot_files_scd1() {
    seed_snapshots("T6_snapshot_files_scd1", 1);
}

#[test]
fn t6_a_repeated_version_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    write_snapshots(
        dir.path(),
        &[(1, vec![(1, "Oaxaca")]), (2, vec![(1, "Carmel")])],
    );
    // `snapshot_02.csv` carries version 2 again. Equal versions apply in file-name order, so it
    // is applied and `snapshot_2.csv`, not newer than it, is skipped.
    std::fs::write(
        dir.path().join("snaps/snapshot_02.csv"),
        "userId,city\n9,Nowhere\n",
    )
    .unwrap();
    let rows = run_sql(dir.path(), &snapshot_sql(1), 1, None);
    assert_eq!(rows, vec![json!({"userId": 9, "city": "Nowhere"})]);
}

#[test]
fn t16_snapshot_scd2_partial_tracking() {
    let dir = tempfile::tempdir().unwrap();
    let snaps = dir.path().join("snaps");
    std::fs::create_dir_all(&snaps).unwrap();
    std::fs::write(snaps.join("v1.csv"), "k,name,city\n1,Ann,Oslo\n").unwrap();
    std::fs::write(snaps.join("v2.csv"), "k,name,city\n1,Anna,Oslo\n").unwrap();
    let sql = "CREATE STREAMING TABLE t;\n\
               CREATE FLOW f AS AUTO CDC INTO t FROM SNAPSHOT read_files('snaps', format => 'csv',\n\
                 schema => 'k INT, name STRING, city STRING', version => 'v([0-9]+)[.]csv')\n\
               KEYS (k) STORED AS SCD TYPE 2 TRACK HISTORY ON (city);\n";
    let expected =
        vec![json!({"k": 1, "name": "Anna", "city": "Oslo", "__START_AT": 1, "__END_AT": null})];
    assert_eq!(run_sql(dir.path(), sql, 2, None), expected);
}

#[test]
fn periodic_snapshots_are_versioned_by_commit() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("exports");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("a.csv"), "userId,city\n1,Oaxaca\n2,Monterrey\n").unwrap();
    std::fs::write(data.join("b.csv"), "userId,city\n2,Carmel\n").unwrap();
    let sql = "CREATE STREAMING TABLE exports AS SELECT * FROM STREAM read_files('exports', format => 'csv',\n\
                 schema => 'userId INT, city STRING');\n\
               CREATE STREAMING TABLE target;\n\
               CREATE FLOW f AS AUTO CDC INTO target FROM SNAPSHOT (SELECT userId, city FROM exports)\n\
               KEYS (userId) STORED AS SCD TYPE 2;\n";
    let expected = sorted(vec![
        json!({"userId": 1, "city": "Oaxaca", "__START_AT": 1, "__END_AT": 2}),
        json!({"userId": 2, "city": "Monterrey", "__START_AT": 1, "__END_AT": 2}),
        json!({"userId": 2, "city": "Carmel", "__START_AT": 2, "__END_AT": null}),
    ]);
    for workers in [1, 4] {
        assert_eq!(run_sql(dir.path(), sql, workers, None), expected);
    }
}

#[test]
fn t7_replace_using() {
    run_seed("T7_replace_using");
}

const REGIONS: &str = "region_id INT, device_type STRING, event_type STRING, seq INT";

fn region(r: Option<i64>, d: &str, e: &str, s: i64) -> Json {
    json!({"region_id": r, "device_type": d, "event_type": e, "seq": s})
}

/// T7's two batches followed by `more`, under `flow`; the final table.
fn t7_then(flow: &str, more: Vec<Vec<Json>>) -> Vec<Json> {
    let mut batches = vec![
        vec![
            region(Some(1), "iOS", "click", 1),
            region(Some(1), "Android", "conversion", 1),
            region(Some(2), "iOS", "click", 1),
            region(Some(2), "desktop", "click", 1),
        ],
        vec![
            region(Some(1), "iOS", "click", 2),
            region(Some(1), "Android", "conversion", 2),
            region(Some(1), "desktop", "click", 2),
            region(Some(3), "iOS", "click", 1),
            region(Some(3), "desktop", "click", 2),
        ],
    ];
    batches.extend(more);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    for (i, batch) in batches.iter().enumerate() {
        let text: String = batch.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(data.join(format!("batch_{:03}.jsonl", i + 1)), text).unwrap();
    }
    let sql = format!(
        "CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('data', format => 'json', schema => '{REGIONS}');\n{flow}\n"
    );
    let one = run_sql(dir.path(), &sql, 1, None);
    assert_eq!(
        run_sql(dir.path(), &sql, 4, None),
        one,
        "workers change the table"
    );
    one
}

const T7_FLOW: &str = "CREATE OR REFRESH STREAMING TABLE t FLOW REPLACE USING (region_id) SEQUENCE BY seq BY NAME SELECT * FROM STREAM(src);";

fn regions_of(rows: &[Json], id: Option<i64>) -> Vec<Json> {
    sorted(
        rows.iter()
            .filter(|r| r["region_id"] == json!(id))
            .cloned()
            .collect(),
    )
}

#[test]
fn t7_equal_sequence_appends() {
    let rows = t7_then(
        T7_FLOW,
        vec![vec![region(Some(2), "Android", "conversion", 1)]],
    );
    let expected = sorted(vec![
        region(Some(2), "iOS", "click", 1),
        region(Some(2), "desktop", "click", 1),
        region(Some(2), "Android", "conversion", 1),
    ]);
    assert_eq!(regions_of(&rows, Some(2)), expected);
}

#[test]
fn t7_lower_sequence_is_ignored() {
    let rows = t7_then(T7_FLOW, vec![vec![region(Some(1), "web", "click", 1)]]);
    let expected = sorted(vec![
        region(Some(1), "iOS", "click", 2),
        region(Some(1), "Android", "conversion", 2),
        region(Some(1), "desktop", "click", 2),
    ]);
    assert_eq!(regions_of(&rows, Some(1)), expected);
}

#[test]
fn t7_dropped_rows_set_no_sequence_floor() {
    let flow = "CREATE OR REFRESH STREAMING TABLE t (CONSTRAINT valid EXPECT (event_type <> 'bad') ON VIOLATION DROP ROW)\n\
                FLOW REPLACE USING (region_id) SEQUENCE BY seq BY NAME SELECT * FROM STREAM(src);";
    let dropped = vec![region(Some(2), "iOS", "bad", 9)];
    let rows = t7_then(flow, vec![dropped.clone()]);
    assert_eq!(
        regions_of(&rows, Some(2)).len(),
        2,
        "a dropped row leaves region 2 untouched"
    );
    let rows = t7_then(
        flow,
        vec![dropped, vec![region(Some(2), "iOS", "click", 5)]],
    );
    assert_eq!(
        regions_of(&rows, Some(2)),
        vec![region(Some(2), "iOS", "click", 5)]
    );
}

#[test]
fn t7_null_keys_match_null_keys() {
    let more = vec![
        vec![region(None, "iOS", "click", 1)],
        vec![region(None, "web", "click", 2)],
    ];
    let rows = t7_then(T7_FLOW, more);
    assert_eq!(
        regions_of(&rows, None),
        vec![region(None, "web", "click", 2)]
    );
}

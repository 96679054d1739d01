//! Delta tables written and read back through delta-rs, on the local file system.

use super::{Log, Table, VersionRows};
use crate::value::{DataType, Packer, Row, Schema, Value};
use std::collections::BTreeMap;
use std::future::IntoFuture;

fn schema() -> Schema {
    Schema::new([
        ("id".to_string(), DataType::BigInt),
        ("name".into(), DataType::String),
    ])
}

fn row(id: i64, name: &str) -> Row {
    let mut p = Packer::new();
    p.push(&Value::Int(id)).push(&Value::Str(name.into()));
    p.finish()
}

fn cdf() -> BTreeMap<String, String> {
    BTreeMap::from([("delta.enableChangeDataFeed".to_string(), "true".to_string())])
}

#[test]
fn appends_that_race_for_one_version_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    Table::create(&path, &schema(), &cdf(), &[row(1, "a")], false).unwrap();
    let mut first = Table::open(&path).unwrap();
    let mut second = Table::open(&path).unwrap();
    assert_eq!(first.append(&[row(2, "b")]).unwrap(), 1);
    // `second` still holds version 0: its put of version 1 loses and it appends on top.
    assert_eq!(second.append(&[row(3, "c")]).unwrap(), 2);
    let mut rows = Table::open(&path).unwrap().rows().unwrap();
    rows.sort();
    assert_eq!(rows, [row(1, "a"), row(2, "b"), row(3, "c")]);
}

#[test]
fn each_version_is_read_as_the_rows_it_adds_or_as_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    Table::create(&path, &schema(), &BTreeMap::new(), &[], false).unwrap();
    let mut table = Table::open(&path).unwrap();
    table.append(&[row(1, "a"), row(2, "b")]).unwrap();
    table.append(&[row(3, "c")]).unwrap();
    Table::create(&path, &schema(), &BTreeMap::new(), &[row(9, "z")], true).unwrap();
    let log = Log::open(&path).unwrap();
    assert_eq!(log.latest_version().unwrap(), 3);
    // Version 0 only created the table: no data.
    assert_eq!(log.data_versions(0).unwrap(), [1, 2, 3]);
    assert_eq!(log.data_versions(2).unwrap(), [2, 3]);
    match log.version_rows(1, &schema()).unwrap() {
        VersionRows::Appended(rows) => assert_eq!(rows, [row(1, "a"), row(2, "b")]),
        other => panic!("{other:?}"),
    }
    match log.version_rows(3, &schema()).unwrap() {
        VersionRows::Changed(operation) => {
            assert_eq!(operation.as_deref(), Some("CREATE OR REPLACE TABLE"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_table_whose_rules_scdflow_cannot_keep_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    std::fs::create_dir(&path).unwrap();
    // An invariant, as Spark writes one: scdflow does not evaluate it, so it must not append.
    let invariant = serde_json::json!({"expression": {"expression": "id > 0"}}).to_string();
    let metadata = std::collections::HashMap::from([(
        "delta.invariants".to_string(),
        serde_json::Value::String(invariant),
    )]);
    let runtime = super::table::runtime(&path).unwrap();
    runtime
        .block_on(
            deltalake::operations::create::CreateBuilder::new()
                .with_location(
                    deltalake::ensure_table_uri(path.to_string_lossy())
                        .unwrap()
                        .as_str(),
                )
                .with_column(
                    "id",
                    deltalake::kernel::DataType::LONG,
                    true,
                    Some(metadata),
                )
                .with_column("name", deltalake::kernel::DataType::STRING, true, None)
                .into_future(),
        )
        .unwrap();
    let mut table = Table::open(&path).unwrap();
    let e = table.append(&[row(-1, "a")]).unwrap_err();
    assert!(
        e.message().contains("column `id` has delta.invariants"),
        "{}",
        e.message()
    );
    assert_eq!(Log::open(&path).unwrap().latest_version().unwrap(), 0);
}

#[test]
fn a_directory_without_a_log_is_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let e = Table::open(dir.path()).err().unwrap();
    assert!(
        e.message().contains("is not a Delta table"),
        "{}",
        e.message()
    );
}

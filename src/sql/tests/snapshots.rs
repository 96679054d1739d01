//! AUTO CDC FROM SNAPSHOT flows (SPEC 2.3, 2.4, T5, T6, D12): files with a version pattern,
//! periodic snapshots of a source table, the inline form, and every validation error.

use super::{assert_error, parse_ok, users_flow, USERS};
use crate::plan::{Format, ScdType, SnapshotSource, TargetKind};
use crate::value::{DataType, Value};
use crate::ErrorKind::{Syntax, Validation};
use std::path::Path;

/// A directory holding T5's two snapshots as `snapshot_0.csv` and `snapshot_1.csv`, plus a file
/// the version pattern ignores (sorted first, with other columns, so inference must skip it).
fn snapshot_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let files = [
        ("a_notes.csv", "note,author\nhello,me\n"),
        (
            "snapshot_0.csv",
            "userId,city\n1,Oaxaca\n2,Monterrey\n3,Tijuana\n",
        ),
        (
            "snapshot_1.csv",
            "userId,city\n2,Carmel\n3,Los Angeles\n4,Death Valley\n6,Kings Canyon\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write snapshot");
    }
    dir
}

/// `CREATE STREAMING TABLE target;` then a snapshot flow over `dir` with `extra` clauses.
fn files_flow(dir: &Path, extra: &str) -> String {
    format!(
        "CREATE STREAMING TABLE target;\n\
CREATE FLOW target_snapshot_flow AS AUTO CDC INTO target\n\
FROM SNAPSHOT read_files('{}', format => 'csv', header => true, version => 'snapshot_([0-9]+)[.]csv')\n\
KEYS (userId) {extra};",
        dir.display()
    )
}

#[test]
fn t5_files_scd2_infers_the_schema_from_the_first_matching_file() {
    let dir = snapshot_dir();
    let p = parse_ok(&files_flow(dir.path(), "STORED AS SCD TYPE 2"));
    assert!(p.flows.is_empty() && p.replace_flows.is_empty());
    let flow = &p.snapshot_flows[0];
    assert_eq!(
        (flow.name.as_str(), flow.target, flow.line, flow.once),
        ("target_snapshot_flow", 0, 2, false)
    );
    let SnapshotSource::Files {
        path,
        version_pattern,
        version,
        format,
        header,
        file_schema,
    } = &flow.source
    else {
        panic!("files source expected: {:?}", flow.source);
    };
    assert_eq!(path, dir.path());
    assert_eq!(version_pattern, "snapshot_([0-9]+)[.]csv");
    assert!(version.is_match("snapshot_12.csv") && !version.is_match("old_snapshot_12.csv"));
    assert_eq!((*format, *header), (Format::Csv, true));
    assert_eq!(file_schema.to_string(), "userId BIGINT, city STRING");
    assert!(flow.projection.is_none() && flow.filter.is_none());
    assert_eq!(flow.schema, *file_schema);
    assert_eq!(flow.keys, vec![0]);
    let target = &p.targets[0];
    assert_eq!(target.kind, TargetKind::Snapshot);
    assert_eq!(
        target.schema.to_string(),
        "userId BIGINT, city STRING, __START_AT BIGINT, __END_AT BIGINT"
    );
    assert_eq!(
        (target.image_len, target.keys.clone(), target.scd),
        (2, vec![0], ScdType::Type2)
    );
    assert_eq!(target.sequence_type, DataType::BigInt);
    assert_eq!(target.tracked, vec![true, true]);
    assert!(!target.partial);
}

#[test]
fn t5_files_scd1_and_a_declared_schema() {
    let dir = snapshot_dir();
    let p = parse_ok(&files_flow(dir.path(), "STORED AS SCD TYPE 1"));
    let target = &p.targets[0];
    assert_eq!(target.schema.to_string(), "userId BIGINT, city STRING");
    assert_eq!(
        (target.scd, target.sequence_type.clone()),
        (ScdType::Type1, DataType::BigInt)
    );
    // With a schema nothing is read, so the directory need not exist yet.
    let sql = "CREATE STREAMING TABLE target (userId INT, city STRING, __START_AT BIGINT, __END_AT BIGINT);\n\
CREATE FLOW f AS AUTO CDC ONCE INTO target FROM SNAPSHOT read_files('later/', format => 'csv',\n\
  schema => 'userId INT, city STRING', version => 'snapshot_([0-9]+)[.]csv')\n\
KEYS (userId) STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (city);";
    let p = parse_ok(sql);
    let undeclared = sql.replace(", __START_AT BIGINT, __END_AT BIGINT", "");
    assert_error(
        &undeclared,
        Validation,
        1,
        "an SCD TYPE 2 target must declare `__START_AT BIGINT` and `__END_AT BIGINT`",
    );
    let flow = &p.snapshot_flows[0];
    assert!(flow.once);
    assert_eq!(flow.schema.to_string(), "userId INT, city STRING");
    assert_eq!(p.targets[0].tracked, vec![true, false]);
    let SnapshotSource::Files { path, .. } = &flow.source else {
        panic!("files source expected");
    };
    assert_eq!(path, Path::new("/p/later/"));
}

#[test]
fn periodic_snapshots_of_a_source_table_with_a_projection() {
    let sql = format!(
        "{USERS}CREATE STREAMING TABLE cities;\n\
CREATE FLOW snap AS AUTO CDC INTO cities\n\
FROM SNAPSHOT (SELECT userId, upper(city) AS city FROM users_cdf WHERE operation <> 'DELETE')\n\
KEYS (userId) STORED AS SCD TYPE 2 TRACK HISTORY ON (city);"
    );
    let p = parse_ok(&sql);
    let flow = &p.snapshot_flows[0];
    assert!(matches!(flow.source, SnapshotSource::Table { table: 0 }));
    assert_eq!(flow.schema.to_string(), "userId INT, city STRING");
    let row = [
        Value::Int(7),
        Value::Str("ann".into()),
        Value::Str("lima".into()),
        Value::Str("UPDATE".into()),
        Value::Int(1),
    ];
    let projected: Vec<Value> = flow
        .projection
        .as_ref()
        .expect("projection")
        .iter()
        .map(|e| e.eval_values(&row).unwrap_or(Value::Null))
        .collect();
    assert_eq!(projected, vec![Value::Int(7), Value::Str("LIMA".into())]);
    assert_eq!(
        flow.filter.as_ref().map(|f| f.eval_predicate_values(&row)),
        Some(Ok(true))
    );
    let target = &p.targets[0];
    assert_eq!(
        target.schema.to_string(),
        "userId INT, city STRING, __START_AT BIGINT, __END_AT BIGINT"
    );
    assert_eq!(target.tracked, vec![false, true]);
}

#[test]
fn inline_and_bare_table_forms() {
    let sql = format!(
        "{USERS}CREATE OR REFRESH STREAMING TABLE users_snap\n\
FLOW AUTO CDC FROM SNAPSHOT LIVE.users_cdf KEYS (userId, name);"
    );
    let p = parse_ok(&sql);
    let flow = &p.snapshot_flows[0];
    assert_eq!((flow.name.as_str(), flow.line), ("users_snap", 2));
    assert!(flow.projection.is_none());
    assert_eq!(flow.keys, vec![0, 1]);
    let target = &p.targets[0];
    assert_eq!(
        (target.kind, target.scd),
        (TargetKind::Snapshot, ScdType::Type1)
    );
    assert_eq!(target.schema, p.tables[0].schema);
    let dir = snapshot_dir();
    let inline = format!(
        "CREATE STREAMING TABLE t FLOW AUTO CDC ONCE FROM SNAPSHOT read_files('{}',\n\
format => 'csv', version => 'snapshot_(\\d+)\\.csv') KEYS (city);",
        dir.path().display()
    );
    let p = parse_ok(&inline);
    assert!(p.snapshot_flows[0].once);
    assert_eq!(p.targets[0].keys, vec![1]);
}

#[test]
fn change_feed_clauses_are_rejected_by_name() {
    let cases = [
        ("APPLY AS DELETE WHEN city = 'x'", "APPLY AS DELETE WHEN: not allowed in AUTO CDC FROM SNAPSHOT flows"),
        ("APPLY AS TRUNCATE WHEN city = 'x'", "APPLY AS TRUNCATE WHEN: not allowed in AUTO CDC FROM SNAPSHOT flows"),
        ("SEQUENCE BY userId", "SEQUENCE BY: not allowed in AUTO CDC FROM SNAPSHOT flows (the snapshot version is the sequence)"),
        ("SYSTEM SEQUENCE BY userId", "SYSTEM SEQUENCE BY: not allowed in AUTO CDC FROM SNAPSHOT flows"),
        ("COLUMNS * EXCEPT (city)", "COLUMNS: not allowed in AUTO CDC FROM SNAPSHOT flows"),
        ("IGNORE NULL UPDATES", "IGNORE NULL UPDATES: not allowed in AUTO CDC FROM SNAPSHOT flows"),
        ("COLUMNS TO UPDATE city", "COLUMNS TO UPDATE: not allowed in AUTO CDC FROM SNAPSHOT flows"),
        ("STORED AS BITEMPORAL", "STORED AS BITEMPORAL: not allowed in AUTO CDC FROM SNAPSHOT flows"),
        ("TRACK HISTORY ON (city)", "TRACK HISTORY: only valid with STORED AS SCD TYPE 2"),
    ];
    let dir = snapshot_dir();
    for (clause, needle) in cases {
        let sql = files_flow(dir.path(), &format!("\n{clause}"));
        assert_error(&sql, Validation, 5, needle);
    }
}

#[test]
fn version_pattern_errors() {
    let dir = snapshot_dir();
    let read = |options: &str| {
        format!(
            "CREATE STREAMING TABLE t;\nCREATE FLOW f AS AUTO CDC INTO t FROM SNAPSHOT\nread_files('{}', format => 'csv'{options}) KEYS (userId);",
            dir.path().display()
        )
    };
    assert_error(
        &read(""),
        Validation,
        3,
        "FROM SNAPSHOT read_files: version => 'pattern' is required",
    );
    assert_error(
        &read(", version => 'snapshot_[0-9]+[.]csv'"),
        Validation,
        3,
        "read_files version: `snapshot_[0-9]+[.]csv` has no capture group",
    );
    assert_error(
        &read(", version => 'snapshot_([0-9]+'"),
        Validation,
        3,
        "read_files version: `snapshot_([0-9]+` is not a valid regular expression: unclosed group",
    );
    // Anchored: `snapshot_([0-9]+)` alone matches no whole file name.
    let e = super::parse_err(&read(", version => 'snapshot_([0-9]+)'"));
    let expected = format!(
        "FROM SNAPSHOT read_files: `{}`: none of its 3 file(s) (such as `a_notes.csv`) \
         matches the version pattern `snapshot_([0-9]+)`",
        dir.path().display()
    );
    assert!(e.message().starts_with(&expected), "{e}");
    assert_eq!((e.kind(), e.location().line), (Validation, Some(3)));
    assert_error(
        &read(", version => 'snapshot_(\\d+)[.]csv', version => 'x'"),
        Syntax,
        3,
        "read_files: option `version` given twice",
    );
    let selected = read(", version => '(1)'")
        .replace(
            "SNAPSHOT\nread_files",
            "SNAPSHOT\n(SELECT city FROM read_files",
        )
        .replace(") KEYS", ")) KEYS");
    assert_error(
        &selected,
        Validation,
        3,
        "FROM SNAPSHOT: a SELECT list or WHERE over read_files is not supported yet",
    );
    let plain =
        "CREATE STREAMING TABLE s AS SELECT * FROM STREAM\n read_files('a.csv', version => '(1)');";
    assert_error(
        plain,
        Validation,
        2,
        "read_files: version => is only valid in AUTO CDC FROM SNAPSHOT",
    );
}

#[test]
fn keys_sources_and_reserved_names() {
    let dir = snapshot_dir();
    let keys = |k: &str| files_flow(dir.path(), "").replace("KEYS (userId)", k);
    assert_error(
        &keys("KEYS (usrId)"),
        Validation,
        4,
        "KEYS: unknown column `usrId` in the snapshot of",
    );
    let e = super::parse_err(&keys("KEYS (usrId)"));
    assert!(e.message().ends_with("(did you mean `userId`?)"), "{e}");
    assert_error(
        &keys("KEYS (city, CITY)"),
        Validation,
        4,
        "KEYS: duplicate key column `CITY`",
    );
    assert_error(
        &keys("KEYS ()"),
        Validation,
        4,
        "KEYS: at least one key column is required",
    );
    assert_error(
        &keys(""),
        Validation,
        2,
        "AUTO CDC: the KEYS clause is required",
    );
    let periodic = |from: &str| {
        users_flow(&format!(
            "CREATE FLOW f AS AUTO CDC INTO t\nFROM SNAPSHOT {from} KEYS (userId);"
        ))
    };
    assert_error(
        &periodic("users_cfd"),
        Validation,
        4,
        "FROM SNAPSHOT: unknown table `users_cfd` (did you mean `users_cdf`?)",
    );
    assert_error(
        &periodic("t"),
        Validation,
        4,
        "FROM SNAPSHOT: `t` is an AUTO CDC target, not an append-only source table",
    );
    assert_error(
        &periodic("(SELECT userId, 1 AS __END_AT FROM users_cdf)"),
        Validation,
        4,
        "FROM SNAPSHOT: the snapshot of `users_cdf` has a column named `__END_AT`, which is reserved",
    );
    assert_error(
        &periodic("(SELECT userId FROM users_cdf WHERE nme = 'x')"),
        Validation,
        4,
        "WHERE: unknown column `nme` (did you mean `name`?)",
    );
    assert_error(
        &periodic("(SELECT userId FROM users_cdf"),
        Syntax,
        4,
        "FROM SNAPSHOT (SELECT ...: expected `)`",
    );
    assert_error(
        &users_flow("CREATE FLOW f AS AUTO CDC INTO t FROM users_cdf\nFROM SNAPSHOT users_cdf KEYS (userId);"),
        Syntax,
        4,
        "FROM: clause given twice",
    );
}

#[test]
fn a_snapshot_target_has_no_other_flow() {
    let snapshot = "CREATE FLOW snap AS AUTO CDC INTO t FROM SNAPSHOT users_cdf KEYS (userId);\n";
    let cdc = "CREATE FLOW feed AS AUTO CDC INTO t FROM STREAM(users_cdf) KEYS (userId) SEQUENCE BY sequenceNum;\n";
    assert_error(
        &users_flow(&format!("{snapshot}{cdc}")),
        Validation,
        4,
        "INTO: flows `snap` (line 3) and `feed` both write `t`: an AUTO CDC FROM SNAPSHOT flow must be the only flow into its target",
    );
    assert_error(
        &users_flow(&format!("{cdc}{snapshot}")),
        Validation,
        4,
        "INTO: flows `feed` (line 3) and `snap` both write `t`: an AUTO CDC FROM SNAPSHOT flow must be the only flow",
    );
    let again = snapshot.replace("snap AS", "snap2 AS");
    assert_error(
        &users_flow(&format!("{snapshot}{again}")),
        Validation,
        4,
        "flows `snap` (line 3) and `snap2` both write `t`",
    );
}

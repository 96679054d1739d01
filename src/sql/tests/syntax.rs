//! Accepted syntax variants and source-table resolution.

use super::{assert_error, parse_ok, USERS};
use crate::plan::{Format, ScdType, SourceInput};
use crate::value::{DataType, Value};
use crate::ErrorKind::{Syntax, Validation};
use std::path::Path;

#[test]
fn clauses_in_any_order_with_comments_and_mixed_case() {
    let sql = format!(
        "{USERS}create or refresh streaming table T -- the target\n;\n\
/* a flow */ Create Flow f Comment 'x' As Apply Changes Into t\n\
  stored as scd type 2 -- history\n\
  sequence by /* inline */ SEQUENCENUM\n\
  columns * except (`operation`)\n\
  track history on *\n\
  keys (USERID)\n\
  from stream users_cdf\n\
  apply as delete when operation = \"DELETE\";;\n"
    );
    let p = parse_ok(&sql);
    let (target, flow) = (&p.targets[0], &p.flows[0]);
    assert_eq!((target.name.as_str(), target.scd), ("T", ScdType::Type2));
    assert_eq!(
        target.schema.to_string(),
        "userId INT, name STRING, city STRING, sequenceNum INT, __START_AT INT, __END_AT INT"
    );
    assert_eq!(target.keys, vec![0]);
    assert_eq!(flow.columns, vec![0, 1, 2, 4]);
    assert_eq!(
        flow.delete_when.as_ref().map(|e| e.text().to_string()),
        Some("operation = \"DELETE\"".into())
    );
}

#[test]
fn inline_flow_form_creates_a_target_and_a_flow_of_the_same_name() {
    let sql = format!(
        "CREATE OR REFRESH STREAMING TABLE users_current (userId INT, name STRING, city STRING)\n\
TBLPROPERTIES ('pipelines.cdc.tombstoneGCThresholdInSeconds' = '60', 'other' = true)\n\
FLOW AUTO CDC FROM STREAM(users_cdf) KEYS (userId) SEQUENCE BY sequenceNum\n\
COLUMNS * EXCEPT (operation, sequenceNum);\n{USERS}"
    );
    let p = parse_ok(&sql);
    assert_eq!(
        (p.flows[0].name.as_str(), p.flows[0].line),
        ("users_current", 1)
    );
    assert_eq!(p.targets[0].tombstone_gc_seconds, 60);
    assert_eq!(p.flows[0].source, 0);
}

#[test]
fn struct_sequences_type_the_interval_columns() {
    let sql = format!(
        "{USERS}CREATE STREAMING TABLE t;\nCREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_cdf) KEYS (userId)\n\
SEQUENCE BY STRUCT(sequenceNum, NAME) COLUMNS (userId, city) STORED AS SCD TYPE 2;"
    );
    let p = parse_ok(&sql);
    let expected = DataType::Struct(vec![
        ("sequenceNum".into(), DataType::Int),
        ("name".into(), DataType::String),
    ]);
    assert_eq!(p.targets[0].sequence_type, expected);
    assert_eq!(p.targets[0].schema.columns[3].ty, expected);
    let row = [
        Value::Int(1),
        Value::Str("a".into()),
        Value::Null,
        Value::Null,
        Value::Int(5),
    ];
    assert_eq!(
        p.flows[0].sequence.eval_values(&row),
        Ok(Value::Struct(vec![Value::Int(5), Value::Str("a".into())]))
    );
}

#[test]
fn source_tables_are_ordered_by_dependency() {
    let sql =
        "CREATE STREAMING TABLE clean AS SELECT userId, upper(name) AS name, city AS town, *\n\
  FROM STREAM(LIVE.raw) WHERE operation <> 'TRUNCATE';\n\
CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('../in/users.CSV', header => false,\n\
  schema => 'userId INT, name STRING, city STRING, operation STRING, sequenceNum BIGINT');\n";
    let e = super::parse_err(sql);
    assert!(
        e.message()
            .contains("SELECT: duplicate column name `userId`"),
        "{e}"
    );
    let sql = sql.replace(", *\n", ", sequenceNum, operation\n");
    let p = parse_ok(&sql);
    assert_eq!(
        p.tables.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["raw", "clean"]
    );
    let SourceInput::Files {
        path,
        format,
        header,
        ..
    } = &p.tables[0].input
    else {
        panic!("files expected");
    };
    assert_eq!(
        (path.as_path(), *format, *header),
        (Path::new("/p/../in/users.CSV"), Format::Csv, false)
    );
    let clean = &p.tables[1];
    assert!(matches!(clean.input, SourceInput::Table(0)));
    assert_eq!(
        clean.schema.to_string(),
        "userId INT, name STRING, town STRING, sequenceNum BIGINT, operation STRING"
    );
    let row = [
        Value::Int(1),
        Value::Str("ann".into()),
        Value::Null,
        Value::Str("U".into()),
        Value::Int(2),
    ];
    let projected: Vec<Value> = clean.projection.as_ref().map_or(vec![], |p| {
        p.iter()
            .map(|e| e.eval_values(&row).unwrap_or(Value::Null))
            .collect()
    });
    assert_eq!(projected[1], Value::Str("ANN".into()));
    assert_eq!(
        clean.filter.as_ref().map(|f| f.eval_predicate_values(&row)),
        Some(Ok(true))
    );
}

#[test]
fn source_table_errors() {
    let read = |args: &str| {
        format!("CREATE STREAMING TABLE s AS SELECT * FROM STREAM read_files({args});")
    };
    assert_error(&read("'dir/in'"), Validation, 1, "read_files: cannot tell the format of `dir/in` from its name; add format => 'csv', 'json' or 'parquet'");
    assert_error(
        &read("'a.csv', format => 'avro'"),
        Syntax,
        1,
        "read_files: unsupported format `avro` (supported: csv, json, parquet)",
    );
    assert_error(
        &read("'a.csv', delimiter => ';'"),
        Syntax,
        1,
        "read_files: unknown option `delimiter`",
    );
    assert_error(
        &read("'a.csv', header => true, header => false"),
        Syntax,
        1,
        "read_files: option `header` given twice",
    );
    assert_error(
        &read("'a.csv', schema => 'id INT, name'"),
        Syntax,
        1,
        "read_files schema: expected `name TYPE`, found `name`",
    );
    assert_error(
        &read("'a.csv', schema => 'id INT, ID STRING'"),
        Syntax,
        1,
        "read_files schema: duplicate column `ID`",
    );
    assert_error(
        &read("'a.csv', schema => 'id DECIMAL'"),
        Syntax,
        1,
        "read_files schema: column `id`: unknown type `DECIMAL`",
    );
    let a = "CREATE STREAMING TABLE a AS SELECT * FROM STREAM(b);\n";
    let b = "CREATE STREAMING TABLE b AS SELECT * FROM\n STREAM(a);";
    assert_error(
        &format!("{a}{b}"),
        Validation,
        3,
        "FROM: streaming tables read each other in a cycle: a -> b -> a",
    );
    assert_error(a, Validation, 1, "FROM: unknown table `b`");
    let select = |list: &str| {
        format!("{USERS}CREATE STREAMING TABLE s AS SELECT {list} FROM STREAM(users_cdf);")
    };
    assert_error(
        &select("userId,\n userId + 1"),
        Validation,
        3,
        "SELECT: expression `userId + 1` needs an alias",
    );
    assert_error(
        &select("NULL AS n"),
        Validation,
        2,
        "SELECT: column `n` has no type",
    );
    assert_error(
        &select("nme"),
        Validation,
        2,
        "SELECT: unknown column `nme` (did you mean `name`?)",
    );
    assert_error(
        &format!("{USERS}CREATE STREAMING TABLE s AS SELECT * FROM users_cdf WHERE userId"),
        Validation,
        2,
        "WHERE: the condition must be BOOLEAN, `userId` is INT",
    );
    let declared =
        format!("{USERS}CREATE STREAMING TABLE s (userId BIGINT) AS SELECT userId FROM users_cdf;");
    assert_error(
        &declared,
        Validation,
        2,
        "CREATE STREAMING TABLE s: column `userId` is declared BIGINT but the query produces INT",
    );
}

#[test]
fn load_reports_io_errors_with_the_file() {
    let e = super::super::load(Path::new("/nonexistent/dir/p.sql")).expect_err("no such file");
    assert_eq!(e.kind(), crate::ErrorKind::Io);
    assert!(e.to_string().starts_with("/nonexistent/dir/p.sql: "), "{e}");
}

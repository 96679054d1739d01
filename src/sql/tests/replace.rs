//! REPLACE USING flows (SPEC 2.6, 3.12, T7): the inline and long forms, BY NAME matching
//! against declared columns, and every validation error.

use super::{assert_error, parse_err, parse_ok};
use crate::plan::{ScdType, TargetKind};
use crate::value::{DataType, Value};
use crate::ErrorKind::{Syntax, Validation};

/// Line 1: T7's source table.
const SRC: &str = "CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('regions.csv', \
schema => 'region_id INT, device_type STRING, event_type STRING, seq INT');\n";

/// T7's seed SQL.
const T7: &str = "CREATE OR REFRESH STREAMING TABLE t FLOW REPLACE USING (region_id) SEQUENCE BY seq BY NAME SELECT * FROM STREAM(src);";

#[test]
fn t7_inline_form() {
    let p = parse_ok(&format!("{SRC}{T7}"));
    assert!(p.flows.is_empty() && p.snapshot_flows.is_empty());
    let flow = &p.replace_flows[0];
    assert_eq!(
        (
            flow.name.as_str(),
            flow.target,
            flow.source,
            flow.line,
            flow.once
        ),
        ("t", 0, 0, 2, false)
    );
    assert!(flow.projection.is_none() && flow.filter.is_none());
    assert_eq!((flow.keys.clone(), flow.sequence), (vec![0], 3));
    assert!(flow.expectations.is_empty());
    let target = &p.targets[0];
    assert_eq!(target.kind, TargetKind::ReplaceUsing { sequence: 3 });
    assert_eq!(
        target.schema.to_string(),
        "region_id INT, device_type STRING, event_type STRING, seq INT"
    );
    assert_eq!(
        (target.image_len, target.keys.clone(), target.scd),
        (4, vec![0], ScdType::Type1)
    );
    assert_eq!(target.sequence_type, DataType::Int);
    assert_eq!(target.tracked, vec![true; 4]);
    assert!(!target.partial);
}

#[test]
fn long_form_with_a_projection_and_a_filter() {
    let sql = format!(
        "{SRC}CREATE STREAMING TABLE t;\n\
CREATE FLOW f AS INSERT ONCE INTO t BY NAME\n\
REPLACE USING (region_id, device_type) SEQUENCE BY version\n\
SELECT region_id, lower(device_type) AS device_type, CAST(seq AS BIGINT) AS version FROM STREAM src\n\
WHERE event_type <> 'bad';"
    );
    let p = parse_ok(&sql);
    let flow = &p.replace_flows[0];
    assert_eq!((flow.name.as_str(), flow.line, flow.once), ("f", 3, true));
    assert_eq!((flow.keys.clone(), flow.sequence), (vec![0, 1], 2));
    let target = &p.targets[0];
    assert_eq!(
        target.schema.to_string(),
        "region_id INT, device_type STRING, version BIGINT"
    );
    assert_eq!(target.sequence_type, DataType::BigInt);
    let row = [
        Value::Int(1),
        Value::Str("iOS".into()),
        Value::Str("click".into()),
        Value::Int(2),
    ];
    assert_eq!(
        flow.filter.as_ref().map(|f| f.eval_predicate_values(&row)),
        Some(Ok(true))
    );
    let projected: Vec<Value> = flow.projection.as_ref().map_or(vec![], |p| {
        p.iter()
            .map(|e| e.eval_values(&row).unwrap_or(Value::Null))
            .collect()
    });
    assert_eq!(projected[1], Value::Str("ios".into()));
}

#[test]
fn declared_columns_rule_the_order_by_name() {
    let sql = format!(
        "{SRC}CREATE STREAMING TABLE t (seq INT, REGION_ID INT, event_type STRING, device_type STRING)\n\
FLOW REPLACE USING (region_id) SEQUENCE BY seq BY NAME SELECT * FROM STREAM(src);"
    );
    let p = parse_ok(&sql);
    let target = &p.targets[0];
    assert_eq!(
        target.schema.to_string(),
        "seq INT, REGION_ID INT, event_type STRING, device_type STRING"
    );
    let flow = &p.replace_flows[0];
    assert_eq!((flow.keys.clone(), flow.sequence), (vec![1], 0));
    let row = [
        Value::Int(1),
        Value::Str("iOS".into()),
        Value::Str("click".into()),
        Value::Int(2),
    ];
    let projected: Vec<Value> = flow.projection.as_ref().map_or(vec![], |p| {
        p.iter()
            .map(|e| e.eval_values(&row).unwrap_or(Value::Null))
            .collect()
    });
    assert_eq!(
        projected,
        vec![
            Value::Int(2),
            Value::Int(1),
            Value::Str("click".into()),
            Value::Str("iOS".into())
        ]
    );
    // Declared in the output's order: SELECT * stays unprojected.
    let same = format!("{SRC}CREATE STREAMING TABLE t (region_id INT, device_type STRING, event_type STRING, seq INT)\n\
FLOW REPLACE USING (region_id) SEQUENCE BY seq BY NAME SELECT * FROM STREAM(src);");
    assert!(parse_ok(&same).replace_flows[0].projection.is_none());
}

#[test]
fn declared_columns_must_match_the_output() {
    let with = |columns: &str| {
        format!(
            "{SRC}CREATE STREAMING TABLE t ({columns})\n\
FLOW REPLACE USING (region_id) SEQUENCE BY seq BY NAME SELECT region_id, seq FROM STREAM(src);"
        )
    };
    assert_error(
        &with("region_id INT, seq INT, extra STRING"),
        Validation,
        2,
        "CREATE STREAMING TABLE t: declared column `extra` is not produced by flow `t`",
    );
    assert_error(
        &with("region_id INT"),
        Validation,
        2,
        "CREATE STREAMING TABLE t: declared columns lack `seq INT`, which flow `t` produces",
    );
    assert_error(
        &with("region_id BIGINT, seq INT"),
        Validation,
        2,
        "column `region_id` is declared BIGINT but flow `t` produces INT",
    );
}

#[test]
fn replace_using_validation_errors() {
    let flow = |spec: &str| {
        format!("{SRC}CREATE STREAMING TABLE t;\nCREATE FLOW f AS INSERT INTO t\n{spec};")
    };
    let cases = [
        ("REPLACE USING (region_id) SEQUENCE BY seq SELECT * FROM STREAM(src)", 4, "REPLACE USING: BY NAME is required"),
        ("BY NAME REPLACE USING () SEQUENCE BY seq SELECT * FROM STREAM(src)", 4, "REPLACE USING: at least one key column is required"),
        ("BY NAME REPLACE USING (region_id, REGION_ID) SEQUENCE BY seq SELECT * FROM STREAM(src)", 4, "REPLACE USING: duplicate key column `REGION_ID`"),
        ("BY NAME REPLACE USING (regoin_id) SEQUENCE BY seq SELECT * FROM STREAM(src)", 4, "REPLACE USING: unknown column `regoin_id` in the output of flow `f` (did you mean `region_id`?)"),
        ("BY NAME REPLACE USING (region_id) SEQUENCE BY sq SELECT * FROM STREAM(src)", 4, "SEQUENCE BY: unknown column `sq` in the output of flow `f` (did you mean `seq`?)"),
        ("BY NAME REPLACE USING (region_id) SEQUENCE BY seq + 1 SELECT * FROM STREAM(src)", 4, "SEQUENCE BY: REPLACE USING sequences by one column name, found the expression `seq + 1`"),
        ("BY NAME REPLACE USING (region_id) SEQUENCE BY seq SELECT region_id FROM STREAM(src)", 4, "SEQUENCE BY: unknown column `seq` in the output of flow `f`"),
        ("BY NAME REPLACE USING (region_id) SEQUENCE BY seq SELECT * FROM src", 4, "FROM: REPLACE USING needs a streaming source: FROM STREAM(src)"),
        ("BY NAME REPLACE USING (region_id) SEQUENCE BY seq SELECT * FROM STREAM read_files('r.csv')", 4, "FROM: REPLACE USING needs a streaming source: FROM STREAM(src)"),
        ("BY NAME REPLACE USING (region_id) SEQUENCE BY seq SELECT * FROM STREAM(sr)", 4, "FROM: unknown table `sr` (did you mean `src`?)"),
        ("BY NAME REPLACE USING (region_id) SEQUENCE BY seq SELECT * FROM STREAM(t)", 4, "FROM: `t` is an AUTO CDC target, not an append-only source table"),
        ("BY NAME REPLACE USING (region_id) SEQUENCE BY seq SELECT * FROM STREAM(src) WHERE seq", 4, "WHERE: the condition must be BOOLEAN, `seq` is INT"),
    ];
    for (spec, line, needle) in cases {
        assert_error(&flow(spec), Validation, line, needle);
    }
    let arrays = "CREATE STREAMING TABLE tags AS SELECT * FROM STREAM read_files('t.json', schema => 'k ARRAY<STRING>, seq INT');\n\
CREATE STREAMING TABLE t FLOW REPLACE USING\n (k) SEQUENCE BY seq BY NAME SELECT * FROM STREAM(tags);";
    assert_error(
        arrays,
        Validation,
        3,
        "REPLACE USING: key column `k` is ARRAY<STRING>, which is not orderable",
    );
    assert_error(
        &flow("BY NAME REPLACE USING (region_id) SEQUENCE BY seq, device_type SELECT * FROM STREAM(src)"),
        Validation,
        4,
        "SEQUENCE BY: REPLACE USING takes exactly one sequence column",
    );
    assert_error(
        &flow("BY NAMES REPLACE USING (region_id) SEQUENCE BY seq SELECT * FROM STREAM(src)"),
        Syntax,
        4,
        "BY: expected `NAME`, found `NAMES`",
    );
}

#[test]
fn a_replace_using_target_has_no_other_flow() {
    let replace = "CREATE FLOW r AS INSERT INTO t BY NAME REPLACE USING (region_id) SEQUENCE BY seq SELECT * FROM STREAM(src);\n";
    let cdc =
        "CREATE FLOW c AS AUTO CDC INTO t FROM STREAM(src) KEYS (region_id) SEQUENCE BY seq;\n";
    let both = |a: &str, b: &str| format!("{SRC}CREATE STREAMING TABLE t;\n{a}{b}");
    assert_error(
        &both(replace, cdc),
        Validation,
        4,
        "INTO: flows `r` (line 3) and `c` both write `t`: a REPLACE USING flow must be the only flow into its target",
    );
    assert_error(
        &both(cdc, replace),
        Validation,
        4,
        "INTO: flows `c` (line 3) and `r` both write `t`: a REPLACE USING flow must be the only flow",
    );
    let e = parse_err(&both(replace, &replace.replace("FLOW r", "FLOW r2")));
    assert!(
        e.message()
            .contains("flows `r` (line 3) and `r2` both write `t`"),
        "{e}"
    );
}

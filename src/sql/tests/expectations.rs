//! `CONSTRAINT ... EXPECT` on source tables and targets: actions, which rows each compiles
//! against, and the errors.

use super::{assert_error, parse_ok, USERS};
use crate::plan::OnViolation;
use crate::value::Value;
use crate::ErrorKind::{Syntax, Validation};

#[test]
fn source_table_constraints_with_all_three_actions() {
    let sql = format!(
        "{USERS}CREATE STREAMING TABLE clean (\n\
  CONSTRAINT has_id EXPECT (userId IS NOT NULL) ON VIOLATION FAIL UPDATE,\n\
  id INT,\n\
  CONSTRAINT named EXPECT (who <> '') ON VIOLATION DROP ROW,\n\
  who STRING,\n\
  CONSTRAINT short EXPECT (length_ok)\n\
) AS SELECT userId AS id, name AS who, name IS NULL OR name <> 'x' AS length_ok FROM STREAM(users_cdf);"
    );
    let e = super::parse_err(&sql);
    assert!(
        e.message()
            .contains("declared columns lack `length_ok BOOLEAN`"),
        "{e}"
    );
    let sql = sql.replace("who STRING,\n", "who STRING, length_ok BOOLEAN,\n");
    let sql = sql.replace("userId IS NOT NULL", "id IS NOT NULL");
    let p = parse_ok(&sql);
    let table = &p.tables[1];
    assert_eq!(
        table.schema.to_string(),
        "id INT, who STRING, length_ok BOOLEAN"
    );
    let summary: Vec<(&str, OnViolation, u64)> = table
        .expectations
        .iter()
        .map(|e| (e.name.as_str(), e.action, e.line))
        .collect();
    assert_eq!(
        summary,
        [
            ("has_id", OnViolation::FailUpdate, 3),
            ("named", OnViolation::DropRow, 5),
            ("short", OnViolation::Warn, 7),
        ]
    );
    let row = [Value::Null, Value::Str(String::new()), Value::Bool(true)];
    let verdicts: Vec<bool> = table
        .expectations
        .iter()
        .map(|e| e.condition.eval_predicate_values(&row).unwrap_or(true))
        .collect();
    assert_eq!(verdicts, [false, false, true]);
}

#[test]
fn constraints_alone_keep_no_declared_column_list() {
    let sql = format!(
        "{USERS}CREATE STREAMING TABLE r (CONSTRAINT valid EXPECT (event_type <> 'bad') ON VIOLATION DROP ROW)\n\
FLOW REPLACE USING (userId) SEQUENCE BY sequenceNum BY NAME\n\
SELECT userId, operation AS event_type, sequenceNum FROM STREAM(users_cdf);"
    );
    let p = parse_ok(&sql);
    assert_eq!(
        p.targets[0].schema.to_string(),
        "userId INT, event_type STRING, sequenceNum INT"
    );
    let e = &p.replace_flows[0].expectations[0];
    assert_eq!(
        (e.name.as_str(), e.action, e.line),
        ("valid", OnViolation::DropRow, 2)
    );
    // Compiled against the target's columns: event_type is column 1.
    let row = [Value::Int(1), Value::Str("bad".into()), Value::Int(9)];
    assert_eq!(e.condition.eval_predicate_values(&row), Ok(false));
}

#[test]
fn replace_using_target_constraints_with_declared_columns() {
    let sql = format!(
        "{USERS}CREATE STREAMING TABLE r (sequenceNum INT, CONSTRAINT positive EXPECT (userId > 0), userId INT,\n\
CONSTRAINT seq_set EXPECT (sequenceNum IS NOT NULL) ON VIOLATION FAIL UPDATE)\n\
FLOW REPLACE USING (userId) SEQUENCE BY sequenceNum BY NAME SELECT userId, sequenceNum FROM STREAM(users_cdf);"
    );
    let p = parse_ok(&sql);
    let flow = &p.replace_flows[0];
    let actions: Vec<OnViolation> = flow.expectations.iter().map(|e| e.action).collect();
    assert_eq!(actions, [OnViolation::Warn, OnViolation::FailUpdate]);
    // Target order is (sequenceNum, userId).
    let row = [Value::Int(3), Value::Int(-1)];
    assert_eq!(
        flow.expectations[0].condition.eval_predicate_values(&row),
        Ok(false)
    );
    assert_eq!(
        flow.expectations[1].condition.eval_predicate_values(&row),
        Ok(true)
    );
}

#[test]
fn target_constraints_compile_into_every_flow_against_its_rows() {
    let sql = format!(
        "{USERS}CREATE STREAMING TABLE t (CONSTRAINT not_deleted EXPECT (operation <> 'DELETE'));\n\
CREATE FLOW backfill AS AUTO CDC ONCE INTO t FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNum;\n\
CREATE FLOW live AS AUTO CDC INTO t FROM STREAM(users_cdf) KEYS (userId) SEQUENCE BY sequenceNum;\n\
CREATE STREAMING TABLE s (CONSTRAINT city_set EXPECT (city IS NOT NULL) ON VIOLATION DROP ROW);\n\
CREATE FLOW snap AS AUTO CDC INTO s FROM SNAPSHOT (SELECT userId, city FROM users_cdf) KEYS (userId);"
    );
    let p = parse_ok(&sql);
    for flow in &p.flows {
        assert_eq!(flow.expectations.len(), 1, "{}", flow.name);
        assert_eq!(flow.expectations[0].name, "not_deleted");
    }
    let e = &p.snapshot_flows[0].expectations[0];
    assert_eq!(
        (e.name.as_str(), e.action),
        ("city_set", OnViolation::DropRow)
    );
    // Compiled against the snapshot's (userId, city).
    assert_eq!(
        e.condition
            .eval_predicate_values(&[Value::Int(1), Value::Null]),
        Ok(false)
    );
}

#[test]
fn constraint_errors_name_the_constraint() {
    let source = |constraints: &str| {
        format!(
            "{USERS}CREATE STREAMING TABLE s ({constraints})\nAS SELECT * FROM STREAM(users_cdf);"
        )
    };
    assert_error(
        &source("CONSTRAINT ok EXPECT (nme IS NOT NULL)"),
        Validation,
        2,
        "CONSTRAINT ok: unknown column `nme` (did you mean `name`?) (the constraint checks the rows of `s`)",
    );
    assert_error(
        &source("CONSTRAINT ok EXPECT (userId + 1)"),
        Validation,
        2,
        "CONSTRAINT ok: the condition must be BOOLEAN, `userId + 1` is INT",
    );
    assert_error(
        &source("CONSTRAINT ok EXPECT (userId > 0),\nCONSTRAINT OK EXPECT (userId < 9)"),
        Validation,
        3,
        "CONSTRAINT OK: the name is already used by the constraint at line 2",
    );
    assert_error(
        &source("CONSTRAINT ok EXPECT (userId > 0) ON VIOLATION\nSKIP ROW"),
        Syntax,
        3,
        "CONSTRAINT ok ON VIOLATION: expected `DROP ROW` or `FAIL UPDATE`, found `SKIP`",
    );
    assert_error(
        &source("CONSTRAINT ok userId > 0"),
        Syntax,
        2,
        "CONSTRAINT ok: expected `EXPECT`",
    );
    // A target constraint resolves per flow: `operation` is a source column, not a snapshot one.
    let sql = format!(
        "{USERS}CREATE STREAMING TABLE t (CONSTRAINT live_only EXPECT (operation <> 'DELETE'))\n\
FLOW AUTO CDC FROM SNAPSHOT (SELECT userId, city FROM users_cdf) KEYS (userId);"
    );
    assert_error(
        &sql,
        Validation,
        2,
        "CONSTRAINT live_only: unknown column `operation` (the constraint checks the snapshot rows of flow `t`)",
    );
}

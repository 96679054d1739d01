use super::*;
use crate::value::{Schema, F64};
use sqlparser::dialect::DatabricksDialect;
use sqlparser::parser::Parser;

fn schema() -> Schema {
    Schema::new([
        ("id".to_string(), DataType::Int),
        ("name".to_string(), DataType::String),
        ("big".to_string(), DataType::BigInt),
        ("score".to_string(), DataType::Double),
        ("flag".to_string(), DataType::Boolean),
        ("ts".to_string(), DataType::Timestamp),
        (
            "tags".to_string(),
            DataType::Array(Box::new(DataType::String)),
        ),
    ])
}

fn row() -> Vec<Value> {
    vec![
        Value::Int(7),
        Value::Str("Alice".into()),
        Value::Int(i64::from(i32::MAX)),
        Value::Double(F64(2.5)),
        Value::Null,
        Value::Timestamp(1_752_832_860_000_000),
        Value::Null,
    ]
}

fn compile_sql(sql: &str) -> Result<Expr, crate::Error> {
    let ast = Parser::new(&DatabricksDialect)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .expect("test SQL parses");
    compile(&ast, &schema())
}

fn eval_sql(sql: &str) -> Result<Value, String> {
    compile_sql(sql)
        .expect("test SQL compiles")
        .eval_values(&row())
}

fn ok(sql: &str) -> Value {
    eval_sql(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn compile_error(sql: &str) -> String {
    compile_sql(sql).expect_err(sql).message().to_string()
}

const T: Value = Value::Bool(true);
const F: Value = Value::Bool(false);
const N: Value = Value::Null;

#[test]
fn three_valued_logic() {
    assert_eq!(ok("flag AND FALSE"), F);
    assert_eq!(ok("flag AND TRUE"), N);
    assert_eq!(ok("flag OR TRUE"), T);
    assert_eq!(ok("flag OR FALSE"), N);
    assert_eq!(ok("NOT flag"), N);
    assert_eq!(ok("flag IS NULL"), T);
    assert_eq!(ok("name IS NOT NULL"), T);
    assert_eq!(ok("NULL = NULL"), N);
    assert_eq!(ok("id = 7 AND name <> 'Bob'"), T);
}

#[test]
fn comparisons_widen_numbers_and_read_temporal_strings() {
    assert_eq!(ok("id < 7.5"), T);
    assert_eq!(ok("big > id"), T);
    assert_eq!(ok("score = 2.5"), T);
    assert_eq!(ok("0.0 = -0.0"), T);
    assert_eq!(ok("ts = '2025-07-18T12:01:00+02:00'"), T);
    assert_eq!(ok("ts > DATE '2025-07-18'"), T);
    assert_eq!(
        ok("ts BETWEEN TIMESTAMP '2025-07-18 10:00' AND '2025-07-18 11:00'"),
        T
    );
    assert_eq!(ok("id NOT BETWEEN 1 AND 5"), T);
    assert!(compile_error("ts = 'soon'").contains("cannot cast 'soon' to TIMESTAMP"));
    assert!(compile_error("name = 1").contains("cannot compare STRING with INT"));
}

#[test]
fn in_list_with_nulls() {
    assert_eq!(ok("id IN (1, 7)"), T);
    assert_eq!(ok("id IN (1, NULL)"), N);
    assert_eq!(ok("id NOT IN (1, NULL)"), N);
    assert_eq!(ok("id NOT IN (1, 2)"), T);
    assert_eq!(ok("id IN (7, NULL)"), T);
    assert_eq!(ok("flag IN (TRUE)"), N);
    assert_eq!(ok("id IN (7.0)"), T);
}

#[test]
fn like_patterns() {
    assert_eq!(ok("name LIKE 'Al%'"), T);
    assert_eq!(ok("name LIKE \"_lice\""), T);
    assert_eq!(ok("name NOT LIKE '%z%'"), T);
    assert_eq!(ok("CAST(NULL AS STRING) LIKE '%'"), N);
    assert!(compile_error("id LIKE '7'").contains("LIKE needs STRING operands"));
}

#[test]
fn arithmetic_types_and_overflow() {
    assert_eq!(ok("id + 1"), Value::Int(8));
    assert_eq!(
        compile_sql("id + 1").map(|e| e.ty().clone()).ok(),
        Some(DataType::Int)
    );
    assert_eq!(
        compile_sql("id + big").map(|e| e.ty().clone()).ok(),
        Some(DataType::BigInt)
    );
    assert_eq!(ok("id * score"), Value::Double(F64(17.5)));
    assert_eq!(ok("id / 2"), Value::Double(F64(3.5)));
    assert_eq!(ok("id / 0"), N);
    assert_eq!(ok("-id"), Value::Int(-7));
    assert!(eval_sql("CAST(big AS INT) + 1")
        .unwrap_err()
        .contains("INT overflow"));
    assert_eq!(ok("big + 1 - 1"), Value::Int(i64::from(i32::MAX)));
    assert_eq!(ok("id + NULL"), N);
    assert!(compile_error("name + 1").contains("`+` needs numeric operands, `name` is STRING"));
}

#[test]
fn casts() {
    assert_eq!(ok("CAST('42' AS INT)"), Value::Int(42));
    assert_eq!(ok("CAST(score AS STRING)"), Value::Str("2.5".into()));
    assert_eq!(ok("CAST(id AS DOUBLE)"), Value::Double(F64(7.0)));
    assert_eq!(
        ok("CAST(CAST(id AS DOUBLE) AS STRING)"),
        Value::Str("7.0".into())
    );
    assert_eq!(
        ok("CAST(ts AS STRING)"),
        Value::Str("2025-07-18T10:01:00".into())
    );
    assert_eq!(ok("CAST(ts AS DATE)"), Value::Date(20_287));
    assert_eq!(ok("CAST('yes' AS BOOLEAN)"), T);
    assert!(eval_sql("CAST(name AS INT)")
        .unwrap_err()
        .contains("cannot cast 'Alice' to INT"));
    assert!(compile_error("CAST('x' AS INT)").contains("cannot cast 'x' to INT"));
    assert!(compile_error("CAST(tags AS INT)").contains("cannot cast ARRAY<STRING> to INT"));
    assert!(compile_error("CAST(id AS DECIMAL(10,2))").contains("unknown type `DECIMAL`"));
}

#[test]
fn functions() {
    assert_eq!(ok("COALESCE(flag, FALSE)"), F);
    assert_eq!(ok("coalesce(NULL, id, 1.5)"), Value::Double(F64(7.0)));
    assert_eq!(ok("CONCAT(name, '-', id)"), Value::Str("Alice-7".into()));
    assert_eq!(ok("CONCAT(name, NULL)"), N);
    assert_eq!(ok("name || '!'"), Value::Str("Alice!".into()));
    assert_eq!(ok("LOWER(name)"), Value::Str("alice".into()));
    assert_eq!(ok("upper(name)"), Value::Str("ALICE".into()));
    assert!(compile_error("sysdate()").contains("unknown function `sysdate`"));
    assert!(compile_error("COALESCE(name, id)").contains("cannot mix STRING and INT"));
}

#[test]
fn structs_are_named_and_ordered_field_by_field() {
    let e = compile_sql("STRUCT(ID, name AS who, 1)").expect("compiles");
    assert_eq!(
        e.ty(),
        &DataType::Struct(vec![
            ("id".into(), DataType::Int),
            ("who".into(), DataType::String),
            ("col3".into(), DataType::Int),
        ])
    );
    assert_eq!(ok("STRUCT(1, 'b') < STRUCT(1, 'c')"), T);
    assert_eq!(ok("STRUCT(2, 'a') > STRUCT(1, 'z')"), T);
    let a = ok("STRUCT(id, NULL)");
    assert!(Value::Struct(vec![Value::Int(7), Value::Int(0)]) > a);
}

#[test]
fn columns_resolve_case_insensitively_with_hints() {
    let e = compile_sql("NAME").expect("compiles");
    assert_eq!(e.column_index(), Some(1));
    assert_eq!(e.text(), "NAME");
    assert_eq!(
        compile_sql("id + 1").expect("compiles").column_index(),
        None
    );
    let err = compile_sql("1 +\n nmae").expect_err("unknown column");
    assert_eq!(
        err.message(),
        "unknown column `nmae` (did you mean `name`?)"
    );
    assert_eq!(err.location().line, Some(2));
    assert!(compile_error("t.id").contains("qualified name `t.id`"));
}

#[test]
fn predicates_count_only_true() {
    let e = compile_sql("flag").expect("compiles");
    assert_eq!(e.eval_predicate_values(&row()), Ok(false));
    let e = compile_sql("id = 7").expect("compiles");
    assert_eq!(e.eval_predicate_values(&row()), Ok(true));
}

/// A projection packs what each expression gives: a column or literal as it is (borrowed, no
/// owned copy), a computed value as computed; the packed row reads back as evaluation would.
#[test]
fn eval_into_packs_the_values_eval_gives() {
    let sqls = [
        "name",
        "'lit'",
        "id + 1",
        "UPPER(name)",
        "name = 'Alice'",
        "tags",
        "struct(id, name)",
    ];
    let packed = crate::value::Row::from(row());
    let datums = packed.unpack();
    let mut out = crate::value::Packer::new();
    let mut expected = Vec::new();
    for sql in sqls {
        let e = compile_sql(sql).expect("compiles");
        e.eval_into(&datums, &mut out).expect("evaluates");
        expected.push(e.eval(&datums).expect("evaluates"));
    }
    assert_eq!(out.finish().to_values(), expected);
    assert_eq!(expected[0], Value::Str("Alice".into()));
    assert_eq!(expected[4], T);
}

/// Borrowed operands compare as owned ones would, across the forms `Val` takes.
#[test]
fn borrowed_and_computed_operands_compare_alike() {
    assert_eq!(ok("name = 'Alice'"), T);
    assert_eq!(ok("LOWER(name) = 'alice'"), T);
    assert_eq!(ok("name IN ('Bob', UPPER('alice'), 'Alice')"), T);
    assert_eq!(ok("name LIKE 'Al%'"), T);
    assert_eq!(ok("struct(id, name) = struct(id, name)"), T);
    assert_eq!(ok("score > 2"), T);
    assert_eq!(ok("tags IS NULL"), T);
}

#[test]
fn regular_expressions_match_anywhere_and_extract_groups_as_spark() {
    let s = |v: &str| Value::Str(v.into());
    assert_eq!(
        ok("'a/snapshot_12.csv' RLIKE 'snapshot_[0-9]+[.]csv$'"),
        Value::Bool(true)
    );
    assert_eq!(
        ok("'snapshot_12.csv.bak' RLIKE 'snapshot_[0-9]+[.]csv$'"),
        Value::Bool(false)
    );
    assert_eq!(ok("name NOT RLIKE '^A'"), Value::Bool(false));
    assert_eq!(ok("name REGEXP 'lic'"), Value::Bool(true));
    assert_eq!(ok("NULL RLIKE 'x'"), Value::Null);
    assert_eq!(
        ok("REGEXP_EXTRACT('/v/snapshot_12.csv', 'snapshot_([0-9]+)[.]csv$', 1)"),
        s("12")
    );
    // Group 1 by default; no match (or a group that did not take part) gives '', not NULL.
    assert_eq!(
        ok("REGEXP_EXTRACT('snapshot_7.csv', 'snapshot_([0-9]+)')"),
        s("7")
    );
    assert_eq!(ok("REGEXP_EXTRACT(name, 'x(y)?')"), s(""));
    assert_eq!(ok("REGEXP_EXTRACT(name, '(A)|(x)', 2)"), s(""));
    assert_eq!(ok("REGEXP_EXTRACT(name, 'l(i)c', 0)"), s("lic"));
    assert_eq!(ok("REGEXP_EXTRACT(NULL, '(x)')"), Value::Null);
    assert_eq!(
        ok("CAST(REGEXP_EXTRACT('snapshot_42.csv', 'snapshot_([0-9]+)[.]csv$', 1) AS BIGINT)"),
        Value::Int(42)
    );
    assert!(compile_error("name RLIKE name").contains("must be a string literal"));
    assert!(compile_error("name RLIKE '('").contains("not a valid regular expression"));
    assert!(compile_error("REGEXP_EXTRACT(name, 'a(b)', 2)").contains("no group 2"));
    assert!(compile_error("REGEXP_EXTRACT(id, 'a')").contains("needs a STRING"));
    assert!(compile_error("REGEXP_EXTRACT(name)").contains("wrong number of arguments"));
}

fn at(sql: &str, now: i64) -> Result<Value, String> {
    let ast = Parser::new(&DatabricksDialect)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .expect("test SQL parses");
    compile_at(&ast, &schema(), now)
        .map_err(|e| e.to_string())?
        .eval_values(&row())
}

#[test]
fn the_clock_functions_take_the_instant_they_are_compiled_at() {
    // 2025-07-18T09:21:00Z, day 20,287.
    let now = 1_752_830_460_000_000;
    assert_eq!(at("current_timestamp()", now), Ok(Value::Timestamp(now)));
    assert_eq!(at("now()", now), Ok(Value::Timestamp(now)));
    assert_eq!(at("current_date()", now), Ok(Value::Date(20_287)));
    assert_eq!(at("current_date", now), Ok(Value::Date(20_287)));
    // Before the epoch, the day still starts at midnight.
    assert_eq!(at("current_date()", -1), Ok(Value::Date(-1)));
    assert_eq!(at("ts >= current_timestamp()", now), Ok(Value::Bool(true)));
    assert_eq!(
        at("date_sub(current_date(), 7) < DATE '2025-07-12'", now),
        Ok(Value::Bool(true))
    );
    let refused = compile_sql("current_date()").unwrap_err().to_string();
    assert!(
        refused.contains("supported only in a REPLACE WHERE condition"),
        "{refused}"
    );
    let args = at("current_date(1)", now).unwrap_err();
    assert!(args.contains("takes no arguments"), "{args}");
}

#[test]
fn date_add_and_date_sub_count_days() {
    assert_eq!(ok("date_add(DATE '2024-02-28', 2)"), Value::Date(19_783));
    assert_eq!(ok("date_sub(DATE '2024-03-01', 2)"), Value::Date(19_781));
    assert_eq!(ok("date_add('2024-03-01', -1)"), Value::Date(19_782));
    assert_eq!(ok("date_add(ts, id)"), Value::Date(20_294));
    assert_eq!(
        ok("date_sub(DATE '2024-03-01', big - big)"),
        Value::Date(19_783)
    );
    assert_eq!(ok("date_add(NULL, 1)"), Value::Null);
    assert_eq!(ok("date_add(DATE '2024-03-01', NULL)"), Value::Null);
    let overflow = eval_sql("date_add(DATE '2024-03-01', big * 1000)").unwrap_err();
    assert!(overflow.contains("DATE overflow"), "{overflow}");
    let days = compile_sql("date_add(DATE '2024-03-01', 1.5)").unwrap_err();
    assert!(days.to_string().contains("whole number of days"), "{days}");
    let date = compile_sql("date_add(id, 1)").unwrap_err();
    assert!(date.to_string().contains("needs a DATE"), "{date}");
}

#[test]
fn array_builds_a_list_of_one_element_type() {
    let names = Value::Array(vec![Value::Str("name".into()), Value::Str("city".into())]);
    assert_eq!(ok("array('name', 'city')"), names);
    assert_eq!(
        ok("array(id, 2)"),
        Value::Array(vec![Value::Int(7), Value::Int(2)])
    );
    assert_eq!(
        ok("array(NULL, score)"),
        Value::Array(vec![Value::Null, Value::Double(F64(2.5))])
    );
    let mixed = compile_sql("array(name, id)").unwrap_err().to_string();
    assert!(
        mixed.contains("ARRAY: cannot mix STRING and INT"),
        "{mixed}"
    );
}

/// Predicates decided on the row's datums (`eval::truth`) keep exactly what evaluating them
/// keeps: every comparison operator, a column on either side, NULLs, -0.0 and NaN, and the
/// connectives over them, on rows that make each comparison true, false and NULL.
#[test]
fn a_predicate_keeps_what_its_evaluation_keeps() {
    let rows = [
        row(),
        vec![
            N,
            Value::Str("Bob".into()),
            N,
            Value::Double(F64(-0.0)),
            T,
            N,
            N,
        ],
        vec![
            Value::Int(-3),
            N,
            Value::Int(5),
            Value::Double(F64(f64::NAN)),
            F,
            N,
            N,
        ],
    ];
    let comparisons = [
        "id = 7",
        "7 <> id",
        "name < 'Alice'",
        "'Alice' <= name",
        "name > 'Al'",
        "big >= 5",
        "score = 0.0",
        "score < 1.0",
        "id = big",
        "flag = TRUE",
        "name = NULL",
    ];
    let mut predicates: Vec<String> = comparisons.iter().map(|c| c.to_string()).collect();
    for (a, b) in comparisons.iter().zip(comparisons.iter().rev()) {
        predicates.push(format!("{a} AND NOT ({b})"));
        predicates.push(format!("NOT ({a}) OR {b}"));
    }
    for sql in &predicates {
        let expr = compile_sql(sql).expect("test SQL compiles");
        for r in &rows {
            let evaluated = expr.eval_values(r).unwrap_or_else(|e| panic!("{sql}: {e}"));
            let kept = expr.eval_predicate_values(r);
            assert_eq!(kept, Ok(evaluated == T), "{sql} over {r:?}");
        }
    }
}

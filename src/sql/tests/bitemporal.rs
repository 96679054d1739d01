//! `STORED AS BITEMPORAL` with `SYSTEM SEQUENCE BY`: the target's shape and every rule of
//! SPEC 2.5 and 2.11 that involves them.

use super::{assert_error, parse_ok, users_flow};
use crate::plan::ScdType;
use crate::value::DataType;
use crate::ErrorKind::{Syntax, Validation};

/// Line 1: the change feed of SPEC T8.
const EVENTS: &str =
    "CREATE STREAMING TABLE company_events AS SELECT * FROM STREAM read_files('events.csv', \
format => 'csv', schema => 'id STRING, value STRING, op STRING, bt TIMESTAMP, st TIMESTAMP');\n";

/// EVENTS, a target (line 2), then a flow into it from line 3 with `clauses` on line 4 on.
fn t8(clauses: &str) -> String {
    format!(
        "{EVENTS}CREATE STREAMING TABLE company_bitemporal;\n\
CREATE FLOW company_bt AS AUTO CDC INTO company_bitemporal FROM STREAM(company_events) KEYS (id)\n{clauses};"
    )
}

#[test]
fn the_target_gets_business_and_system_intervals() {
    let p = parse_ok(&t8(
        "APPLY AS DELETE WHEN op = 'DELETE'\nSEQUENCE BY bt SYSTEM SEQUENCE BY st\n\
COLUMNS * EXCEPT (op, bt, st)\nSTORED AS BITEMPORAL",
    ));
    let t = &p.targets[0];
    assert_eq!(t.scd, ScdType::Bitemporal);
    assert_eq!(
        t.schema.to_string(),
        "id STRING, value STRING, __START_AT TIMESTAMP, __END_AT TIMESTAMP, \
__SYSTEM_START_AT TIMESTAMP, __SYSTEM_END_AT TIMESTAMP"
    );
    assert_eq!(t.image_len, 2);
    assert_eq!(t.system_sequence_type, Some(DataType::Timestamp));
    assert!(p.flows[0].system_sequence.is_some());
}

#[test]
fn system_columns_take_the_system_sequence_type() {
    let p = parse_ok(&users_flow(
        "CREATE FLOW f AS AUTO CDC INTO t FROM users_cdf KEYS (userId)\n\
SEQUENCE BY sequenceNum SYSTEM SEQUENCE BY name STORED AS BITEMPORAL;",
    ));
    let t = &p.targets[0];
    let types: Vec<String> = t.schema.columns[t.image_len..]
        .iter()
        .map(|c| format!("{} {}", c.name, c.ty))
        .collect();
    assert_eq!(
        types,
        [
            "__START_AT INT",
            "__END_AT INT",
            "__SYSTEM_START_AT STRING",
            "__SYSTEM_END_AT STRING"
        ]
    );
}

#[test]
fn bitemporal_and_system_sequence_need_each_other() {
    assert_error(
        &t8("SEQUENCE BY bt\nSTORED AS BITEMPORAL"),
        Validation,
        5,
        "STORED AS BITEMPORAL: requires SYSTEM SEQUENCE BY",
    );
    assert_error(
        &t8("SEQUENCE BY bt\nSYSTEM SEQUENCE BY st STORED AS SCD TYPE 2"),
        Validation,
        5,
        "SYSTEM SEQUENCE BY: only valid with STORED AS BITEMPORAL",
    );
    assert_error(
        &t8("SEQUENCE BY bt\nSYSTEM SEQUENCE BY st"),
        Validation,
        5,
        "SYSTEM SEQUENCE BY: only valid with STORED AS BITEMPORAL",
    );
}

#[test]
fn rejected_combinations() {
    assert_error(
        &t8("SEQUENCE BY bt SYSTEM SEQUENCE BY st\nAPPLY AS TRUNCATE WHEN op = 'T'\nSTORED AS BITEMPORAL"),
        Validation,
        5,
        "APPLY AS TRUNCATE WHEN: truncates are only supported with STORED AS SCD TYPE 1",
    );
    assert_error(
        &t8("SEQUENCE BY bt SYSTEM SEQUENCE BY st\nCOLUMNS TO UPDATE value\nSTORED AS BITEMPORAL"),
        Validation,
        5,
        "COLUMNS TO UPDATE: not supported with STORED AS BITEMPORAL",
    );
    assert_error(
        &t8("SEQUENCE BY bt SYSTEM SEQUENCE BY\n  stt STORED AS BITEMPORAL"),
        Validation,
        5,
        "SYSTEM SEQUENCE BY: unknown column `stt` (did you mean `st`?)",
    );
    assert_error(
        &t8("SEQUENCE BY bt SYSTEM SEQUENCE BY\n  NULL STORED AS BITEMPORAL"),
        Validation,
        4,
        "SYSTEM SEQUENCE BY: the sequence has no type (a bare NULL)",
    );
    assert_error(
        &t8("SEQUENCE BY bt SYSTEM SEQUENCE BY st\nSTORED AS BITEMPORAL STORED AS SCD TYPE 2"),
        Syntax,
        5,
        "STORED AS: clause given twice",
    );
}

#[test]
fn tracked_columns_and_ignore_null_updates_are_accepted() {
    let p = parse_ok(&t8(
        "SEQUENCE BY bt SYSTEM SEQUENCE BY st COLUMNS * EXCEPT (op, bt, st)\n\
IGNORE NULL UPDATES TRACK HISTORY ON * EXCEPT (value) STORED AS BITEMPORAL",
    ));
    assert_eq!(p.targets[0].tracked, vec![true, false]);
    assert!(p.targets[0].partial);
}

#[test]
fn system_columns_are_reserved() {
    let sql = "CREATE STREAMING TABLE s AS SELECT * FROM STREAM read_files('s.csv', \
format => 'csv', schema => 'id INT, __SYSTEM_START_AT INT');\nCREATE STREAMING TABLE t;\n\
CREATE FLOW f AS AUTO CDC INTO t FROM s KEYS (id) SEQUENCE BY id;";
    assert_error(
        sql,
        Validation,
        3,
        "FROM: source `s` has a column named `__SYSTEM_START_AT`, which is reserved",
    );
}

#[test]
fn flows_into_one_bitemporal_target_agree_on_the_system_sequence_type() {
    let sql = format!(
        "{}\nCREATE FLOW g AS AUTO CDC INTO company_bitemporal FROM STREAM(company_events) KEYS (id)\n\
SEQUENCE BY bt SYSTEM SEQUENCE BY value STORED AS BITEMPORAL;",
        t8("SEQUENCE BY bt SYSTEM SEQUENCE BY st STORED AS BITEMPORAL")
    );
    assert_error(
        &sql,
        Validation,
        5,
        "disagree on the SYSTEM SEQUENCE BY type (TIMESTAMP vs STRING)",
    );
}

//! The builder against the SQL front end: equivalent options and clauses must give equal
//! targets and flows, and equal errors.

use super::{AutoCdcFlow, BuiltFlow};
use crate::plan::{Pipeline, ScdType};
use crate::sql::parse;
use crate::value::{DataType, Row, Schema, Seq, Value};
use crate::{ErrorKind, Result};
use std::path::Path;

/// The users change feed of SPEC T0, declared so that no file is read.
const USERS: &str = "CREATE STREAMING TABLE users_cdf AS SELECT * FROM STREAM read_files('x.csv', \
format => 'csv', schema => 'userId INT, name STRING, city STRING, operation STRING, sequenceNum INT');\n";

fn users() -> Schema {
    Schema::new(
        [
            ("userId", DataType::Int),
            ("name", DataType::String),
            ("city", DataType::String),
            ("operation", DataType::String),
            ("sequenceNum", DataType::Int),
        ]
        .map(|(n, t)| (n.to_string(), t)),
    )
}

/// The users source, a target `target` and `flow`.
fn sql(target: &str, flow: &str) -> Result<Pipeline> {
    let text = format!("{USERS}CREATE STREAMING TABLE {target};\n{flow}");
    parse(&text, Path::new("p.sql"))
}

fn builder(target: &str) -> AutoCdcFlow {
    AutoCdcFlow::new(target, users(), ["userId"], "sequenceNum").source_name("users_cdf")
}

/// T1/T3's clauses up to the SCD type; callers append the rest.
fn users_flow(target: &str, rest: &str) -> String {
    format!(
        "CREATE FLOW apply_cdc AS AUTO CDC INTO {target} FROM STREAM(users_cdf) KEYS (userId) \
         SEQUENCE BY sequenceNum {rest};"
    )
}

#[track_caller]
fn assert_same(built: &BuiltFlow, pipeline: &Pipeline) {
    let (t, u) = (built.target(), &pipeline.targets[0]);
    assert_eq!(t.name, u.name);
    assert_eq!(t.schema, u.schema);
    assert_eq!(t.image_len, u.image_len);
    assert_eq!(t.keys, u.keys);
    assert_eq!(t.scd, u.scd);
    assert_eq!(t.sequence_type, u.sequence_type);
    assert_eq!(t.tracked, u.tracked);
    assert_eq!(t.partial, u.partial);
    assert_eq!(t.tombstone_gc_seconds, u.tombstone_gc_seconds);
    let (f, g) = (built.flow(), &pipeline.flows[0]);
    assert_eq!(f.name, g.name);
    assert_eq!(f.keys, g.keys);
    assert_eq!(f.columns, g.columns);
    assert_eq!(f.partial, g.partial);
    assert_eq!(f.once, g.once);
    assert_eq!(f.sequence.to_string(), g.sequence.to_string());
    assert_eq!(f.sequence.ty(), g.sequence.ty());
    let text = |e: &Option<crate::expr::Expr>| e.as_ref().map(ToString::to_string);
    assert_eq!(text(&f.delete_when), text(&g.delete_when));
    assert_eq!(text(&f.truncate_when), text(&g.truncate_when));
    assert_eq!(built.source_schema(), &pipeline.tables[0].schema);
    // Pipeline warnings are `file:line: message`; the builder's are bare messages.
    let messages: Vec<&str> = pipeline
        .warnings
        .iter()
        .map(|w| w.split_once(": ").map_or(w.as_str(), |(_, m)| m))
        .collect();
    assert_eq!(built.warnings(), messages.as_slice());
}

#[track_caller]
fn assert_same_error(built: Result<BuiltFlow>, pipeline: Result<Pipeline>) {
    let (b, p) = match (built, pipeline) {
        (Err(b), Err(p)) => (b, p),
        (b, p) => panic!(
            "expected two errors, got {:?} and {:?}",
            b.err(),
            p.err().map(|e| e.to_string())
        ),
    };
    assert_eq!(b.kind(), p.kind(), "{b} vs {p}");
    assert_eq!(b.message(), p.message());
    assert_eq!(b.location(), &crate::error::Location::default());
}

#[test]
fn t1_scd1_with_deletes_and_truncates_matches_sql() {
    let built = builder("users_current")
        .name("apply_cdc")
        .apply_as_deletes("operation = \"DELETE\"")
        .apply_as_truncates("operation = \"TRUNCATE\"")
        .except_column_list(["operation", "sequenceNum"])
        .stored_as_scd_type(ScdType::Type1)
        .build()
        .unwrap();
    let pipeline = sql(
        "users_current",
        &users_flow(
            "users_current",
            "APPLY AS DELETE WHEN operation = \"DELETE\" \
             APPLY AS TRUNCATE WHEN operation = \"TRUNCATE\" \
             COLUMNS * EXCEPT (operation, sequenceNum) STORED AS SCD TYPE 1",
        ),
    )
    .unwrap();
    assert_same(&built, &pipeline);
    assert_eq!(built.target().scd, ScdType::Type1);
}

#[test]
fn t3_scd2_matches_sql() {
    let built = builder("users_history")
        .name("apply_cdc")
        .apply_as_deletes("operation = 'DELETE'")
        .except_column_list(["operation", "sequenceNum"])
        .stored_as_scd_type(ScdType::Type2)
        .build()
        .unwrap();
    let pipeline = sql(
        "users_history",
        &users_flow(
            "users_history",
            "APPLY AS DELETE WHEN operation = 'DELETE' \
             COLUMNS * EXCEPT (operation, sequenceNum) STORED AS SCD TYPE 2",
        ),
    )
    .unwrap();
    assert_same(&built, &pipeline);
    let names: Vec<&str> = built.target().schema.names().collect();
    assert_eq!(names, ["userId", "name", "city", "__START_AT", "__END_AT"]);
}

#[test]
fn t4_track_history_except_matches_sql() {
    let built = builder("users_history")
        .name("apply_cdc")
        .apply_as_deletes("operation = 'DELETE'")
        .except_column_list(["operation", "sequenceNum"])
        .stored_as_scd_type(ScdType::Type2)
        .track_history_except_column_list(["city"])
        .build()
        .unwrap();
    let pipeline = sql(
        "users_history",
        &users_flow(
            "users_history",
            "APPLY AS DELETE WHEN operation = 'DELETE' COLUMNS * EXCEPT (operation, sequenceNum) \
             STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (city)",
        ),
    )
    .unwrap();
    assert_same(&built, &pipeline);
    assert_eq!(built.target().tracked, [true, true, false]);
}

#[test]
fn partial_updates_struct_sequences_and_warnings_match_sql() {
    let cases = [
        (
            builder("t")
                .name("apply_cdc")
                .ignore_null_updates_except_column_list(["city"]),
            "IGNORE NULL UPDATES ON * EXCEPT (city)",
        ),
        (
            builder("t")
                .name("apply_cdc")
                .column_list(["userId", "city", "name"])
                .ignore_null_updates_column_list(["city"]),
            "COLUMNS (userId, city, name) IGNORE NULL UPDATES ON (city)",
        ),
        (
            builder("t").name("apply_cdc").ignore_null_updates(true),
            "IGNORE NULL UPDATES",
        ),
        (
            builder("t")
                .name("apply_cdc")
                .columns_to_update("operation"),
            "COLUMNS TO UPDATE operation",
        ),
        (
            builder("t")
                .name("apply_cdc")
                .stored_as_scd_type(ScdType::Type2)
                .track_history_column_list(["name", "town"]),
            "STORED AS SCD TYPE 2 TRACK HISTORY ON (name, town)",
        ),
    ];
    for (options, clauses) in cases {
        let flow = users_flow("t", clauses);
        assert_same(&options.build().unwrap(), &sql("t", &flow).unwrap());
    }
    let town = builder("t")
        .stored_as_scd_type(ScdType::Type2)
        .track_history_column_list(["town"]);
    let warnings = town.build().unwrap().warnings().to_vec();
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].starts_with("TRACK HISTORY: `town`"),
        "{warnings:?}"
    );
    let once = builder("t").name("apply_cdc").once(true).build().unwrap();
    let flow = users_flow("t", "").replacen("AUTO CDC INTO", "AUTO CDC ONCE INTO", 1);
    assert_same(&once, &sql("t", &flow).unwrap());
    assert!(once.flow().once);
    // The flow is named after its target by default, and ordered by a struct on request (whose
    // names the builder quotes).
    let built = builder("t")
        .sequence_by_struct(["sequenceNum", "userId"])
        .build()
        .unwrap();
    let flow = "CREATE FLOW t AS AUTO CDC INTO t FROM STREAM(users_cdf) KEYS (userId) \
                SEQUENCE BY STRUCT(`sequenceNum`, `userId`);";
    assert_same(&built, &sql("t", flow).unwrap());
    assert!(matches!(built.target().sequence_type, DataType::Struct(_)));
}

#[test]
fn conflicting_options_fail_like_repeated_clauses() {
    let scd2 = |b: AutoCdcFlow| b.stored_as_scd_type(ScdType::Type2);
    let cases = [
        (
            builder("t")
                .column_list(["userId", "name"])
                .except_column_list(["city"]),
            "COLUMNS (userId, name) COLUMNS * EXCEPT (city)",
        ),
        (
            scd2(builder("t"))
                .track_history_column_list(["name"])
                .track_history_except_column_list(["city"]),
            "STORED AS SCD TYPE 2 TRACK HISTORY ON (name) TRACK HISTORY ON * EXCEPT (city)",
        ),
        (
            builder("t")
                .ignore_null_updates(true)
                .ignore_null_updates_column_list(["city"]),
            "IGNORE NULL UPDATES IGNORE NULL UPDATES ON (city)",
        ),
        (
            scd2(builder("t")).apply_as_truncates("operation = 'TRUNCATE'"),
            "APPLY AS TRUNCATE WHEN operation = 'TRUNCATE' STORED AS SCD TYPE 2",
        ),
        (
            builder("t").track_history_except_column_list(["city"]),
            "TRACK HISTORY ON * EXCEPT (city)",
        ),
        (
            builder("t")
                .columns_to_update("operation")
                .ignore_null_updates(true),
            "COLUMNS TO UPDATE operation IGNORE NULL UPDATES",
        ),
    ];
    for (options, clauses) in cases {
        assert_same_error(
            options.build(),
            sql("t", &users_flow("t", clauses).replace("apply_cdc", "t")),
        );
    }
}

#[test]
fn unknown_names_and_bad_expressions_fail_like_sql() {
    let cases = [
        (
            AutoCdcFlow::new("t", users(), ["usrId"], "sequenceNum").source_name("users_cdf"),
            "CREATE FLOW t AS AUTO CDC INTO t FROM users_cdf KEYS (usrId) SEQUENCE BY sequenceNum",
        ),
        (
            AutoCdcFlow::new("t", users(), ["userId"], "sequenceNm").source_name("users_cdf"),
            "CREATE FLOW t AS AUTO CDC INTO t FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNm",
        ),
        (
            builder("t").except_column_list(["operaton"]),
            "CREATE FLOW t AS AUTO CDC INTO t FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNum \
             COLUMNS * EXCEPT (operaton)",
        ),
        (
            builder("t").apply_as_deletes("operation"),
            "CREATE FLOW t AS AUTO CDC INTO t FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNum \
             APPLY AS DELETE WHEN operation",
        ),
        (
            builder("t").columns_to_update("sequenceNum"),
            "CREATE FLOW t AS AUTO CDC INTO t FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNum \
             COLUMNS TO UPDATE sequenceNum",
        ),
    ];
    for (options, flow) in cases {
        assert_same_error(options.build(), sql("t", flow));
    }
    let error = AutoCdcFlow::new("t", users(), ["usrId"], "sequenceNum")
        .build()
        .unwrap_err();
    assert!(error.message().contains("did you mean `userId`"), "{error}");
}

#[test]
fn builder_only_mistakes_are_reported() {
    let trailing = builder("t")
        .apply_as_deletes("operation = 'DELETE' KEYS (name)")
        .build()
        .unwrap_err();
    assert_eq!(trailing.kind(), ErrorKind::Syntax);
    assert!(
        trailing
            .message()
            .starts_with("APPLY AS DELETE WHEN: expected the end of the expression"),
        "{trailing}"
    );
    let same_name = builder("users_cdf").build().unwrap_err();
    assert!(
        same_name.message().contains("both called `users_cdf`"),
        "{same_name}"
    );
    let mut schema = users();
    schema.columns[1].name = "USERID".to_string();
    let duplicate = AutoCdcFlow::new("t", schema, ["userId"], "sequenceNum")
        .build()
        .unwrap_err();
    assert_eq!(duplicate.kind(), ErrorKind::Validation);
    assert!(duplicate.message().contains("duplicate column `USERID`"));
}

#[test]
fn to_event_rejects_rows_of_the_wrong_width() {
    let flow = builder("t").build().unwrap();
    let short = flow.to_event(&[Value::Int(1)]).unwrap_err();
    assert_eq!(short.column, "row");
    assert!(
        short.reason.contains("expected 5 values"),
        "{}",
        short.reason
    );
    let row = [
        Value::Int(1),
        Value::Str("Raul".into()),
        Value::Str("Oaxaca".into()),
        Value::Str("INSERT".into()),
        Value::Int(7),
    ];
    let event = flow.to_event(&row).unwrap();
    assert_eq!(
        (event.seq, event.key),
        (Seq::from(7), Row::from([Value::Int(1)]))
    );
}

#[test]
fn table_properties_set_the_tombstone_retention_like_tblproperties() {
    const GC: &str = "pipelines.cdc.tombstoneGCThresholdInSeconds";
    let built = builder("t").table_property(GC, "60").build().unwrap();
    assert_eq!(built.target().tombstone_gc_seconds, 60);
    let err = builder("t").table_property(GC, "-5").build().unwrap_err();
    let text = format!(
        "{USERS}CREATE STREAMING TABLE t TBLPROPERTIES ('{GC}' = '-5');\n{}",
        users_flow("t", "")
    );
    let sql_err = parse(&text, Path::new("p.sql")).unwrap_err();
    assert_eq!(
        (err.kind(), err.message()),
        (sql_err.kind(), sql_err.message())
    );
}

//! Every validation and syntax error class: kind, line and message.

use super::{assert_error, parse_err, parse_ok, users_flow, USERS};
use crate::plan::PartialUpdates;
use crate::ErrorKind::{Syntax, Validation};

/// A flow into `t` from `users_cdf` with `extra` clauses on line 5 and after.
fn flow_with(extra: &str) -> String {
    users_flow(&format!(
        "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_cdf)\nKEYS (userId) SEQUENCE BY sequenceNum\n{extra};"
    ))
}

#[test]
fn unknown_columns_name_the_clause_and_the_closest_match() {
    let keys = users_flow("CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_cdf)\nKEYS (usrId)\nSEQUENCE BY sequenceNum;");
    assert_error(
        &keys,
        Validation,
        4,
        "KEYS: unknown column `usrId` in source `users_cdf` (did you mean `userId`?)",
    );
    let seq = users_flow("CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_cdf) KEYS (userId)\nSEQUENCE BY\n  sequenceNm;");
    assert_error(
        &seq,
        Validation,
        5,
        "SEQUENCE BY: unknown column `sequenceNm` (did you mean `sequenceNum`?)",
    );
    assert_error(
        &flow_with("COLUMNS * EXCEPT (operaton)"),
        Validation,
        5,
        "COLUMNS: unknown column `operaton` in source `users_cdf` (did you mean `operation`?)",
    );
    assert_error(
        &flow_with("APPLY AS DELETE WHEN opration = 'D'"),
        Validation,
        5,
        "APPLY AS DELETE WHEN: unknown column `opration` (did you mean `operation`?)",
    );
    assert_error(
        &flow_with("APPLY AS TRUNCATE WHEN xyz"),
        Validation,
        5,
        "APPLY AS TRUNCATE WHEN: unknown column `xyz`",
    );
    assert_error(
        &flow_with("IGNORE NULL UPDATES ON (nam)"),
        Validation,
        5,
        "IGNORE NULL UPDATES: unknown column `nam` in source `users_cdf` (did you mean `name`?)",
    );
    assert_error(
        &flow_with("COLUMNS TO UPDATE colz"),
        Validation,
        5,
        "COLUMNS TO UPDATE: unknown column `colz`",
    );
}

#[test]
fn predicates_must_be_boolean_and_expressions_well_typed() {
    assert_error(
        &flow_with("APPLY AS DELETE WHEN operation"),
        Validation,
        5,
        "APPLY AS DELETE WHEN: the condition must be BOOLEAN, `operation` is STRING",
    );
    assert_error(
        &flow_with("APPLY AS DELETE WHEN name + 1 = 2"),
        Validation,
        5,
        "APPLY AS DELETE WHEN: `+` needs numeric operands, `name` is STRING",
    );
}

#[test]
fn clause_combinations_of_the_validation_matrix() {
    assert_error(
        &flow_with("APPLY AS TRUNCATE WHEN operation = 'TRUNCATE' STORED AS SCD TYPE 2"),
        Validation,
        5,
        "APPLY AS TRUNCATE WHEN: truncates are only supported with STORED AS SCD TYPE 1",
    );
    assert_error(
        &flow_with("\nTRACK HISTORY ON (name)"),
        Validation,
        6,
        "TRACK HISTORY: only valid with STORED AS SCD TYPE 2",
    );
    assert_error(
        &flow_with("IGNORE NULL UPDATES\nCOLUMNS TO UPDATE city"),
        Validation,
        6,
        "COLUMNS TO UPDATE: cannot be combined with IGNORE NULL UPDATES",
    );
    assert_error(
        &flow_with("COLUMNS TO UPDATE userId"),
        Validation,
        5,
        "COLUMNS TO UPDATE: column `userId` must be STRING or ARRAY<STRING>, found INT",
    );
    assert_error(
        &flow_with("COLUMNS * EXCEPT (userId, operation)"),
        Validation,
        5,
        "COLUMNS: key column `userId` must be selected",
    );
    assert_error(
        &flow_with("COLUMNS * EXCEPT (userId, name, city, operation, sequenceNum)"),
        Validation,
        5,
        "COLUMNS: no column is selected",
    );
    assert_error(
        &flow_with("COLUMNS (userId, name) IGNORE NULL UPDATES ON (city, userId)"),
        Validation,
        5,
        "IGNORE NULL UPDATES: column `city` is not selected by COLUMNS",
    );
}

#[test]
fn keys_are_unqualified_distinct_and_present() {
    let flow = |keys: &str| {
        users_flow(&format!("CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_cdf)\nKEYS {keys} SEQUENCE BY sequenceNum;"))
    };
    assert_error(
        &flow("(users_cdf.userId)"),
        Syntax,
        4,
        "KEYS: `users_cdf.…` must be an unqualified column name",
    );
    assert_error(
        &flow("()"),
        Validation,
        4,
        "KEYS: at least one key column is required",
    );
    assert_error(
        &flow("(userId, name,\nUSERID)"),
        Validation,
        5,
        "KEYS: duplicate key column `USERID`",
    );
    assert_error(
        &flow("(lower(name))"),
        Syntax,
        4,
        "KEYS: expected `,` or `)`",
    );
    assert_error(
        &users_flow("CREATE FLOW f AS AUTO CDC INTO t FROM users_cdf\nSEQUENCE BY sequenceNum;"),
        Validation,
        3,
        "AUTO CDC: the KEYS clause is required",
    );
    assert_error(
        &users_flow("CREATE FLOW f AS AUTO CDC INTO t FROM users_cdf\nKEYS (userId);"),
        Validation,
        3,
        "AUTO CDC: the SEQUENCE BY clause is required",
    );
    assert_error(
        &users_flow("CREATE FLOW f AS AUTO CDC INTO t\nKEYS (userId) SEQUENCE BY sequenceNum;"),
        Validation,
        3,
        "AUTO CDC: the FROM clause is required",
    );
}

#[test]
fn a_clause_may_appear_once() {
    assert_error(
        &flow_with("\nKEYS (name)"),
        Syntax,
        6,
        "KEYS: clause given twice",
    );
    assert_error(
        &flow_with("STORED AS SCD TYPE 1\nSTORED AS SCD TYPE 1"),
        Syntax,
        6,
        "STORED AS: clause given twice",
    );
    assert_error(
        &flow_with("COLUMNS (userId) COLUMNS * EXCEPT (city)"),
        Syntax,
        5,
        "COLUMNS: clause given twice",
    );
}

#[test]
fn reserved_interval_names_in_the_source() {
    let sql = "CREATE STREAMING TABLE s AS SELECT * FROM STREAM read_files('s.csv', schema => 'id INT, __start_at INT');\n\
CREATE STREAMING TABLE t;\nCREATE FLOW f AS AUTO CDC INTO t\nFROM STREAM(s) KEYS (id) SEQUENCE BY id;";
    assert_error(
        sql,
        Validation,
        4,
        "FROM: source `s` has a column named `__start_at`, which is reserved",
    );
}

#[test]
fn track_history_on_an_unknown_column_is_a_warning() {
    let p = parse_ok(&flow_with(
        "STORED AS SCD TYPE 2\nTRACK HISTORY ON (name, nosuch)\nCOLUMNS * EXCEPT (operation)",
    ));
    assert_eq!(p.targets[0].tracked, vec![false, true, false, false]);
    assert_eq!(p.warnings.len(), 1);
    assert!(
        p.warnings[0].starts_with(
            "/p/pipeline.sql:6: TRACK HISTORY: `nosuch` is not a column of the target"
        ),
        "{:?}",
        p.warnings
    );
}

/// Issue 15: a Lakeflow pipeline's Delta and pipeline settings parse, but a key scdflow does not
/// act on is said to be ignored rather than silently dropped.
#[test]
fn table_properties_scdflow_does_not_read_are_warned_of() {
    let sql = "CREATE STREAMING TABLE s AS SELECT * FROM STREAM read_files('s.csv', schema => 'id INT, seq INT');\n\
CREATE STREAMING TABLE t TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true',\n\
  pipelines.cdc.tombstoneGCThresholdInSeconds = '5');\n\
CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(s) KEYS (id) SEQUENCE BY seq;";
    let p = parse_ok(sql);
    assert_eq!(p.targets[0].tombstone_gc_seconds, 5);
    assert_eq!(
        p.warnings,
        ["/p/pipeline.sql:2: TBLPROPERTIES `delta.enableChangeDataFeed` of `t` changes nothing: a \
          published table always has the change data feed"]
    );
}

/// A streaming table publishes Delta's properties as a target does; one with a column of a
/// name the change data feed reserves cannot record a feed, so asking for one is an error.
#[test]
fn streaming_tables_take_delta_properties_and_reserved_columns_refuse_a_feed() {
    let sql = "CREATE STREAMING TABLE s TBLPROPERTIES ('delta.logRetentionDuration' = 'forever')\n\
  AS SELECT * FROM STREAM read_files('s.csv', schema => 'id INT, seq INT');";
    assert_error(
        sql,
        Validation,
        1,
        "TBLPROPERTIES: delta.logRetentionDuration must be an interval such as 'interval 7 days', \
         found `forever`",
    );
    let sql = "CREATE STREAMING TABLE s\n\
  TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', 'pipelines.channel' = 'preview')\n\
  AS SELECT id AS _change_type FROM STREAM read_files('s.csv', schema => 'id INT, seq INT');";
    assert_error(
        sql,
        Validation,
        2,
        "TBLPROPERTIES: `s` has a column `_change_type`, a name Delta reserves for the change \
         data feed, so it cannot record one (delta.enableChangeDataFeed); rename the column with \
         SELECT ... AS",
    );
}

#[test]
fn ignore_null_update_masks_cover_non_key_image_columns() {
    let mask = |clause: &str| match &parse_ok(&flow_with(&format!(
        "COLUMNS (userId, name, city) {clause}"
    )))
    .flows[0]
        .partial
    {
        PartialUpdates::IgnoreNull(mask) => mask.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(mask("IGNORE NULL UPDATES"), vec![false, true, true]);
    assert_eq!(
        mask("IGNORE NULL UPDATES ON (city)"),
        vec![false, false, true]
    );
    assert_eq!(
        mask("IGNORE NULL UPDATES ON * EXCEPT (city)"),
        vec![false, true, false]
    );
    let p = parse_ok(&flow_with(
        "COLUMNS TO UPDATE operation COLUMNS * EXCEPT (operation)",
    ));
    assert_eq!(p.flows[0].partial, PartialUpdates::ColumnsToUpdate(3));
    assert!(p.targets[0].partial);
}

#[test]
fn targets_must_be_declared_tables_without_a_query() {
    let sql = format!("{USERS}CREATE STREAMING TABLE users_current;\nCREATE FLOW f AS AUTO CDC INTO\n users_curent FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNum;");
    assert_error(
        &sql,
        Validation,
        4,
        "INTO: unknown table `users_curent` (did you mean `users_current`?)",
    );
    let sql = format!("{USERS}CREATE FLOW f AS AUTO CDC INTO users_cdf FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNum;");
    assert_error(
        &sql,
        Validation,
        2,
        "INTO: `users_cdf` is defined by its AS SELECT query; a flow's target is a streaming table",
    );
    let sql = format!("{USERS}CREATE STREAMING TABLE t;\nCREATE STREAMING TABLE u;\nCREATE FLOW f AS AUTO CDC INTO u FROM STREAM(t) KEYS (userId) SEQUENCE BY sequenceNum;");
    assert_error(
        &sql,
        Validation,
        4,
        "FROM: `t` is an AUTO CDC target, not an append-only source table",
    );
    let sql = users_flow("CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_cfd) KEYS (userId) SEQUENCE BY sequenceNum;");
    assert_error(
        &sql,
        Validation,
        3,
        "FROM: unknown table `users_cfd` (did you mean `users_cdf`?)",
    );
    assert_error(
        &format!("{USERS}\nCREATE STREAMING TABLE lonely;"),
        Validation,
        3,
        "CREATE STREAMING TABLE lonely: the table has no query (AS SELECT) and no flow writes into it",
    );
}

#[test]
fn several_flows_into_one_target_must_agree() {
    let base = format!("{USERS}CREATE STREAMING TABLE t;\n\
CREATE FLOW backfill AS AUTO CDC ONCE INTO t FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNum;\n");
    let p = parse_ok(&format!("{base}CREATE FLOW live AS AUTO CDC INTO t FROM STREAM(users_cdf) KEYS (userId) SEQUENCE BY sequenceNum IGNORE NULL UPDATES;"));
    assert_eq!(p.flows.len(), 2);
    assert!(p.flows[0].once && !p.flows[1].once);
    assert!(p.targets[0].partial);
    let other = |clauses: &str| {
        format!("{base}CREATE FLOW live AS AUTO CDC INTO t FROM STREAM(users_cdf) {clauses};")
    };
    assert_error(
        &other("KEYS (name) SEQUENCE BY sequenceNum"),
        Validation,
        4,
        "INTO: flows `backfill` (line 3) and `live` into `t` disagree on KEYS (userId) vs (name)",
    );
    assert_error(
        &other("KEYS (userId) SEQUENCE BY name"),
        Validation,
        4,
        "disagree on the SEQUENCE BY type (INT vs STRING)",
    );
    assert_error(
        &other("KEYS (userId) SEQUENCE BY sequenceNum STORED AS SCD TYPE 2"),
        Validation,
        4,
        "disagree on the SCD type (SCD TYPE 1 vs SCD TYPE 2)",
    );
    assert_error(
        &other("KEYS (userId) SEQUENCE BY sequenceNum COLUMNS * EXCEPT (city)"),
        Validation,
        4,
        "disagree on the columns",
    );
}

#[test]
fn declared_target_columns_must_match() {
    let flow = "CREATE FLOW f AS AUTO CDC INTO t FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNum COLUMNS (userId, name) STORED AS SCD TYPE 2;";
    let with = |columns: &str| format!("{USERS}CREATE STREAMING TABLE t ({columns});\n{flow}");
    let p = parse_ok(&with(
        "userId INT, name STRING, __START_AT INT, __END_AT INT",
    ));
    assert_eq!(
        p.targets[0].schema.to_string(),
        "userId INT, name STRING, __START_AT INT, __END_AT INT"
    );
    assert_error(
        &with("userId INT, name STRING"),
        Validation,
        2,
        "an SCD TYPE 2 target must declare `__START_AT INT` and `__END_AT INT`",
    );
    assert_error(
        &with("userId INT,\nname INT, __START_AT INT, __END_AT INT"),
        Validation,
        3,
        "column `name` is declared INT but flow `f` produces STRING",
    );
    assert_error(
        &with("userId INT, name STRING, city STRING, __START_AT INT, __END_AT INT"),
        Validation,
        2,
        "declared column `city` is not produced by flow `f`",
    );
    assert_error(&with("name STRING, userId INT, __START_AT INT, __END_AT INT"), Validation, 2, "declare the columns in the order flow `f` produces them: userId, name, __START_AT, __END_AT");
    assert_error(
        &with("userId INT, name STRING, __START_AT BIGINT, __END_AT INT"),
        Validation,
        2,
        "column `__START_AT` is declared BIGINT but flow `f` produces INT",
    );
}

#[test]
fn tombstone_threshold_property() {
    let with = |value: &str| {
        format!("{USERS}CREATE STREAMING TABLE t\nTBLPROPERTIES ('pipelines.cdc.tombstoneGCThresholdInSeconds' = {value});\n\
CREATE FLOW f AS AUTO CDC INTO t FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNum;")
    };
    assert_eq!(
        parse_ok(&with("'3600'")).targets[0].tombstone_gc_seconds,
        3600
    );
    assert_eq!(parse_ok(&with("0")).targets[0].tombstone_gc_seconds, 0);
    assert_error(&with("'-5'"), Validation, 3, "TBLPROPERTIES: pipelines.cdc.tombstoneGCThresholdInSeconds must be a non-negative whole number of seconds, found `-5`");
}

#[test]
fn with_version_needs_a_snapshot_of_files_or_a_warehouse_table() {
    let cases = [
        (users_flow("CREATE FLOW f AS AUTO CDC INTO t FROM SNAPSHOT\nusers_cdf\nWITH VERSION (SELECT 1) KEYS (userId);"), 4, "WITH VERSION: the snapshot query reads `users_cdf`, a streaming table of the pipeline"),
        (users_flow("CREATE FLOW f AS AUTO CDC INTO t FROM users_cdf\nWITH VERSION (SELECT 1) KEYS (userId) SEQUENCE BY sequenceNum;"), 4, "WITH VERSION: only AUTO CDC FROM SNAPSHOT flows have snapshot versions"),
    ];
    for (sql, line, needle) in cases {
        assert_error(&sql, Validation, line, needle);
    }
    let twice = users_flow("CREATE FLOW f AS AUTO CDC INTO t FROM SNAPSHOT users_cdf\nWITH VERSION (SELECT 1) WITH VERSION (SELECT 2) KEYS (userId);");
    assert_error(&twice, Syntax, 4, "WITH VERSION: clause given twice");
}

#[test]
fn append_flows_write_a_table_of_their_own_by_name() {
    let cases = [
        (users_flow("CREATE FLOW f AS\nINSERT INTO t SELECT * FROM STREAM(users_cdf);"), 4, "an append flow matches columns BY NAME"),
        (format!("{USERS}CREATE STREAMING TABLE t;\nCREATE FLOW f AS INSERT INTO t BY NAME SELECT * FROM STREAM(users_cdf);\nCREATE FLOW g AS INSERT INTO t BY NAME SELECT userId FROM STREAM(users_cdf);"), 4, "INSERT INTO t: its append flows produce different columns"),
        (format!("{USERS}CREATE STREAMING TABLE t;\nCREATE FLOW f AS INSERT INTO t BY NAME SELECT * FROM STREAM(users_cdf);\nCREATE FLOW g AS AUTO CDC INTO t FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNum;"), 4, "INTO: `t` is a streaming table the append flow `f` (line 3) writes"),
        (format!("{USERS}CREATE FLOW f AS\nINSERT INTO users_cdf BY NAME SELECT * FROM STREAM(users_cdf);"), 2, "`users_cdf` is defined by its AS SELECT query (line 1)"),
        (format!("{USERS}CREATE STREAMING TABLE t (userId BIGINT,\nname INT);\nCREATE FLOW f AS INSERT INTO t BY NAME SELECT userId, name FROM STREAM(users_cdf);"), 3, "INSERT INTO: flow `f` into `t`: column `name` is declared INT but its query produces STRING, which does not fit; CAST it"),
        (format!("{USERS}CREATE STREAMING TABLE t (userId BIGINT);\nCREATE FLOW f AS INSERT INTO t BY NAME SELECT userId, name FROM STREAM(users_cdf);"), 2, "INSERT INTO: flow `f` into `t`: its query produces `name`, which the table does not declare"),
    ];
    for (sql, line, needle) in cases {
        assert_error(&sql, Validation, line, needle);
    }
}

#[test]
fn future_features_are_rejected_by_name() {
    let cases = [
        (users_flow("CREATE FLOW f AS INSERT INTO t BY NAME\nREPLACE WHERE userId > 0 SELECT * FROM users_cdf;"), 4, "`users_cdf`, a table of this pipeline, is not supported as its source"),
        (users_flow("CREATE FLOW f AS INSERT INTO t BY NAME\nREPLACE WHERE userId > 0 SELECT * FROM STREAM(users_cdf);"), 4, "a REPLACE WHERE flow reads its table as a batch, whole (FROM users_cdf)"),
        (users_flow("INSERT INTO t BY NAME SELECT * FROM STREAM(users_cdf);"), 3, "INSERT: declare a flow with CREATE FLOW name AS INSERT INTO"),
    ];
    for (sql, line, needle) in cases {
        assert_error(&sql, Validation, line, needle);
    }
}

#[test]
fn syntax_errors_carry_the_line_of_the_token() {
    assert_error(
        &flow_with("APPLY AS DELETE WHEN (operation ="),
        Syntax,
        5,
        "APPLY AS DELETE WHEN: Expected: an expression",
    );
    assert_error(
        &flow_with("\nSTORED AS SCD TYPE 3"),
        Syntax,
        6,
        "STORED AS SCD TYPE: expected 1 or 2, found `3`",
    );
    assert_error(
        &flow_with("\nWHERE name = 'x'"),
        Syntax,
        6,
        "AUTO CDC: expected one of FROM, FROM SNAPSHOT, KEYS",
    );
    assert_error(
        &format!("{USERS}CREATE TABLE x;"),
        Syntax,
        2,
        "CREATE: expected `STREAMING TABLE`, `FLOW` or `[TEMPORARY] VIEW`",
    );
    assert_error(
        &format!("{USERS}SELECT 1;"),
        Syntax,
        2,
        "statement: expected `CREATE`",
    );
    assert_error(
        "CREATE STREAMING TABLE s AS SELECT * FROM STREAM read_files('a.csv'\n",
        Syntax,
        1,
        "read_files: expected `)`, found end of file",
    );
    assert_error(
        "CREATE STREAMING TABLE s AS SELECT 'unterminated FROM x;",
        Syntax,
        1,
        "Unterminated string literal",
    );
    let e = parse_err(&format!(
        "{USERS}CREATE STREAMING TABLE t; CREATE STREAMING TABLE T;"
    ));
    assert!(
        e.message()
            .contains("table `T` is already declared at line 2"),
        "{e}"
    );
    let e = parse_err(&flow_with(
        ";\nCREATE FLOW F AS AUTO CDC INTO t FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNum",
    ));
    assert!(
        e.message()
            .contains("flow `F` is already declared at line 3"),
        "{e}"
    );
}

/// Table and flow names become file names: nothing that escapes the output directory, hides
/// or cannot be a file name is accepted, and no two tables write one file (issue 13, item 1).
#[test]
fn names_that_cannot_be_file_names_are_refused() {
    let table = |name: &str| format!("{USERS}CREATE STREAMING TABLE\n{name};\n");
    for (name, why) in [
        ("`../in/01`", "table `../in/01` contains a path separator"),
        ("`/etc/x`", "contains a path separator"),
        ("`a\\b`", "contains a path separator"),
        ("`a/b`", "contains a path separator"),
        ("`..`", "table `..` starts with `.`"),
        ("`.hidden`", "starts with `.`"),
        ("``", "table `` is empty"),
        (
            "`tab\there`",
            "table `tab\\there` contains the control character U+0009",
        ),
    ] {
        assert_error(&table(name), Validation, 3, why);
    }
    let long = format!("`{}`", "x".repeat(201));
    assert_error(&table(&long), Validation, 3, "is 201 bytes long");
    parse_ok(&users_flow(&format!(
        "CREATE FLOW `{}` AS AUTO CDC INTO t FROM STREAM(users_cdf) KEYS (userId) SEQUENCE BY sequenceNum;",
        "é".repeat(100)
    )));
    let flow = users_flow(
        "CREATE FLOW\n`../../escape` AS AUTO CDC INTO t FROM STREAM(users_cdf) KEYS (userId) SEQUENCE BY sequenceNum;",
    );
    assert_error(
        &flow,
        Validation,
        4,
        "flow `../../escape` contains a path separator",
    );
}

#[test]
fn a_table_named_like_another_tables_change_feed_is_refused() {
    let sql = format!("{USERS}CREATE STREAMING TABLE x;\nCREATE STREAMING TABLE\n`X.Changes`;\n");
    assert_error(
        &sql,
        Validation,
        4,
        "table `X.Changes` would write the same file as the change feed of table `x` (line 2)",
    );
    let reversed =
        format!("{USERS}CREATE STREAMING TABLE `x.changes`;\nCREATE STREAMING TABLE\nx;\n");
    assert_error(
        &reversed,
        Validation,
        4,
        "table `x.changes` would write the same file",
    );
    let copy = "AS SELECT * FROM STREAM(users_cdf)";
    parse_ok(&format!(
        "{USERS}CREATE STREAMING TABLE x {copy};\nCREATE STREAMING TABLE `x.change` {copy};\n"
    ));
}

/// A flat chain is as deep as it is long: past the bound it is refused, at the bound it
/// compiles (issue 13, item 8: 4,000 `+` overflowed the stack).
#[test]
fn long_flat_expressions_are_refused_not_overflowed() {
    let sequence = |terms: usize| vec!["sequenceNum"; terms].join(" + ");
    let flow = |terms: usize| {
        users_flow(&format!(
            "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_cdf) KEYS (userId)\nSEQUENCE BY {};",
            sequence(terms)
        ))
    };
    assert_error(
        &flow(4000),
        Validation,
        4,
        "SEQUENCE BY: the expression is too long: 3999 operators (chained or nested) before the end of the statement, where at most 256 are allowed",
    );
    // 3,000 `=` and 2,999 `AND`.
    let conditions = vec!["operation = 'D'"; 3000].join(" AND ");
    let deletes = users_flow(&format!(
        "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_cdf) KEYS (userId)\nAPPLY AS DELETE WHEN {conditions} SEQUENCE BY sequenceNum;"
    ));
    assert_error(
        &deletes,
        Validation,
        4,
        "APPLY AS DELETE WHEN: the expression is too long: 5999 operators",
    );
    parse_ok(&flow(257));
}

/// Issue 13, item 14: a byte-order mark is not SQL, and sqlparser's token names do not leak.
#[test]
fn a_byte_order_mark_is_skipped_and_parser_wording_is_ours() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.sql");
    std::fs::write(&file, format!("\u{feff}{}", users_flow("CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_cdf) KEYS (userId) SEQUENCE BY sequenceNum;"))).unwrap();
    crate::sql::load(&file).unwrap();
    let shift = users_flow(
        "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_cdf) KEYS (userId)\nSEQUENCE BY sequenceNum << 2;",
    );
    assert_error(
        &shift,
        Syntax,
        4,
        "SEQUENCE BY: an operator that scdflow's SQL does not support",
    );
}

/// Issue 13, item 15: an empty pipeline is an error, not a run that writes nothing.
#[test]
fn an_empty_pipeline_is_refused() {
    for sql in ["", "-- nothing yet\n", "/* a comment */"] {
        assert_error(sql, Validation, 1, "the pipeline declares no table");
    }
}

#[test]
fn a_qualified_table_the_pipeline_declares_needs_a_warehouse() {
    let sql = format!(
        "{USERS}CREATE OR REFRESH STREAMING TABLE\nmain.cdc_tutorial.t;\n\
         CREATE FLOW f AS AUTO CDC INTO main.cdc_tutorial.t FROM users_cdf KEYS (userId) SEQUENCE BY sequenceNum;"
    );
    assert_error(
        &sql,
        Validation,
        3,
        "CREATE STREAMING TABLE: `main.cdc_tutorial.t` names a table of a warehouse: give --warehouse DIR",
    );
}

//! Views in a pipeline: `CREATE [TEMPORARY] VIEW v AS SELECT ...` is a query the flows read,
//! with expectations as a streaming table's, never written by a flow; views over targets, and
//! materialized views over the pipeline's source tables, are refused naming why. A
//! materialized view over a target is kept from the target's feed, or refused saying why.

use super::{assert_error, parse_ok, USERS};
use crate::plan::{OnViolation, SourceInput};
use crate::ErrorKind::Validation;

/// A view over `users_cdf` (line 2, its constraint on line 3), an SCD1 target (line 5) and a
/// flow reading the view (line 6).
const VIEW: &str = "CREATE TEMPORARY VIEW users_v (
  CONSTRAINT known_op EXPECT (operation IN ('INSERT', 'UPDATE', 'DELETE')) ON VIOLATION DROP ROW
) COMMENT 'the changes' AS SELECT userId, city, operation, sequenceNum FROM STREAM(users_cdf);
CREATE OR REFRESH STREAMING TABLE t;
CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_v) KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE' SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum);";

#[test]
fn a_view_is_a_query_the_flows_read_with_its_expectations() {
    let p = parse_ok(&format!("{USERS}{VIEW}"));
    let view = p.tables.iter().find(|t| t.name == "users_v").unwrap();
    assert!(matches!(view.input, SourceInput::Table(_)));
    assert_eq!(
        view.schema.names().collect::<Vec<_>>(),
        ["userId", "city", "operation", "sequenceNum"]
    );
    assert_eq!(view.expectations.len(), 1);
    assert_eq!(view.expectations[0].action, OnViolation::DropRow);
    assert_eq!(
        p.targets[0].schema.names().collect::<Vec<_>>(),
        ["userId", "city"]
    );
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    // Without TEMPORARY (and with LIVE, OR REPLACE): the same, with a warning that it is
    // not published.
    let published = format!(
        "{USERS}{}",
        VIEW.replace("CREATE TEMPORARY VIEW", "CREATE OR REPLACE LIVE VIEW")
    );
    let p = parse_ok(&published);
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(
        p.warnings[0].contains("/p/pipeline.sql:2: view `users_v` feeds this pipeline's flows"),
        "{:?}",
        p.warnings
    );
}

#[test]
fn views_are_refused_where_they_cannot_be() {
    let into_view = format!("{USERS}{VIEW}\nCREATE FLOW g AS AUTO CDC INTO users_v FROM STREAM(users_cdf) KEYS (userId) SEQUENCE BY sequenceNum;");
    assert_error(
        &into_view,
        Validation,
        9,
        "INTO: `users_v` is a view, defined by its query",
    );
    let append = format!("{USERS}{VIEW}\nCREATE FLOW g AS INSERT INTO users_v BY NAME SELECT * FROM STREAM(users_cdf);");
    assert_error(
        &append,
        Validation,
        9,
        "`users_v` is a view, defined by its query (line 2)",
    );
    let over_target = format!("{USERS}{VIEW}\nCREATE VIEW history AS SELECT * FROM t;");
    assert_error(
        &over_target,
        Validation,
        9,
        "a view over a target is created with `scdflow sql`",
    );
    let columns = format!("{USERS}CREATE VIEW v (a INT) AS SELECT * FROM STREAM(users_cdf);");
    assert_error(
        &columns,
        Validation,
        2,
        "a view's column list is not supported",
    );
    let properties = format!(
        "{USERS}CREATE VIEW v TBLPROPERTIES ('a' = 'b') AS SELECT * FROM STREAM(users_cdf);"
    );
    assert_error(&properties, Validation, 2, "a view has no TBLPROPERTIES");
    let materialized = format!("{USERS}CREATE MATERIALIZED VIEW m AS SELECT * FROM users_cdf;");
    assert_error(
        &materialized,
        Validation,
        2,
        "a materialized view reads a table of the warehouse, whole at each new version",
    );
}

#[test]
fn a_materialized_view_over_a_target_is_kept_from_its_feed() {
    let cities = format!(
        "{USERS}{VIEW}\nCREATE MATERIALIZED VIEW cities AS SELECT city, userId AS id FROM t WHERE city IS NOT NULL;"
    );
    let p = parse_ok(&cities);
    let view = p.targets.iter().find(|t| t.name == "cities").unwrap();
    assert_eq!(view.view_of.as_deref(), Some("t"));
    assert_eq!(view.schema.names().collect::<Vec<_>>(), ["city", "id"]);
    assert_eq!(view.keys, [1]);
    let why = crate::engine::HistoryRules::of(view).err().unwrap();
    assert!(why.contains("a materialized view"), "{why}");
    let text = crate::sql::describe(&p);
    assert!(
        text.contains("maintained by: MATERIALIZED VIEW over `t`"),
        "{text}"
    );

    let unkeyed = format!("{USERS}{VIEW}\nCREATE MATERIALIZED VIEW c AS SELECT city FROM t;");
    assert_error(
        &unkeyed,
        Validation,
        9,
        "keeps each of its rows by the row's identity (userId), so it must select `userId`",
    );
    let expectation = format!(
        "{USERS}{VIEW}\nCREATE MATERIALIZED VIEW c (\n  CONSTRAINT named EXPECT (city IS NOT NULL)\n) AS SELECT * FROM t;"
    );
    assert_error(&expectation, Validation, 10, "takes no expectations yet");
    let replaced = format!(
        "{USERS}CREATE OR REFRESH STREAMING TABLE r FLOW REPLACE USING (userId) SEQUENCE BY seq BY NAME SELECT userId, sequenceNum AS seq FROM STREAM(users_cdf);\nCREATE MATERIALIZED VIEW m AS SELECT * FROM r;"
    );
    assert_error(&replaced, Validation, 3, "kept by a REPLACE USING flow");
    let cycle = format!(
        "{USERS}CREATE MATERIALIZED VIEW a AS SELECT * FROM b;\nCREATE MATERIALIZED VIEW b AS SELECT * FROM a;"
    );
    assert_error(&cycle, Validation, 2, "(a cycle)");
}

#[test]
fn a_materialized_view_over_a_target_without_a_flow_says_what_the_target_lacks() {
    let bare = format!(
        "{USERS}CREATE OR REFRESH STREAMING TABLE t;\nCREATE MATERIALIZED VIEW m AS SELECT * FROM t;"
    );
    assert_error(&bare, Validation, 2, "no flow writes into it");
    let keyless = format!(
        "{USERS}CREATE OR REFRESH STREAMING TABLE t;\nCREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_cdf) SEQUENCE BY sequenceNum;\nCREATE MATERIALIZED VIEW m AS SELECT * FROM t;"
    );
    assert_error(&keyless, Validation, 3, "the KEYS clause is required");
}

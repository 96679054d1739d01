//! REPLACE WHERE flows through the binary: a warehouse table read whole at each new version,
//! the condition's slice of the target replaced at each durable run while the rest stays (also
//! rows the source has lost), equal rows kept apart, the published table's change data feed,
//! `CURRENT_DATE()` evaluated at the update, and the refusals.

use crate::durable::{scdflow, stderr, succeed};
use crate::warehouse::{sql, warehouse_with};
use std::path::Path;

const ORDERS: &str = "CREATE SCHEMA main.sales;
CREATE TABLE main.sales.orders (id INT, day DATE, region STRING, amount INT)
  TBLPROPERTIES ('delta.enableChangeDataFeed' = true);
INSERT INTO main.sales.orders VALUES
  (1, DATE '2026-01-01', 'EU', 10),
  (2, DATE '2026-01-02', 'US', 20),
  (3, DATE '2026-01-03', 'EU', 30),
  (4, DATE '2026-01-04', 'US', 40),
  (4, DATE '2026-01-04', 'US', 40);";

/// The long form, from the third of January on.
const RECENT: &str = "CREATE STREAMING TABLE recent;
CREATE FLOW recent_flow AS INSERT INTO recent BY NAME
REPLACE WHERE day >= DATE '2026-01-03'
SELECT id, day, amount FROM main.sales.orders WHERE region IS NOT NULL;";

/// A durable run of `pipeline` publishing into `schema` of catalog `main`.
fn run(cwd: &Path, pipeline: &str, schema: &str) -> String {
    let args = [
        "run",
        pipeline,
        "--warehouse",
        "w",
        "--schema",
        schema,
        "--out",
        "out",
        "--state",
        "state",
    ];
    succeed(cwd, &args)
}

const TABLE: &str = "SELECT id, day, amount FROM main.sales.recent ORDER BY id, day";

#[test]
fn each_update_replaces_the_conditions_slice_and_keeps_the_rest() {
    let dir = warehouse_with(&[("orders.sql", ORDERS), ("recent.sql", RECENT)]);
    let cwd = dir.path();
    run(cwd, "recent.sql", "sales");
    // Days before the third are not the flow's; the repeated order stays twice.
    assert_eq!(
        sql(cwd, TABLE),
        "id,day,amount\n3,2026-01-03,30\n4,2026-01-04,40\n4,2026-01-04,40\n"
    );
    let described = succeed(
        cwd,
        &[
            "check",
            "recent.sql",
            "--warehouse",
            "w",
            "--schema",
            "sales",
        ],
    );
    assert!(
        described.contains("replace where: day >= DATE '2026-01-03'"),
        "{described}"
    );

    // Upstream reprocessing: one copy of the repeated order goes, an order is corrected, a late
    // one arrives in the slice and another before it.
    sql(
        cwd,
        "DELETE FROM main.sales.orders WHERE id = 4; \
         INSERT INTO main.sales.orders VALUES (4, DATE '2026-01-04', 'US', 40), \
           (5, DATE '2026-01-05', 'EU', 50), (6, DATE '2026-01-02', 'EU', 60); \
         UPDATE main.sales.orders SET amount = 31 WHERE id = 3",
    );
    run(cwd, "recent.sql", "sales");
    assert_eq!(
        sql(cwd, TABLE),
        "id,day,amount\n3,2026-01-03,31\n4,2026-01-04,40\n5,2026-01-05,50\n"
    );

    // A backfill of the older days (the condition changed; the state goes on), then the window
    // moves on and the source keeps only the last days: what left the window stays.
    let backfill = RECENT.replace("day >= DATE '2026-01-03'", "day < DATE '2026-01-03'");
    std::fs::write(cwd.join("recent.sql"), backfill).unwrap();
    sql(cwd, "UPDATE main.sales.orders SET amount = 61 WHERE id = 6");
    run(cwd, "recent.sql", "sales");
    let all = "id,day,amount\n1,2026-01-01,10\n2,2026-01-02,20\n3,2026-01-03,31\n\
               4,2026-01-04,40\n5,2026-01-05,50\n6,2026-01-02,61\n";
    assert_eq!(sql(cwd, TABLE), all);
    let moved = RECENT.replace("2026-01-03", "2026-01-05");
    std::fs::write(cwd.join("recent.sql"), moved).unwrap();
    sql(
        cwd,
        "DELETE FROM main.sales.orders WHERE day < DATE '2026-01-05'; \
         UPDATE main.sales.orders SET amount = 51 WHERE id = 5",
    );
    run(cwd, "recent.sql", "sales");
    let kept = all.replace("5,2026-01-05,50", "5,2026-01-05,51");
    assert_eq!(sql(cwd, TABLE), kept);

    // The change data feed of the last update: the one corrected row.
    let feed = sql(
        cwd,
        "SELECT id, amount, _change_type FROM table_changes('main.sales.recent', 4) \
         ORDER BY _change_type",
    );
    assert_eq!(feed, "id,amount,_change_type\n5,50,delete\n5,51,insert\n");
}

#[test]
fn the_inline_form_evaluates_current_date_at_the_update() {
    // Dates far enough from the window's edge that a run crossing midnight agrees.
    let today = chrono_free_today();
    let day = |back: i64| format!("DATE_ADD(DATE '1970-01-01', {})", today - back);
    let orders = format!(
        "CREATE SCHEMA main.default;
         CREATE TABLE main.default.events (id INT, day DATE);
         INSERT INTO main.default.events VALUES (1, {}), (2, {}), (3, {});",
        day(10),
        day(3),
        day(0)
    );
    let pipeline = "CREATE OR REFRESH STREAMING TABLE last_week
  FLOW REPLACE WHERE day >= date_sub(current_date(), 7) BY NAME
  SELECT * FROM events;";
    let dir = warehouse_with(&[("events.sql", &orders), ("week.sql", pipeline)]);
    let cwd = dir.path();
    run(cwd, "week.sql", "default");
    let ids = "SELECT id FROM main.default.last_week ORDER BY id";
    assert_eq!(sql(cwd, ids), "id\n2\n3\n");
    sql(
        cwd,
        &format!(
            "DELETE FROM main.default.events WHERE id = 3; \
             INSERT INTO main.default.events VALUES (4, {}), (5, {});",
            day(20),
            day(1)
        ),
    );
    run(cwd, "week.sql", "default");
    assert_eq!(sql(cwd, ids), "id\n2\n5\n");
}

/// Days since 1970-01-01 today (UTC), from the system clock.
fn chrono_free_today() -> i64 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    (secs / 86_400) as i64
}

#[test]
fn replace_where_flows_refuse_what_they_cannot_read() {
    let dir = warehouse_with(&[("orders.sql", ORDERS)]);
    let cwd = dir.path();
    for (pipeline, line, message) in [
        (
            "CREATE STREAMING TABLE r;\nCREATE FLOW f AS INSERT INTO r BY NAME\nREPLACE WHERE id > 1 SELECT * FROM STREAM(main.sales.orders);",
            3,
            "a REPLACE WHERE flow reads its table as a batch, whole (FROM main.sales.orders)",
        ),
        (
            "CREATE STREAMING TABLE r;\nCREATE FLOW f AS INSERT INTO r\nREPLACE WHERE id > 1 SELECT * FROM main.sales.orders;",
            3,
            "REPLACE WHERE: BY NAME is required",
        ),
        (
            "CREATE STREAMING TABLE r\nFLOW REPLACE WHERE amount BY NAME SELECT * FROM main.sales.orders;",
            2,
            "REPLACE WHERE: the condition must be BOOLEAN",
        ),
        (
            "CREATE STREAMING TABLE r\nFLOW REPLACE WHERE nope > 1 BY NAME SELECT id FROM main.sales.orders;",
            2,
            "unknown column `nope`",
        ),
        (
            "CREATE STREAMING TABLE r\nFLOW REPLACE WHERE id > 1 BY NAME SELECT * FROM read_files('x.csv');",
            2,
            "read_files(...) is not supported as its source",
        ),
        (
            "CREATE STREAMING TABLE r;\nCREATE FLOW a AS INSERT INTO r BY NAME REPLACE WHERE id > 1 SELECT * FROM main.sales.orders;\nCREATE FLOW b AS INSERT INTO r BY NAME REPLACE WHERE id <= 1 SELECT * FROM main.sales.orders;",
            3,
            "a REPLACE WHERE flow must be the only flow into its target",
        ),
        (
            "CREATE STREAMING TABLE r AS SELECT * FROM STREAM(main.sales.orders) WHERE day > current_date();",
            1,
            "is supported only in a REPLACE WHERE condition",
        ),
    ] {
        std::fs::write(cwd.join("p.sql"), pipeline).unwrap();
        let out = scdflow(cwd, &["run", "p.sql", "--warehouse", "w", "--out", "o"]);
        let error = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{pipeline}: {error}");
        assert!(error.contains(message), "{pipeline}: {error}");
        assert!(error.contains(&format!("p.sql:{line}")), "{pipeline}: {error}");
    }
}

#[test]
fn a_materialized_view_is_its_querys_rows_after_each_update() {
    let view = "CREATE OR REFRESH MATERIALIZED VIEW big_orders\n\
                COMMENT 'orders of 30 or more'\n\
                AS SELECT id, amount FROM main.sales.orders WHERE amount >= 30;";
    let dir = warehouse_with(&[("orders.sql", ORDERS), ("view.sql", view)]);
    let cwd = dir.path();
    run(cwd, "view.sql", "sales");
    let rows = "SELECT * FROM main.sales.big_orders ORDER BY id, amount";
    assert_eq!(sql(cwd, rows), "id,amount\n3,30\n4,40\n4,40\n");
    let described = succeed(
        cwd,
        &["check", "view.sql", "--warehouse", "w", "--schema", "sales"],
    );
    assert!(described.contains("MATERIALIZED VIEW"), "{described}");

    sql(
        cwd,
        "UPDATE main.sales.orders SET amount = 35 WHERE id = 1; \
         DELETE FROM main.sales.orders WHERE id = 3",
    );
    run(cwd, "view.sql", "sales");
    assert_eq!(sql(cwd, rows), "id,amount\n1,35\n4,40\n4,40\n");
    // Only what changed is written: the unchanged orders are in no change of the update.
    let feed = sql(
        cwd,
        "SELECT id, _change_type FROM table_changes('main.sales.big_orders', 2) ORDER BY id",
    );
    assert_eq!(feed, "id,_change_type\n1,insert\n3,delete\n");
}

//! `UPDATE`, `DELETE` and `TRUNCATE TABLE` through `scdflow sql`: each changing statement one
//! Delta version with exactly its rows changed, a statement that matches nothing no version,
//! and every refusal (bad column, type, predicate, append-only table, a row that fails) leaving
//! the table as it was. A stream over a table that was updated names the version it cannot read;
//! a snapshot flow over a table (seed 000's periodic snapshots) takes each new version whole.

use crate::durable::{scdflow, stderr, succeed};
use crate::warehouse::{sql, warehouse, warehouse_with};
use std::path::Path;

/// `scdflow run PIPELINE` in the seed's schema, its outputs in `out`.
fn run_in_schema(cwd: &Path, pipeline: &str) -> std::process::Output {
    let args = [
        "--warehouse",
        "w",
        "--schema",
        "cdc_tutorial",
        "--out",
        "out",
    ];
    scdflow(cwd, &[&["run", pipeline][..], &args].concat())
}

/// The versions in a table's log.
fn versions(table: &Path) -> usize {
    std::fs::read_dir(table.join("_delta_log"))
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().ends_with(".json")
        })
        .count()
}

#[test]
fn update_delete_and_truncate_change_exactly_their_rows_one_version_each() {
    let dir = warehouse();
    let table = dir.path().join("w/main/cdc_tutorial/t");
    sql(
        dir.path(),
        "CREATE TABLE main.cdc_tutorial.t (id INT, name STRING, score DOUBLE) \
         TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true'); \
         INSERT INTO main.cdc_tutorial.t VALUES (1, 'a', 1.5), (2, 'b', NULL), (3, 'c', 3.0); \
         INSERT INTO main.cdc_tutorial.t VALUES (4, 'd', 4.0)",
    );
    assert_eq!(versions(&table), 3);
    let select = "SELECT * FROM main.cdc_tutorial.t ORDER BY id";
    // A NULL predicate matches nothing; an integer goes into a DOUBLE column.
    let out = sql(
        dir.path(),
        "UPDATE main.cdc_tutorial.t SET score = 10, name = upper(name) WHERE score > 2",
    );
    assert_eq!(
        out, "updated 2 rows of main.cdc_tutorial.t (version 3)\n",
        "{out}"
    );
    assert_eq!(
        sql(dir.path(), select),
        "id,name,score\n1,a,1.5\n2,b,\n3,C,10.0\n4,D,10.0\n"
    );
    let out = sql(dir.path(), "DELETE FROM main.cdc_tutorial.t WHERE id = 99");
    assert!(out.contains("deleted no row"), "{out}");
    assert_eq!(
        versions(&table),
        4,
        "a statement matching nothing commits nothing"
    );
    sql(
        dir.path(),
        "DELETE FROM main.cdc_tutorial.t WHERE name = 'a'",
    );
    assert_eq!(
        sql(dir.path(), select),
        "id,name,score\n2,b,\n3,C,10.0\n4,D,10.0\n"
    );
    // The change data feed holds each version's changes.
    let feed = std::fs::read_dir(table.join("_change_data"))
        .unwrap()
        .count();
    assert_eq!(feed, 2, "one change-data file per UPDATE and DELETE");
    let out = sql(dir.path(), "TRUNCATE TABLE main.cdc_tutorial.t");
    assert_eq!(out, "truncated 3 rows of main.cdc_tutorial.t (version 5)\n");
    assert_eq!(sql(dir.path(), select), "id,name,score\n");
    // The table goes on: rows inserted after a TRUNCATE are all there is.
    sql(
        dir.path(),
        "INSERT INTO main.cdc_tutorial.t VALUES (7, 'g', 7.0)",
    );
    assert_eq!(sql(dir.path(), select), "id,name,score\n7,g,7.0\n");
}

#[test]
fn refused_statements_name_why_and_leave_the_table_as_it_was() {
    let dir = warehouse();
    let table = dir.path().join("w/main/cdc_tutorial/t");
    sql(
        dir.path(),
        "CREATE TABLE main.cdc_tutorial.t (id INT, big BIGINT); \
         INSERT INTO main.cdc_tutorial.t VALUES (1, 10), (2, 3000000000); \
         CREATE TABLE main.cdc_tutorial.log (id INT) \
         TBLPROPERTIES ('delta.appendOnly' = 'true'); \
         INSERT INTO main.cdc_tutorial.log VALUES (1)",
    );
    let before = versions(&table);
    for (statement, says) in [
        (
            "UPDATE main.cdc_tutorial.t SET nope = 1",
            "has no column `nope`",
        ),
        ("UPDATE main.cdc_tutorial.t SET id = 'x'", "CAST it"),
        (
            "UPDATE main.cdc_tutorial.t SET id = 1, id = 2",
            "assigned twice",
        ),
        (
            "DELETE FROM main.cdc_tutorial.t WHERE id + 1",
            "not BOOLEAN",
        ),
        // The second row's BIGINT does not fit the INT column: no version at all.
        (
            "UPDATE main.cdc_tutorial.t SET id = big",
            "cannot cast 3000000000 to INT",
        ),
        ("DELETE FROM main.cdc_tutorial.log", "append-only"),
        ("TRUNCATE TABLE main.cdc_tutorial.nope", "does not exist"),
        (
            "UPDATE main.cdc_tutorial.t SET id = 1 FROM main.cdc_tutorial.log",
            "UPDATE ... FROM",
        ),
    ] {
        let text = format!("SELECT 1;\n{statement}");
        let out = scdflow(dir.path(), &["sql", "--warehouse", "w", &text]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{statement}: {err}");
        assert!(err.contains(says), "{statement}: {err}");
        assert!(
            err.contains(":2:") || err.contains("line 2"),
            "{statement}: {err}"
        );
        assert_eq!(versions(&table), before, "{statement}");
    }
    assert_eq!(
        sql(dir.path(), "SELECT * FROM main.cdc_tutorial.t ORDER BY id"),
        "id,big\n1,10\n2,3000000000\n"
    );
    sql(
        dir.path(),
        "TRUNCATE TABLE IF EXISTS main.cdc_tutorial.nope",
    );
}

#[test]
fn a_stream_names_the_update_it_cannot_read_as_an_append() {
    let dir = warehouse();
    sql(
        dir.path(),
        "UPDATE main.cdc_tutorial.users_cdf SET city = 'Puebla' WHERE userId = 124",
    );
    let out = run_in_schema(dir.path(), "scd1.sql");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("version 1 of main.cdc_tutorial.users_cdf"),
        "{err}"
    );
    assert!(err.contains("UPDATE"), "{err}");
}

const SNAPSHOT_DATA: &str = include_str!("../../dataflows/warehouse/snapshot_data.sql");
const SNAPSHOT_NEXT: &str = include_str!("../../dataflows/warehouse/snapshot_next.sql");
const SNAPSHOT_SCD2: &str = include_str!("../../dataflows/warehouse/snapshot_scd2.sql");

/// Seed 000's SCD2 snapshot flow without its `WITH VERSION` clause: periodic snapshots.
fn periodic() -> String {
    crate::snapshot_versions::with_clause(SNAPSHOT_SCD2, "")
}

/// A warehouse holding seed 000's snapshot sample data (step 1) and the periodic SCD2
/// snapshot flow.
fn snapshots() -> tempfile::TempDir {
    warehouse_with(&[
        ("data.sql", SNAPSHOT_DATA),
        ("next.sql", SNAPSHOT_NEXT),
        ("p.sql", &periodic()),
    ])
}

fn run_snapshots(cwd: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "run",
        "p.sql",
        "--warehouse",
        "w",
        "--schema",
        "cdc_tutorial",
    ];
    args.extend_from_slice(extra);
    succeed(cwd, &args)
}

const TARGET: &str = "SELECT * FROM main.cdc_tutorial.target ORDER BY userId, __START_AT";

#[test]
fn a_snapshot_flow_takes_each_new_version_of_a_table_the_seeds_statements_change() {
    let dir = snapshots();
    let durable = ["--state", "st", "--out", "o"];
    run_snapshots(dir.path(), &durable);
    assert_eq!(
        sql(dir.path(), TARGET),
        "userId,city,__START_AT,__END_AT\n1,Oaxaca,1,\n2,Monterrey,1,\n3,Tijuana,1,\n"
    );
    // No new version: no new snapshot (a second snapshot of the same rows would change nothing
    // either, but it would take a commit).
    let out = run_snapshots(dir.path(), &durable);
    assert!(out.contains("no new input"), "{out}");
    // The seed's step 3, verbatim: TRUNCATE, INSERT, UPDATE. The run takes the table's newest
    // version as one snapshot and gets the seed's history, versioned by commit number (the
    // seed's WITH VERSION query gives 0, 1: tests/integration/snapshot_versions.rs).
    succeed(dir.path(), &["sql", "--warehouse", "w", "-f", "next.sql"]);
    run_snapshots(dir.path(), &durable);
    assert_eq!(
        sql(dir.path(), TARGET),
        "userId,city,__START_AT,__END_AT\n\
         1,Oaxaca,1,2\n\
         2,Monterrey,1,2\n\
         2,Carmel,2,\n\
         3,Tijuana,1,2\n\
         3,Los Angeles,2,\n\
         4,Death Valley,2,\n\
         6,Kings Canyon,2,\n"
    );
    // A plain run takes the table as it is now: one snapshot.
    run_snapshots(dir.path(), &["--out", "plain"]);
    assert_eq!(
        sql(dir.path(), TARGET),
        "userId,city,__START_AT,__END_AT\n\
         2,Carmel,1,\n\
         3,Los Angeles,1,\n\
         4,Death Valley,1,\n\
         6,Kings Canyon,1,\n"
    );
}

#[test]
fn a_table_read_both_as_a_stream_and_as_snapshots_is_refused() {
    let dir = snapshots();
    let both = format!(
        "{}\nCREATE OR REFRESH STREAMING TABLE cities;\n\
         CREATE FLOW f AS AUTO CDC INTO cities FROM STREAM(main.cdc_tutorial.snapshot)\n\
         KEYS (userId) SEQUENCE BY userId STORED AS SCD TYPE 1;\n",
        periodic()
    );
    std::fs::write(dir.path().join("p.sql"), both).unwrap();
    let out = run_in_schema(dir.path(), "p.sql");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("in two ways"), "{err}");
}

#[test]
fn merge_updates_deletes_and_inserts_in_one_version_with_its_change_feed() {
    let dir = warehouse();
    let cwd = dir.path();
    sql(
        cwd,
        "CREATE TABLE main.cdc_tutorial.stock (id INT, item STRING, qty INT) \
         TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true'); \
         INSERT INTO main.cdc_tutorial.stock VALUES \
         (1, 'pen', 10), (2, 'ink', 0), (3, 'pad', 5), (4, 'cap', 7)",
    );
    // Every clause kind, with conditions and both sides' columns, the source a VALUES list.
    let out = sql(
        cwd,
        "MERGE INTO main.cdc_tutorial.stock AS t \
         USING (SELECT * FROM VALUES (1, 5), (2, 0), (5, 3), (6, 0) AS v(id, delta)) AS s \
         ON t.id = s.id \
         WHEN MATCHED AND s.delta = 0 THEN DELETE \
         WHEN MATCHED THEN UPDATE SET qty = t.qty + s.delta \
         WHEN NOT MATCHED AND delta > 0 THEN INSERT (id, item, qty) VALUES (s.id, 'new', delta) \
         WHEN NOT MATCHED BY SOURCE AND t.qty > 6 THEN UPDATE SET qty = 0",
    );
    assert_eq!(
        out,
        "merged into main.cdc_tutorial.stock: 2 rows updated, 1 deleted, 1 inserted (version 2)\n"
    );
    let select = "SELECT * FROM main.cdc_tutorial.stock ORDER BY id";
    assert_eq!(
        sql(cwd, select),
        "id,item,qty\n1,pen,15\n3,pad,5\n4,cap,0\n5,new,3\n"
    );
    let feed = sql(
        cwd,
        "SELECT id, qty, _change_type FROM table_changes('main.cdc_tutorial.stock', 2) \
         ORDER BY id, _change_type",
    );
    assert_eq!(
        feed,
        "id,qty,_change_type\n1,15,update_postimage\n1,10,update_preimage\n2,0,delete\n\
         4,0,update_postimage\n4,7,update_preimage\n5,3,insert\n"
    );

    // `UPDATE SET *` and `INSERT *` (every column, by name from the source), a table source.
    sql(
        cwd,
        "CREATE TABLE main.cdc_tutorial.delivery AS SELECT * FROM VALUES \
         (3, 'pad', 50), (9, 'clip', 90) AS v(id, item, qty)",
    );
    sql(
        cwd,
        "MERGE INTO main.cdc_tutorial.stock USING main.cdc_tutorial.delivery d \
         ON stock.id = d.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    );
    assert_eq!(
        sql(cwd, select),
        "id,item,qty\n1,pen,15\n3,pad,50\n4,cap,0\n5,new,3\n9,clip,90\n"
    );

    // Without an equality the pairs are all tried; a condition with no match changes nothing.
    let out = sql(
        cwd,
        "MERGE INTO main.cdc_tutorial.stock t USING main.cdc_tutorial.delivery d \
         ON t.qty > d.qty + 1000 WHEN MATCHED THEN DELETE",
    );
    assert!(out.starts_with("merged no row into"), "{out}");

    // Refusals change nothing: a target row several source rows would change, an unknown
    // column, `*` where the source lacks a target column, a text value into a number.
    for (statement, why) in [
        (
            "MERGE INTO main.cdc_tutorial.stock t USING main.cdc_tutorial.delivery d \
             ON t.qty < d.qty WHEN MATCHED THEN UPDATE SET qty = 1",
            "rows of the source match one row of main.cdc_tutorial.stock",
        ),
        (
            "MERGE INTO main.cdc_tutorial.stock t USING main.cdc_tutorial.delivery d \
             ON t.id = d.id WHEN MATCHED THEN UPDATE SET price = 1",
            "the target has no column `price`",
        ),
        (
            "MERGE INTO main.cdc_tutorial.stock t \
             USING (SELECT id FROM main.cdc_tutorial.delivery) d \
             ON t.id = d.id WHEN NOT MATCHED THEN INSERT *",
            "INSERT *: the source has no column `item`",
        ),
        (
            "MERGE INTO main.cdc_tutorial.stock t USING main.cdc_tutorial.delivery d \
             ON t.id = d.id WHEN MATCHED THEN UPDATE SET qty = d.item",
            "column `qty` is INT",
        ),
    ] {
        let out = scdflow(cwd, &["sql", "--warehouse", "w", statement]);
        assert_eq!(out.status.code(), Some(2), "{statement}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{statement}: {}", stderr(&out));
    }
    assert_eq!(
        sql(cwd, select),
        "id,item,qty\n1,pen,15\n3,pad,50\n4,cap,0\n5,new,3\n9,clip,90\n"
    );
}

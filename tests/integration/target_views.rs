//! Materialized views over a target of their own pipeline, through the binary: after every
//! commit each view holds its query's rows of the SCD2 target — in a plain run on two workers,
//! a durable run fed one file per step (and rewound), and published in a warehouse as Delta
//! tables with their own change data feed, where DML on a view, or on the target they are kept
//! from, is refused.

use crate::durable::{scdflow, stderr, succeed};
use crate::target_feeds::{plain_then_per_file, workload};
use crate::warehouse::sql;
use std::path::Path;

/// The current rows (renamed and computed columns), the whole history, and a view of a view.
const VIEWS: &str = "
CREATE MATERIALIZED VIEW current_rows AS
SELECT k, UPPER(c0) AS c0, __START_AT AS since FROM scd2 WHERE __END_AT IS NULL;

CREATE MATERIALIZED VIEW history AS SELECT * FROM scd2;

CREATE MATERIALIZED VIEW current_v3 AS SELECT * FROM current_rows WHERE c0 LIKE 'V3%';
";

/// A CSV table's data lines (no quoting in these tables), sorted.
fn sorted(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().skip(1).map(str::to_string).collect();
    lines.sort();
    lines
}

/// What the views must hold, from the SCD2 table's rows (`k,c0,c1,__START_AT,__END_AT`):
/// `(current_rows, history, current_v3)`, sorted.
fn expected(scd2: &str) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut current = Vec::new();
    for line in scd2.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f[4].is_empty() {
            current.push(format!("{},{},{}", f[0], f[1].to_uppercase(), f[3]));
        }
    }
    current.sort();
    let v3 = (current.iter())
        .filter(|l| l.split(',').nth(1).is_some_and(|c| c.starts_with("V3")))
        .cloned()
        .collect();
    (current, sorted(scd2), v3)
}

fn assert_views(out: &Path) {
    let read = |name: &str| std::fs::read_to_string(out.join(format!("{name}.csv"))).unwrap();
    let (current, history, v3) = expected(&read("scd2"));
    assert!(current.len() > 50 && !v3.is_empty(), "{}", current.len());
    assert_eq!(sorted(&read("current_rows")), current);
    assert_eq!(sorted(&read("history")), history);
    assert_eq!(sorted(&read("current_v3")), v3);
}

#[test]
fn views_over_a_target_follow_it_plain_durable_and_rewound() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    workload(cwd, "9", "views", VIEWS);
    let run = plain_then_per_file(cwd, "p/views.sql", assert_views);
    // A version that closes leaves the current rows (a delete), its successor enters them.
    let feed = std::fs::read_to_string(cwd.join("plain/current_rows.changes.csv")).unwrap();
    assert!(feed.contains(",delete,2,") && feed.contains(",insert,2,"));
    let read = |path: &str| std::fs::read_to_string(cwd.join(path)).unwrap();
    assert_eq!(
        sorted(&read("o/current_rows.csv")),
        sorted(&read("plain/current_rows.csv"))
    );
    let oldest = crate::rewind::retained(&cwd.join("st"))[0];
    assert!(oldest < 4, "{oldest}");
    let to = oldest.to_string();
    let rewind = [
        "rewind",
        "p/views.sql",
        "--state",
        "st",
        "--out",
        "o",
        "--to",
        &to,
    ];
    let out = succeed(cwd, &rewind);
    assert!(out.contains(&format!("state: at commit {oldest}")), "{out}");
    assert_views(&cwd.join("o"));
    succeed(cwd, &run);
    assert_views(&cwd.join("o"));
    assert_eq!(
        sorted(&read("o/current_v3.csv")),
        sorted(&read("plain/current_v3.csv"))
    );
}

#[test]
fn published_views_have_their_own_feed_and_take_no_dml() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    workload(cwd, "9", "views", VIEWS);
    crate::target_feeds::publish_four(cwd, "p/views.sql");
    let scd2 = sql(cwd, "SELECT * FROM main.s.scd2");
    let (current, history, v3) = expected(&scd2);
    assert_eq!(
        sorted(&sql(cwd, "SELECT * FROM main.s.current_rows")),
        current
    );
    assert_eq!(sorted(&sql(cwd, "SELECT * FROM main.s.history")), history);
    assert_eq!(sorted(&sql(cwd, "SELECT * FROM main.s.current_v3")), v3);
    // Each commit is one version of each view, made in the same commit as the target's.
    let versions = sql(
        cwd,
        "SELECT _commit_version FROM table_changes('main.s.current_rows', 1)",
    );
    let mut versions: Vec<&str> = versions.lines().skip(1).collect();
    versions.dedup();
    assert_eq!(versions, ["1", "2", "3", "4"]);

    let err = refused_sql(cwd, "DELETE FROM main.s.current_rows WHERE k = 1");
    assert!(err.contains("materialized view"), "{err}");
    // An edit of the target would not reach the views kept from its feed: refused, naming them.
    let err = refused_sql(cwd, "DELETE FROM main.s.scd2 WHERE k = 1");
    assert!(
        err.contains("current_rows, history, current_v3") && err.contains("would not reach"),
        "{err}"
    );
}

/// The error of `statement`, which `scdflow sql` must refuse.
fn refused_sql(cwd: &Path, statement: &str) -> String {
    let out = scdflow(cwd, &["sql", "--warehouse", "w", statement]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

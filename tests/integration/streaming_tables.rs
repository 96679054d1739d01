//! A pipeline's streaming tables published in the warehouse, as Lakeflow publishes them: each
//! commit's rows appended as one Delta version (plain, durable, rewound and in a cluster),
//! readable as a table and as a change data feed of inserts; DML on one is refused.

use crate::durable::{scdflow, stderr, succeed};
use crate::warehouse::sql;
use std::path::Path;

/// A bronze table of the files in `in/` and an SCD2 target kept from it.
const PIPELINE: &str = "\
CREATE STREAMING TABLE bronze (CONSTRAINT known EXPECT (v IS NOT NULL) ON VIOLATION DROP ROW)
  AS SELECT id, v, seq FROM STREAM read_files('in', format => 'csv') WHERE id > 0;
CREATE STREAMING TABLE silver;
CREATE FLOW f AS AUTO CDC INTO silver FROM STREAM(bronze) KEYS (id) SEQUENCE BY seq
  STORED AS SCD TYPE 2;
";

/// Input file `n` (`in/f<n>.csv`): keys `n` and `10 + n`, a row the table's filter drops and
/// one its expectation drops.
fn arrive(cwd: &Path, n: u32) {
    let text = format!(
        "id,v,seq\n{n},a{n},{n}\n{},b{n},{n}\n-1,x,1\n7,,1\n",
        10 + n
    );
    std::fs::write(cwd.join(format!("in/f{n}.csv")), text).unwrap();
}

/// A warehouse `w` with schema `main.default`, the pipeline `p.sql` and `files` input files.
fn setup(files: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    std::fs::create_dir_all(cwd.join("w")).unwrap();
    std::fs::create_dir_all(cwd.join("in")).unwrap();
    std::fs::write(cwd.join("p.sql"), PIPELINE).unwrap();
    (1..=files).for_each(|n| arrive(cwd, n));
    succeed(
        cwd,
        &["sql", "--warehouse", "w", "CREATE SCHEMA main.default"],
    );
    dir
}

/// The published table's rows, sorted.
fn rows(cwd: &Path, table: &str) -> String {
    sql(cwd, &format!("SELECT * FROM {table} ORDER BY id, seq"))
}

/// What `files` input files make of `bronze`, sorted.
fn bronze_of(files: u32) -> String {
    let mut rows: Vec<(u32, String)> = (1..=files)
        .flat_map(|n| {
            [
                (n, format!("{n},a{n},{n}")),
                (10 + n, format!("{},b{n},{n}", 10 + n)),
            ]
        })
        .collect();
    rows.sort();
    let lines: String = rows.into_iter().map(|(_, l)| l + "\n").collect();
    format!("id,v,seq\n{lines}")
}

/// `bronze`'s change data feed: per version, its rows' ids and change types.
fn feed(cwd: &Path) -> String {
    sql(
        cwd,
        "SELECT _commit_version, _change_type, id FROM table_changes('bronze', 1) \
         ORDER BY _commit_version, id",
    )
}

#[test]
fn a_plain_run_publishes_each_streaming_table_with_every_commits_rows() {
    let dir = setup(2);
    let cwd = dir.path();
    let run = ["run", "p.sql", "--warehouse", "w", "--out", "o"];
    let out = succeed(cwd, &run);
    assert!(
        out.contains("bronze: 4 rows -> w/main/default/bronze"),
        "{out}"
    );
    assert!(
        out.contains("silver: 4 rows -> w/main/default/silver"),
        "{out}"
    );
    assert_eq!(rows(cwd, "bronze"), bronze_of(2));
    assert_eq!(
        feed(cwd),
        "_commit_version,_change_type,id\n1,insert,1\n1,insert,11\n2,insert,2\n2,insert,12\n"
    );
    // Marked as a pipeline's table, so a run replaces it, and with a feed of its own.
    let shown = sql(cwd, "SHOW TBLPROPERTIES bronze");
    assert!(shown.contains("scdflow.appends,true"), "{shown}");
    assert!(shown.contains("delta.enableChangeDataFeed,true"), "{shown}");
    // A plain run publishes afresh, as a full refresh does: the same table, not twice the rows.
    arrive(cwd, 3);
    succeed(cwd, &run);
    assert_eq!(rows(cwd, "bronze"), bronze_of(3));
    // DML on a streaming table is refused, changing nothing.
    let out = scdflow(
        cwd,
        &["sql", "--warehouse", "w", "DELETE FROM bronze WHERE id = 1"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is streaming table `bronze` of a pipeline, which appends"),
        "{}",
        stderr(&out)
    );
    assert_eq!(rows(cwd, "bronze"), bronze_of(3));
}

#[test]
fn durable_runs_append_each_new_commit_and_a_rewind_returns_the_table() {
    let dir = setup(1);
    let cwd = dir.path();
    let durable = ["p.sql", "--warehouse", "w", "--state", "st", "--out", "o"];
    let run = [&["run"][..], &durable].concat();
    succeed(cwd, &run);
    for n in 2..=4 {
        arrive(cwd, n);
        let out = succeed(cwd, &run);
        assert!(out.contains(&format!("bronze: {} rows", 2 * n)), "{out}");
    }
    assert_eq!(rows(cwd, "bronze"), bronze_of(4));
    let four = "_commit_version,_change_type,id\n1,insert,1\n1,insert,11\n2,insert,2\n\
                2,insert,12\n3,insert,3\n3,insert,13\n4,insert,4\n4,insert,14\n";
    assert_eq!(feed(cwd), four);
    // Nothing new: no version.
    succeed(cwd, &run);
    assert_eq!(feed(cwd), four);
    // Back to the oldest commit the state retains: one version removes the later rows.
    let to = crate::rewind::retained(&cwd.join("st"))[0];
    assert!(to < 4, "the state retains only its last commit");
    let to_arg = to.to_string();
    let rewind = [&["rewind"][..], &durable, &["--to", &to_arg]].concat();
    let out = succeed(cwd, &rewind);
    let undone = format!(
        "bronze: Delta version 5 returns it to commit {to} ({} rows deleted, 0 inserted)",
        2 * (4 - to)
    );
    assert!(out.contains(&undone), "{out}");
    assert_eq!(rows(cwd, "bronze"), bronze_of(to as u32));
    // The next run reads the later files again, as the same commits.
    succeed(cwd, &run);
    assert_eq!(rows(cwd, "bronze"), bronze_of(4));
    // A step of two commits makes one version of each (the next step's version follows them).
    arrive(cwd, 5);
    arrive(cwd, 6);
    succeed(cwd, &run);
    arrive(cwd, 7);
    succeed(cwd, &run);
    assert_eq!(rows(cwd, "bronze"), bronze_of(7));
    let last: Vec<String> = (feed(cwd).lines().rev().take(6))
        .map(|line| line.split(',').map(str::to_string).collect::<Vec<_>>()[2].clone())
        .collect();
    assert_eq!(last, ["17", "7", "16", "6", "15", "5"]);
    let versions: Vec<u64> = (feed(cwd).lines().skip(1))
        .map(|line| line.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(
        versions.windows(2).all(|w| w[1] <= w[0] + 1),
        "{versions:?}"
    );
    let plain = setup(7);
    succeed(
        plain.path(),
        &["run", "p.sql", "--warehouse", "w", "--out", "o"],
    );
    assert_eq!(rows(cwd, "silver"), rows(plain.path(), "silver"));
}

#[test]
fn a_cluster_publishes_every_processs_share_from_process_0() {
    use crate::cluster::{finish, hostfile, member};
    let dir = setup(4);
    let cwd = dir.path();
    let at = |name: &str| cwd.join(name).to_str().unwrap().to_string();
    let hosts = hostfile(cwd);
    let extra = ["--warehouse", &at("w"), "--split-files-over", "1"];
    let first = member(&at("p.sql"), &at("o0"), "0", &hosts, &extra);
    let second = member(&at("p.sql"), &at("o1"), "1", &hosts, &extra);
    finish(first, "process 0");
    finish(second, "process 1");
    assert_eq!(rows(cwd, "bronze"), bronze_of(4));
    assert_eq!(
        sql(
            cwd,
            "SELECT _commit_version, id FROM table_changes('bronze', 1) ORDER BY _commit_version, id",
        ),
        "_commit_version,id\n1,1\n1,11\n2,2\n2,12\n3,3\n3,13\n4,4\n4,14\n"
    );
}

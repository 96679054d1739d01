//! `--follow` woken by its input directories: with a poll of an hour, new files, appended lines,
//! a file renamed in and a new version of a Delta source are each committed at once (within
//! `wait_for`'s minute, which no poll reaches).

use crate::durable::{append, feed, kv_file, kv_sql, logged, stop_following, versions, wait_for};
use crate::warehouse::{durable, sql, warehouse};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `scdflow ARGS --follow --poll 3600` in `cwd`.
fn following(cwd: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_scdflow"))
        .args(args)
        .args(["--follow", "--poll", "3600"])
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn new_files_lines_and_renames_wake_a_follower_that_polls_hourly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("pipeline.sql"), kv_sql("k", 1)).unwrap();
    kv_file(d, "b1.csv", &["1,a,U,1"]);
    let child = following(
        d,
        &["run", "pipeline.sql", "--state", "state", "--out", "out"],
    );
    let feed_path = d.join("out/t.changes.csv");
    let commits = |n: u64| {
        let path = feed_path.clone();
        move || path.exists() && versions(&feed(&path)).last() == Some(&n)
    };
    wait_for("commit 1", commits(1));
    kv_file(d, "b2.csv", &["2,b,U,1"]);
    wait_for("commit 2, a new file", commits(2));
    append(&d.join("data/b2.csv"), "3,c,U,1\n");
    wait_for("commit 3, an appended line", commits(3));
    std::fs::write(d.join("data/.incoming"), "k,v,op,seq\n4,d,U,1\n").unwrap();
    std::fs::rename(d.join("data/.incoming"), d.join("data/b3.csv")).unwrap();
    wait_for("commit 4, a file renamed in", commits(4));
    let err = stop_following(child);
    assert!(
        err.contains("(1 directory watched, polled every 3600s;"),
        "{err}"
    );
    let keys: Vec<String> = feed(&feed_path).into_values().flatten().collect();
    assert_eq!(keys.len(), 4, "{keys:?}");
}

#[test]
fn a_new_version_of_a_delta_source_wakes_a_follower() {
    let dir = warehouse();
    let cwd = dir.path();
    let child = following(cwd, &durable("scd1.sql"));
    let log = cwd.join("w/main/cdc_tutorial/users_current/_delta_log");
    wait_for("the first commit's version", logged(&log, 1));
    sql(
        cwd,
        "INSERT INTO main.cdc_tutorial.users_cdf VALUES (127, 'Ana', 'Puebla', 'INSERT', 7)",
    );
    wait_for("the version of the source's new version", logged(&log, 2));
    stop_following(child);
    let ana = sql(
        cwd,
        "SELECT name, city FROM main.cdc_tutorial.users_current WHERE userId = 127",
    );
    assert_eq!(ana, "name,city\nAna,Puebla\n");
}

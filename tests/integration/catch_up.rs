//! A durable run publishing Delta tables puts a step's versions in the logs before it commits
//! its state; a crash between the two leaves tables that hold commits the state does not.
//! Simulated here by putting back the state directory from before the step: the next run
//! applies those commits again, reading exactly what they read (up to the recorded byte of a
//! file that has grown since), publishes none of them twice, and goes on with the rest; an
//! input that no longer reads the same is refused, naming the table's version and the file.

use crate::durable::{scdflow, stderr, succeed};
use crate::rewind::{arrive, copy_dir, workload};
use crate::warehouse::{sql, warehouse_with};
use std::path::Path;

const RUN: [&str; 8] = [
    "run",
    "p/scd2.sql",
    "--state",
    "st",
    "--out",
    "o",
    "--warehouse",
    "w",
];
const TABLE: &str = "SELECT * FROM main.default.scd2 ORDER BY k, __START_AT";
const LOG: &str = "w/main/default/scd2/_delta_log";

/// A warehouse with the generated workload of `rewind`, its pipeline in `p`.
fn setup() -> tempfile::TempDir {
    let dir = warehouse_with(&[("schema.sql", "CREATE SCHEMA main.default")]);
    workload(dir.path());
    dir
}

/// The scdflow commits of the published table's versions, in version order.
fn commits(cwd: &Path) -> Vec<u64> {
    let mut entries: Vec<_> = std::fs::read_dir(cwd.join(LOG))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    entries.sort();
    let txn = |line: &str| -> Option<u64> {
        let action: serde_json::Value = serde_json::from_str(line).ok()?;
        action["txn"]["version"].as_u64()
    };
    (entries.iter())
        .filter_map(|p| std::fs::read_to_string(p).unwrap().lines().find_map(txn))
        .collect()
}

/// Appends the rows (no header) of generated commit file `n` to the pipeline's file `to`.
fn grow(cwd: &Path, to: usize, n: usize) {
    let rows = std::fs::read_to_string(cwd.join(format!("g/events/commit_{n:06}.csv"))).unwrap();
    let rows = rows.split_once('\n').unwrap().1;
    let path = cwd.join(format!("p/events/commit_{to:06}.csv"));
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(rows);
    std::fs::write(path, text).unwrap();
}

/// Runs commit 1, then commit 2 with the state from before it put back afterwards, as a crash
/// between the step's versions and its manifest leaves it.
fn lose_commit_2(cwd: &Path) {
    arrive(cwd, 1);
    succeed(cwd, &RUN);
    copy_dir(&cwd.join("st"), &cwd.join("st.before"));
    arrive(cwd, 2);
    succeed(cwd, &RUN);
    std::fs::remove_dir_all(cwd.join("st")).unwrap();
    std::fs::rename(cwd.join("st.before"), cwd.join("st")).unwrap();
}

#[test]
fn a_state_that_lost_published_commits_applies_them_again_without_publishing_them_twice() {
    // The same arrivals without the loss, for reference.
    let reference = setup();
    let (want, want_commits) = {
        let cwd = reference.path();
        arrive(cwd, 1);
        succeed(cwd, &RUN);
        arrive(cwd, 2);
        succeed(cwd, &RUN);
        grow(cwd, 2, 4);
        arrive(cwd, 3);
        let out = succeed(cwd, &RUN);
        assert!(out.contains("state: 4 commits"), "{out}");
        (sql(cwd, TABLE), commits(cwd))
    };
    assert_eq!(want_commits, [1, 2, 3, 4]);

    let dir = setup();
    let cwd = dir.path();
    lose_commit_2(cwd);
    assert_eq!(
        commits(cwd),
        [1, 2],
        "the table holds commit 2, the state does not"
    );
    // Since the loss, commit 2's file has grown and a new file has come.
    grow(cwd, 2, 4);
    arrive(cwd, 3);
    let out = succeed(cwd, &RUN);
    assert!(out.contains("state: 4 commits"), "{out}");
    assert_eq!(commits(cwd), want_commits, "each commit once");
    assert_eq!(sql(cwd, TABLE), want);
    let out = succeed(cwd, &RUN);
    assert!(out.contains("no new input"), "{out}");
    assert_eq!(commits(cwd), want_commits);
}

#[test]
fn a_lost_commit_whose_input_changed_is_refused_until_the_input_is_back() {
    let dir = setup();
    let cwd = dir.path();
    lose_commit_2(cwd);
    let file = cwd.join("p/events/commit_000002.csv");
    let kept = std::fs::read(&file).unwrap();
    // One byte of its last line changed.
    let mut changed = kept.clone();
    let at = changed.len() - 2;
    changed[at] = if changed[at] == b'1' { b'2' } else { b'1' };
    std::fs::write(&file, &changed).unwrap();
    let out = scdflow(cwd, &RUN);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("holds commit 2") && err.contains("commit_000002.csv"),
        "{err}"
    );
    assert!(err.contains("reads differently now"), "{err}");
    assert_eq!(commits(cwd), [1, 2], "nothing published");
    // Gone, it is refused as well.
    std::fs::remove_file(&file).unwrap();
    let err = stderr(&scdflow(cwd, &RUN));
    assert!(err.contains("not there to read now"), "{err}");
    std::fs::write(&file, &kept).unwrap();
    let out = succeed(cwd, &RUN);
    assert!(out.contains("state: 2 commits"), "{out}");
    assert_eq!(commits(cwd), [1, 2]);
}

#[test]
fn a_first_step_that_published_and_lost_its_state_is_caught_up_with() {
    let dir = setup();
    let cwd = dir.path();
    // A state with no commit yet: the manifest it starts with.
    let out = succeed(cwd, &RUN);
    assert!(out.contains("no new input"), "{out}");
    copy_dir(&cwd.join("st"), &cwd.join("st.fresh"));
    arrive(cwd, 1);
    succeed(cwd, &RUN);
    let want = sql(cwd, TABLE);
    std::fs::remove_dir_all(cwd.join("st")).unwrap();
    std::fs::rename(cwd.join("st.fresh"), cwd.join("st")).unwrap();
    let out = succeed(cwd, &RUN);
    assert!(out.contains("state: 1 commits"), "{out}");
    assert_eq!(commits(cwd), [1]);
    assert_eq!(sql(cwd, TABLE), want);
}

#[test]
fn an_edit_made_after_the_loss_waits_until_the_state_has_caught_up() {
    const EDIT: &str = "DELETE FROM main.default.scd2 WHERE k < 100";
    let reference = setup();
    let want = {
        let cwd = reference.path();
        arrive(cwd, 1);
        succeed(cwd, &RUN);
        arrive(cwd, 2);
        succeed(cwd, &RUN);
        sql(cwd, EDIT);
        arrive(cwd, 3);
        succeed(cwd, &RUN);
        sql(cwd, TABLE)
    };
    let dir = setup();
    let cwd = dir.path();
    lose_commit_2(cwd);
    let before = sql(cwd, TABLE);
    sql(cwd, EDIT);
    assert_ne!(sql(cwd, TABLE), before, "the edit removed rows");
    arrive(cwd, 3);
    // The first run only catches up: the edit came after commit 2, before commit 3.
    let out = succeed(cwd, &RUN);
    assert!(out.contains("state: 2 commits"), "{out}");
    let out = succeed(cwd, &RUN);
    assert!(out.contains("state: 3 commits"), "{out}");
    assert_eq!(commits(cwd), [1, 2, 3]);
    assert_eq!(sql(cwd, TABLE), want);
}

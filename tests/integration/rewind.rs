//! `scdflow rewind` through the binary: a durable pipeline run one file per step, then returned
//! to an earlier commit — its table, change feed and `metrics.json` exactly as they were after
//! that commit, its published Delta table too (one `RESTORE` version whose change data feed
//! undoes what came after) — and run again to the same end. Commits the state no longer
//! retains are refused naming the oldest it does; a rewind stopped before returning the tables
//! is refused by a run and completed by the rewind run again.

use crate::durable::{scdflow, stderr, succeed};
use crate::warehouse::sql;
use std::path::Path;

/// `scdflow generate` of four commits, and a pipeline directory `p` that gets them one by one.
pub(crate) fn workload(cwd: &Path) {
    crate::change_feeds::generate(cwd, ["2000", "300", "1000", "4", "11"]);
    std::fs::create_dir_all(cwd.join("p/events")).unwrap();
    std::fs::copy(cwd.join("g/scd2.sql"), cwd.join("p/scd2.sql")).unwrap();
}

/// Adds commit file `n` of `g` to the input of the pipeline in `p`.
pub(crate) fn arrive(cwd: &Path, n: usize) {
    let name = format!("events/commit_{n:06}.csv");
    std::fs::copy(cwd.join("g").join(&name), cwd.join("p").join(&name)).unwrap();
}

/// The commits the state retains: its base's and its deltas'.
pub(crate) fn retained(state: &Path) -> Vec<u64> {
    let mut versions: Vec<u64> = std::fs::read_dir(state)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            let (kind, n) = name.split_once('-')?;
            ["ckpt", "delta"].contains(&kind).then(|| n.parse().ok())?
        })
        .collect();
    versions.sort();
    versions
}

/// Asserts a refused command (exit 2, no panic); its error.
fn refused(cwd: &Path, args: &[&str]) -> String {
    let out = scdflow(cwd, args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Lines without the last column (`_commit_timestamp`: a commit run again gets a new one).
fn without_timestamps(csv: &[u8]) -> Vec<String> {
    (String::from_utf8_lossy(csv).lines())
        .map(|l| l.rsplit_once(',').map_or(l, |(rest, _)| rest).to_string())
        .collect()
}

const RUN: [&str; 6] = ["run", "p/scd2.sql", "--state", "st", "--out", "o"];
const REWIND: [&str; 6] = ["rewind", "p/scd2.sql", "--state", "st", "--out", "o"];

#[test]
fn a_rewound_state_has_the_commits_outputs_and_runs_again_to_the_same_end() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    workload(cwd);
    let read = |name: &str| std::fs::read(cwd.join("o").join(name)).unwrap();
    let mut after = vec![(Vec::new(), Vec::new(), Vec::new())];
    for n in 1..=4 {
        arrive(cwd, n);
        succeed(cwd, &RUN);
        after.push((
            read("scd2.csv"),
            read("scd2.changes.csv"),
            read("metrics.json"),
        ));
    }
    let kept = retained(&cwd.join("st"));
    assert!(kept.len() >= 2 && kept.last() == Some(&4), "{kept:?}");
    let to = kept[0];
    let at = |v: u64| -> Vec<String> {
        let args = REWIND.iter().map(|a| a.to_string());
        args.chain(["--to".to_string(), v.to_string()]).collect()
    };
    let err = refused(cwd, &strs(&at(5)));
    assert!(err.contains("there is no commit 5"), "{err}");
    if to > 1 {
        let err = refused(cwd, &strs(&at(to - 1)));
        let oldest = format!("the oldest it holds is commit {to}");
        assert!(
            err.contains("is no longer retained") && err.contains(&oldest),
            "{err}"
        );
    }
    // A refused rewind changed nothing.
    assert_eq!(read("scd2.changes.csv"), after[4].1);
    let out = succeed(cwd, &strs(&at(to)));
    assert!(out.contains(&format!("state: at commit {to}")), "{out}");
    let (table, feed, metrics) = &after[to as usize];
    assert_eq!(&read("scd2.csv"), table);
    assert_eq!(&read("scd2.changes.csv"), feed);
    assert_eq!(
        crate::util::metrics_without_latency(&read("metrics.json")),
        crate::util::metrics_without_latency(metrics)
    );
    assert_eq!(retained(&cwd.join("st")).last(), Some(&to));
    // The input consumed after the commit is read again.
    let out = succeed(cwd, &RUN);
    assert!(out.contains("state: 4 commits"), "{out}");
    assert_eq!(read("scd2.csv"), after[4].0);
    assert_eq!(
        without_timestamps(&read("scd2.changes.csv")),
        without_timestamps(&after[4].1)
    );
}

#[test]
fn a_published_target_returns_with_a_change_feed_that_undoes_the_later_commits() {
    let dir = crate::warehouse::warehouse_with(&[("schema.sql", "CREATE SCHEMA main.default")]);
    let cwd = dir.path();
    workload(cwd);
    let published = [&RUN[..], &["--warehouse", "w"]].concat();
    let rewind = [&REWIND[..], &["--warehouse", "w"]].concat();
    const TABLE: &str = "SELECT * FROM main.default.scd2 ORDER BY k, __START_AT";
    let mut after = vec![String::new()];
    for n in 1..=4 {
        arrive(cwd, n);
        succeed(cwd, &published);
        after.push(sql(cwd, TABLE));
    }
    let to = retained(&cwd.join("st"))[0];
    assert!(to < 4);
    let to_text = to.to_string();
    let rewind_to = [&rewind[..], &["--to", &to_text]].concat();
    // A copy of the warehouse as it is, to stop the rewind after its commit point below.
    copy_dir(&cwd.join("w"), &cwd.join("w.before"));
    let out = succeed(cwd, &rewind_to);
    assert!(out.contains(&format!("returns it to commit {to}")), "{out}");
    assert_eq!(sql(cwd, TABLE), after[to as usize]);
    // The restore version's feed: the rows that came after the commit deleted, the rows that
    // left brought back.
    let version: u64 = out
        .split("Delta version ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    let changes = sql(
        cwd,
        &format!("SELECT * FROM table_changes('scd2', {version}, {version})"),
    );
    let rows = |text: &str| -> Vec<String> { text.lines().skip(1).map(String::from).collect() };
    let (then, now) = (rows(&after[to as usize]), rows(&after[4]));
    let mut want: Vec<String> = (then.iter().filter(|r| !now.contains(r)))
        .map(|r| format!("{r},insert,{version}"))
        .chain((now.iter().filter(|r| !then.contains(r))).map(|r| format!("{r},delete,{version}")))
        .collect();
    let mut got: Vec<String> = (changes.lines().skip(1))
        .map(|l| l.rsplit_once(',').unwrap().0.to_string())
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert!(!got.is_empty());
    // Stopped after its commit point: the state is at the commit, the table still after it.
    std::fs::remove_dir_all(cwd.join("w")).unwrap();
    std::fs::rename(cwd.join("w.before"), cwd.join("w")).unwrap();
    let err = refused(cwd, &published);
    assert!(err.contains("a rewind stopped"), "{err}");
    succeed(cwd, &rewind_to);
    assert_eq!(sql(cwd, TABLE), after[to as usize]);
    // Run again: the same table as after the fourth commit.
    let out = succeed(cwd, &published);
    assert!(out.contains("state: 4 commits"), "{out}");
    assert_eq!(sql(cwd, TABLE), after[4]);
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        match entry.file_type().unwrap().is_dir() {
            true => copy_dir(&entry.path(), &target),
            false => {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }
}

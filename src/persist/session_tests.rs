//! Durable runs through the library: ONCE flows, full refresh, appended lines, tombstones held.

use super::*;
use std::fs;

const SQL: &str = "\
CREATE STREAMING TABLE backfill AS SELECT * FROM STREAM read_files('backfill', format => 'csv',
  schema => 'id INT, name STRING, seq BIGINT, op STRING');
CREATE STREAMING TABLE live AS SELECT * FROM STREAM read_files('live', format => 'csv',
  schema => 'id INT, name STRING, seq BIGINT, op STRING');
CREATE STREAMING TABLE t;
CREATE FLOW once AS AUTO CDC ONCE INTO t FROM STREAM(backfill) KEYS (id)
  APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq COLUMNS * EXCEPT (op) STORED AS SCD TYPE 1;
CREATE FLOW changes AS AUTO CDC INTO t FROM STREAM(live) KEYS (id)
  APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq COLUMNS * EXCEPT (op) STORED AS SCD TYPE 1;
";

struct Fixture {
    dir: tempfile::TempDir,
    pipeline: Pipeline,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("backfill")).unwrap();
        fs::create_dir(dir.path().join("live")).unwrap();
        let sql = dir.path().join("p.sql");
        fs::write(&sql, SQL).unwrap();
        let pipeline = crate::sql::load(&sql).unwrap();
        Fixture { dir, pipeline }
    }

    fn write(&self, file: &str, lines: &str) {
        let path = self.dir.path().join(file);
        let mut text = fs::read_to_string(&path).unwrap_or_else(|_| "id,name,seq,op\n".into());
        text.push_str(lines);
        fs::write(path, text).unwrap();
    }

    fn run(&self, full_refresh: bool) -> DurableRun {
        self.try_run(full_refresh).unwrap()
    }

    fn try_run(&self, full_refresh: bool) -> Result<DurableRun> {
        let durability = Durability {
            state: self.dir.path().join("state"),
            out: self.dir.path().join("out"),
            format: OutputFormat::Csv,
            full_refresh,
            published: Vec::new(),
        };
        run(&self.pipeline, &Options::default(), &durability, None)
    }

    fn out(&self, file: &str) -> String {
        fs::read_to_string(self.dir.path().join("out").join(file)).unwrap()
    }
}

#[test]
fn once_flows_run_in_the_first_run_and_again_on_full_refresh_only() {
    let f = Fixture::new();
    f.write("backfill/a.csv", "1,ann,0,UPSERT\n2,bob,0,UPSERT\n");
    f.write("live/a.csv", "1,anna,5,UPSERT\n");
    let first = f.run(false);
    assert_eq!((first.base, first.commits), (0, 2));
    assert_eq!(f.out("t.csv"), "id,name,seq\n1,anna,5\n2,bob,0\n");
    // A new backfill file is not read again by the ONCE flow; the live flow goes on.
    f.write("backfill/b.csv", "3,cy,0,UPSERT\n");
    f.write("live/b.csv", "2,bo,6,UPSERT\n");
    let second = f.run(false);
    assert_eq!((second.base, second.commits), (2, 2));
    assert_eq!(f.out("t.csv"), "id,name,seq\n1,anna,5\n2,bo,6\n");
    let feed = f.out("t.changes.csv");
    assert_eq!(
        feed.lines().filter(|l| l.starts_with("id,")).count(),
        1,
        "{feed}"
    );
    // A full refresh reprocesses everything, ONCE flows included, and restarts the feed.
    let refreshed = f.run(true);
    assert_eq!((refreshed.base, refreshed.commits), (0, 4));
    assert_eq!(f.out("t.csv"), "id,name,seq\n1,anna,5\n2,bo,6\n3,cy,0\n");
    let feed = f.out("t.changes.csv");
    let versions: Vec<&str> = feed
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(4).unwrap())
        .collect();
    assert_eq!(versions.first(), Some(&"1"), "{feed}");
    assert_eq!(
        feed.lines().filter(|l| l.starts_with("id,")).count(),
        1,
        "{feed}"
    );
}

#[test]
fn appended_lines_are_read_once_and_a_partial_line_waits() {
    let f = Fixture::new();
    f.write("live/a.csv", "1,ann,1,UPSERT\n2,bob,1,UPSERT\n3,c");
    assert_eq!(f.run(false).commits, 1);
    assert_eq!(f.out("t.csv"), "id,name,seq\n1,ann,1\n2,bob,1\n");
    assert_eq!(
        f.run(false).commits,
        0,
        "an unfinished line is not new input"
    );
    f.write("live/a.csv", "y,1,UPSERT\n1,ann,2,DELETE\n");
    let run = f.run(false);
    assert_eq!((run.base, run.commits), (1, 1));
    assert_eq!(f.out("t.csv"), "id,name,seq\n2,bob,1\n3,cy,1\n");
    let metrics = f.out("metrics.json");
    assert!(metrics.contains("\"num_live_tombstones\": 1"), "{metrics}");
    let feed = f.out("t.changes.csv");
    assert_eq!(feed.lines().count(), 1 + 2 + 2, "{feed}");
}

#[test]
fn a_rewritten_input_file_is_refused() {
    let f = Fixture::new();
    f.write("live/a.csv", "1,ann,1,UPSERT\n");
    f.run(false);
    fs::write(
        f.dir.path().join("live/a.csv"),
        "id,name,seq,op\n1,zed,1,UPSERT\n",
    )
    .unwrap();
    let e = f.try_run(false).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State);
    assert!(e.to_string().contains("live/a.csv"), "{e}");
    assert!(e.to_string().contains("--full-refresh"), "{e}");
}

/// Issue 13, item 13: a manifest written before paths were recorded absolute reads its
/// relative paths from the working directory (inputs) or the state directory (the metrics log).
#[test]
fn relative_paths_of_older_manifests_become_absolute() {
    use crate::persist::{Appended, Checks, InputProgress};
    let state = Path::new("/srv/st");
    let mut m = Manifest {
        version: 3,
        last_timestamp: 0,
        fingerprint: Fingerprint::of(&Fixture::new().pipeline),
        out: PathBuf::from("/srv/out"),
        format: "csv".into(),
        workers: 1,
        checkpoint: None,
        deltas: Vec::new(),
        inputs: vec![InputProgress {
            file: PathBuf::from("data/../data/a.csv"),
            consumed: 10,
            next_line: 2,
            window: 7,
        }],
        snapshot_versions: Vec::new(),
        appended: vec![
            Appended {
                path: PathBuf::from("st/metrics.jsonl"),
                len: 5,
            },
            Appended {
                path: PathBuf::from("/srv/out/t.changes.csv"),
                len: 9,
            },
        ],
        live_tombstones: Vec::new(),
        checks: Checks::default(),
        publishing: Default::default(),
        rewound: None,
    };
    absolute_paths(&mut m, state).unwrap();
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(m.inputs[0].file, cwd.join("data/a.csv"));
    assert_eq!(m.appended[0].path, state.join("metrics.jsonl"));
    assert_eq!(m.appended[1].path, Path::new("/srv/out/t.changes.csv"));
}

/// A step that fails after appending some of its commits' feed rows (each commit appends at
/// once here) leaves them uncommitted: the next run cuts them off and applies those commits
/// again, so the feed holds each change once.
#[test]
fn feed_rows_a_failed_step_appended_are_cut_off() {
    let f = Fixture::new();
    f.write("live/a.csv", "1,ann,1,UPSERT\n");
    assert_eq!(f.run(false).commits, 1);
    let committed = f.out("t.changes.csv");
    // Ten commits the engine applies (reading waits for the workers to hold fewer than its
    // window, so most are delivered and appended by then), then a file with a header without
    // `name`, which fails the step.
    for k in 2..12 {
        f.write(&format!("live/b{k:02}.csv"), &format!("{k},bob,1,UPSERT\n"));
    }
    fs::write(
        f.dir.path().join("live/c.csv"),
        "id,nom,seq,op\n12,cy,1,UPSERT\n",
    )
    .unwrap();
    let err = f.try_run(false).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Format, "{err}");
    assert!(
        f.out("t.changes.csv").len() > committed.len(),
        "b's rows were appended before c failed"
    );
    fs::write(
        f.dir.path().join("live/c.csv"),
        "id,name,seq,op\n12,cy,1,UPSERT\n",
    )
    .unwrap();
    let run = f.run(false);
    assert_eq!((run.base, run.commits), (1, 11));
    let feed = f.out("t.changes.csv");
    let rows: Vec<(&str, &str)> = feed
        .lines()
        .skip(1)
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            (fields[0], fields[4])
        })
        .collect();
    let expected: Vec<(String, String)> = (1..13).map(|k| (k.to_string(), k.to_string())).collect();
    let rows: Vec<(String, String)> = rows
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(rows, expected, "{feed}");
}

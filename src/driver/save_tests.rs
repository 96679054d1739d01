//! A save asked for behind a step's last commit ([`Driver::apply_and_save`]) holds what a save
//! made after the step ([`Driver::save`]) holds.

use super::*;
use crate::plan::Pipeline;
use crate::runtime::Checkpoint;
use crate::Result;
use std::fs;
use std::path::Path;

const SQL: &str = "\
CREATE STREAMING TABLE events AS SELECT * FROM STREAM read_files('in', format => 'csv',
  schema => 'id INT, name STRING, seq BIGINT, op STRING');
CREATE STREAMING TABLE t;
CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(events) KEYS (id)
  APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq COLUMNS * EXCEPT (op) STORED AS SCD TYPE 2;
";

struct Discard;

impl Sink for Discard {
    fn commit(&mut self, _: CommitOutput) -> Result<()> {
        Ok(())
    }
}

fn open<'p>(pipeline: &'p Pipeline, workers: usize, saved: Option<&Path>) -> Driver<'p> {
    let options = Options {
        workers,
        ..Options::default()
    };
    let resume = Resume {
        restore: saved.map(|base| Checkpoint {
            base: base.to_path_buf(),
            deltas: Vec::new(),
            workers,
        }),
        track_changes: true,
        ..Resume::default()
    };
    Driver::open(pipeline, &options, resume, None).unwrap()
}

#[test]
fn a_save_behind_the_last_commit_restores_as_one_after_the_step() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir(&input).unwrap();
    let header = "id,name,seq,op\n";
    fs::write(
        input.join("a.csv"),
        format!("{header}1,a,1,UPSERT\n2,b,1,UPSERT\n"),
    )
    .unwrap();
    let b = "1,a3,3,UPSERT\n2,,2,DELETE\n3,c,1,UPSERT\n";
    fs::write(input.join("b.csv"), format!("{header}{b}")).unwrap();
    // A late event: the first run of key 1 closes earlier.
    fs::write(input.join("c.csv"), format!("{header}1,a2,2,UPSERT\n")).unwrap();
    let sql = dir.path().join("p.sql");
    fs::write(&sql, SQL).unwrap();
    let pipeline = crate::sql::load(&sql).unwrap();
    let sources = commit::sources(&pipeline).unwrap();
    assert_eq!(sources.len(), 3);
    for workers in [1, 2] {
        let saved = |name: &str| {
            let path = dir.path().join(format!("{name}-{workers}"));
            fs::create_dir(&path).unwrap();
            path
        };
        let (behind, after, empty) = (saved("behind"), saved("after"), saved("empty"));
        let mut late = open(&pipeline, workers, None);
        late.apply(&sources, &mut Discard).unwrap();
        late.save(&after, false).unwrap();
        let expected = late.tables().unwrap();
        assert_eq!(expected[0].len(), 5, "{expected:?}");
        let mut early = open(&pipeline, workers, None);
        early
            .apply_and_save(&sources, &mut Discard, &behind, false)
            .unwrap();
        assert_eq!(early.tables().unwrap(), expected);
        // A step with nothing to apply saves all the same.
        early
            .apply_and_save(&[], &mut Discard, &empty, false)
            .unwrap();
        for saved in [&after, &behind, &empty] {
            let mut restored = open(&pipeline, workers, Some(saved));
            assert_eq!(restored.tables().unwrap(), expected, "{}", saved.display());
        }
    }
}

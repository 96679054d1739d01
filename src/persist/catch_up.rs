//! Published tables ahead of their state, and how a run catches up with them.
//!
//! A durable step whose commits all read streams (lines appended to files, versions of Delta
//! tables) puts its Delta versions in the tables' logs as soon as they are prepared and every
//! commit is applied, before the state holding them is saved and its manifest committed, as a
//! Spark streaming sink does: a commit's latency then ends without the save. Each version
//! records in its `commitInfo` the input its commit read ([`COMMIT_INPUT`], a [`CommitInput`]).
//!
//! A crash (or a failed save or manifest) between the two leaves tables holding commits the
//! state does not. The next step reads the recorded input again first, exactly: the same
//! files in the same order, each up to the recorded byte even where it has grown since; the
//! engine applies those commits again and the tables are not written (their `txn` holds them);
//! the rest of the new input follows in the same step. A commit whose input no longer reads
//! the same (a file cut, rewritten or gone) is an error naming the table's version and the
//! file, before the step publishes anything.
//!
//! Invariant: a table never holds a commit whose input its state cannot read again, and holds
//! each commit once.
//!
//! Limits: steps with commits of other kinds (a snapshot file, a version query's snapshot,
//! `VALUES`) publish after their manifest ([`super::published`]). Other writers' edits (DML)
//! made after the crash are taken in once the state has caught up, so a step that catches up
//! with tables edited since stops after the recorded commits; the next step goes on.

use crate::delta::{Log, Table, COMMIT_INPUT};
use crate::driver::new_input::{self, Consumed};
use crate::driver::{CommitSource, ReadFrom, Span};
use crate::persist::published::app_id;
use crate::persist::Manifest;
use crate::plan::Pipeline;
use crate::{Error, ErrorKind, Result};
use std::collections::HashMap;
use std::path::PathBuf;

/// The input one commit read, as its Delta versions record it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommitInput {
    /// The file read, or the Delta table's directory (absolute, as the manifest spells it).
    pub file: PathBuf,
    /// Where the read began: a byte offset, or the table version read.
    pub from: u64,
    /// Where it ended: the byte after its last complete line, or the table version after.
    pub to: u64,
    /// The line at `to` (1-based; 0 for a table).
    pub line: u64,
    /// CRC-32 of the bytes before `to` that a manifest checks ([`crate::persist::store::WINDOW`]).
    pub window: u32,
}

impl CommitInput {
    /// What a commit that read `consumed`, its complete lines ending at `end`, records; `None`
    /// for a commit that reads no stream (it is not published before its manifest).
    pub fn of(consumed: &Consumed, end: Option<ReadFrom>) -> Result<Option<CommitInput>> {
        let Some(progress) = new_input::stream_progress(consumed, end)? else {
            return Ok(None);
        };
        let from = match consumed {
            Consumed::Lines { from, .. } => from.offset,
            _ => progress.consumed.saturating_sub(1),
        };
        Ok(Some(CommitInput {
            file: progress.file,
            from,
            to: progress.consumed,
            line: progress.next_line,
            window: progress.window,
        }))
    }

    /// The record as `commitInfo` holds it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// One commit a table holds and the state does not.
#[derive(Clone, Debug)]
pub struct Ahead {
    /// The commit.
    pub commit: u64,
    /// What it read.
    pub input: CommitInput,
    /// The table that holds it and its version there, for errors.
    pub held_by: String,
}

impl Ahead {
    /// The error of a commit whose input reads differently now.
    pub fn changed(&self, why: &str) -> Error {
        let message = format!(
            "{} holds commit {}, which read {} ({}); {why}, so the state cannot reach the \
             table: restore the input, or start over with --full-refresh",
            self.held_by,
            self.commit,
            self.input.file.display(),
            self.span(),
        );
        Error::new(ErrorKind::State, message)
    }

    fn span(&self) -> String {
        match self.input.line {
            0 => format!("version {}", self.input.to.saturating_sub(1)),
            _ => format!("bytes {}..{}", self.input.from, self.input.to),
        }
    }
}

/// The commits the published tables hold after the state's last, to be applied again.
#[derive(Clone, Debug)]
pub struct CatchUp {
    /// Per published table: the last commit of the state it holds.
    pub held: Vec<u64>,
    /// The commits after the state's, in order, as the table holding the most records them.
    pub ahead: Vec<Ahead>,
    /// Other writers edited a target after them ([`CatchUp::look_for_edits`]): the step stops
    /// after them.
    edited: bool,
}

impl CatchUp {
    /// What the tables at `dirs` hold after `manifest`'s last commit, per table `held` (its
    /// state's last commit there, see [`super::published::resume`]); `None` when nothing.
    pub fn of(
        pipeline: &Pipeline,
        manifest: &Manifest,
        dirs: &[PathBuf],
        held: Vec<u64>,
    ) -> Result<Option<CatchUp>> {
        let base = manifest.version;
        let most = (held.iter().enumerate()).max_by_key(|(t, h)| (**h, std::cmp::Reverse(*t)));
        let Some((t, &last)) = most.filter(|(_, h)| **h > base) else {
            return Ok(None);
        };
        let (name, dir) = (pipeline.published()[t].name, &dirs[t]);
        let app = app_id(name, &manifest.publishing.id);
        let log = Log::open(dir)?;
        let mut ahead = Vec::new();
        for (commit, version, input) in log.commits_after(&app, base, COMMIT_INPUT)? {
            let held_by = format!(
                "`{name}`'s Delta table {} (version {version})",
                dir.display()
            );
            let input = input.and_then(|i| serde_json::from_value::<CommitInput>(i).ok());
            let Some(input) = input else {
                let message = format!(
                    "{held_by} holds commit {commit}, after the state's last ({base}), without \
                     a record of its input: the state is older than the table; start over \
                     with --full-refresh"
                );
                return Err(Error::new(ErrorKind::State, message));
            };
            ahead.push(Ahead {
                commit,
                input,
                held_by,
            });
        }
        let contiguous = (ahead.iter().map(|a| a.commit)).eq(base + 1..=last);
        if !contiguous {
            let message = format!(
                "`{name}`'s Delta table {} holds commits {} after the state's last ({base}), \
                 not one after another; start over with --full-refresh",
                dir.display(),
                ahead
                    .iter()
                    .map(|a| a.commit.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Err(Error::new(ErrorKind::State, message));
        }
        Ok(Some(CatchUp {
            held,
            ahead,
            edited: false,
        }))
    }

    /// Looks whether other writers edited a target at `dirs` after the commits the tables
    /// hold (`manifest`: the state's), as the next step must know: under the step's locks, so
    /// that no edit lands after the look.
    pub fn look_for_edits(
        &mut self,
        pipeline: &Pipeline,
        manifest: &Manifest,
        dirs: &[PathBuf],
    ) -> Result<()> {
        self.edited = false;
        let targets = dirs.iter().enumerate().take(pipeline.targets.len());
        for (t, dir) in targets.filter(|(_, dir)| Table::exists(dir)) {
            let app = app_id(pipeline.published()[t].name, &manifest.publishing.id);
            let log = Log::open(dir)?;
            let after = log.last_version_of(&app)?;
            self.edited |= !log.others_versions(after, &app)?.0.is_empty();
        }
        Ok(())
    }

    /// The last commit the tables hold.
    pub fn last(&self) -> u64 {
        self.ahead.last().map_or(0, |a| a.commit)
    }

    /// The commits of the step after commit `base` from the new input `found`: the recorded
    /// commits after `base` first, each reading exactly what it read, then (unless the tables
    /// were edited since) the rest of `found`, files the recorded commits read continuing
    /// where they stopped.
    pub fn select(
        &self,
        pipeline: &Pipeline,
        base: u64,
        found: Vec<(CommitSource, Consumed)>,
    ) -> Result<Vec<(CommitSource, Consumed)>> {
        let mut taken = vec![false; found.len()];
        // Per file the recorded commits read: where the next read starts.
        let mut at: HashMap<PathBuf, ReadFrom> = HashMap::new();
        let mut commits = Vec::new();
        for ahead in self.ahead.iter().filter(|a| a.commit > base) {
            let input = &ahead.input;
            let i = found.iter().position(|(_, consumed)| match consumed {
                Consumed::Lines { file, .. } => *file == input.file,
                Consumed::Version { dir, next } => *dir == input.file && *next == input.to,
                _ => false,
            });
            let Some(i) = i else {
                return Err(ahead.changed("that input is not there to read now"));
            };
            match &found[i] {
                (CommitSource::Table { table, file, .. }, Consumed::Lines { file: name, from }) => {
                    let from = at.get(name).copied().unwrap_or(*from);
                    if from.offset != input.from {
                        let why = format!("the state's input there starts at byte {}", from.offset);
                        return Err(ahead.changed(&why));
                    }
                    let source = CommitSource::Table {
                        table: *table,
                        file: file.clone(),
                        span: Span::Upto { from, to: input.to },
                    };
                    let to = ReadFrom {
                        offset: input.to,
                        line: input.line,
                    };
                    at.insert(name.clone(), to);
                    commits.push((
                        source,
                        Consumed::Lines {
                            file: name.clone(),
                            from,
                        },
                    ));
                }
                (source, consumed) => {
                    taken[i] = true;
                    commits.push((source.clone(), consumed.clone()));
                }
            }
        }
        if self.edited {
            return Ok(commits);
        }
        for ((source, consumed), taken) in found.into_iter().zip(taken) {
            let rest = match (&source, &consumed) {
                _ if taken => continue,
                (CommitSource::Table { table, file, .. }, Consumed::Lines { file: name, .. }) => {
                    match at.get(name) {
                        Some(from) if !new_input::grown(pipeline, *table, name, from.offset)? => {
                            continue
                        }
                        Some(from) => Some((*table, file.clone(), name.clone(), *from)),
                        None => None,
                    }
                }
                _ => None,
            };
            commits.push(match rest {
                Some((table, file, name, from)) => (
                    CommitSource::Table {
                        table,
                        file,
                        span: Span::From(from),
                    },
                    Consumed::Lines { file: name, from },
                ),
                None => (source, consumed),
            });
        }
        Ok(commits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipeline streaming `live/*.csv`, and its file `live/a.csv` holding `text`.
    fn pipeline(dir: &std::path::Path, text: &str) -> (Pipeline, PathBuf) {
        std::fs::create_dir(dir.join("live")).unwrap();
        let sql = dir.join("p.sql");
        std::fs::write(
            &sql,
            "CREATE STREAMING TABLE live AS SELECT * FROM STREAM read_files('live', \
             format => 'csv', schema => 'id INT, seq BIGINT');",
        )
        .unwrap();
        let file = dir.join("live/a.csv");
        std::fs::write(&file, text).unwrap();
        (crate::sql::load(&sql).unwrap(), file)
    }

    fn at(offset: u64, line: u64) -> ReadFrom {
        ReadFrom { offset, line }
    }

    /// The commit `find` makes of `file` from `from`.
    fn found(file: &std::path::Path, from: ReadFrom) -> (CommitSource, Consumed) {
        let source = CommitSource::Table {
            table: 0,
            file: file.to_path_buf(),
            span: Span::From(from),
        };
        (
            source,
            Consumed::Lines {
                file: file.to_path_buf(),
                from,
            },
        )
    }

    fn ahead(commit: u64, file: &std::path::Path, from: u64, to: u64, line: u64) -> Ahead {
        let input = CommitInput {
            file: file.to_path_buf(),
            from,
            to,
            line,
            window: 0,
        };
        let held_by = "`live`'s Delta table t (version 9)".to_string();
        Ahead {
            commit,
            input,
            held_by,
        }
    }

    fn spans(commits: &[(CommitSource, Consumed)]) -> Vec<Span> {
        (commits.iter())
            .map(|(source, _)| match source {
                CommitSource::Table { span, .. } => *span,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn recorded_commits_read_exactly_their_bytes_then_the_rest_follows() {
        let dir = tempfile::tempdir().unwrap();
        // A header of 7 bytes, then rows of 5: commit 1 read the header and two rows, commit 2
        // one row; one more came since.
        let (pipeline, file) = pipeline(dir.path(), "id,seq\n1,10\n2,20\n3,30\n4,40\n");
        let catch_up = CatchUp {
            held: vec![2],
            ahead: vec![ahead(1, &file, 0, 17, 4), ahead(2, &file, 17, 22, 5)],
            edited: false,
        };
        let commits = catch_up
            .select(&pipeline, 0, vec![found(&file, at(0, 1))])
            .unwrap();
        let want = [
            Span::Upto {
                from: at(0, 1),
                to: 17,
            },
            Span::Upto {
                from: at(17, 4),
                to: 22,
            },
            Span::From(at(22, 5)),
        ];
        assert_eq!(spans(&commits), want);
        // From the state's commit 1 on, only commit 2 is read again.
        let commits = catch_up
            .select(&pipeline, 1, vec![found(&file, at(17, 4))])
            .unwrap();
        assert_eq!(spans(&commits), want[1..]);
        // Once the tables were edited since, the step stops after the recorded commits.
        let edited = CatchUp {
            edited: true,
            ..catch_up.clone()
        };
        let commits = edited
            .select(&pipeline, 0, vec![found(&file, at(0, 1))])
            .unwrap();
        assert_eq!(spans(&commits), want[..2]);
        // Nothing more: the last recorded commit ends the file.
        std::fs::write(&file, "id,seq\n1,10\n2,20\n3,30\n").unwrap();
        let commits = catch_up
            .select(&pipeline, 0, vec![found(&file, at(0, 1))])
            .unwrap();
        assert_eq!(spans(&commits), want[..2]);
    }

    #[test]
    fn a_recorded_commit_the_input_cannot_give_again_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (pipeline, file) = pipeline(dir.path(), "id,seq\n1,10\n2,20\n");
        let catch_up = CatchUp {
            held: vec![1],
            ahead: vec![ahead(1, &file, 7, 17, 3)],
            edited: false,
        };
        // The state's input starts elsewhere in the file.
        let err = (catch_up.select(&pipeline, 0, vec![found(&file, at(0, 1))]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("holds commit 1") && err.contains("starts at byte 0"),
            "{err}"
        );
        assert!(
            err.contains("bytes 7..17") && err.contains("a.csv"),
            "{err}"
        );
        // No new input at all.
        let err = catch_up
            .select(&pipeline, 0, Vec::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("not there to read now"), "{err}");
    }
}

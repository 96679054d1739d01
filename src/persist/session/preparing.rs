//! A durable step's Delta versions, prepared on threads of their own while the step goes on,
//! in two lanes: the targets' versions start when a commit's outcome comes (the engine then
//! applies the next commit, or, after the last, the workers save the state); the streaming
//! tables' start as soon as the commit is read ([`Publisher::input`]), since their rows are the
//! input's: their files are written while the engine applies the commit, on the core a
//! one-worker engine leaves idle (a 10,000-event commit's streaming table took 12 ms of a
//! 27 ms window that also held the SCD2 target's files and the state's save). A commit the
//! driver did not show as input (in a cluster) starts both lanes from its outcome.
//!
//! Invariant: in each lane one commit's versions are prepared at a time, in commit order; a
//! lane's tables are either with the step or with the one thread preparing. A commit's log
//! entries reach the manifest in the order they were prepared, so the manifest still names
//! every version of the step and nothing is published before the state that holds it commits
//! (the session's order).
//!
//! Limits: a step that fails before taking the versions back drops them with the tables (once
//! they are written); the files are unreferenced, and the next step opens the tables again.

use crate::delta::{MaintainedTable, Prepared};
use crate::driver::{CommitOutput, FlowRef};
use crate::engine::changefeed::ChangeType;
use crate::output;
use crate::plan::{Pipeline, Publishes};
use crate::value::Row;
use crate::Result;
use std::thread::JoinHandle;

/// One published table's part of a commit: its changes and its flow progress (see
/// [`MaintainedTable::prepare`]).
type TableCommit = (Vec<(ChangeType, Row)>, Vec<serde_json::Value>);

/// A step's published tables ([`Pipeline::published`]: the targets, then the streaming
/// tables) and the versions being prepared for them; see the module docs.
#[derive(Default)]
pub(super) struct Publisher {
    targets: Lane,
    streams: Lane,
    /// The last commit whose streaming tables' versions were started from its input: the
    /// driver shows every commit's input before its outcome (the next commit's may come
    /// first too), or, in a cluster, none.
    streamed: Option<u64>,
}

/// Tables whose versions are prepared together, commit after commit.
#[derive(Default)]
struct Lane {
    /// Index of the lane's first table in [`Pipeline::published`].
    first: usize,
    tables: Vec<MaintainedTable>,
    /// The last commit's versions, while they are being prepared.
    preparing: Option<Preparing>,
}

impl Publisher {
    /// The published tables of `pipeline` (none when its targets are files).
    pub(super) fn new(pipeline: &Pipeline, mut tables: Vec<MaintainedTable>) -> Publisher {
        let targets = pipeline.targets.len().min(tables.len());
        let streams = tables.split_off(targets);
        Publisher {
            targets: Lane {
                first: 0,
                tables,
                preparing: None,
            },
            streams: Lane {
                first: targets,
                tables: streams,
                preparing: None,
            },
            streamed: None,
        }
    }

    /// Whether the step publishes tables (then its targets' change feeds are their tables'
    /// change data feeds).
    pub(super) fn publishes(&self) -> bool {
        self.targets.holds() || self.streams.holds()
    }

    /// Commit `version`'s input, read: starts its streaming tables' versions from the rows it
    /// appends (taken out of `appended`). `prepared` gets the log entries of the versions
    /// waited for, per published table.
    pub(super) fn input(
        &mut self,
        pipeline: &Pipeline,
        (version, timestamp): (u64, i64),
        appended: &mut [(usize, Vec<Row>)],
        prepared: &mut [Vec<Prepared>],
    ) -> Result<()> {
        if !self.streams.holds() {
            return Ok(());
        }
        let commits = streams(pipeline, appended);
        self.streams.start(commits, version, timestamp, prepared)?;
        self.streamed = Some(version);
        Ok(())
    }

    /// Commit `commit.version`'s outcome: starts its targets' versions from their changes
    /// (taken out of `commit`), and its streaming tables' too unless its input started them.
    pub(super) fn commit(
        &mut self,
        pipeline: &Pipeline,
        flows: &[FlowRef],
        commit: &mut CommitOutput,
        prepared: &mut [Vec<Prepared>],
    ) -> Result<()> {
        let (version, timestamp) = (commit.version, commit.timestamp);
        if self.streams.holds() && self.streamed.is_none_or(|s| s < version) {
            let commits = streams(pipeline, &mut commit.appended);
            self.streams.start(commits, version, timestamp, prepared)?;
        }
        if !self.targets.holds() {
            return Ok(());
        }
        let commits = (pipeline.published().iter())
            .filter_map(|p| match p.of {
                Publishes::Target(t) => Some(t),
                Publishes::Table(_) => None,
            })
            .map(|t| {
                let changes = commit.changes.get_mut(t).map(std::mem::take);
                let progress = output::flow_progress(flows, t, &commit.metrics);
                (changes.unwrap_or_default(), progress)
            })
            .collect();
        self.targets.start(commits, version, timestamp, prepared)
    }

    /// Waits for every version being prepared; `prepared` gets their log entries.
    pub(super) fn wait(&mut self, prepared: &mut [Vec<Prepared>]) -> Result<()> {
        self.targets.wait(prepared)?;
        self.streams.wait(prepared)
    }

    /// The tables, in [`Pipeline::published`] order (after [`Publisher::wait`]).
    pub(super) fn tables(&self) -> impl Iterator<Item = &MaintainedTable> {
        self.targets.tables.iter().chain(&self.streams.tables)
    }

    /// The tables back, in [`Pipeline::published`] order (after [`Publisher::wait`]).
    pub(super) fn into_tables(self) -> Vec<MaintainedTable> {
        let mut tables = self.targets.tables;
        tables.extend(self.streams.tables);
        tables
    }
}

/// The inserts of each published streaming table of `pipeline`, taken out of a commit's
/// `appended` rows.
fn streams(pipeline: &Pipeline, appended: &mut [(usize, Vec<Row>)]) -> Vec<TableCommit> {
    (pipeline.published().iter())
        .filter_map(|p| match p.of {
            Publishes::Table(t) => Some((output::appended_changes(appended, t), Vec::new())),
            Publishes::Target(_) => None,
        })
        .collect()
}

impl Lane {
    /// Whether the lane has tables (with it, or with the thread preparing).
    fn holds(&self) -> bool {
        !self.tables.is_empty() || self.preparing.is_some()
    }

    /// Waits for the last commit's versions, then starts preparing commit `version`'s (at
    /// `timestamp`), table `i` of the lane from `commits[i]`.
    fn start(
        &mut self,
        commits: Vec<TableCommit>,
        version: u64,
        timestamp: i64,
        prepared: &mut [Vec<Prepared>],
    ) -> Result<()> {
        self.wait(prepared)?;
        let tables = std::mem::take(&mut self.tables);
        self.preparing = Some(Preparing::start(tables, commits, version, timestamp));
        Ok(())
    }

    fn wait(&mut self, prepared: &mut [Vec<Prepared>]) -> Result<()> {
        if let Some(preparing) = self.preparing.take() {
            let (tables, entries) = preparing.wait()?;
            self.tables = tables;
            for (p, entry) in entries.into_iter().enumerate() {
                prepared[self.first + p].push(entry);
            }
        }
        Ok(())
    }
}

/// The versions of one commit being prepared. Dropped unwaited (a step failed), it waits for
/// the thread rather than leave it writing into tables the next step opens again.
struct Preparing(Option<JoinHandle<Result<(Vec<MaintainedTable>, Vec<Prepared>)>>>);

impl Preparing {
    /// Starts preparing commit `version` (at `timestamp`) of each of `tables`, table `i` from
    /// `commits[i]`.
    fn start(
        mut tables: Vec<MaintainedTable>,
        commits: Vec<TableCommit>,
        version: u64,
        timestamp: i64,
    ) -> Preparing {
        Preparing(Some(std::thread::spawn(move || {
            let jobs = tables.iter_mut().zip(&commits).collect();
            let prepared = output::each_table(jobs, |(table, (changes, progress))| {
                let (prepared, _) = table.prepare(version, timestamp, changes, progress)?;
                Ok(prepared)
            })?;
            Ok((tables, prepared))
        })))
    }

    /// Waits for the versions: the tables back, and each one's prepared log entry.
    fn wait(mut self) -> Result<(Vec<MaintainedTable>, Vec<Prepared>)> {
        let thread = self.0.take().expect("waited for once");
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl Drop for Preparing {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

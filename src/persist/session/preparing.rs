//! A durable step's Delta versions, prepared on threads of their own while the step goes on,
//! in two lanes: the targets' versions start when a commit's outcome comes (the engine then
//! applies the next commit, or, after the last, the workers save the state); the streaming
//! tables' start as soon as the commit is read ([`Publisher::input`]), since their rows are the
//! input's: their files are written while the engine applies the commit, on the core a
//! one-worker engine leaves idle (a 10,000-event commit's streaming table took 12 ms of a
//! 27 ms window that also held the SCD2 target's files and the state's save). A commit the
//! driver did not show as input (in a cluster) starts both lanes from its outcome.
//!
//! Once a commit's versions are prepared, the lane's thread sends their log entries and goes on
//! merging the tables' full tiers ahead of the next version
//! ([`MaintainedTable::merge_ahead`]), while the step commits and publishes (through each
//! table's [`TableLog`]) and the next commit is read and applied; a merge itself runs on a
//! thread of its own, beside as many versions as it takes (`delta::maintained::compaction`).
//! The publisher outlives the step (the session keeps it), so neither a step's end nor the
//! driver waits for them; nor for the upkeep the step's
//! versions are due, which runs on a thread of its own once they are in the logs
//! ([`Publisher::publish`]).
//!
//! Invariant: in each lane one commit's versions are prepared at a time, in commit order; a
//! lane's tables are either with the step or with the one thread preparing or merging them (a
//! later commit's thread takes them from it). A commit's log entries reach the manifest in the
//! order they were prepared, so the manifest still names every version of the step; they are
//! put in the logs before it ([`Publisher::put`], a step of streams' commits, once all are
//! applied) or after it. A table that holds a commit already (a state catching up with it)
//! gets no version of it.
//!
//! Limits: a step that fails before taking the versions back drops them with the tables (once
//! they are written); the files are unreferenced, and the next step opens the tables again.

use crate::delta::{MaintainedTable, Notes, Prepared, TableLog};
use crate::driver::{CommitOutput, FlowRef};
use crate::engine::changefeed::ChangeType;
use crate::output;
use crate::plan::{Pipeline, Publishes};
use crate::value::Row;
use crate::Result;
use std::panic::resume_unwind;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::SystemTime;

/// One published table's part of a commit: its changes and what its `commitInfo` notes (see
/// [`MaintainedTable::prepare`]).
type TableCommit = (Vec<(ChangeType, Row)>, Notes);

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
    /// The upkeep (checkpoints, vacuums) of the versions published last, while it runs.
    upkeep: Option<JoinHandle<Result<()>>>,
    /// When the step began: the files it writes (its versions', the merges ahead of its next)
    /// are written since, and its upkeep's vacuums keep them.
    step: Option<SystemTime>,
    /// Per published table, the last commit it holds already (a state catching up with it,
    /// [`crate::persist::catch_up`]): versions of commits up to it are not prepared.
    held: Vec<u64>,
    /// Whether the step's versions are in the logs already ([`Publisher::put`]).
    put: bool,
}

/// Tables whose versions are prepared together, commit after commit.
#[derive(Default)]
struct Lane {
    /// Index of the lane's first table in [`Pipeline::published`].
    first: usize,
    tables: Vec<MaintainedTable>,
    /// The tables' logs, which the step publishes through while the tables merge ahead.
    logs: Vec<Arc<TableLog>>,
    /// The last commit's versions, while they are being prepared or, once they are, the
    /// tables merge ahead.
    preparing: Option<Preparing>,
}

impl Publisher {
    /// The published tables of `pipeline` (none when its targets are files).
    pub(super) fn new(pipeline: &Pipeline, mut tables: Vec<MaintainedTable>) -> Result<Publisher> {
        let targets = pipeline.targets.len().min(tables.len());
        let streams = tables.split_off(targets);
        Ok(Publisher {
            targets: Lane::new(0, tables)?,
            streams: Lane::new(targets, streams)?,
            streamed: None,
            upkeep: None,
            step: None,
            held: Vec::new(),
            put: false,
        })
    }

    /// Whether the step publishes tables (then its targets' change feeds are their tables'
    /// change data feeds).
    pub(super) fn publishes(&self) -> bool {
        self.targets.holds() || self.streams.holds()
    }

    /// Commit `version`'s input, read (`input`: what its versions note of it): starts its
    /// streaming tables' versions from the rows it appends (taken out of `appended`).
    /// `prepared` gets the log entries of the versions waited for, per published table.
    pub(super) fn input(
        &mut self,
        pipeline: &Pipeline,
        (version, timestamp): (u64, i64),
        input: Option<&serde_json::Value>,
        appended: &mut [(usize, Vec<Row>)],
        prepared: &mut [Vec<Prepared>],
    ) -> Result<()> {
        if !self.streams.holds() {
            return Ok(());
        }
        let commits = streams(pipeline, appended, input);
        self.streams
            .start(commits, version, timestamp, &self.held, prepared)?;
        self.streamed = Some(version);
        Ok(())
    }

    /// Commit `commit.version`'s outcome (`input`: what its versions note of its input):
    /// starts its targets' versions from their changes (taken out of `commit`), and its
    /// streaming tables' too unless its input started them.
    pub(super) fn commit(
        &mut self,
        pipeline: &Pipeline,
        flows: &[FlowRef],
        commit: &mut CommitOutput,
        input: Option<&serde_json::Value>,
        prepared: &mut [Vec<Prepared>],
    ) -> Result<()> {
        let (version, timestamp) = (commit.version, commit.timestamp);
        if self.streams.holds() && self.streamed.is_none_or(|s| s < version) {
            let commits = streams(pipeline, &mut commit.appended, input);
            self.streams
                .start(commits, version, timestamp, &self.held, prepared)?;
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
                let notes = Notes {
                    progress: output::flow_progress(flows, t, &commit.metrics),
                    input: input.cloned(),
                };
                (changes.unwrap_or_default(), notes)
            })
            .collect();
        self.targets
            .start(commits, version, timestamp, &self.held, prepared)
    }

    /// Waits for every version being prepared; `prepared` gets their log entries.
    pub(super) fn wait(&mut self, prepared: &mut [Vec<Prepared>]) -> Result<()> {
        self.targets.wait(prepared)?;
        self.streams.wait(prepared)
    }

    /// A step begins, on tables that hold commits up to `held` already (per published table;
    /// empty: none after the state's): see [`Publisher::publish`].
    pub(super) fn begin(&mut self, held: Vec<u64>) {
        self.step = Some(SystemTime::now());
        self.held = held;
        self.put = false;
    }

    /// Puts the versions `prepared` (per table, in [`Pipeline::published`] order, as
    /// [`Publisher::wait`] gave them) in the tables' logs, before the state holding them is
    /// committed ([`crate::persist::catch_up`]).
    pub(super) fn put(&mut self, prepared: &[Vec<Prepared>]) -> Result<()> {
        for (log, versions) in self.logs().zip(prepared) {
            versions.iter().try_for_each(|v| log.publish(v))?;
        }
        self.put = true;
        Ok(())
    }

    /// Puts the versions `prepared` in the tables' logs ([`Publisher::put`]) unless the step
    /// did already, then starts the upkeep they are due on a thread of its own (after the last
    /// one's), so that neither it nor the merges ahead wait in a commit's latency.
    pub(super) fn publish(&mut self, prepared: &[Vec<Prepared>]) -> Result<()> {
        if !self.put {
            self.put(prepared)?;
        }
        // One upkeep at a time (they are due a checkpoint interval apart).
        self.settle_upkeep()?;
        let due: Vec<(Arc<TableLog>, u64)> = (self.logs().zip(prepared))
            .flat_map(|(log, versions)| versions.iter().map(move |v| (log.clone(), v.version)))
            .filter(|(log, version)| log.due(*version))
            .collect();
        // Without a step's start (never: `begin` comes first), no file counts as old.
        let fresh = self.step.unwrap_or(SystemTime::UNIX_EPOCH);
        if !due.is_empty() {
            self.upkeep = Some(std::thread::spawn(move || {
                (due.iter()).try_for_each(|(log, version)| log.upkeep(*version, fresh))
            }));
        }
        Ok(())
    }

    /// Starts merging ahead of the next version in the tables no commit of this publisher's
    /// has reached yet ([`MaintainedTable::merge_ahead`]; the others merge ahead once a
    /// version is prepared). A session calls this while it waits for input, so that the first
    /// commit after it opened the tables finds the merges due running beside it rather than
    /// makes them first (a 10,000-event commit onto a 1M-row history took 250–320 ms so).
    pub(super) fn merge_ahead(&mut self) -> Result<()> {
        for lane in [&mut self.targets, &mut self.streams] {
            if lane.preparing.is_none() {
                (lane.tables.iter_mut()).try_for_each(MaintainedTable::merge_ahead)?;
            }
        }
        Ok(())
    }

    fn logs(&self) -> impl Iterator<Item = &Arc<TableLog>> + Clone {
        self.targets.logs.iter().chain(&self.streams.logs)
    }

    /// Live rows per table, in [`Pipeline::published`] order, once the merges ahead and the
    /// upkeep are done.
    pub(super) fn rows(&mut self) -> Result<Vec<usize>> {
        self.targets.join()?;
        self.streams.join()?;
        self.settle_upkeep()?;
        let tables = self.targets.tables.iter().chain(&self.streams.tables);
        Ok(tables.map(|t| t.rows() as usize).collect())
    }

    /// Waits for the last upkeep, if it runs.
    fn settle_upkeep(&mut self) -> Result<()> {
        match self.upkeep.take() {
            Some(thread) => thread.join().unwrap_or_else(|panic| resume_unwind(panic)),
            None => Ok(()),
        }
    }
}

impl Drop for Publisher {
    /// The upkeep is waited for (a process that ends now leaves no checkpoint half done); its
    /// error, if any, is lost with the publisher (a step that failed, or the session's end).
    fn drop(&mut self) {
        let _ = self.settle_upkeep();
    }
}

/// The inserts of each published streaming table of `pipeline`, taken out of a commit's
/// `appended` rows, noting the commit's `input`.
fn streams(
    pipeline: &Pipeline,
    appended: &mut [(usize, Vec<Row>)],
    input: Option<&serde_json::Value>,
) -> Vec<TableCommit> {
    let notes = || Notes {
        progress: Vec::new(),
        input: input.cloned(),
    };
    (pipeline.published().iter())
        .filter_map(|p| match p.of {
            Publishes::Table(t) => Some((output::appended_changes(appended, t), notes())),
            Publishes::Target(_) => None,
        })
        .collect()
}

impl Lane {
    fn new(first: usize, tables: Vec<MaintainedTable>) -> Result<Lane> {
        Ok(Lane {
            first,
            logs: (tables.iter())
                .map(|t| t.log().map(Arc::new))
                .collect::<Result<_>>()?,
            tables,
            preparing: None,
        })
    }

    /// Whether the lane has tables (with it, or with the thread preparing).
    fn holds(&self) -> bool {
        !self.tables.is_empty() || self.preparing.is_some()
    }

    /// Waits for the last commit's versions, then starts preparing commit `version`'s (at
    /// `timestamp`), table `i` of the lane from `commits[i]` unless it holds the commit
    /// already (`held`, per published table), on a thread that first waits for the last one's
    /// merges ahead (the caller, the driver, goes on feeding the engine).
    fn start(
        &mut self,
        commits: Vec<TableCommit>,
        version: u64,
        timestamp: i64,
        held: &[u64],
        prepared: &mut [Vec<Prepared>],
    ) -> Result<()> {
        self.wait(prepared)?;
        let tables = match self.preparing.take() {
            Some(mut last) => Tables::After(last.thread.take().expect("not joined yet")),
            None => Tables::Here(std::mem::take(&mut self.tables)),
        };
        let commits = (commits.into_iter().enumerate())
            .map(|(i, c)| {
                held.get(self.first + i)
                    .is_none_or(|h| version > *h)
                    .then_some(c)
            })
            .collect();
        self.preparing = Some(Preparing::start(tables, commits, version, timestamp));
        Ok(())
    }

    /// Waits for the last commit's versions (not for the merges ahead after them).
    fn wait(&mut self, prepared: &mut [Vec<Prepared>]) -> Result<()> {
        let Some(preparing) = self.preparing.as_mut() else {
            return Ok(());
        };
        match preparing.entries() {
            Some(Ok(entries)) => {
                for (p, entry) in entries {
                    prepared[self.first + p].push(entry);
                }
                Ok(())
            }
            Some(Err(e)) => {
                self.preparing = None;
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// Takes the tables back from the thread, once it has prepared and merged ahead.
    fn join(&mut self) -> Result<()> {
        if let Some(preparing) = self.preparing.take() {
            self.tables = preparing.join()?;
        }
        Ok(())
    }
}

/// The versions of one commit being prepared, then the tables' merges ahead of the next
/// ([`MaintainedTable::merge_ahead`]). Dropped unjoined (a step failed), it waits for the
/// thread rather than leave it writing into tables the next step opens again.
struct Preparing {
    /// The versions' log entries with their tables' places in the lane, until received.
    entries: Option<Receiver<Result<Vec<(usize, Prepared)>>>>,
    thread: Option<JoinHandle<Result<Vec<MaintainedTable>>>>,
}

/// A lane's tables, or the thread that has them until its merges ahead are done.
enum Tables {
    Here(Vec<MaintainedTable>),
    After(JoinHandle<Result<Vec<MaintainedTable>>>),
}

impl Preparing {
    /// Starts preparing commit `version` (at `timestamp`) of each of `tables`, table `i` from
    /// `commits[i]` (none: the table holds it already).
    fn start(
        tables: Tables,
        commits: Vec<Option<TableCommit>>,
        version: u64,
        timestamp: i64,
    ) -> Preparing {
        let (send, entries) = sync_channel(1);
        let thread = std::thread::spawn(move || {
            let mut tables = match tables {
                Tables::Here(tables) => tables,
                Tables::After(last) => match last.join().unwrap_or_else(|p| resume_unwind(p)) {
                    Ok(tables) => tables,
                    Err(e) => {
                        let _ = send.send(Err(e.clone()));
                        return Err(e);
                    }
                },
            };
            let jobs = (tables.iter_mut().zip(&commits).enumerate())
                .filter_map(|(i, (table, commit))| Some((i, table, commit.as_ref()?)))
                .collect();
            let prepared = output::each_table(jobs, |(i, table, (changes, notes))| {
                let (prepared, _) = table.prepare(version, timestamp, changes, notes)?;
                Ok((i, prepared))
            });
            let ok = prepared.is_ok();
            // Nobody waits for the entries when the step failed: no merging for it then.
            if send.send(prepared).is_ok() && ok {
                tables
                    .iter_mut()
                    .try_for_each(MaintainedTable::merge_ahead)?;
            }
            Ok(tables)
        });
        Preparing {
            entries: Some(entries),
            thread: Some(thread),
        }
    }

    /// Waits for the versions' log entries, the first time.
    fn entries(&mut self) -> Option<Result<Vec<(usize, Prepared)>>> {
        let entries = self.entries.take()?;
        // A thread that hung up without sending panicked: joining says so.
        Some(
            entries
                .recv()
                .unwrap_or_else(|_| self.join_thread().map(|_| Vec::new())),
        )
    }

    /// The tables back, once the thread is done.
    fn join(mut self) -> Result<Vec<MaintainedTable>> {
        self.join_thread()
    }

    fn join_thread(&mut self) -> Result<Vec<MaintainedTable>> {
        let thread = self.thread.take().expect("joined once");
        thread.join().unwrap_or_else(|panic| resume_unwind(panic))
    }
}

impl Drop for Preparing {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

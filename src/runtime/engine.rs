//! [`Engine`]: timely workers that live as long as a run — across all its commits and, under
//! `scdflow run --follow`, across polls — fed one commit at a time.
//!
//! The caller hands commits over in version order ([`Engine::feed`]); each worker holds at most
//! [`WINDOW`] commits it has not started, so a caller that reads faster than the workers apply
//! waits, and memory is the states plus that window. Results come back per commit, in order
//! ([`Engine::outcome`]), as soon as every worker has finished it. Between commits the caller
//! may save the states ([`Engine::save`]) or read the tables from them ([`Engine::tables`]). A
//! save may also be asked for behind the last commit handed over ([`Engine::save_after`]): each
//! worker saves as soon as it has finished that commit, while its outcome is labelled and
//! delivered, and [`Engine::saved`] waits for it once the outcomes are taken.
//!
//! A worker that fails tells the engine, which returns the error; dropping the engine stops
//! the workers without letting the dataflow complete.
//!
//! # Where a commit is labelled
//! A commit's change feed is its updates labelled ([`changefeed::label`]: a sort by identity,
//! pre- and post-images paired). Workers label their own keys' updates, in parallel, and the
//! engine merges their feeds. A process of one worker has nothing to label in parallel with,
//! and its caller often waits for it: a plain run of 1M SCD2 events kept the worker busy while
//! the driver thread, reading and rendering, idled half the time. There the worker labels
//! only while the caller is busy; while the caller waits (for room in the window, or for an
//! outcome) the worker hands its last stage's updates over unlabelled and the caller labels
//! them when it takes the outcome, so the two threads share the work as their loads allow. The
//! feed is the same either way; a commit's completion time is taken after its labelling.
//! Measured on that run (100 files, 1 worker, 2 cores): 1.59-1.66 s before, 1.35-1.44 after;
//! SCD1, whose driver is the busier thread, 0.71-0.72 s before and 0.69-0.71 after.

use super::deal::deal;
use super::mesh::Mesh;
use super::shards::ShardFiles;
use super::stages::Feeder;
use super::tables::{RenderedTable, RenderedTables, Rendering};
use super::worker::{self, Command, Done, Edits, Feed, Message, Shared};
use super::{Checkpoint, Cluster, CommitEvents};
use crate::engine::changefeed::{self, ChangeType};
use crate::engine::CommitStats;
use crate::plan::Target;
use crate::value::{Projection, Row};
use crate::{Error, ErrorKind, Result};
use std::collections::{BTreeMap, VecDeque};
use std::mem::take;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};
use timely::communication::initialize::{Hooks, WorkerGuards};
use timely::CommunicationConfig;

/// Commits a worker may hold before it starts them.
pub const WINDOW: usize = 2;

/// How to run the workers.
#[derive(Clone, Debug, Default)]
pub struct EngineConfig {
    /// Worker threads in this process (0 counts as 1).
    pub workers: usize,
    /// This process's place in a cluster, if any.
    pub cluster: Option<Cluster>,
    /// In a cluster: each process keeps the updates and rows of the keys its workers own,
    /// instead of gathering them to process 0 (counters and reports still reach process 0).
    pub partitioned: bool,
    /// In a cluster: what every process must agree on besides the engine's own terms (the
    /// version, processes, workers and partitioning), as `(name, value)`; a process whose
    /// terms differ stops every process, naming the first difference.
    pub terms: Vec<(String, String)>,
    /// A checkpoint to restore every state from before the first commit.
    pub restore: Option<Checkpoint>,
    /// Whether the states record the keys that change, so that [`Engine::save`] can write
    /// what changed since the last save.
    pub track_changes: bool,
    /// Where shards are saved and restored from: needed by `restore` and [`Engine::save`].
    pub files: Option<Arc<dyn ShardFiles>>,
    /// Per target: the stage of a commit it is applied in
    /// ([`crate::plan::Pipeline::stages`]; empty: every target in stage 0).
    pub stages: Vec<usize>,
    /// Makes later stages' input from an earlier stage's changes (needed when a stage is
    /// above 0).
    pub feeder: Option<Feeder>,
    /// Pins each worker to a core (the cores taken in turn, [`super::cores`]) when the process
    /// pins its threads. Right for a run that waits for its workers (each woken worker runs at
    /// once, on its own core); wrong for one whose other threads stay busy beside them (see
    /// [`crate::driver::Options::pin_workers`]).
    pub pin_workers: bool,
}

/// What one commit produced in this process.
#[derive(Debug)]
pub struct Outcome {
    /// The commit version.
    pub version: u64,
    /// The commit time every worker used (µs since the epoch; in a cluster, agreed by all).
    pub timestamp: i64,
    /// Per target: the commit's change-feed rows in feed order, labelled from its consolidated
    /// updates (in a gathering cluster, process 0 has every worker's and the others none; with
    /// partitioned outputs, this process's keys).
    pub changes: Vec<Vec<(ChangeType, Row)>>,
    /// Per target: the counters, summed over this process's workers (in a cluster, process 0
    /// has everyone's and the others none).
    pub stats: Vec<CommitStats>,
    /// With partitioned outputs, in process 0: per target, every process's change-feed rows,
    /// `(upserted, deleted)`.
    pub changed: Vec<(u64, u64)>,
    /// In process 0 of a cluster: the other processes' reports of the commit; and everywhere
    /// (in a cluster, in process 0) the [`Feeder`]'s reports of it.
    pub reports: Vec<String>,
    /// When the last worker finished the commit.
    pub completed: Instant,
    /// From handing the commit over to [`Outcome::completed`].
    pub latency: Duration,
}

/// Long-lived workers of one pipeline's targets; see the module docs.
pub struct Engine {
    commands: Vec<SyncSender<Command>>,
    messages: Receiver<Message>,
    guards: Option<WorkerGuards<()>>,
    targets: Vec<Target>,
    /// Per target: what identifies its change-feed rows, by which workers' feeds merge.
    identities: Vec<Projection>,
    cluster: bool,
    /// The cluster's connections; dropped (saying goodbye) after the workers are joined.
    mesh: Option<Mesh>,
    /// In a cluster whose results go to process 0.
    gathers: bool,
    /// Commits handed over and not yet complete: version and when.
    in_flight: VecDeque<(u64, Instant)>,
    /// Per version: the workers that finished it, and their results so far.
    finished: BTreeMap<u64, (usize, Done)>,
    /// Whether this thread is waiting for the workers (see the module docs).
    waits: Arc<AtomicBool>,
    /// A save asked for behind the commits in flight ([`Engine::save_after`]): the workers
    /// yet to answer, and the result so far.
    saving: Option<(usize, Result<()>)>,
}

/// Says, while it lives, that the engine's caller is waiting for the workers.
struct Waiting<'a>(&'a AtomicBool);

impl<'a> Waiting<'a> {
    fn on(flag: &'a AtomicBool) -> Self {
        flag.store(true, Ordering::Relaxed);
        Waiting(flag)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

impl Engine {
    /// Starts the workers of `targets` (restoring their states first, if configured).
    ///
    /// # Errors
    ///
    /// When timely cannot start (an address of the cluster that cannot be bound).
    pub fn open(targets: &[Target], config: EngineConfig) -> Result<Engine> {
        let workers = config.workers.max(1);
        let mut stages = config.stages.clone();
        stages.resize(targets.len(), 0);
        if stages.iter().any(|&s| s > 0) && config.feeder.is_none() {
            let message = "targets in a later stage of a commit need a feeder";
            return Err(Error::new(ErrorKind::Internal, message));
        }
        let process = config.cluster.as_ref().map_or(0, |c| c.process);
        let (messages_in, messages) = mpsc::channel();
        let mut commands = Vec::with_capacity(workers);
        let mut queues = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (sender, receiver) = mpsc::sync_channel(WINDOW);
            commands.push(sender);
            queues.push(Mutex::new(Some(receiver)));
        }
        let mesh = match &config.cluster {
            Some(c) => Some(Mesh::form(c, terms(&config, workers))?),
            None => None,
        };
        let (builders, others) = communication(mesh.as_ref(), workers)?;
        let identities: Vec<Projection> = targets.iter().map(changefeed::identity).collect();
        let waits = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            targets: targets.to_vec(),
            identities: identities.clone(),
            commands: queues,
            messages: Mutex::new(messages_in),
            first: process * workers,
            pin: config.pin_workers,
            cluster: config.cluster.is_some(),
            gather_rows: config.cluster.is_some() && !config.partitioned,
            restore: config.restore,
            track_changes: config.track_changes,
            files: config.files,
            stages,
            feeder: config.feeder,
            caller_waits: Arc::clone(&waits),
        });
        if let Some(mesh) = &mesh {
            mesh.watch()?;
        }
        let guards = timely::execute::execute_from(
            builders,
            others,
            timely::WorkerConfig::default(),
            move |w| worker::work(w, &shared),
        )
        .map_err(|e| Error::new(ErrorKind::Internal, format!("cannot start workers: {e}")))?;
        Ok(Engine {
            commands,
            messages,
            guards: Some(guards),
            targets: targets.to_vec(),
            identities,
            cluster: config.cluster.is_some(),
            mesh,
            gathers: config.cluster.is_some() && !config.partitioned,
            in_flight: VecDeque::new(),
            finished: BTreeMap::new(),
            waits,
            saving: None,
        })
    }

    /// Hands commit `version` to the workers: its input if this process read it (`None` when
    /// another process of the cluster did), and in a cluster this process's report of it for
    /// process 0. Waits while the workers hold a full window.
    pub fn feed(
        &mut self,
        version: u64,
        commit: Option<CommitEvents>,
        report: Option<String>,
    ) -> Result<()> {
        let workers = self.commands.len();
        let (announce, shares) = match commit {
            Some(c) => (Some(Ok(c.timestamp)), deal(c, &self.targets, workers)),
            None => (None, empty_shares(workers, self.targets.len())),
        };
        self.send_feed(version, shares, announce, report)
    }

    /// Tells every process of the cluster that this one could not read commit `version`
    /// (`why`): every worker then stops, and [`Engine::outcome`] returns the error.
    pub fn fail(&mut self, version: u64, why: String) -> Result<()> {
        let shares = empty_shares(self.commands.len(), self.targets.len());
        self.send_feed(version, shares, Some(Err(why)), None)
    }

    fn send_feed(
        &mut self,
        version: u64,
        shares: Vec<Vec<super::deal::TargetShare>>,
        announce: Option<std::result::Result<i64, String>>,
        report: Option<String>,
    ) -> Result<()> {
        if self.saving.is_some() {
            let message = "a commit was handed over behind a save";
            return Err(Error::new(ErrorKind::Internal, message));
        }
        let mut report = report;
        for (w, share) in shares.into_iter().enumerate() {
            // Only the first worker of a process speaks for it in a cluster; on one process
            // every worker reads the timestamp from its own feed.
            let speaks = w == 0 || !self.cluster;
            let feed = Feed {
                version,
                share,
                announce: announce.clone().filter(|_| speaks),
                report: report.take().filter(|_| w == 0),
            };
            self.send(w, Command::Commit(Box::new(feed)))?;
        }
        self.in_flight.push_back((version, Instant::now()));
        Ok(())
    }

    fn send(&mut self, w: usize, command: Command) -> Result<()> {
        let sent = match self.commands[w].try_send(command) {
            Err(TrySendError::Full(command)) => {
                let _waiting = Waiting::on(&self.waits);
                self.commands[w].send(command).map_err(drop)
            }
            sent => sent.map_err(drop),
        };
        // A worker that stopped dropped its queue; its message says why.
        sent.map_err(|()| self.stopped())
    }

    /// The outcome of the oldest commit handed over, waiting for it if `wait`; `None` when
    /// nothing is pending, or (without `wait`) when it is not complete yet.
    pub fn outcome(&mut self, wait: bool) -> Result<Option<Outcome>> {
        self.next(if wait { Wait::Forever } else { Wait::No })
    }

    /// As [`Engine::outcome`], waiting until `deadline` at the latest.
    pub fn outcome_before(&mut self, deadline: Instant) -> Result<Option<Outcome>> {
        self.next(Wait::Until(deadline))
    }

    fn next(&mut self, wait: Wait) -> Result<Option<Outcome>> {
        let workers = self.commands.len();
        loop {
            let Some(&(version, started)) = self.in_flight.front() else {
                return Ok(None);
            };
            if self
                .finished
                .get(&version)
                .is_some_and(|(n, _)| *n == workers)
            {
                self.in_flight.pop_front();
                let (_, done) = self.finished.remove(&version).expect("finished");
                let completed = done.at.unwrap_or_else(Instant::now);
                return Ok(Some(Outcome {
                    version,
                    timestamp: done.timestamp,
                    changes: done.changes,
                    stats: done.stats,
                    changed: done.changed,
                    reports: done.reports,
                    completed,
                    latency: completed.saturating_duration_since(started),
                }));
            }
            let waits = Arc::clone(&self.waits);
            let waiting = (!matches!(wait, Wait::No)).then(|| Waiting::on(&waits));
            let message = match wait {
                Wait::Forever => self.messages.recv().map_err(|_| self.stopped())?,
                Wait::No => match self.messages.try_recv() {
                    Ok(m) => m,
                    Err(TryRecvError::Empty) => return Ok(None),
                    Err(TryRecvError::Disconnected) => return Err(self.stopped()),
                },
                Wait::Until(deadline) => match self
                    .messages
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                {
                    Ok(m) => m,
                    Err(RecvTimeoutError::Timeout) => return Ok(None),
                    Err(RecvTimeoutError::Disconnected) => return Err(self.stopped()),
                },
            };
            drop(waiting);
            match message {
                Message::Done(done) => self.absorb(*done),
                Message::Failed(e) => return Err(e),
                Message::Saved(result) => self.heard_saved(result)?,
                Message::Tables(_)
                | Message::Rendered(_)
                | Message::Agreed(_)
                | Message::Edited(_) => {
                    return Err(Error::new(ErrorKind::Internal, "an answer out of turn"))
                }
            }
        }
    }

    fn absorb(&mut self, mut done: Done) {
        let targets = self.targets.len();
        let handed = take(&mut done.unlabelled).into_iter().enumerate();
        for (t, updates) in handed.filter(|(_, updates)| !updates.is_empty()) {
            let updates = updates.into_iter().map(|(row, _, diff)| (row, diff));
            done.changes[t] = changefeed::label(&self.identities[t], updates);
            done.at = Some(Instant::now());
        }
        let (count, into) = self.finished.entry(done.version).or_insert_with(|| {
            (
                0,
                Done {
                    version: done.version,
                    changes: vec![Vec::new(); targets],
                    keys: vec![Vec::new(); targets],
                    stats: vec![CommitStats::default(); targets],
                    changed: vec![(0, 0); targets],
                    ..Done::default()
                },
            )
        });
        *count += 1;
        into.timestamp = into.timestamp.max(done.timestamp);
        into.at = into.at.max(done.at);
        let mine = into.changes.iter_mut().zip(&mut into.keys);
        let theirs = done.changes.into_iter().zip(done.keys);
        for (((changes, keys), feed), identity) in mine.zip(theirs).zip(&self.identities) {
            let merged = changefeed::merge(identity, (take(changes), take(keys)), feed);
            (*changes, *keys) = merged;
        }
        for (mine, theirs) in into.stats.iter_mut().zip(&done.stats) {
            mine.merge(theirs);
        }
        for (mine, theirs) in into.changed.iter_mut().zip(&done.changed) {
            mine.0 += theirs.0;
            mine.1 += theirs.1;
        }
        into.reports.extend(done.reports);
    }

    /// Saves every worker's states into `dir` (one shard per worker, target and part): all of
    /// them, or with `changes` what changed since the last save (a delta; the engine must have
    /// been opened with [`EngineConfig::track_changes`]). Every commit handed over must have its
    /// outcome taken first.
    pub fn save(&mut self, dir: &Path, changes: bool) -> Result<()> {
        self.between_commits()?;
        self.save_after(dir, changes)?;
        self.saved()
    }

    /// Asks for the save [`Engine::save`] makes, behind the commits handed over: each worker
    /// saves once it has finished them, while the caller takes their outcomes; then
    /// [`Engine::saved`] says how it went. Nothing else may be asked of the engine meanwhile.
    pub fn save_after(&mut self, dir: &Path, changes: bool) -> Result<()> {
        if self.saving.is_some() {
            let message = "a save was asked for while one is under way";
            return Err(Error::new(ErrorKind::Internal, message));
        }
        for w in 0..self.commands.len() {
            self.send(w, Command::Save(dir.to_path_buf(), changes))?;
        }
        self.saving = Some((self.commands.len(), Ok(())));
        Ok(())
    }

    /// Waits for the save asked for by [`Engine::save_after`]; every commit handed over before
    /// it must have its outcome taken first.
    pub fn saved(&mut self) -> Result<()> {
        if !self.in_flight.is_empty() {
            let message = "a save was waited for with a commit's outcome not taken";
            return Err(Error::new(ErrorKind::Internal, message));
        }
        while self.saving.as_ref().is_some_and(|(due, _)| *due > 0) {
            match self.messages.recv().map_err(|_| self.stopped())? {
                Message::Saved(r) => self.heard_saved(r)?,
                Message::Failed(e) => return Err(e),
                _ => return Err(Error::new(ErrorKind::Internal, "an answer out of turn")),
            }
        }
        match self.saving.take() {
            Some((_, result)) => result,
            None => Err(Error::new(ErrorKind::Internal, "no save was asked for")),
        }
    }

    /// A worker's answer to the save under way.
    fn heard_saved(&mut self, result: Result<()>) -> Result<()> {
        match &mut self.saving {
            Some((due, so_far)) if *due > 0 => {
                *due -= 1;
                // The first failure is the one reported.
                if so_far.is_ok() {
                    *so_far = result;
                }
                Ok(())
            }
            _ => Err(Error::new(ErrorKind::Internal, "an answer out of turn")),
        }
    }

    /// Sets target rows by hand, as `edits` say, in order ([`crate::engine::edit`]): before
    /// the next commit, emitting nothing. A failed edit leaves the states partly edited: the
    /// engine must then be dropped. Every commit handed over must have its outcome taken first.
    pub fn edit(&mut self, edits: Vec<Edits>) -> Result<()> {
        self.between_commits()?;
        let edits = Arc::new(edits);
        for w in 0..self.commands.len() {
            self.send(w, Command::Edit(Arc::clone(&edits)))?;
        }
        let mut result = Ok(());
        for _ in 0..self.commands.len() {
            match self.messages.recv().map_err(|_| self.stopped())? {
                Message::Edited(r) => result = result.and(r),
                Message::Failed(e) => return Err(e),
                _ => return Err(Error::new(ErrorKind::Internal, "an answer out of turn")),
            }
        }
        result
    }

    /// Every target's table, read from the states (unsorted): in a gathering cluster the whole
    /// table in process 0 and nothing elsewhere; with partitioned outputs this process's keys.
    /// Every commit handed over must have its outcome taken first.
    pub fn tables(&mut self) -> Result<Vec<Vec<Row>>> {
        self.between_commits()?;
        for w in 0..self.commands.len() {
            self.send(w, Command::Tables)?;
        }
        let mut tables: Vec<Vec<Row>> = vec![Vec::new(); self.targets.len()];
        for _ in 0..self.commands.len() {
            match self.messages.recv().map_err(|_| self.stopped())? {
                Message::Tables(theirs) => {
                    for (mine, rows) in tables.iter_mut().zip(theirs) {
                        mine.extend(rows);
                    }
                }
                Message::Failed(e) => return Err(e),
                _ => return Err(Error::new(ErrorKind::Internal, "an answer out of turn")),
            }
        }
        Ok(tables)
    }

    /// What process 0 of a cluster decided, in every process: process 0 passes its decision
    /// (`mine`), the others' is ignored. Collective: every process asks at the same point of
    /// its run. Outside a cluster, `mine`.
    pub fn agree(&mut self, mine: Option<Vec<u8>>) -> Result<Vec<u8>> {
        self.between_commits()?;
        let leads = self.mesh.as_ref().is_none_or(|m| m.process() == 0);
        let mut mine = mine.filter(|_| leads);
        if !self.cluster {
            return mine.ok_or_else(|| Error::new(ErrorKind::Internal, "nothing to agree on"));
        }
        for w in 0..self.commands.len() {
            self.send(w, Command::Agree(mine.take()))?;
        }
        let mut agreed = None;
        for _ in 0..self.commands.len() {
            match self.messages.recv().map_err(|_| self.stopped())? {
                Message::Agreed(said) => agreed = agreed.or(said),
                Message::Failed(e) => return Err(e),
                _ => return Err(Error::new(ErrorKind::Internal, "an answer out of turn")),
            }
        }
        agreed.ok_or_else(|| Error::new(ErrorKind::Internal, "process 0 decided nothing"))
    }

    fn between_commits(&self) -> Result<()> {
        match self.in_flight.is_empty() && self.saving.is_none() {
            true => Ok(()),
            false => Err(Error::new(
                ErrorKind::Internal,
                "the engine was asked for its states with a commit or a save under way",
            )),
        }
    }

    /// Every target's table, rendered by `rendering` key by key in every worker and merged by key
    /// ([`RenderedTables`]): this process's keys, which are all of them outside a cluster and
    /// with partitioned outputs. A gathering cluster reads its tables with [`Engine::tables`].
    /// Every commit handed over must have its outcome taken first.
    pub fn render_tables(&mut self, rendering: Rendering) -> Result<RenderedTables> {
        self.between_commits()?;
        if self.gathers {
            return Err(Error::new(
                ErrorKind::Internal,
                "a gathering cluster reads its tables through worker 0 (Engine::tables)",
            ));
        }
        // The workers render at once, each in ranges on the cores the others leave.
        let ranges = (super::cores::count() / self.commands.len()).max(1);
        for w in 0..self.commands.len() {
            self.send(w, Command::Render(rendering.clone(), ranges))?;
        }
        let mut parts: Vec<Vec<RenderedTable>> =
            (0..self.targets.len()).map(|_| Vec::new()).collect();
        let mut result = Ok(());
        for _ in 0..self.commands.len() {
            match self.messages.recv().map_err(|_| self.stopped())? {
                Message::Rendered(Ok(tables)) => {
                    for (mine, theirs) in parts.iter_mut().zip(tables) {
                        mine.extend(theirs);
                    }
                }
                Message::Rendered(Err(e)) => result = result.and(Err(e)),
                Message::Failed(e) => return Err(e),
                _ => return Err(Error::new(ErrorKind::Internal, "an answer out of turn")),
            }
        }
        result.map(|()| RenderedTables::from_parts(parts))
    }

    /// Lets every worker's dataflow complete and joins them.
    pub fn finish(mut self) -> Result<()> {
        self.between_commits()?;
        for w in 0..self.commands.len() {
            self.send(w, Command::Finish)?;
        }
        self.commands.clear();
        let guards = self.guards.take().expect("joined once");
        let joined = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| guards.join()));
        let results = joined.map_err(|_| self.lost())?;
        if results.iter().any(|r| r.is_err()) {
            return Err(self.lost());
        }
        // A worker that failed while finishing said why.
        match self.messages.try_recv() {
            Ok(Message::Failed(e)) => Err(e),
            _ => Ok(()),
        }
    }

    /// Why a worker is gone: its own message if it sent one, else a lost peer.
    fn stopped(&mut self) -> Error {
        while let Ok(message) = self.messages.try_recv() {
            if let Message::Failed(e) = message {
                return e;
            }
        }
        self.lost()
    }

    /// Timely's network threads panic when a peer process goes away: in a cluster that is a
    /// lost peer (which one and why, when the heartbeats tell), not a bug.
    fn lost(&self) -> Error {
        if !self.cluster {
            return Error::new(ErrorKind::Internal, "a worker stopped unexpectedly");
        }
        let who = match self.mesh.as_ref().and_then(Mesh::lost) {
            Some(who) => format!(": {who}"),
            None => " (it exited, stopped or the network failed)".to_string(),
        };
        Error::new(
            ErrorKind::Peer,
            format!(
                "lost the connection to another process of the cluster{who}; nothing was written"
            ),
        )
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Closing the queues stops every worker at its next command.
        self.commands.clear();
        if let Some(guards) = self.guards.take() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| guards.join()));
        }
    }
}

/// How long [`Engine::next`] waits for a worker's message.
#[derive(Clone, Copy)]
enum Wait {
    No,
    Forever,
    Until(Instant),
}

/// The engine's terms of a cluster, then the caller's ([`EngineConfig::terms`]).
fn terms(config: &EngineConfig, workers: usize) -> Vec<(String, String)> {
    let processes = config.cluster.as_ref().map_or(1, |c| c.addresses.len());
    let mut terms: Vec<(String, String)> = [
        ("the scdflow version", env!("CARGO_PKG_VERSION").to_string()),
        ("--processes", processes.to_string()),
        ("--workers", workers.to_string()),
        ("--partitioned-output", config.partitioned.to_string()),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_string(), value))
    .collect();
    terms.extend(config.terms.iter().cloned());
    terms
}

/// Timely's allocators: on the cluster's connections, or within this process.
fn communication(
    mesh: Option<&Mesh>,
    workers: usize,
) -> Result<(Vec<AllocatorBuilder>, Box<dyn std::any::Any + Send>)> {
    let started = |e: String| Error::new(ErrorKind::Internal, format!("cannot start workers: {e}"));
    let Some(mesh) = mesh else {
        let config = match workers {
            1 => CommunicationConfig::Thread,
            n => CommunicationConfig::Process(n),
        };
        return config.try_build().map_err(started);
    };
    let hooks = Hooks::default();
    let local =
        ProcessBuilder::new_typed_vector(workers, hooks.refill.clone(), hooks.spill.clone());
    let connections = mesh.timely_connections()?;
    let (builders, guard) =
        initialize_networking_from_sockets(local, connections, mesh.process(), workers, hooks)
            .map_err(|e| started(e.to_string()))?;
    let builders = builders.into_iter().map(AllocatorBuilder::Tcp).collect();
    Ok((builders, Box::new(guard)))
}

fn empty_shares(workers: usize, targets: usize) -> Vec<Vec<super::deal::TargetShare>> {
    (0..workers)
        .map(|_| (0..targets).map(|_| Default::default()).collect())
        .collect()
}

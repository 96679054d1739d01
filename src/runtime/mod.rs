//! Executes targets over a sequence of commits on timely workers: AUTO CDC targets from events,
//! snapshot targets from full snapshots (diffed, then SCD1/SCD2), REPLACE USING targets from rows.
//!
//! Commit `v` (1-based) is fed at timely time `v`; events are dealt round-robin to the workers
//! before execution (each worker then owns its share and moves it into the dataflow), and every
//! worker steps until the commit is complete on every target, so the dataflow holds one commit
//! at a time besides the state. Each worker captures its updates locally; they are merged once
//! at the end. The updates are timestamped by commit, so a target after any commit is the sum of
//! the updates up to it.
//!
//! In a cluster ([`Cluster`]: timely's own TCP transport between processes, no other
//! infrastructure) each process brings the commits it read ([`ProcessInput`]) and its workers
//! feed them; the operators exchange events by key across the cluster. Before the first commit
//! every worker learns every commit's timestamp (the reading process's clock, made
//! non-decreasing) and whether some process could not read its share, in which case every
//! process fails rather than waits. The targets' updates, every worker's counters and the
//! processes' reports are exchanged to worker 0, which lives in process 0: its [`Updates`] hold
//! everything, the other processes' hold nothing.
//!
//! With [`Persistence`] (durable runs) each worker restores its operators' states from a
//! checkpoint before the first commit (any worker failing to do so makes every worker stop),
//! the commits are versions `base + 1, ...`, the restored tables reappear as insertions at
//! `base`, and each worker saves its operators' states after the last commit.

mod held;

use crate::engine::CommitStats;
use crate::event::Event;
use crate::operators::keyed::keyed_cdc;
use crate::operators::replace_using::replace_using_shared;
use crate::operators::snapshot_diff::snapshot_diff_shared;
use crate::plan::Target;
use crate::value::Row;
use crate::{Error, ErrorKind, Result};
use differential_dataflow::input::{Input, InputSession};
use differential_dataflow::VecCollection;
use held::{Held, Scd};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::{Exchange, Probe};
use timely::dataflow::ProbeHandle;

/// A full snapshot for a snapshot target: its version and its rows (in the target's image
/// layout, one row per key).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The snapshot version (the sequence of its changes).
    pub version: i64,
    /// The rows.
    pub rows: Vec<Row>,
}

/// One commit's input, per target (indexed like the targets passed to [`execute`]; shorter
/// vectors mean no input for the remaining targets).
#[derive(Clone, Debug, Default)]
pub struct CommitEvents {
    /// Events of AUTO CDC targets.
    pub events: Vec<Vec<Event>>,
    /// Snapshots of snapshot targets.
    pub snapshots: Vec<Option<Snapshot>>,
    /// Incoming rows of REPLACE USING targets.
    pub rows: Vec<Vec<Row>>,
    /// The commit (ingestion) time, microseconds since the epoch; it ages tombstones (D11) and
    /// must not decrease from one commit to the next.
    pub timestamp: i64,
}

/// Everything the targets emitted.
#[derive(Debug, Default)]
pub struct Updates {
    /// Per target: `(row, commit version, diff)`, in no particular order. Each commit's updates
    /// are consolidated (a key's rows live on one worker, which emits them consolidated per
    /// commit), so no `(row, version)` appears twice.
    pub rows: Vec<Vec<(Row, u64, isize)>>,
    /// Per target: counters per commit version, summed over workers.
    pub stats: Vec<BTreeMap<u64, CommitStats>>,
    /// Per commit, on worker 0: the time from handing the commit to the inputs until every
    /// target's output frontier passed it.
    pub latencies: Vec<Duration>,
    /// The commit timestamps every worker used, per commit (in a cluster, agreed by all
    /// processes: each commit's reader's clock, made non-decreasing).
    pub timestamps: Vec<i64>,
    /// In process 0 of a cluster: every process's [`ProcessInput::reports`], in no particular
    /// order.
    pub reports: Vec<(u64, String)>,
    /// With [`ProcessInput::partitioned`], in process 0: per target and commit version, the
    /// change-feed rows of every process, `(upserted, deleted)` (insert or update_postimage,
    /// delete), as [`crate::changefeed::changes`] classifies each process's updates.
    pub changed: Vec<BTreeMap<u64, (u64, u64)>>,
}

impl Updates {
    fn new(targets: usize) -> Self {
        Updates {
            rows: vec![Vec::new(); targets],
            stats: vec![BTreeMap::new(); targets],
            latencies: Vec::new(),
            timestamps: Vec::new(),
            reports: Vec::new(),
            changed: vec![BTreeMap::new(); targets],
        }
    }

    fn merge(&mut self, other: Updates) {
        for (mine, theirs) in self.rows.iter_mut().zip(other.rows) {
            mine.extend(theirs);
        }
        for (mine, theirs) in self.stats.iter_mut().zip(other.stats) {
            for (version, stats) in theirs {
                mine.entry(version).or_default().merge(&stats);
            }
        }
        self.latencies.extend(other.latencies);
        if self.timestamps.is_empty() {
            self.timestamps = other.timestamps;
        }
        self.reports.extend(other.reports);
        for (mine, theirs) in self.changed.iter_mut().zip(other.changed) {
            for (version, (up, down)) in theirs {
                let entry = mine.entry(version).or_default();
                entry.0 += up;
                entry.1 += down;
            }
        }
    }
}

/// Called by worker 0 after each commit completes, with the commit's version.
pub type Progress = Box<dyn Fn(u64) + Send + Sync>;

/// This process's place in a cluster of processes that run one pipeline together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// This process's index in `addresses`.
    pub process: usize,
    /// `host:port` of every process, in process order (at least two).
    pub addresses: Vec<String>,
}

impl Cluster {
    /// Whether this process gathers the results (process 0).
    pub fn gathers(&self) -> bool {
        self.process == 0
    }
}

/// What one process brings to a run ([`execute_in`]).
#[derive(Debug, Default)]
pub struct ProcessInput {
    /// Every commit of the run, in order: `Some` for the commits this process read, `None` for
    /// those another process of the cluster read. Every process passes the same number.
    pub commits: Vec<Option<CommitEvents>>,
    /// Opaque per-commit reports, `(version, text)`, that reach process 0 (the driver's metrics
    /// and set-aside rows of the commits this process read).
    pub reports: Vec<(u64, String)>,
    /// Why this process cannot run its share (it could not read it): every process then fails
    /// instead of waiting for it.
    pub failure: Option<String>,
    /// Operator state carried over from earlier runs, and where to save it after this one.
    pub persistence: Persistence,
    /// In a cluster: each process keeps its own workers' target updates (the rows of the keys
    /// they own) instead of gathering them to process 0; counters, reports and the counts of
    /// change-feed rows ([`Updates::changed`]) still reach process 0.
    pub partitioned: bool,
    /// Set once this process's workers start: in a cluster, once every process is connected
    /// (timely waits for all of them first), so a caller can give up on a cluster that does
    /// not form.
    pub started: Option<Arc<AtomicBool>>,
}

/// Operator state that outlives a run (`scdflow run --state DIR`): the runtime restores every
/// operator's state before the first commit, emits the restored tables at time `base`, and
/// saves every state after the last commit, one shard per worker and operator.
#[derive(Clone, Debug, Default)]
pub struct Persistence {
    /// Commits applied by earlier runs: this run's commits are versions `base + 1, ...` and the
    /// restored tables appear (as insertions) at version `base`.
    pub base: u64,
    /// A checkpoint directory to restore from, and the number of workers that wrote it.
    pub restore: Option<(PathBuf, usize)>,
    /// A directory to save every operator's state into after the last commit.
    pub save: Option<PathBuf>,
}

/// One worker's input for one target in one commit.
#[derive(Debug, Default)]
struct TargetShare {
    events: Vec<Event>,
    snapshot: Vec<(Row, Row)>,
    version: Option<i64>,
    rows: Vec<Row>,
}

/// A worker's share of the input: per commit, per target.
type Share = Vec<Vec<TargetShare>>;

/// Deals each commit's input round-robin to `workers` shares (a commit read elsewhere gives
/// every share nothing); every worker feeds every snapshot version it is dealt.
fn deal(commits: Vec<Option<CommitEvents>>, targets: &[Target], workers: usize) -> Vec<Share> {
    let mut shares: Vec<Share> = (0..workers)
        .map(|_| Vec::with_capacity(commits.len()))
        .collect();
    for commit in commits {
        for share in &mut shares {
            share.push((0..targets.len()).map(|_| TargetShare::default()).collect());
        }
        let Some(commit) = commit else { continue };
        for (t, events) in commit.events.into_iter().enumerate().take(targets.len()) {
            for (i, event) in events.into_iter().enumerate() {
                slot(&mut shares, i % workers, t).events.push(event);
            }
        }
        for (t, rows) in commit.rows.into_iter().enumerate().take(targets.len()) {
            for (i, row) in rows.into_iter().enumerate() {
                slot(&mut shares, i % workers, t).rows.push(row);
            }
        }
        for (t, snapshot) in commit.snapshots.into_iter().enumerate().take(targets.len()) {
            let Some(snapshot) = snapshot else { continue };
            for w in 0..workers {
                slot(&mut shares, w, t).version = Some(snapshot.version);
            }
            for (i, row) in snapshot.rows.into_iter().enumerate() {
                let key = targets[t].keys.iter().map(|&k| row[k].clone()).collect();
                slot(&mut shares, i % workers, t).snapshot.push((key, row));
            }
        }
    }
    shares
}

/// Worker `w`'s input for target `t` in the commit being dealt (the last one pushed).
fn slot(shares: &mut [Share], w: usize, t: usize) -> &mut TargetShare {
    &mut shares[w]
        .last_mut()
        .expect("the commit is pushed before it is dealt")[t]
}

/// A worker's counters of one commit of one target: `(target, version, counters)`.
type StatsRecord = (usize, u64, CommitStats);

/// A worker's change-feed rows of one commit of one target: `(target, version, (upserted,
/// deleted))`.
type ChangedRecord = (usize, u64, (u64, u64));

/// Per commit version, the change-feed rows that `updates` make: `(upserted, deleted)`.
fn change_counts(target: &Target, updates: &[(Row, u64, isize)]) -> BTreeMap<u64, (u64, u64)> {
    let mut counts: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for change in crate::changefeed::changes(target, updates) {
        let entry = counts.entry(change.version).or_default();
        let (up, down) = change.kind.counts();
        entry.0 += up;
        entry.1 += down;
    }
    counts
}

/// One worker's input handles for one target.
struct Inputs {
    events: InputSession<u64, Event, isize>,
    snapshot: InputSession<u64, (Row, Row), isize>,
    versions: InputSession<u64, i64, isize>,
    rows: InputSession<u64, Row, isize>,
}

impl Inputs {
    fn feed(&mut self, version: u64, share: TargetShare) {
        self.advance_to(version);
        for event in share.events {
            self.events.insert(event);
        }
        for row in share.snapshot {
            self.snapshot.insert(row);
        }
        if let Some(v) = share.version {
            self.versions.insert(v);
        }
        for row in share.rows {
            self.rows.insert(row);
        }
        self.advance_to(version + 1);
        self.events.flush();
        self.snapshot.flush();
        self.versions.flush();
        self.rows.flush();
    }

    fn advance_to(&mut self, time: u64) {
        self.events.advance_to(time);
        self.snapshot.advance_to(time);
        self.versions.advance_to(time);
        self.rows.advance_to(time);
    }
}

/// Runs `targets` over `commits` (versions 1, 2, ...) on `workers` threads.
pub fn execute(
    targets: &[Target],
    commits: Vec<CommitEvents>,
    workers: usize,
    progress: Option<Progress>,
) -> Result<Updates> {
    let input = ProcessInput {
        commits: commits.into_iter().map(Some).collect(),
        ..ProcessInput::default()
    };
    execute_in(targets, input, workers, None, progress)
}

/// As [`execute`], with `workers` threads in this process of `cluster`. Every process passes
/// all the run's commits, `Some` for those it read; each process's workers feed the commits it
/// read. The targets' updates, counters and reports are complete in process 0 and empty
/// elsewhere.
///
/// # Errors
///
/// When the cluster cannot be formed (an address that cannot be bound or reached), when a
/// process brings a [`ProcessInput::failure`] ([`ErrorKind::Peer`] in the others), or when a
/// worker fails.
pub fn execute_in(
    targets: &[Target],
    input: ProcessInput,
    workers: usize,
    cluster: Option<&Cluster>,
    progress: Option<Progress>,
) -> Result<Updates> {
    let workers = workers.max(1);
    let targets: Arc<Vec<Target>> = Arc::new(targets.to_vec());
    let process = cluster.map_or(0, |c| c.process);
    let first = process * workers;
    let read_here: Arc<Vec<Option<i64>>> = Arc::new(
        input
            .commits
            .iter()
            .map(|c| c.as_ref().map(|c| c.timestamp))
            .collect(),
    );
    let shares: Arc<Vec<Mutex<Share>>> = Arc::new(
        deal(input.commits, &targets, workers)
            .into_iter()
            .map(Mutex::new)
            .collect(),
    );
    let failure = Arc::new(input.failure.map(|f| format!("process {process}: {f}")));
    let persistence = Arc::new(input.persistence);
    let started = input.started;
    let base = persistence.base;
    let reports = Arc::new(Mutex::new(input.reports));
    let sink = Arc::new(Mutex::new(Updates::new(targets.len())));
    let progress = Arc::new(progress);
    let gather = cluster.is_some();
    let gather_rows = gather && !input.partitioned;
    let config = match (cluster, workers) {
        (Some(c), threads) => timely::Config {
            communication: timely::CommunicationConfig::Cluster {
                threads,
                process: c.process,
                addresses: c.addresses.clone(),
                report: false,
                zerocopy: false,
            },
            worker: timely::WorkerConfig::default(),
        },
        (None, 1) => timely::Config::thread(),
        (None, n) => timely::Config::process(n),
    };
    let worker_sink = Arc::clone(&sink);
    let guards = timely::execute(config, move |worker| -> Option<Error> {
        if let Some(started) = &started {
            started.store(true, Ordering::SeqCst);
        }
        let index = worker.index();
        let peers = worker.peers();
        let leads = index == first;
        let (clock, failed) = if gather {
            agree(worker, leads, &read_here, failure.as_deref())
        } else {
            let clock = read_here.iter().map(|t| t.unwrap_or(i64::MIN)).collect();
            (clock, failure.as_ref().clone())
        };
        if let Some(why) = failed {
            return Some(Error::new(ErrorKind::Peer, why));
        }
        let held: Vec<Held> = targets.iter().map(Held::new).collect();
        if let Some((checkpoint, writers)) = &persistence.restore {
            let restored = held
                .iter()
                .enumerate()
                .try_for_each(|(t, h)| h.restore(t, checkpoint, *writers, index, peers));
            // Every worker learns of any worker's failure, so that none waits for another.
            let own = restored.err();
            let failures = tell_everyone(worker, own.iter().map(|e| e.to_string()).collect());
            if let Some(e) = own {
                return Some(e);
            }
            if let Some(why) = failures.into_iter().next() {
                return Some(Error::new(ErrorKind::Peer, why));
            }
        }
        // Restored tables reappear, as insertions, at the last commit of the run that saved them.
        let restored = persistence.restore.is_some().then_some(base);
        let clock = Arc::new(clock);
        let commit_time = {
            let clock = Arc::clone(&clock);
            Rc::new(move |version: &u64| clock[(*version - base) as usize - 1])
        };
        let share = std::mem::take(&mut *shares[index - first].lock().expect("share"));
        let local = Rc::new(RefCell::new(Updates::new(targets.len())));
        let batches: Rc<RefCell<Vec<Vec<Vec<(Row, u64, isize)>>>>> =
            Rc::new(RefCell::new(vec![Vec::new(); targets.len()]));
        let probe: ProbeHandle<u64> = ProbeHandle::new();
        let mut inputs: Vec<Inputs> = worker.dataflow::<u64, _, _>(|scope| {
            targets
                .iter()
                .enumerate()
                .map(|(t, _)| {
                    let (events, event_collection) = scope.new_collection::<Event, isize>();
                    let (snapshot, snapshot_collection) =
                        scope.new_collection::<(Row, Row), isize>();
                    let (versions, version_collection) = scope.new_collection::<i64, isize>();
                    let (rows, row_collection) = scope.new_collection::<Row, isize>();
                    let events_in = match &held[t] {
                        Held::Snapshot(previous, _) => snapshot_diff_shared(
                            snapshot_collection,
                            version_collection,
                            Rc::clone(previous),
                        ),
                        _ => event_collection,
                    };
                    let capture = Rc::clone(&batches);
                    // A sink moves the updates out (`inspect` would clone every row) and keeps
                    // each batch as it came: appending to one growing vector would copy all
                    // earlier updates whenever it doubles, in the middle of some commit.
                    let output = render(
                        t,
                        &held[t],
                        events_in,
                        row_collection,
                        restored,
                        &commit_time,
                        &local,
                    )
                    .inner;
                    // In a cluster every update goes to worker 0, in process 0; the probe comes
                    // after the exchange, so a complete commit has arrived there.
                    let output = if gather_rows {
                        output.exchange(|_| 0)
                    } else {
                        output
                    };
                    output
                        .probe_with(&probe)
                        .sink(Pipeline, "Capture", move |(input, _)| {
                            input.for_each(|_, updates| {
                                capture.borrow_mut()[t].push(std::mem::take(updates))
                            });
                        });
                    Inputs {
                        events,
                        snapshot,
                        versions,
                        rows,
                    }
                })
                .collect::<Vec<Inputs>>()
        });
        // Counters and reports travel to worker 0 like the updates, at the end of the run: one
        // record per (target, commit), and the reports of each process's commits.
        let gathered: Rc<RefCell<Vec<StatsRecord>>> = Rc::new(RefCell::new(Vec::new()));
        let gathered_reports: Rc<RefCell<Vec<(u64, String)>>> = Rc::new(RefCell::new(Vec::new()));
        let gathered_changes: Rc<RefCell<Vec<ChangedRecord>>> = Rc::new(RefCell::new(Vec::new()));
        let gathering: ProbeHandle<u64> = ProbeHandle::new();
        let (mut stats_input, mut report_input, mut changed_input) =
            worker.dataflow::<u64, _, _>(|scope| {
                let (stats_input, stats) = scope.new_collection::<StatsRecord, isize>();
                let (report_input, reports) = scope.new_collection::<(u64, String), isize>();
                let (changed_input, changed) = scope.new_collection::<ChangedRecord, isize>();
                to_worker_zero(stats.inner, &gathering, &gathered);
                to_worker_zero(reports.inner, &gathering, &gathered_reports);
                to_worker_zero(changed.inner, &gathering, &gathered_changes);
                (stats_input, report_input, changed_input)
            });
        let last = base + share.len() as u64;
        for (c, commit) in share.into_iter().enumerate() {
            let version = base + c as u64 + 1;
            let started = Instant::now();
            for (input, target_share) in inputs.iter_mut().zip(commit) {
                input.feed(version, target_share);
            }
            stats_input.advance_to(version + 1);
            stats_input.flush();
            report_input.advance_to(version + 1);
            report_input.flush();
            changed_input.advance_to(version + 1);
            changed_input.flush();
            // Park rather than spin while other workers finish the commit: with more workers than
            // cores, spinning steals the cores that would finish it.
            while probe.less_than(&(version + 1)) {
                worker.step_or_park(None);
            }
            if index == 0 {
                local.borrow_mut().latencies.push(started.elapsed());
                if let Some(report) = progress.as_ref() {
                    report(version);
                }
            }
        }
        drop(inputs);
        // Every update has arrived once the targets are done (a restored table with no commit
        // after it is emitted only now).
        while !probe.done() {
            worker.step_or_park(None);
        }
        let mut local = std::mem::take(&mut *local.borrow_mut());
        for (rows, batches) in local.rows.iter_mut().zip(batches.take()) {
            rows.extend(batches.into_iter().flatten());
        }
        if gather && !gather_rows {
            changed_input.advance_to(last + 1);
            for (t, target) in targets.iter().enumerate() {
                for (version, counts) in change_counts(target, &local.rows[t]) {
                    changed_input.insert((t, version, counts));
                }
            }
        }
        if gather {
            stats_input.advance_to(last + 1);
            for (t, per_commit) in local.stats.iter_mut().enumerate() {
                for (version, stats) in std::mem::take(per_commit) {
                    stats_input.insert((t, version, stats));
                }
            }
            if leads {
                report_input.advance_to(last + 1);
                for report in std::mem::take(&mut *reports.lock().expect("reports")) {
                    report_input.insert(report);
                }
            }
        }
        drop(stats_input);
        drop(report_input);
        drop(changed_input);
        while !gathering.done() {
            worker.step_or_park(None);
        }
        // After the dataflow is done, so that a worker failing here leaves none waiting for it.
        if let Some(dir) = &persistence.save {
            for (t, h) in held.iter().enumerate() {
                if let Err(e) = h.save(t, dir, index) {
                    return Some(e);
                }
            }
        }
        for (t, version, stats) in gathered.take() {
            local.stats[t].entry(version).or_default().merge(&stats);
        }
        local.reports = gathered_reports.take();
        for (t, version, (up, down)) in gathered_changes.take() {
            let entry = local.changed[t].entry(version).or_default();
            entry.0 += up;
            entry.1 += down;
        }
        if leads {
            local.timestamps = clock.to_vec();
        }
        worker_sink.lock().expect("sink").merge(local);
        None
    })
    .map_err(|e| Error::new(ErrorKind::Internal, format!("cannot start workers: {e}")))?;
    // Timely's network threads panic when a peer process goes away, and joining them passes
    // the panic on: in a cluster that is a lost peer, not a bug.
    let joined = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| guards.join()));
    let results = joined.map_err(|_| {
        Error::new(
            ErrorKind::Peer,
            "lost the connection to another process of the cluster (it exited, or the network \
             failed); nothing was written",
        )
    })?;
    let mut failed: Option<Error> = None;
    for result in results {
        let result = result.map_err(|e| {
            let kind = if gather {
                ErrorKind::Peer
            } else {
                ErrorKind::Internal
            };
            Error::new(kind, format!("worker failed: {e}"))
        })?;
        // A worker's own error (a damaged shard, say) says more than a peer's echo of it.
        failed = match (failed, result) {
            (Some(f), Some(e)) if f.kind() == ErrorKind::Peer && e.kind() != ErrorKind::Peer => {
                Some(e)
            }
            (f, r) => f.or(r),
        };
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let updates = std::mem::take(&mut *sink.lock().expect("sink"));
    Ok(updates)
}

/// Before a cluster run: every worker learns every commit's timestamp (from the process that
/// read it) and whether a process failed to read its share. The lead worker of each process
/// (`leads`) announces its process's commits and failure to all workers. Returns the clock (one
/// timestamp per commit, made non-decreasing) and the first failure, if any.
fn agree(
    worker: &mut timely::worker::Worker,
    leads: bool,
    read_here: &[Option<i64>],
    failure: Option<&str>,
) -> (Vec<i64>, Option<String>) {
    let mut announced = Vec::new();
    if leads {
        for (c, timestamp) in read_here.iter().enumerate() {
            if let Some(t) = timestamp {
                announced.push((c as u64 + 1, *t, String::new()));
            }
        }
        if let Some(why) = failure {
            announced.push((0, 0, why.to_string()));
        }
    }
    let mut clock = vec![i64::MIN; read_here.len()];
    let mut failed: Option<String> = None;
    for (version, timestamp, why) in tell_everyone(worker, announced) {
        match version {
            0 => failed = failed.or(Some(why)),
            // Every process that read a share of a split file announces it: the latest counts.
            v => clock[v as usize - 1] = clock[v as usize - 1].max(timestamp),
        }
    }
    for c in 1..clock.len() {
        clock[c] = clock[c].max(clock[c - 1]);
    }
    (clock, failed)
}

/// Every worker's `records`, on every worker (a collective step: every worker must call it).
fn tell_everyone<D: differential_dataflow::ExchangeData>(
    worker: &mut timely::worker::Worker,
    records: Vec<D>,
) -> Vec<D> {
    let heard: Rc<RefCell<Vec<D>>> = Rc::new(RefCell::new(Vec::new()));
    let probe: ProbeHandle<u64> = ProbeHandle::new();
    let mut announce = worker.dataflow::<u64, _, _>(|scope| {
        let (input, announced) = scope.new_collection::<D, isize>();
        let capture = Rc::clone(&heard);
        announced.inner.broadcast().probe_with(&probe).sink(
            Pipeline,
            "TellEveryone",
            move |(input, _)| {
                input.for_each(|_, records| {
                    capture
                        .borrow_mut()
                        .extend(records.drain(..).map(|(record, _, _)| record));
                });
            },
        );
        input
    });
    for record in records {
        announce.insert(record);
    }
    drop(announce);
    while !probe.done() {
        worker.step_or_park(None);
    }
    heard.take()
}

/// Sends every record of `stream` to worker 0, where `into` collects them.
fn to_worker_zero<'s, D: timely::ExchangeData>(
    stream: timely::dataflow::StreamVec<'s, u64, (D, u64, isize)>,
    probe: &ProbeHandle<u64>,
    into: &Rc<RefCell<Vec<D>>>,
) {
    let capture = Rc::clone(into);
    stream
        .exchange(|_| 0)
        .probe_with(probe)
        .sink(Pipeline, "ToWorkerZero", move |(input, _)| {
            input.for_each(|_, records| {
                capture
                    .borrow_mut()
                    .extend(records.drain(..).map(|(record, _, _)| record));
            });
        });
}

fn render<'s>(
    t: usize,
    held: &Held,
    events: VecCollection<'s, u64, Event>,
    rows: VecCollection<'s, u64, Row>,
    restored: Option<u64>,
    commit_time: &Rc<impl Fn(&u64) -> i64 + 'static>,
    local: &Rc<RefCell<Updates>>,
) -> VecCollection<'s, u64, Row> {
    let local = Rc::clone(local);
    let on_stats = move |time: &u64, stats: CommitStats| {
        local.borrow_mut().stats[t]
            .entry(*time)
            .or_default()
            .merge(&stats);
    };
    let commit_time = Rc::clone(commit_time);
    let clock = move |version: &u64| commit_time(version);
    let scd = match held {
        Held::Replace(state) => return replace_using_shared(rows, Rc::clone(state), restored),
        Held::Cdc(scd) | Held::Snapshot(_, scd) => scd,
    };
    match scd {
        Scd::Type1(state) => keyed_cdc(events, "Scd1", Rc::clone(state), restored, clock, on_stats),
        Scd::Type2(state) => keyed_cdc(events, "Scd2", Rc::clone(state), restored, clock, on_stats),
        Scd::Bitemporal(state) => keyed_cdc(
            events,
            "Bitemporal",
            Rc::clone(state),
            restored,
            clock,
            on_stats,
        ),
    }
}

//! One timely worker of an [`Engine`](super::Engine): it builds the targets' dataflow once,
//! restores their states, then serves commands until the engine finishes.
//!
//! A commit is fed at timely time `version` and the worker steps until every target's output
//! has passed it, so the dataflow holds one commit at a time besides the states. Its updates
//! are captured by an operator that the probe follows, so a passed commit is wholly captured.
//! In a cluster each commit begins with an announcement round (its timestamp, from the process
//! that read it, or that process's failure) and, when gathering, ends with a round that brings
//! counters, reports and rows to worker 0; the inputs stay at `version` until the timestamp is
//! known, so no operator applies a commit before its time is.

use super::batch_input::BatchInput;
use super::control::{tell_everyone, Announcement, Control, Note};
use super::deal::TargetShare;
use super::held::Held;
use super::shards::ShardFiles;
use super::stages::{Feeder, StageChanges};
use super::tables::{RenderedTable, Rendering};
use super::{Checkpoint, CommitEvents};
use crate::engine::changefeed::{self, ChangeType};
use crate::engine::{worker_of, CommitStats, HistoryRules, KeyEdit};
use crate::event::Event;
use crate::operators::{TargetInputs, TargetState};
use crate::plan::Target;
use crate::value::{Projection, Row, SortKey};
use crate::{Error, ErrorKind, Result};
use differential_dataflow::AsCollection;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::{Exchange, Probe};
use timely::dataflow::ProbeHandle;
use timely::worker::Worker;

/// What the engine asks of a worker.
pub(super) enum Command {
    /// Apply a commit.
    Commit(Box<Feed>),
    /// Save every state (or what changed since the last save) into a checkpoint directory.
    Save(PathBuf, bool),
    /// Read every target's table.
    Tables,
    /// Learn what process 0 decided (given to its first worker only).
    Agree(Option<Vec<u8>>),
    /// Render every target's table (of the keys this worker owns), in up to this many ranges of
    /// keys side by side.
    Render(Rendering, usize),
    /// Set rows by hand, in order (each worker the keys it owns).
    Edit(Arc<Vec<Edits>>),
    /// No more commands: let the dataflow complete.
    Finish,
}

/// One table version's edits of one target's rows (DML on a published target).
#[derive(Debug)]
pub struct Edits {
    /// The target.
    pub target: usize,
    /// The table version that made them (named in errors).
    pub version: u64,
    /// The latest commit time, at which deletes they store start ageing.
    pub now: i64,
    /// What a valid history of the target is.
    pub rules: HistoryRules,
    /// The keys edited.
    pub keys: Vec<KeyEdit>,
}

/// One commit for one worker.
pub(super) struct Feed {
    pub(super) version: u64,
    pub(super) share: Vec<TargetShare>,
    /// This process's word on the commit, given to its first worker only: the commit's
    /// timestamp when this process read it (or a share of it), or why it could not.
    pub(super) announce: Option<std::result::Result<i64, String>>,
    /// In a cluster, to the first worker of a process other than 0: its report of the commit.
    pub(super) report: Option<String>,
}

/// What a worker tells the engine.
pub(super) enum Message {
    /// A commit is complete on this worker.
    Done(Box<Done>),
    /// The states are saved (or not).
    Saved(Result<()>),
    /// This worker's rows of every target (in a gathering cluster, worker 0 has them all).
    Tables(Vec<Vec<Row>>),
    /// This worker's rendered share of every target's table.
    Rendered(Result<Vec<Vec<RenderedTable>>>),
    /// What process 0 decided.
    Agreed(Option<Vec<u8>>),
    /// The edits are applied (or not).
    Edited(Result<()>),
    /// The worker stopped.
    Failed(Error),
}

/// A change-feed row.
pub(super) type Labelled = (ChangeType, Row);

/// One worker's results of one commit.
#[derive(Debug, Default)]
pub(super) struct Done {
    pub(super) version: u64,
    pub(super) timestamp: i64,
    /// Per target: the change-feed rows of the updates this worker captured, in feed order,
    /// ([`changefeed::label_keyed`]): labelled here, on the worker that owns the keys, so that
    /// workers label in parallel and the engine only merges (but see `unlabelled`).
    pub(super) changes: Vec<Vec<Labelled>>,
    /// Per target: each change's sort key by identity, which the engine merges the workers'
    /// changes by ([`changefeed::merge`]); none in a process of one worker, which merges none.
    pub(super) keys: Vec<Vec<SortKey>>,
    /// Per target: the updates captured, unlabelled, when the only worker handed their
    /// labelling to the engine's caller, which was waiting ([`Shared::caller_waits`]).
    pub(super) unlabelled: Vec<Vec<(Row, u64, isize)>>,
    /// Per target: this worker's counters (worker 0 of a gathering cluster: everyone's).
    pub(super) stats: Vec<CommitStats>,
    /// Per target, in worker 0 of a partitioned cluster: every worker's change-feed row counts.
    pub(super) changed: Vec<(u64, u64)>,
    /// In worker 0 of a cluster: the reports of the other processes.
    pub(super) reports: Vec<String>,
    /// When this worker finished the commit.
    pub(super) at: Option<Instant>,
}

/// What every worker of a process shares.
pub(super) struct Shared {
    pub(super) targets: Vec<Target>,
    /// Per target: what identifies its change-feed rows ([`changefeed::identity`]).
    pub(super) identities: Vec<Projection>,
    /// One command queue per worker of this process.
    pub(super) commands: Vec<Mutex<Option<Receiver<Command>>>>,
    pub(super) messages: Mutex<Sender<Message>>,
    /// The index of this process's first worker.
    pub(super) first: usize,
    /// Whether each worker pins itself to its core ([`EngineConfig::pin_workers`]).
    pub(super) pin: bool,
    /// Whether this is a cluster of processes.
    pub(super) cluster: bool,
    /// In a cluster: whether the targets' updates and rows go to worker 0.
    pub(super) gather_rows: bool,
    /// A checkpoint to restore.
    pub(super) restore: Option<Checkpoint>,
    /// Whether the states record changed keys (for delta saves).
    pub(super) track_changes: bool,
    /// Where shards are saved and restored from.
    pub(super) files: Option<Arc<dyn ShardFiles>>,
    /// Per target: the stage of a commit it is applied in ([`super::stages`]).
    pub(super) stages: Vec<usize>,
    /// Makes later stages' input from an earlier stage's changes.
    pub(super) feeder: Option<Feeder>,
    /// Whether the engine's caller is waiting for the workers (for room in the window, or for
    /// an outcome). The only worker of a process then leaves its last stage's updates for the
    /// caller to label (see [`super::engine`]'s docs, "Where a commit is labelled").
    pub(super) caller_waits: Arc<AtomicBool>,
}

impl Shared {
    fn files(&self) -> Result<&dyn ShardFiles> {
        self.files.as_deref().ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                "the engine was asked to save or restore states without shard files",
            )
        })
    }
}

/// One worker's input handles for one target.
struct Inputs {
    events: BatchInput<Event>,
    snapshot: BatchInput<(Row, Row)>,
    versions: BatchInput<i64>,
    rows: BatchInput<Row>,
}

impl Inputs {
    fn insert(&mut self, share: TargetShare) {
        self.events.insert_all(share.events);
        self.snapshot.insert_all(share.snapshot);
        self.versions
            .insert_all(share.version.into_iter().collect());
        self.rows.insert_all(share.rows);
    }

    fn advance_to(&mut self, time: u64) {
        self.events.advance_to(time);
        self.snapshot.advance_to(time);
        self.versions.advance_to(time);
        self.rows.advance_to(time);
    }
}

/// The dataflow of one worker, with what its operators share with it.
struct Dataflow {
    held: Vec<TargetState>,
    inputs: Vec<Inputs>,
    /// Per stage: the probe its targets' outputs pass.
    probes: Vec<ProbeHandle<u64>>,
    /// Per target: updates captured since the last commit.
    captured: Rc<RefCell<Vec<Vec<(Row, u64, isize)>>>>,
    /// Per target: counters by commit.
    stats: Rc<RefCell<Vec<BTreeMap<u64, CommitStats>>>>,
    /// Commit timestamps the operators read when they apply a commit.
    clock: Rc<RefCell<BTreeMap<u64, i64>>>,
}

/// Runs one worker; every error is also sent to the engine, so that it never waits for a
/// worker that stopped.
pub(super) fn work(worker: &mut Worker, shared: &Shared) {
    let messages = shared.messages.lock().expect("messages").clone();
    if let Err(e) = serve(worker, shared, &messages) {
        let _ = messages.send(Message::Failed(e));
    }
}

fn serve(worker: &mut Worker, shared: &Shared, messages: &Sender<Message>) -> Result<()> {
    let index = worker.index();
    if shared.pin {
        super::cores::pin_worker(index);
    }
    let commands = shared.commands[index - shared.first]
        .lock()
        .expect("commands")
        .take()
        .expect("each worker takes its own queue");
    let held: Vec<TargetState> = shared.targets.iter().map(TargetState::new).collect();
    restore(worker, shared, &held)?;
    if shared.track_changes {
        held.iter().for_each(Held::track_changes);
    }
    let gather_rows = shared.gather_rows;
    let mut flow = build(worker, held, &shared.stages, gather_rows);
    let mut control = shared.cluster.then(|| Control::new(worker));
    let mut last_timestamp = i64::MIN;
    let targets = shared.targets.len();
    loop {
        // The engine dropping its queues (an error on its side) stops the worker at once.
        let Ok(command) = commands.recv() else {
            return Ok(());
        };
        let message = match command {
            Command::Commit(feed) => {
                let done = commit(
                    worker,
                    shared,
                    &mut flow,
                    control.as_mut(),
                    *feed,
                    &mut last_timestamp,
                )?;
                Message::Done(Box::new(done))
            }
            Command::Save(dir, changes) => {
                let saved = flow
                    .held
                    .iter()
                    .enumerate()
                    .try_for_each(|(t, h)| h.save(shared.files()?, t, &dir, index, changes));
                Message::Saved(saved)
            }
            Command::Tables => {
                let mut tables: Vec<Vec<Row>> = flow.held.iter().map(Held::rows).collect();
                if let (Some(control), true) = (control.as_mut(), gather_rows) {
                    let mine = tables
                        .into_iter()
                        .enumerate()
                        .flat_map(|(t, rows)| rows.into_iter().map(move |r| Note::Row(t, r)))
                        .collect();
                    tables = vec![Vec::new(); targets];
                    for note in control.gather(worker, mine) {
                        if let Note::Row(t, row) = note {
                            tables[t].push(row);
                        }
                    }
                }
                Message::Tables(tables)
            }
            Command::Render(rendering, ranges) => Message::Rendered(
                flow.held
                    .iter()
                    .enumerate()
                    .map(|(t, h)| h.render_table(t, &rendering, ranges))
                    .collect(),
            ),
            Command::Edit(edits) => {
                Message::Edited(edit(&flow.held, &edits, index, worker.peers()))
            }
            Command::Agree(mine) => {
                Message::Agreed(tell_everyone(worker, mine.into_iter().collect()).pop())
            }
            Command::Finish => break,
        };
        if messages.send(message).is_err() {
            return Ok(());
        }
    }
    // Both dataflows complete before the worker leaves, so that nothing this process sent is
    // still on its way when it exits.
    let mut probes = flow.probes.clone();
    probes.extend(control.as_ref().map(Control::probe));
    drop(control);
    drop(flow);
    while probes.iter().any(|p| !p.done()) {
        worker.step_or_park(None);
    }
    Ok(())
}

/// Applies `edits` in order to the keys worker `index` of `peers` owns.
fn edit(held: &[TargetState], edits: &[Edits], index: usize, peers: usize) -> Result<()> {
    for edits in edits {
        let Some(state) = held.get(edits.target).and_then(TargetState::editable) else {
            return Err(Error::new(
                ErrorKind::Internal,
                "edits for a target that takes none",
            ));
        };
        let mut state = state.borrow_mut();
        for key in edits
            .keys
            .iter()
            .filter(|k| worker_of(&k.key, peers) == index)
        {
            crate::engine::edit(&mut *state, &edits.rules, key, edits.now, edits.version)?;
        }
    }
    Ok(())
}

/// Restores every target's states from the checkpoint, if any; every worker learns of any
/// worker's failure, so that none waits for another.
fn restore(worker: &mut Worker, shared: &Shared, held: &[TargetState]) -> Result<()> {
    let Some(checkpoint) = &shared.restore else {
        return Ok(());
    };
    let (index, peers) = (worker.index(), worker.peers());
    let restored = held
        .iter()
        .enumerate()
        .try_for_each(|(t, h)| h.restore(shared.files()?, t, checkpoint, index, peers));
    let own = restored.err();
    let failures = tell_everyone(worker, own.iter().map(|e| e.to_string()).collect());
    if let Some(e) = own {
        return Err(e);
    }
    match failures.into_iter().next() {
        Some(why) => Err(Error::new(ErrorKind::Peer, why)),
        None => Ok(()),
    }
}

/// Builds every target's operators over `held`, each followed by its stage's probe.
fn build(
    worker: &mut Worker,
    held: Vec<TargetState>,
    stages: &[usize],
    gather_rows: bool,
) -> Dataflow {
    let targets = held.len();
    let captured = Rc::new(RefCell::new(vec![Vec::new(); targets]));
    let stats: Rc<RefCell<Vec<BTreeMap<u64, CommitStats>>>> =
        Rc::new(RefCell::new(vec![BTreeMap::new(); targets]));
    let clock: Rc<RefCell<BTreeMap<u64, i64>>> = Rc::new(RefCell::new(BTreeMap::new()));
    let last = stages.iter().copied().max().unwrap_or(0);
    let probes: Vec<ProbeHandle<u64>> = (0..=last).map(|_| ProbeHandle::new()).collect();
    let inputs = worker.dataflow::<u64, _, _>(|scope| {
        held.iter()
            .enumerate()
            .map(|(t, h)| {
                let (events, event_stream) = BatchInput::new(&scope);
                let (snapshot, snapshot_stream) = BatchInput::new(&scope);
                let (versions, version_stream) = BatchInput::new(&scope);
                let (rows, row_stream) = BatchInput::new(&scope);
                let times = Rc::clone(&clock);
                // A commit is applied once its timestamp is known (see the module docs). Only a
                // run that is being torn down (a worker stopped with an error, closing its
                // inputs) applies a commit without it, and its results are discarded.
                let commit_time = move |version: &u64| {
                    let times = times.borrow();
                    times.get(version).copied().unwrap_or(i64::MIN)
                };
                let counters = Rc::clone(&stats);
                let on_stats = move |version: &u64, s: CommitStats| {
                    counters.borrow_mut()[t]
                        .entry(*version)
                        .or_default()
                        .merge(&s);
                };
                let inputs = TargetInputs {
                    events: event_stream.as_collection(),
                    snapshot: snapshot_stream.as_collection(),
                    versions: version_stream.as_collection(),
                    rows: row_stream.as_collection(),
                };
                let output = h.render(inputs, commit_time, on_stats).inner;
                let output = if gather_rows {
                    output.exchange(|_| 0)
                } else {
                    output
                };
                let capture = Rc::clone(&captured);
                // Moves the updates out (`inspect` would clone every row); the probe follows
                // it, so a commit the probe has passed is wholly captured.
                output
                    .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
                        Pipeline,
                        "Capture",
                        move |_, _| {
                            move |input, _output| {
                                input.for_each(|_, updates| {
                                    capture.borrow_mut()[t].append(updates);
                                });
                            }
                        },
                    )
                    .probe_with(&probes[stages[t]]);
                Inputs {
                    events,
                    snapshot,
                    versions,
                    rows,
                }
            })
            .collect()
    });
    Dataflow {
        held,
        inputs,
        probes,
        captured,
        stats,
        clock,
    }
}

/// Applies one commit and returns this worker's results of it.
fn commit(
    worker: &mut Worker,
    shared: &Shared,
    flow: &mut Dataflow,
    control: Option<&mut Control>,
    feed: Feed,
    last_timestamp: &mut i64,
) -> Result<Done> {
    let version = feed.version;
    for (input, share) in flow.inputs.iter_mut().zip(feed.share) {
        input.advance_to(version);
        input.insert(share);
    }
    let timestamp = match (control, feed.announce) {
        (None, Some(Ok(t))) => t,
        (None, Some(Err(why))) => return Err(Error::new(ErrorKind::Peer, why)),
        (None, None) => *last_timestamp,
        (Some(control), announce) => {
            let heard = control.announce(worker, announce.map(|a| (version, a)));
            let mut done = finish_commit(
                worker,
                shared,
                flow,
                version,
                agreed(version, heard)?,
                last_timestamp,
            )?;
            gather(worker, shared, control, feed.report, &mut done);
            return Ok(done);
        }
    };
    finish_commit(worker, shared, flow, version, timestamp, last_timestamp)
}

/// The commit's timestamp from the announcements heard: the latest (every process that read a
/// share of a split file announces it), or a process's failure.
fn agreed(version: u64, heard: Vec<Announcement>) -> Result<i64> {
    let mut timestamp = i64::MIN;
    for (v, said) in heard {
        match said {
            Err(why) => return Err(Error::new(ErrorKind::Peer, why)),
            Ok(t) if v == version => timestamp = timestamp.max(t),
            Ok(_) => {}
        }
    }
    Ok(timestamp)
}

/// Brings every worker's counters (and, with partitioned outputs, change-feed row counts) and
/// every process's report of the commit to worker 0.
fn gather(
    worker: &mut Worker,
    shared: &Shared,
    control: &mut Control,
    report: Option<String>,
    done: &mut Done,
) {
    let targets = shared.targets.len();
    let mut notes: Vec<Note> = Vec::new();
    for (t, stats) in std::mem::take(&mut done.stats).into_iter().enumerate() {
        notes.push(Note::Stats(t, stats));
    }
    if !shared.gather_rows {
        for (t, changes) in done.changes.iter().enumerate() {
            let (up, down) = ChangeType::tally(changes.iter().map(|(kind, _)| *kind));
            notes.push(Note::Changed(t, up, down));
        }
    }
    let reports = report.into_iter().chain(std::mem::take(&mut done.reports));
    notes.extend(reports.map(Note::Report));
    done.stats = vec![CommitStats::default(); targets];
    done.changed = vec![(0, 0); targets];
    for note in control.gather(worker, notes) {
        match note {
            Note::Stats(t, s) => done.stats[t].merge(&s),
            Note::Changed(t, up, down) => {
                done.changed[t].0 += up;
                done.changed[t].1 += down;
            }
            Note::Report(text) => done.reports.push(text),
            Note::Row(..) | Note::End => {}
        }
    }
}

/// Lets the commit's operators run at `timestamp` and collects what this worker captured.
fn finish_commit(
    worker: &mut Worker,
    shared: &Shared,
    flow: &mut Dataflow,
    version: u64,
    timestamp: i64,
    last_timestamp: &mut i64,
) -> Result<Done> {
    // Commit time never goes back, even if a clock does.
    let timestamp = timestamp.max(*last_timestamp);
    *last_timestamp = timestamp;
    flow.clock.borrow_mut().insert(version, timestamp);
    let mut changes: Vec<Vec<Labelled>> = vec![Vec::new(); shared.targets.len()];
    let mut keys: Vec<Vec<SortKey>> = vec![Vec::new(); shared.targets.len()];
    let mut unlabelled = vec![Vec::new(); shared.targets.len()];
    let mut reports = Vec::new();
    let last = flow.probes.len() - 1;
    let alone = shared.commands.len() == 1 && !shared.cluster;
    for stage in 0..=last {
        let in_stage = |t: &usize| shared.stages[*t] == stage;
        for t in (0..flow.inputs.len()).filter(in_stage) {
            flow.inputs[t].advance_to(version + 1);
        }
        // Park rather than spin while other workers finish the commit: with more workers than
        // cores, spinning steals the cores that would finish it.
        while flow.probes[stage].less_than(&(version + 1)) {
            worker.step_or_park(None);
        }
        let mut captured = flow.captured.borrow_mut();
        // Read once the stage is done, when its labelling would begin.
        let hand_over = stage == last && alone && shared.caller_waits.load(Ordering::Relaxed);
        for t in (0..shared.targets.len()).filter(in_stage) {
            if hand_over {
                unlabelled[t] = std::mem::take(&mut captured[t]);
                continue;
            }
            let updates = captured[t].drain(..).map(|(row, _, diff)| (row, diff));
            let identity = &shared.identities[t];
            // Keys only where the engine merges this process's workers' feeds.
            match shared.commands.len() > 1 {
                true => (changes[t], keys[t]) = changefeed::label_keyed(identity, updates),
                false => changes[t] = changefeed::label(identity, updates),
            }
        }
        drop(captured);
        if let (Some(feeder), true) = (&shared.feeder, stage < last) {
            let made = StageChanges {
                version,
                timestamp,
                stage,
                changes: &changes,
            };
            let (input, report) = (feeder.0)(&made);
            reports.extend(report);
            feed_later(flow, &shared.stages, stage, input)?;
        }
    }
    flow.clock.borrow_mut().remove(&version);
    let stats = flow
        .stats
        .borrow_mut()
        .iter_mut()
        .map(|by_version| by_version.remove(&version).unwrap_or_default())
        .collect();
    Ok(Done {
        version,
        timestamp,
        changes,
        keys,
        unlabelled,
        stats,
        changed: Vec::new(),
        reports,
        at: Some(Instant::now()),
    })
}

/// Inserts what the feeder made of stage `stage`'s changes into the inputs of later stages'
/// targets (still open at the commit).
fn feed_later(
    flow: &mut Dataflow,
    stages: &[usize],
    stage: usize,
    input: CommitEvents,
) -> Result<()> {
    let misplaced = |t: usize| stages.get(t).is_none_or(|&s| s <= stage);
    let events_at = (input.events.iter().enumerate()).filter(|(_, e)| !e.is_empty());
    let rows_at = (input.rows.iter().enumerate()).filter(|(_, r)| !r.is_empty());
    let wrong = (events_at.map(|(t, _)| t))
        .chain(rows_at.map(|(t, _)| t))
        .any(misplaced);
    if wrong || input.snapshots.iter().any(Option::is_some) {
        return Err(Error::new(
            ErrorKind::Internal,
            format!("stage {stage}'s changes made input for a target not in a later stage"),
        ));
    }
    let events = input.events.into_iter().enumerate();
    let rows = input.rows.into_iter().enumerate();
    for (t, events) in events {
        flow.inputs[t].events.insert_all(events);
    }
    for (t, rows) in rows {
        flow.inputs[t].rows.insert_all(rows);
    }
    Ok(())
}

//! Executes targets over a sequence of commits on timely workers: AUTO CDC targets from events,
//! snapshot targets from full snapshots (diffed, then SCD1/SCD2), REPLACE USING targets from rows.
//!
//! [`Engine`] keeps the workers, their dataflow and their states alive for as long as its
//! caller runs: commit `v` is fed at timely time `v`, every worker steps until the commit is
//! complete on every target, and the commit's change feed and counters come back as one
//! [`Outcome`]: each worker labels its keys' consolidated updates, and the engine merges the
//! workers' feeds in feed order. Nothing grows with the number of commits: the changes leave
//! with their outcome, and the tables are read from the states ([`Engine::tables`]) instead of
//! being summed from updates. [`execute`] is the one-call form that keeps every update (for tests,
//! benchmarks and embedders that want the whole update stream).
//!
//! In a cluster ([`Cluster`]: timely's own TCP transport between processes, no other
//! infrastructure) the processes first connect and check that they agree on everything that
//! shapes the results, and then watch each other's heartbeats (`mesh`); each process feeds the
//! commits it read and passes `None` for the others;
//! the operators exchange events by key across the cluster. Each commit starts with a round in
//! which the reading process announces its timestamp (the reading process's clock, made
//! non-decreasing) or its failure to read it, so every process fails rather than waits. The
//! targets' updates, every worker's counters and the processes' reports of the commit go to
//! worker 0, in process 0, unless outputs are partitioned (then each process keeps its keys').
//!
//! Layout: `engine` (the caller's handle), `worker` (one worker's loop, rendering each target
//! with [`crate::operators::TargetState`]), `batch_input` (its inputs, a commit's records as
//! one message), `deal` (a commit's input split among workers),
//! `control` (collective rounds), `mesh` (the cluster's connections, handshake and heartbeats),
//! `held` (the states a worker holds, restored, saved and read),
//! `shards` (the trait through which the caller stores them), `stages` (targets fed by other
//! targets' changes in the same commit), `tables` (tables rendered key by key from the states).

mod batch_input;
mod control;
pub mod cores;
mod deal;
mod engine;
mod held;
mod mesh;
mod shards;
mod stages;
mod tables;
mod worker;

pub use engine::{Engine, EngineConfig, Outcome, WINDOW};
pub use mesh::{Timeouts, BEAT, MAGIC};
pub use shards::{shard_name, ShardFiles, ShardWriter};
pub use stages::{Feeder, FeederFn, StageChanges};
pub use tables::{RenderRows, RenderedTable, RenderedTables, Rendering};
pub use worker::Edits;

use crate::engine::CommitStats;
use crate::event::Event;
use crate::plan::Target;
use crate::value::Row;
use crate::Result;
use differential_dataflow::consolidation::consolidate;
use std::collections::BTreeMap;
use std::time::Duration;

/// A full snapshot for a snapshot target: its version and its rows (in the target's image
/// layout, one row per key).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The snapshot version (the sequence of its changes).
    pub version: i64,
    /// The rows.
    pub rows: Vec<Row>,
}

/// One commit's input, per target (indexed like the targets the engine runs; shorter vectors
/// mean no input for the remaining targets).
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

/// Everything the targets emitted ([`execute`]).
#[derive(Debug, Default)]
pub struct Updates {
    /// Per target: `(row, commit version, diff)`, in commit order. Each commit's updates are
    /// consolidated (a key's rows live on one worker, which emits them consolidated per
    /// commit), so no `(row, version)` appears twice.
    pub rows: Vec<Vec<(Row, u64, isize)>>,
    /// Per target: counters per commit version, summed over workers.
    pub stats: Vec<BTreeMap<u64, CommitStats>>,
    /// Per commit: the time from handing the commit to the workers until every target's
    /// output passed it.
    pub latencies: Vec<Duration>,
    /// The commit timestamps the workers used, per commit.
    pub timestamps: Vec<i64>,
}

/// Saved states to restore ([`EngineConfig::restore`]): a base checkpoint directory (every key)
/// and delta directories (what changed since the save before each), applied in order, all
/// written by `workers` workers.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// The base checkpoint's directory.
    pub base: std::path::PathBuf,
    /// The deltas' directories, oldest first.
    pub deltas: Vec<std::path::PathBuf>,
    /// The number of workers that wrote them.
    pub workers: usize,
}

/// Called after each commit completes, with the commit's version.
pub type Progress = Box<dyn Fn(u64) + Send + Sync>;

/// This process's place in a cluster of processes that run one pipeline together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// This process's index in `addresses`.
    pub process: usize,
    /// `host:port` of every process, in process order (at least two).
    pub addresses: Vec<String>,
    /// How long to wait for the other processes.
    pub timeouts: Timeouts,
}

impl Cluster {
    /// Whether this process gathers the results (process 0).
    pub fn gathers(&self) -> bool {
        self.process == 0
    }
}

/// Runs `targets` over `commits` (versions 1, 2, ...) on `workers` threads of one process and
/// keeps every update: the one-call form of [`Engine`].
pub fn execute(
    targets: &[Target],
    commits: Vec<CommitEvents>,
    workers: usize,
    progress: Option<Progress>,
) -> Result<Updates> {
    let config = EngineConfig {
        workers,
        ..EngineConfig::default()
    };
    let mut engine = Engine::open(targets, config)?;
    let mut updates = Updates {
        rows: vec![Vec::new(); targets.len()],
        stats: vec![BTreeMap::new(); targets.len()],
        ..Updates::default()
    };
    let mut take = |outcome: Outcome| {
        for (t, changes) in outcome.changes.into_iter().enumerate() {
            let version = outcome.version;
            let mut rows: Vec<(Row, isize)> = changes
                .into_iter()
                .map(|(kind, row)| (row, kind.diff()))
                .collect();
            // A row added twice is two inserts in the feed and one update of 2 here.
            consolidate(&mut rows);
            let rows = rows.into_iter().map(|(row, diff)| (row, version, diff));
            updates.rows[t].extend(rows);
            updates.stats[t].insert(version, outcome.stats[t]);
        }
        updates.latencies.push(outcome.latency);
        updates.timestamps.push(outcome.timestamp);
        if let Some(report) = progress.as_ref() {
            report(outcome.version);
        }
    };
    for (c, commit) in commits.into_iter().enumerate() {
        engine.feed(c as u64 + 1, Some(commit), None)?;
        while let Some(outcome) = engine.outcome(false)? {
            take(outcome);
        }
    }
    while let Some(outcome) = engine.outcome(true)? {
        take(outcome);
    }
    engine.finish()?;
    Ok(updates)
}

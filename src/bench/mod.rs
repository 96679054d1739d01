//! The reorder-latency benchmark: per-commit latency of a CDC target under heavy reordering,
//! against two baselines measured in the same run on the same events. `scdflow bench` and
//! `cargo bench --bench reorder_latency` are thin front ends over this module.
//!
//! # What is measured
//!
//! A [`Suite`] names a set of workloads ([`gen::Workload`]: the same seeded events reordered by
//! displacement `D`, over `K` keys) and [`Flow`] kinds (AUTO CDC into SCD1, SCD2 and bitemporal
//! targets, and AUTO CDC FROM SNAPSHOT into an SCD2 target). For each workload and kind,
//! [`measure`] feeds the commits of [`gen::events`] (`B` events each) to one [`System`]; a
//! snapshot flow gets, per commit, a full snapshot of a source table that those events change
//! ([`Commits::snapshots`]), so its commits cost O(table) by nature:
//!
//! - [`System::Scdflow`]: the product, the runtime's [`Engine`](crate::runtime::Engine) that
//!   `scdflow run` drives (the operators [`Scd1`], [`Scd2`], [`Bitemporal`], after
//!   [`SnapshotDiff`] for snapshots, on long-lived timely workers), fed commit by commit from one
//!   thread as the driver feeds it; each commit's outcome is counted and dropped where the CLI
//!   would write it;
//! - [`System::StateLoop`]: the engine's per-key state machines ([`crate::engine`]) applied
//!   commit by commit in one thread, without timely: the proxy for the physical limit;
//! - [`System::DdReduce`]: the same semantics as a plain differential `reduce` per key that
//!   re-evaluates the reference model ([`crate::model::evaluate`]) over the key's whole history:
//!   what a differential-dataflow user would write first. Truncates are not broadcast to the
//!   keys (each is a group of its own), so with `truncates > 0` its SCD1 table differs;
//! - [`System::Typed`] and [`System::TypedLoop`]: the embedders' typed operators
//!   ([`TypedScd1`], [`TypedScd2`]) on timely workers, driven like `dd reduce`, and their typed
//!   states in one thread, over the same events as `u64` keys and sequences and images of
//!   [`TYPED_WIDTH`] `u64`s (SCD1 and SCD2 flows of whole upserts and deletes, see `typed`).
//!   The typed loop is the plain sequential loop the typed operator is held to.
//!
//! A commit's **latency** is the time from handing it over until it is complete: for scdflow
//! until the engine's last worker finished it, for dd reduce until the output frontier has
//! passed it as worker 0 sees it, for the state loop until its `apply` returns.
//! [`Pacing::Closed`] hands commit `i + 1` over once the system has room for it: scdflow's
//! engine holds a window of commits, as `scdflow run` feeds it (its caller labels a commit
//! while its worker applies the next), the others one commit. A closed-loop latency runs
//! from its hand-over or the previous commit's completion, whichever is later. [`Pacing::Open`]
//! is an open loop: commit `i` is due at `start + i * interval` and handed over at its due time
//! (or at once, when the system is behind), and its latency runs from its *due* time, so time
//! spent queued behind earlier commits counts (no coordinated omission). [`Summary`] gives the
//! percentiles (HdrHistogram, microseconds, 3 significant digits).
//!
//! **Memory**: the peak RSS of the run (`VmHWM` in `/proc/self/status`, reset before each run by
//! writing `5` to `/proc/self/clear_refs` where permitted, see [`Rss`]) minus the RSS at its
//! start, divided by the number of keys, estimates the bytes of state per key. It is an
//! estimate: the input events are already in memory at the start and are freed as they are fed,
//! the allocator reuses memory freed by earlier runs without growing the RSS (so it is often a
//! lower bound), and the dataflow's buffers count as state. The same reuse shortens later
//! runs' latency tails: the first run in a process pays for touching its growing state's memory
//! the first time, so tails compare fairly only between runs in processes of their own.
//!
//! A **budget** ([`Feed::budget`]) cuts a run short; its figures then cover the first commits,
//! with the shortest histories ([`Record::planned`] says how many there were). It bounds the
//! `reduce` baseline, whose commits grow slower with every event of history.
//!
//! # Limits
//!
//! One process (timely threads, no cluster); REPLACE USING flows are not measured. A snapshot
//! flow's `dd reduce` baseline diffs the snapshots with the engine's [`SnapshotDiff`] (a
//! differential program has no simpler way to see a key vanish from a snapshot) and then
//! reduces per key like the others.
//!
//! [`SnapshotDiff`]: crate::operators::SnapshotDiff
//! [`Scd1`]: crate::operators::Scd1
//! [`Scd2`]: crate::operators::Scd2
//! [`TypedScd1`]: crate::operators::TypedScd1
//! [`TypedScd2`]: crate::operators::TypedScd2
//! [`Bitemporal`]: crate::operators::Bitemporal

mod drive;
mod flow;
mod rss;
mod session;
mod source;
mod state_loop;
mod state_size;
mod summary;
mod table;
mod typed;

#[cfg(test)]
mod tests;

pub use flow::Flow;
pub use rss::{during, Rss};
pub use source::{Changes, Commits};
pub use state_size::StateSize;
pub use summary::Summary;
pub use table::{markdown_table, ratios_table};
pub use typed::{TypedChange, WIDTH as TYPED_WIDTH};

use crate::gen::{self, Workload};
use crate::plan::{ScdType, Target, TargetKind};
use crate::{Error, ErrorKind, Result};
use drive::Render;
use std::fmt;
use std::time::{Duration, Instant};

/// A system under measurement, see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum System {
    /// The runtime's engine, as `scdflow run` drives it.
    Scdflow,
    /// The engine's per-key state machines in one thread, without timely.
    StateLoop,
    /// A differential `reduce` per key re-evaluating the reference model.
    DdReduce,
    /// The typed operators for embedders on timely workers, over `u64` keys and fixed-width
    /// images (SCD1 and SCD2 flows).
    Typed,
    /// The typed states in one thread: a plain sequential loop over the same types.
    TypedLoop,
}

impl System {
    /// Every system, in the order a run measures them (the engine first, so that its memory
    /// figures are its own).
    pub const ALL: [System; 5] = [
        System::Scdflow,
        System::StateLoop,
        System::DdReduce,
        System::Typed,
        System::TypedLoop,
    ];

    /// The name in tables and plots: `scdflow`, `state loop`, `dd reduce`, `typed`,
    /// `typed loop`.
    pub fn label(self) -> &'static str {
        match self {
            System::Scdflow => "scdflow",
            System::StateLoop => "state loop",
            System::DdReduce => "dd reduce",
            System::Typed => "typed",
            System::TypedLoop => "typed loop",
        }
    }

    /// Whether the system measures `flow` (the typed systems have no bitemporal or snapshot
    /// instance).
    pub fn measures(self, flow: Flow) -> bool {
        match self {
            System::Typed | System::TypedLoop => {
                flow != Flow::Snapshot && typed::measures(flow.scd())
            }
            _ => true,
        }
    }
}

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// How commits are handed to the system.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pacing {
    /// Closed loop: the next commit is handed over when the system has room for it (scdflow:
    /// its engine's window, as `scdflow run` feeds it; the others: when the previous commit is
    /// complete); latency runs from the hand-over or the previous commit's completion,
    /// whichever is later.
    Closed,
    /// Open loop: commit `i` is due at `start + i * interval`; latency runs from its due time.
    Open {
        /// The time between due times (`B / R` for `B` events per commit at `R` events/s).
        interval: Duration,
    },
}

impl Pacing {
    /// The open loop that offers `events_per_second` in commits of `batch` events.
    pub fn open(batch: u64, events_per_second: f64) -> Pacing {
        Pacing::Open {
            interval: Duration::from_secs_f64(batch as f64 / events_per_second),
        }
    }

    /// The due time of commit `i`, or `None` in a closed loop.
    fn due(self, start: Instant, i: usize) -> Option<Instant> {
        match self {
            Pacing::Closed => None,
            Pacing::Open { interval } => Some(start + interval.mul_f64(i as f64)),
        }
    }
}

impl fmt::Display for Pacing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pacing::Closed => f.write_str("closed loop"),
            Pacing::Open { interval } => write!(
                f,
                "open loop, a commit due every {:.3} ms",
                interval.as_secs_f64() * 1e3
            ),
        }
    }
}

/// How a run is fed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Feed {
    /// Timely worker threads of the dataflow systems (the state loop runs in the caller's).
    pub workers: usize,
    /// Closed or open loop.
    pub pacing: Pacing,
    /// Hand over no more commits once the run has taken this long (in an open loop: no commit
    /// due this long after the start or later); its figures then cover the commits handed over,
    /// the first ones, whose histories are the shortest.
    pub budget: Option<Duration>,
}

impl Feed {
    /// `workers` workers, closed loop, no budget.
    pub fn closed(workers: usize) -> Feed {
        Feed {
            workers,
            pacing: Pacing::Closed,
            budget: None,
        }
    }
}

/// One system's run over one workload.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Per commit handed over, in commit order: its latency (module docs).
    pub latencies: Vec<Duration>,
    /// Commits of the workload; more than `latencies.len()` when the budget ran out.
    pub planned: usize,
    /// From the first commit's hand-over (or due time) to the last commit's completion.
    pub total: Duration,
    /// Events of the commits handed over.
    pub events: u64,
    /// Rows in the table after the last commit (the net count of the updates).
    pub rows: i64,
    /// Memory of the run, where `/proc` tells it.
    pub rss: Option<Rss>,
    /// The state left after the last commit, where the system can count it (the state loop).
    pub state: Option<StateSize>,
}

impl Measurement {
    /// Whether every commit was handed over (the budget did not run out).
    pub fn complete(&self) -> bool {
        self.latencies.len() == self.planned
    }
}

/// Runs `system` over `commits` of an AUTO CDC `target`: events (each commit's first target's,
/// as [`gen::events`] makes them), or a snapshot flow's snapshots.
///
/// # Errors
///
/// When the target is not an AUTO CDC target, or the workers fail.
pub fn measure(
    system: System,
    target: &Target,
    commits: impl Into<Commits>,
    feed: Feed,
) -> Result<Measurement> {
    if target.kind != TargetKind::AutoCdc {
        return Err(Error::new(
            ErrorKind::Validation,
            format!(
                "bench: only AUTO CDC targets are measured, not {}",
                target.name
            ),
        ));
    }
    let commits = commits.into();
    let sizes = commits.sizes();
    let (run, rss) = rss::during(|| match system {
        System::Scdflow => session::run(target, commits, feed),
        System::DdReduce => drive::drive(Render::Reduce(target.clone()), commits, feed),
        System::StateLoop => Ok(state_loop::run(target, commits, feed)),
        System::Typed => drive::drive(Render::Typed(target.clone()), commits, feed),
        System::TypedLoop => typed::run_loop(target, commits, feed),
    });
    let run = run?;
    Ok(Measurement {
        events: sizes[..run.latencies.len()].iter().sum(),
        planned: sizes.len(),
        latencies: run.latencies,
        total: run.total,
        rows: run.rows,
        rss,
        state: run.state,
    })
}

/// The figures of one system on one workload and flow kind: a row of the report.
#[derive(Clone, Debug)]
pub struct Record {
    /// The flow kind.
    pub flow: Flow,
    /// The workload's displacement D.
    pub displacement: u64,
    /// The workload's number of keys K.
    pub keys: u64,
    /// History length: the workload's events per key, N / K.
    pub history: f64,
    /// The system: a [`System::label`], or a peer's name (`duckdb`).
    pub system: String,
    /// Events fed.
    pub events: u64,
    /// Commits fed.
    pub commits: u64,
    /// Commits of the workload: more than `commits` when a budget ran out first.
    pub planned: u64,
    /// Wall time of the run.
    pub seconds: f64,
    /// Per-commit latency percentiles.
    pub latency: Summary,
    /// Rows in the table at the end, where known.
    pub rows: Option<i64>,
    /// Memory of the run, where known.
    pub rss: Option<Rss>,
    /// The state left, where known.
    pub state: Option<StateSize>,
}

impl Record {
    /// The record of a [`Measurement`]; latencies of the first `warmup` commits are not counted.
    pub fn new(
        flow: Flow,
        workload: &Workload,
        system: System,
        m: &Measurement,
        warmup: u64,
    ) -> Record {
        let warmup = (warmup as usize).min(m.latencies.len());
        Record {
            flow,
            displacement: workload.displacement,
            keys: workload.keys,
            history: workload.events as f64 / workload.keys.max(1) as f64,
            system: system.label().to_string(),
            events: m.events,
            commits: m.latencies.len() as u64,
            planned: m.planned as u64,
            seconds: m.total.as_secs_f64(),
            latency: Summary::of(&m.latencies[warmup..]),
            rows: Some(m.rows),
            rss: m.rss,
            state: m.state,
        }
    }

    /// Whether every commit of the workload was fed.
    pub fn complete(&self) -> bool {
        self.commits == self.planned
    }

    /// Throughput.
    pub fn events_per_second(&self) -> f64 {
        self.events as f64 / self.seconds.max(1e-9)
    }

    /// Whether this is `system`'s record.
    pub fn is(&self, system: System) -> bool {
        self.system == system.label()
    }
}

impl fmt::Display for Record {
    /// One line: flow, D, K, system, throughput, percentiles, memory.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = &self.latency;
        write!(
            f,
            "{:<10} D {:>7} K {:>7}  {:<10} {:>9.0} ev/s  p50 {:>7} µs  p90 {:>7}  p99 {:>7}  p99.9 {:>7}  max {:>8}",
            self.flow,
            self.displacement,
            self.keys,
            self.system,
            self.events_per_second(),
            l.p50_us,
            l.p90_us,
            l.p99_us,
            l.p999_us,
            l.max_us
        )?;
        if !self.complete() {
            write!(
                f,
                "  ({} of {} commits: budget)",
                self.commits, self.planned
            )?;
        }
        if let Some(rss) = self.rss {
            write!(f, "  peak RSS {:>6.0} MiB", rss.peak as f64 / MIB)?;
        }
        if let Some(s) = self.state {
            write!(
                f,
                "  state {:.0} B/row (raw {:.0}, {:.1}x)",
                s.per_row(),
                s.raw_per_row(),
                s.per_row() / s.raw_per_row().max(1e-9)
            )?;
        }
        Ok(())
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// The benchmark's plan: two sweeps over one seeded event set.
///
/// - The **displacement sweep** runs every D of `displacements` at the largest K of `keys`.
/// - The **history sweep** runs every K of `keys` (history length `events / K` per key) at the
///   median D of `displacements` (the lower one of the two middle values).
///
/// A point in both sweeps runs once.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    /// The workload's other knobs; `keys`, `displacement` and `commits` are set per point
    /// (`commits = ceil(events / batch)`).
    pub workload: Workload,
    /// Whether `workload.straggler_distance` is replaced per point by
    /// [`Workload::default_straggler_distance`] (which depends on D).
    pub default_straggler_distance: bool,
    /// B: events per commit.
    pub batch: u64,
    /// The displacements D.
    pub displacements: Vec<u64>,
    /// The key counts K.
    pub keys: Vec<u64>,
    /// Flow kinds.
    pub flows: Vec<Flow>,
    /// Systems, measured in this order.
    pub systems: Vec<System>,
    /// Timely worker threads for the dataflow systems.
    pub workers: usize,
    /// R: events per second offered in an open loop; `None` for a closed loop.
    pub rate: Option<f64>,
    /// The longest a run is fed ([`Feed::budget`]).
    pub budget: Option<Duration>,
    /// Commits fed first whose latencies are not counted: they build the history that the
    /// counted commits are measured on (latency on a long history without a long run of
    /// measurements). The DuckDB peer bulk-loads them untimed.
    pub warmup: u64,
}

impl Suite {
    /// Checks the plan and every point's workload.
    pub fn validate(&self) -> Result<()> {
        let invalid = |message: String| Err(Error::new(ErrorKind::Validation, message));
        if self.batch == 0 {
            return invalid("batch must be at least 1 event per commit".into());
        }
        if self.workers == 0 {
            return invalid("workers must be at least 1".into());
        }
        if let Some(rate) = self.rate {
            if !(rate.is_finite() && rate > 0.0) {
                return invalid(format!(
                    "rate must be a positive number of events per second, got {rate}"
                ));
            }
        }
        if self.budget.is_some_and(|b| b.is_zero()) {
            return invalid("the budget of a run must be positive".into());
        }
        let commits = self.workload.events.div_ceil(self.batch);
        if self.warmup >= commits {
            return invalid(format!(
                "warmup: {} commits leave none of the {commits} to measure",
                self.warmup
            ));
        }
        for (name, empty) in [
            ("displacements", self.displacements.is_empty()),
            ("keys", self.keys.is_empty()),
            ("flows", self.flows.is_empty()),
            ("systems", self.systems.is_empty()),
        ] {
            if empty {
                return invalid(format!("{name}: give at least one"));
            }
        }
        let typed = (self.systems.iter()).any(|s| matches!(s, System::Typed | System::TypedLoop));
        let w = &self.workload;
        if typed && (w.partial > 0.0 || w.truncates > 0.0 || w.width > TYPED_WIDTH) {
            return invalid(format!(
                "the typed systems take whole upserts and deletes of at most {TYPED_WIDTH} \
                 payload columns (width): no partial upserts or truncates"
            ));
        }
        for point in self.points() {
            self.workload(point).validate()?;
        }
        Ok(())
    }

    /// The K of the displacement sweep: the largest of `keys`.
    pub fn displacement_sweep_keys(&self) -> u64 {
        self.keys.iter().copied().max().unwrap_or(1)
    }

    /// The D of the history sweep: the median of `displacements`.
    pub fn history_sweep_displacement(&self) -> u64 {
        let mut d = self.displacements.clone();
        d.sort_unstable();
        d.get(d.len().saturating_sub(1) / 2).copied().unwrap_or(0)
    }

    /// The `(D, K)` points to run, without repeats: the displacement sweep, then the history
    /// sweep.
    pub fn points(&self) -> Vec<(u64, u64)> {
        let k = self.displacement_sweep_keys();
        let d = self.history_sweep_displacement();
        let mut points = Vec::new();
        for point in self
            .displacements
            .iter()
            .map(|&d| (d, k))
            .chain(self.keys.iter().map(|&k| (d, k)))
        {
            if !points.contains(&point) {
                points.push(point);
            }
        }
        points
    }

    /// The workload of point `(D, K)`.
    pub fn workload(&self, (displacement, keys): (u64, u64)) -> Workload {
        let w = &self.workload;
        Workload {
            keys,
            displacement,
            commits: w.events.div_ceil(self.batch.max(1)).max(1),
            straggler_distance: if self.default_straggler_distance {
                Workload::default_straggler_distance(w.events, displacement)
            } else {
                w.straggler_distance
            },
            ..w.clone()
        }
    }

    /// The pacing of every run.
    pub fn pacing(&self) -> Pacing {
        match self.rate {
            Some(rate) => Pacing::open(self.batch, rate),
            None => Pacing::Closed,
        }
    }

    /// How the runs are fed, in words: workers, commit size, pacing and offered rate.
    pub fn feeding(&self) -> String {
        let rate = self
            .rate
            .map_or(String::new(), |r| format!(" (offered rate {r} events/s)"));
        let warmup = match self.warmup {
            0 => String::new(),
            w => format!("; latencies after {w} warm-up commits"),
        };
        format!(
            "{} worker thread(s) for scdflow and dd reduce (the state loop runs in one), {} events per commit, {}{rate}{warmup}",
            self.workers,
            self.batch,
            self.pacing()
        )
    }

    /// How every run is fed.
    pub fn feed(&self) -> Feed {
        Feed {
            workers: self.workers,
            pacing: self.pacing(),
            budget: self.budget,
        }
    }

    /// Runs every point, flow and system; `each` sees every record as it is measured, after
    /// `workload` sees each point's workload.
    ///
    /// # Errors
    ///
    /// An invalid suite ([`Suite::validate`]) or a failed run.
    pub fn run(
        &self,
        mut workload: impl FnMut(&Workload),
        mut each: impl FnMut(&Record),
    ) -> Result<Vec<Record>> {
        self.validate()?;
        let mut records = Vec::new();
        for point in self.points() {
            let w = self.workload(point);
            workload(&w);
            for &flow in &self.flows {
                let target = flow.target(&w);
                // Each run gets its input generated afresh (the generator is seeded, so every
                // system sees the same commits): a copy kept for the next system would stay
                // in memory through the run, beside the input it consumes, and count in its
                // peak.
                let commits = || match flow {
                    Flow::Snapshot => Commits::snapshots(
                        gen::events(&w, &gen::target(&w, ScdType::Type2)),
                        target.image_len,
                    ),
                    _ => gen::events(&w, &target).into(),
                };
                let first = records.len();
                for &system in self.systems.iter().filter(|s| s.measures(flow)) {
                    let m = measure(system, &target, commits(), self.feed())?;
                    let record = Record::new(flow, &w, system, &m, self.warmup);
                    each(&record);
                    records.push(record);
                }
                check_rows(&records[first..], flow == Flow::Scd1 && w.truncates > 0.0)?;
            }
        }
        Ok(records)
    }
}

/// Fails unless the systems' tables have as many rows as the state loop's (the dd reduce
/// baseline only when it is exact: not for SCD1 with truncates, see the module docs).
fn check_rows(records: &[Record], truncates: bool) -> Result<()> {
    let Some(expected) = records.iter().find(|r| r.is(System::StateLoop)) else {
        return Ok(());
    };
    if !expected.complete() {
        return Ok(());
    }
    for r in records {
        if (truncates && r.is(System::DdReduce)) || !r.complete() || r.rows == expected.rows {
            continue;
        }
        return Err(Error::new(
            ErrorKind::Internal,
            format!(
                "bench: {} {}: {} rows at the end, the state loop {}",
                r.flow,
                r.system,
                r.rows.unwrap_or(0),
                expected.rows.unwrap_or(0)
            ),
        ));
    }
    Ok(())
}

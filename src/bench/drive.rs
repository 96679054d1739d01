//! The timely driver of the `dd reduce` baseline and the typed operators: feeds commits closed
//! or open loop and times them on worker 0. A snapshot flow's rows go through the engine's
//! snapshot diff first.

use super::source::{self, Batch, Commits, Share};
use super::typed::{self, TypedChange};
use super::Feed;
use crate::event::Event;
use crate::operators::{SnapshotDiff, TypedScd1, TypedScd2};
use crate::plan::{ScdType, Target};
use crate::value::Row;
use crate::{Error, ErrorKind, Result};
use differential_dataflow::input::{Input, InputSession};
use differential_dataflow::{Data, VecCollection};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::{Operator, Probe};
use timely::dataflow::{ProbeHandle, Scope};

/// What one run measured.
pub(super) struct Run {
    /// Per commit, its latency.
    pub latencies: Vec<Duration>,
    /// From the start to the last completion.
    pub total: Duration,
    /// Net rows of the output.
    pub rows: i64,
    /// The state left, where the system can count it.
    pub state: Option<super::StateSize>,
}

/// A `reduce` per key that re-evaluates the reference model over the key's events.
fn reduce<'s>(
    target: &Target,
    events: VecCollection<'s, u64, Event>,
) -> VecCollection<'s, u64, Row> {
    let t = target.clone();
    events
        .map(|e| (e.key.clone(), e))
        .reduce(move |_key, input, output: &mut Vec<(Row, isize)>| {
            let events: Vec<Event> = input.iter().map(|(e, _)| (*e).clone()).collect();
            let rows = crate::model::evaluate(&t, &events);
            output.extend(rows.into_iter().map(|r| (r, 1)));
        })
        .map(|(_key, row)| row)
}

/// What a driven dataflow computes.
#[derive(Clone, Debug)]
pub(super) enum Render {
    /// The `dd reduce` baseline of the target.
    Reduce(Target),
    /// The typed operator of the target's kind of table, over typed changes.
    Typed(Target),
}

impl Render {
    /// Builds the dataflow that `share` is fed through; its rows pass `probe` and their net
    /// count goes to `count`.
    fn build<'s>(
        &self,
        scope: Scope<'s, u64>,
        share: &Share,
        probe: &ProbeHandle<u64>,
        count: Rc<Cell<i64>>,
    ) -> Inputs {
        match self {
            Render::Reduce(target) => {
                let (inputs, events) = Inputs::new(scope, share);
                counted(reduce(target, events), probe, count);
                inputs
            }
            Render::Typed(target) => {
                let (input, changes) = scope.new_collection::<TypedChange, isize>();
                match target.scd {
                    ScdType::Type1 => counted(changes.typed_scd1(), probe, count),
                    _ => counted(changes.typed_scd2(), probe, count),
                }
                Inputs::Typed(input)
            }
        }
    }

    /// Deals `commits` to `workers` shares of what this dataflow is fed.
    fn deal(&self, commits: Commits, workers: usize) -> Result<Vec<Share>> {
        match self {
            Render::Reduce(_) => Ok(source::deal(commits, workers)),
            Render::Typed(target) => typed::deal(target, commits, workers),
        }
    }
}

/// Counts the net updates of `rows` into `count`, after `probe`.
fn counted<D: Data>(
    rows: VecCollection<'_, u64, D>,
    probe: &ProbeHandle<u64>,
    count: Rc<Cell<i64>>,
) {
    rows.inner
        .probe_with(probe)
        .sink(Pipeline, "Count", move |(input, _)| {
            input.for_each(|_, updates| {
                let net: i64 = updates.drain(..).map(|(_, _, d)| d as i64).sum();
                count.set(count.get() + net);
            });
        });
}

/// A worker's input handles: events, a snapshot's rows and its version, or typed changes.
enum Inputs {
    Events(InputSession<u64, Event, isize>),
    Typed(InputSession<u64, TypedChange, isize>),
    Snapshots {
        rows: InputSession<u64, (Row, Row), isize>,
        // Boxed to keep the variants of a size (one allocation per worker).
        versions: Box<InputSession<u64, i64, isize>>,
    },
}

impl Inputs {
    /// The handles `share` is fed through, and the events they make: a snapshot flow's
    /// through [`SnapshotDiff`].
    fn new<'s>(scope: Scope<'s, u64>, share: &Share) -> (Inputs, VecCollection<'s, u64, Event>) {
        if let Share::Snapshots(..) = share {
            let (rows, snapshot) = scope.new_collection();
            let (versions, version) = scope.new_collection();
            (
                Inputs::Snapshots {
                    rows,
                    versions: Box::new(versions),
                },
                snapshot.snapshot_diff(version),
            )
        } else {
            let (input, events) = scope.new_collection();
            (Inputs::Events(input), events)
        }
    }

    /// Inserts `batch` as commit `i` and closes it; the first worker also feeds the version.
    fn hand_over(&mut self, batch: Batch, i: usize, first: bool) {
        let next = i as u64 + 1;
        match (self, batch) {
            (Inputs::Events(input), Batch::Events(events)) => {
                for event in events {
                    input.insert(event);
                }
                input.advance_to(next);
                input.flush();
            }
            (Inputs::Typed(input), Batch::Typed(changes)) => {
                for change in changes {
                    input.insert(change);
                }
                input.advance_to(next);
                input.flush();
            }
            (Inputs::Snapshots { rows, versions }, Batch::Snapshot(snapshot)) => {
                for row in snapshot {
                    rows.insert(row);
                }
                if first {
                    versions.insert(next as i64);
                }
                rows.advance_to(next);
                versions.advance_to(next);
                rows.flush();
                versions.flush();
            }
            _ => unreachable!("a share's batches match its inputs"),
        }
    }
}

/// Runs `render`'s dataflow over `commits` (commit `i` at timely time `i`) on `feed.workers`
/// threads.
///
/// The budget: in an open loop, every worker hands over the commits due within it. In a closed
/// loop, worker 0 stops handing over commits once it runs out and publishes how many it handed
/// over; the other workers hand over no more than that. (One that already handed over a commit
/// more sees it complete once worker 0 drops its input; that commit is not timed.)
pub(super) fn drive(render: Render, commits: Commits, feed: Feed) -> Result<Run> {
    let Feed {
        workers,
        pacing,
        budget,
    } = feed;
    let workers = workers.max(1);
    let limit = Arc::new(AtomicUsize::new(usize::MAX));
    let n = commits.len();
    let shares: Arc<Vec<Mutex<Option<Share>>>> = Arc::new(
        (render.deal(commits, workers)?)
            .into_iter()
            .map(|s| Mutex::new(Some(s)))
            .collect(),
    );
    // Every worker takes the same start, once all have built the dataflow.
    let ready = Arc::new(Barrier::new(workers));
    let origin: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    let config = if workers == 1 {
        timely::Config::thread()
    } else {
        timely::Config::process(workers)
    };
    let guards = timely::execute(config, move |worker| {
        let mut share = shares[worker.index()]
            .lock()
            .expect("share")
            .take()
            .expect("one share per worker");
        let first = worker.index() == 0;
        let probe: ProbeHandle<u64> = ProbeHandle::new();
        let rows = Rc::new(Cell::new(0i64));
        let count = Rc::clone(&rows);
        let mut input =
            worker.dataflow::<u64, _, _>(|scope| render.build(scope, &share, &probe, count));
        ready.wait();
        let start = *origin.get_or_init(Instant::now);
        let (mut fed, mut done) = (0, 0);
        let mut handed = Vec::with_capacity(n);
        let mut latencies = Vec::with_capacity(n);
        let mut last = start;
        loop {
            if let Some(b) = budget {
                match pacing.due(start, fed) {
                    // Every worker knows which commits are due within the budget.
                    Some(due) if due.saturating_duration_since(start) >= b => {
                        limit.fetch_min(fed, Ordering::SeqCst);
                    }
                    None if worker.index() == 0 && start.elapsed() >= b => {
                        limit.fetch_min(fed, Ordering::SeqCst);
                    }
                    _ => {}
                }
            }
            let cap = n.min(limit.load(Ordering::SeqCst));
            if done >= fed && fed >= cap {
                break;
            }
            // Hand over: in a closed loop once the previous commit is complete, in an open loop
            // every commit that is due.
            while fed < cap {
                let now = Instant::now();
                match pacing.due(start, fed) {
                    None if fed > done => break,
                    Some(due) if due > now => break,
                    _ => {}
                }
                let batch = share.next().expect("fed < n");
                // A closed loop times from here: making a snapshot's rows is the source's work.
                handed.push(Instant::now());
                input.hand_over(batch, fed, first);
                fed += 1;
            }
            // Park until there is work, or until the next commit is due.
            let wake = match pacing.due(start, fed) {
                Some(due) if fed < cap => Some(due.saturating_duration_since(Instant::now())),
                _ => None,
            };
            worker.step_or_park(wake);
            let now = Instant::now();
            while done < fed && !probe.less_than(&(done as u64 + 1)) {
                let from = pacing.due(start, done).unwrap_or(handed[done]);
                latencies.push(now.saturating_duration_since(from));
                done += 1;
                last = now;
            }
        }
        let total = last.saturating_duration_since(start);
        // The sink counts what passed the probe once the dataflow has drained.
        drop(input);
        while worker.step_or_park(None) {}
        let timing = (worker.index() == 0).then_some((latencies, total));
        (timing, rows.get())
    })
    .map_err(|e| Error::new(ErrorKind::Internal, format!("cannot start workers: {e}")))?;
    let mut run = Run {
        latencies: Vec::new(),
        total: Duration::ZERO,
        rows: 0,
        state: None,
    };
    for result in guards.join() {
        let (timing, rows) =
            result.map_err(|e| Error::new(ErrorKind::Internal, format!("worker failed: {e}")))?;
        if let Some((latencies, total)) = timing {
            run.latencies = latencies;
            run.total = total;
        }
        run.rows += rows;
    }
    Ok(run)
}

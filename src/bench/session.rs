//! The product under measurement: the runtime's [`Engine`], the session `scdflow run` drives,
//! fed from one thread the way the driver feeds it. Its outcomes (each commit's consolidated
//! updates) are counted and dropped where the CLI would write them.
//!
//! A closed loop feeds as `scdflow run` does: a commit is handed over as soon as the engine
//! has room for it (its window of [`WINDOW`] commits waiting per worker, and one being
//! applied), so a commit is applied while the one before it is labelled (the caller's share of
//! the work, see `runtime::engine`). Handed over one at a time, the engine waited for each
//! commit's labelling and two thread wake-ups between commits: SCD2 at 1,000-event commits
//! ran 1.03-1.15 M events/s one at a time and 1.51-1.64 M with the window full (two
//! alternating runs each; SCD1 2.11-2.40 against 2.42-2.95 M, bitemporal 0.39-0.44 against
//! 0.48-0.53 M). A closed-loop commit's latency runs from the later of its hand-over and the
//! completion of the commit before it: the engine's time on it, not its wait behind the
//! commits ahead of it in the window, which the feeder chose.
//!
//! A commit is built (a snapshot flow's full snapshot copied from the source table) before it
//! is handed over, and within its latency in an open loop, whose clock runs from the due time.
//! Completion is the time the engine's last worker finished the commit
//! ([`Outcome::completed`]), so a feeder that waits for room in the engine's window does not
//! delay what is measured. Every commit has timestamp 0, as the state loop's clock: tombstones
//! never expire, so the tables of all systems agree.

use super::drive::Run;
use super::source::{Changes, Commits, Table};
use super::{Feed, Pacing};
use crate::event::Event;
use crate::plan::{Target, TargetKind};
use crate::runtime::{CommitEvents, Engine, EngineConfig, Outcome, Snapshot, WINDOW};
use crate::Result;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Runs `target` over `commits` (commit `i` at version `i + 1`) in a fresh engine of
/// `feed.workers` workers; a snapshot flow's target reads snapshots.
pub(super) fn run(target: &Target, commits: Commits, feed: Feed) -> Result<Run> {
    let mut target = target.clone();
    if let Commits::Snapshots(_) = commits {
        target.kind = TargetKind::Snapshot;
    }
    let config = EngineConfig {
        workers: feed.workers,
        // The feeder waits for its commits, as `scdflow run --follow` does.
        pin_workers: true,
        ..EngineConfig::default()
    };
    let mut engine = Engine::open(std::slice::from_ref(&target), config)?;
    let mut source = Source::new(commits);
    let n = source.len();
    let mut tally = Tally {
        closed: feed.pacing == Pacing::Closed,
        ..Tally::default()
    };
    let start = Instant::now();
    for i in 0..n {
        let due = feed.pacing.due(start, i);
        let over = match (feed.budget, due) {
            (Some(b), Some(due)) => due.saturating_duration_since(start) >= b,
            (Some(b), None) => start.elapsed() >= b,
            (None, _) => false,
        };
        if over {
            break;
        }
        if let Some(due) = due {
            while Instant::now() < due {
                match engine.outcome_before(due)? {
                    Some(outcome) => tally.take(outcome),
                    None if tally.pending.is_empty() => {
                        std::thread::sleep(due.saturating_duration_since(Instant::now()))
                    }
                    None => {}
                }
            }
        }
        let commit = source.commit(i);
        tally.pending.push_back(due.unwrap_or_else(Instant::now));
        engine.feed(i as u64 + 1, Some(commit), None)?;
        // A closed loop waits while the engine is full; an open loop takes what is complete
        // and goes on.
        match due {
            None => {
                if tally.pending.len() > WINDOW {
                    if let Some(outcome) = engine.outcome(true)? {
                        tally.take(outcome);
                    }
                }
            }
            Some(_) => {
                while let Some(outcome) = engine.outcome(false)? {
                    tally.take(outcome);
                }
            }
        }
    }
    while let Some(outcome) = engine.outcome(true)? {
        tally.take(outcome);
    }
    engine.finish()?;
    Ok(Run {
        total: tally.last.unwrap_or(start).saturating_duration_since(start),
        latencies: tally.latencies,
        rows: tally.rows,
        state: None,
    })
}

/// What the outcomes tell, as they come.
#[derive(Default)]
struct Tally {
    /// Whether the loop is closed: latencies then run from no earlier than the completion of
    /// the commit before.
    closed: bool,
    /// Per commit handed over and not yet complete: its hand-over (closed loop) or due time.
    pending: VecDeque<Instant>,
    latencies: Vec<Duration>,
    rows: i64,
    last: Option<Instant>,
}

impl Tally {
    fn take(&mut self, outcome: Outcome) {
        let mut from = self
            .pending
            .pop_front()
            .expect("an outcome of a commit handed over");
        if self.closed {
            from = self.last.map_or(from, |last| last.max(from));
        }
        self.latencies
            .push(outcome.completed.saturating_duration_since(from));
        self.last = Some(outcome.completed);
        self.rows += outcome
            .changes
            .iter()
            .flatten()
            .map(|(kind, _)| kind.diff() as i64)
            .sum::<i64>();
    }
}

/// The commits as the engine takes them.
enum Source {
    Events(std::vec::IntoIter<Vec<Event>>),
    /// The changes per commit, and the source table they are applied to.
    Snapshots(std::vec::IntoIter<Changes>, Table),
}

impl Source {
    fn new(commits: Commits) -> Source {
        match commits {
            Commits::Events(c) => Source::Events(c.into_iter()),
            Commits::Snapshots(c) => Source::Snapshots(c.into_iter(), Table::default()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Source::Events(c) => c.len(),
            Source::Snapshots(c, _) => c.len(),
        }
    }

    /// Commit `i` (the next one): its events, or the full snapshot after its changes at version
    /// `i + 1`.
    fn commit(&mut self, i: usize) -> CommitEvents {
        match self {
            Source::Events(c) => CommitEvents {
                events: vec![c.next().unwrap_or_default()],
                ..CommitEvents::default()
            },
            Source::Snapshots(c, table) => {
                table.apply(c.next().unwrap_or_default());
                CommitEvents {
                    snapshots: vec![Some(Snapshot {
                        version: i as i64 + 1,
                        rows: table.rows(),
                    })],
                    ..CommitEvents::default()
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completed_at(completed: Instant) -> Outcome {
        Outcome {
            version: 1,
            timestamp: 0,
            changes: Vec::new(),
            stats: Vec::new(),
            changed: Vec::new(),
            reports: Vec::new(),
            completed,
            latency: Duration::ZERO,
        }
    }

    /// Two commits handed over at once, complete 5 and 8 ms later: in a closed loop the second
    /// waited for the first by the feeder's choice, and is timed from its completion; in an
    /// open loop both were due at once, and the wait counts.
    #[test]
    fn a_closed_loop_times_a_commit_from_the_completion_before_it() {
        let ms = Duration::from_millis;
        let handed = Instant::now();
        for (closed, second) in [(true, ms(3)), (false, ms(8))] {
            let mut tally = Tally {
                closed,
                ..Tally::default()
            };
            tally.pending.extend([handed, handed]);
            tally.take(completed_at(handed + ms(5)));
            tally.take(completed_at(handed + ms(8)));
            assert_eq!(tally.latencies, [ms(5), second]);
        }
    }
}

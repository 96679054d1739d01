//! Executes SCD targets over a sequence of commits on timely workers.
//!
//! Commit `v` (1-based) is fed at timely time `v`; each worker feeds every `peers`-th event of
//! each commit and steps until the commit is complete on every target, so memory stays bounded
//! by one commit plus state. The captured updates are timestamped by commit, so the target after
//! any commit is the sum of updates up to it.

use crate::engine::CommitStats;
use crate::event::Event;
use crate::operators::{Scd1, Scd2};
use crate::plan::{ScdType, Target};
use crate::value::Row;
use crate::{Error, ErrorKind, Result};
use differential_dataflow::input::{Input, InputSession};
use differential_dataflow::VecCollection;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use timely::dataflow::ProbeHandle;

/// One commit's events, per target (indexed like the targets passed to [`execute`]).
#[derive(Clone, Debug, Default)]
pub struct CommitEvents {
    /// Events per target.
    pub events: Vec<Vec<Event>>,
}

/// Everything the targets emitted.
#[derive(Debug, Default)]
pub struct Updates {
    /// Per target: `(row, commit version, diff)`, consolidated per commit.
    pub rows: Vec<Vec<(Row, u64, isize)>>,
    /// Per target: counters per commit version, summed over workers.
    pub stats: Vec<BTreeMap<u64, CommitStats>>,
}

/// Called by worker 0 after each commit completes, with the commit's version.
pub type Progress = Box<dyn Fn(u64) + Send + Sync>;

/// Runs `targets` over `commits` (versions 1, 2, ...) on `workers` threads.
pub fn execute(
    targets: &[Target],
    commits: Vec<CommitEvents>,
    workers: usize,
    progress: Option<Progress>,
) -> Result<Updates> {
    let targets: Arc<Vec<Target>> = Arc::new(targets.to_vec());
    let commits = Arc::new(commits);
    let sink = Arc::new(Mutex::new(Updates {
        rows: vec![Vec::new(); targets.len()],
        stats: vec![BTreeMap::new(); targets.len()],
    }));
    let progress = Arc::new(progress);
    let config = match workers {
        0 | 1 => timely::Config::thread(),
        n => timely::Config::process(n),
    };
    let worker_sink = Arc::clone(&sink);
    let guards = timely::execute(config, move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let probe: ProbeHandle<u64> = ProbeHandle::new();
        let mut inputs: Vec<InputSession<u64, Event, isize>> =
            worker.dataflow::<u64, _, _>(|scope| {
                targets
                    .iter()
                    .enumerate()
                    .map(|(t, target)| {
                        let (input, events) = scope.new_collection::<Event, isize>();
                        let rows = render(t, target, events, &worker_sink);
                        let sink = Arc::clone(&worker_sink);
                        rows.inspect(move |(row, time, diff)| {
                            sink.lock().expect("sink").rows[t].push((row.clone(), *time, *diff));
                        })
                        .probe_with(&probe);
                        input
                    })
                    .collect()
            });
        for (c, commit) in commits.iter().enumerate() {
            let version = c as u64 + 1;
            for (t, input) in inputs.iter_mut().enumerate() {
                input.advance_to(version);
                let events = commit.events.get(t).map(Vec::as_slice).unwrap_or(&[]);
                for event in events.iter().skip(index).step_by(peers) {
                    input.insert(event.clone());
                }
                input.advance_to(version + 1);
                input.flush();
            }
            worker.step_while(|| probe.less_than(&(version + 1)));
            if index == 0 {
                if let Some(report) = progress.as_ref() {
                    report(version);
                }
            }
        }
    })
    .map_err(|e| Error::new(ErrorKind::Internal, format!("cannot start workers: {e}")))?;
    for result in guards.join() {
        result.map_err(|e| Error::new(ErrorKind::Internal, format!("worker failed: {e}")))?;
    }
    let mut updates = std::mem::take(&mut *sink.lock().expect("sink"));
    for rows in &mut updates.rows {
        differential_dataflow::consolidation::consolidate_updates(rows);
    }
    Ok(updates)
}

fn render<'s>(
    t: usize,
    target: &Target,
    events: VecCollection<'s, u64, Event>,
    sink: &Arc<Mutex<Updates>>,
) -> VecCollection<'s, u64, Row> {
    let sink = Arc::clone(sink);
    let on_stats = move |time: &u64, stats: CommitStats| {
        let mut sink = sink.lock().expect("sink");
        sink.stats[t].entry(*time).or_default().merge(&stats);
    };
    match target.scd {
        ScdType::Type1 => events.scd1_with_stats(target.into(), on_stats),
        ScdType::Type2 => events.scd2_with_stats(target.into(), on_stats),
    }
}

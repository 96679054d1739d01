//! Per-commit latency under heavy reordering, with two baselines measured in the same run.
//!
//! Command: `cargo bench --bench reorder_latency [-- EVENTS KEYS BATCH WORKERS]` (defaults
//! 200000 100000 1000 1).
//! Workload (`scdflow::gen`, seed 42): EVENTS events over KEYS keys, 10% deletes, two STRING
//! payload columns, each event displaced by up to D positions from sequence order for
//! D in {0, 1000, 100000}, fed in commits of BATCH events. The bitemporal target gets the same
//! workload plus 10% stragglers (late in business time by `10 * BATCH` positions, 10 commits)
//! and 1% of events late in system time (by up to `10 * BATCH` positions). For SCD1, SCD2 and
//! bitemporal it records, per commit, the time from handing the commit to the inputs until the
//! output frontier passes it (HdrHistogram, microseconds), and the throughput. Baselines, on the
//! same events:
//! - `state loop`: the engine's per-key state machines applied commit by commit in one thread,
//!   without timely (the physical-limit proxy: what the dataflow adds on top is overhead);
//! - `dd reduce`: the same semantics as a plain differential `reduce` per key that re-evaluates
//!   the reference model over the key's whole history (what a DD user would write first).
//!
//! Machines here have 2 noisy cores: compare the ratios printed in one run.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use differential_dataflow::input::Input;
use hdrhistogram::Histogram;
use scdflow::engine::{BitemporalState, CdcState, CommitStats, Scd1State, Scd2State};
use scdflow::gen::{self, Workload};
use scdflow::plan::{ScdType, Target};
use scdflow::runtime::{execute, CommitEvents};
use scdflow::value::Row;
use std::time::{Duration, Instant};

/// Latencies and total time of one run.
struct Run {
    latencies: Vec<Duration>,
    total: Duration,
}

impl Run {
    fn histogram(&self) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(3).expect("histogram");
        for l in &self.latencies {
            h.record(l.as_micros().max(1) as u64).expect("record");
        }
        h
    }

    fn p99(&self) -> u64 {
        self.histogram().value_at_quantile(0.99)
    }

    fn line(&self, name: &str, events: u64, baseline: Option<&Run>) {
        let h = self.histogram();
        let rate = events as f64 / self.total.as_secs_f64();
        let ratio = baseline.map_or(String::new(), |b| {
            format!(
                "  {:.2}x the state loop's throughput",
                rate / (events as f64 / b.total.as_secs_f64())
            )
        });
        println!(
            "  {name:<12} {rate:>10.0} ev/s  p50 {:>6} µs  p90 {:>6}  p99 {:>6}  p99.9 {:>6}  max {:>7}{ratio}",
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.9),
            h.value_at_quantile(0.99),
            h.value_at_quantile(0.999),
            h.max()
        );
    }
}

fn engine(target: &Target, commits: Vec<CommitEvents>, workers: usize) -> Run {
    let started = Instant::now();
    let updates = execute(std::slice::from_ref(target), commits, workers, None).expect("execute");
    Run {
        total: started.elapsed(),
        latencies: updates.latencies,
    }
}

fn state_loop(target: &Target, commits: Vec<CommitEvents>) -> Run {
    let mut state: Box<dyn CdcState> = match target.scd {
        ScdType::Type1 => Box::new(Scd1State::new(target.image_len, target.partial, None)),
        ScdType::Type2 => Box::new(Scd2State::new(
            target.image_len,
            target.tracked.clone(),
            target.partial,
            None,
        )),
        ScdType::Bitemporal => Box::new(BitemporalState::new(
            target.image_len,
            target.tracked.clone(),
            target.partial,
        )),
    };
    let mut latencies = Vec::with_capacity(commits.len());
    let started = Instant::now();
    let mut out = Vec::new();
    for commit in commits {
        let t = Instant::now();
        out.clear();
        let events = commit.events.into_iter().next().unwrap_or_default();
        state.apply(events, 0, &mut out, &mut CommitStats::default());
        latencies.push(t.elapsed());
    }
    Run {
        total: started.elapsed(),
        latencies,
    }
}

/// The target as a `reduce` that evaluates the reference model over each changed key's events.
fn dd_reduce(target: &Target, commits: Vec<CommitEvents>) -> Run {
    let target = target.clone();
    let started = Instant::now();
    let latencies = timely::execute_directly(move |worker| {
        let probe = timely::dataflow::ProbeHandle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, events) = scope.new_collection::<scdflow::event::Event, isize>();
            let t = target.clone();
            events
                .map(|e| (e.key.clone(), e))
                .reduce(move |_key, input, output: &mut Vec<(Row, isize)>| {
                    let events: Vec<_> = input.iter().map(|(e, _)| (*e).clone()).collect();
                    output.extend(
                        scdflow::model::evaluate(&t, &events)
                            .into_iter()
                            .map(|r| (r, 1)),
                    );
                })
                .probe_with(&probe);
            input
        });
        let mut latencies = Vec::new();
        for (c, commit) in commits.into_iter().enumerate() {
            let t = Instant::now();
            for event in commit.events.into_iter().next().unwrap_or_default() {
                input.insert(event);
            }
            input.advance_to(c as u64 + 1);
            input.flush();
            worker.step_while(|| probe.less_than(input.time()));
            latencies.push(t.elapsed());
        }
        latencies
    });
    Run {
        total: started.elapsed(),
        latencies,
    }
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let events = args.first().copied().unwrap_or(200_000);
    let keys = args.get(1).copied().unwrap_or(100_000);
    let batch = args.get(2).copied().unwrap_or(1_000).max(1);
    let workers = args.get(3).copied().unwrap_or(1) as usize;
    println!("command: cargo bench --bench reorder_latency -- {events} {keys} {batch} {workers}");
    for displacement in [0, 1_000, 100_000] {
        let w = Workload {
            events,
            keys,
            displacement,
            commits: events.div_ceil(batch),
            ..Workload::default()
        };
        let bitemporal = Workload {
            stragglers: 0.1,
            straggler_distance: 10 * batch,
            system_late: 0.01,
            system_lag: 10 * batch,
            ..w.clone()
        };
        for (scd, w) in [
            (ScdType::Type1, &w),
            (ScdType::Type2, &w),
            (ScdType::Bitemporal, &bitemporal),
        ] {
            if scd != ScdType::Type2 {
                println!("workload: {w}");
            }
            let target = gen::target(w, scd);
            let commits = gen::events(w, &target);
            println!(" {scd:?}, {workers} worker(s), {batch} events per commit:");
            let baseline = state_loop(&target, commits.clone());
            baseline.line("state loop", events, None);
            let ours = engine(&target, commits.clone(), workers);
            ours.line("scdflow", events, Some(&baseline));
            let reduce = dd_reduce(&target, commits);
            reduce.line("dd reduce", events, Some(&baseline));
            println!(
                "  scdflow vs dd reduce: {:.1}x throughput, {:.1}x lower p99",
                reduce.total.as_secs_f64() / ours.total.as_secs_f64(),
                reduce.p99() as f64 / ours.p99().max(1) as f64
            );
        }
    }
}

//! `scdflow bench`: the reorder-latency benchmark (`scdflow::bench`), its table on stdout, and
//! with `--report DIR` a report with plots; with `--peers`, the DuckDB and Flink peers on the
//! same events.

use super::args::BenchArgs;
use super::machine::{self, Machine};
use super::peers::{Events, Peer};
use super::report::{self, Report};
use anyhow::Context;
use scdflow::bench::{markdown_table, ratios_table, Record};
use std::process::ExitCode;

pub fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let suite = args.suite();
    suite.validate().context("invalid benchmark")?;
    // Its feeder waits for each commit, as `run --follow` does.
    super::pin_threads();
    // Fail on an unusable report directory before the runs, not after them.
    if let Some(dir) = &args.report {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create", dir.display()))?;
    }
    let mut notes = Vec::new();
    let mut peers = Vec::new();
    if args.peers {
        for peer in [
            Peer::duckdb(args.peer_script.as_deref()),
            Peer::flink(args.flink_script.as_deref(), &args.flink_python),
        ] {
            match peer {
                Ok(peer) => peers.push(peer),
                Err(note) => {
                    eprintln!("note: {note}");
                    notes.push(note);
                }
            }
        }
    }
    let command = machine::command_line();
    let when = machine::utc_now();
    let machine = Machine::probe();
    println!("command: {command}");
    println!("machine: {machine}");
    println!("{}", suite.feeding());
    let mut workloads = Vec::new();
    let mut records = suite.run(
        |w| {
            println!("workload: {w}");
            workloads.push(w.clone());
        },
        |r| println!("  {r}"),
    )?;
    for w in &workloads {
        if !peers.iter().any(|p| p.measures_any(&suite.flows)) {
            break;
        }
        let events = Events::write(w)?;
        // A peer that fails is reported and not run again.
        peers.retain(
            |peer| match peer.measure(w, &events, &suite.flows, suite.warmup) {
                Ok(measured) => {
                    for r in &measured {
                        println!("  {r}");
                    }
                    records.extend(measured);
                    true
                }
                Err(e) => {
                    let name = peer.name();
                    eprintln!("warning: the {name} peer failed: {e:#}");
                    notes.push(format!("the {name} peer failed: {e:#}"));
                    false
                }
            },
        );
    }
    if records.iter().any(|r| r.rss.is_some_and(|rss| !rss.reset)) {
        notes.push(
            "the peak RSS could not be reset between runs (/proc/self/clear_refs is not writable): \
             each peak is the process's peak so far"
                .to_string(),
        );
    }
    // The table groups by flow, then point, keeping the run order of the systems.
    let points = suite.points();
    let rank = |r: &Record| {
        let flow = suite.flows.iter().position(|f| *f == r.flow);
        let point = points.iter().position(|p| *p == (r.displacement, r.keys));
        (flow, point)
    };
    records.sort_by_key(|r| rank(r));
    println!("\n{}", markdown_table(&records));
    println!("{}", ratios_table(&records));
    for n in &notes {
        println!("note: {n}");
    }
    if let Some(dir) = &args.report {
        let report = Report {
            command: &command,
            when: &when,
            machine: &machine,
            suite: &suite,
            workloads: &workloads,
            records: &records,
            notes: &notes,
        };
        for file in report::write(dir, &report)? {
            println!("report: {}", file.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

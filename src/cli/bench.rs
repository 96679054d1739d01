//! `scdflow bench`: the reorder-latency benchmark (`scdflow::bench`), its table on stdout, and
//! with `--report DIR` a report with plots; with `--peers`, the DuckDB peer on the same events.

use super::args::BenchArgs;
use super::machine::{self, Machine};
use super::peers::Peer;
use super::report::{self, Report};
use anyhow::Context;
use scdflow::bench::{markdown_table, ratios_table, Record};
use std::process::ExitCode;

pub fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let suite = args.suite();
    suite.validate().context("invalid benchmark")?;
    // Fail on an unusable report directory before the runs, not after them.
    if let Some(dir) = &args.report {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create", dir.display()))?;
    }
    let mut notes = Vec::new();
    let peer = if args.peers {
        let peer = Peer::find(args.peer_script.as_deref());
        if peer.is_none() {
            notes.push("the DuckDB peer was requested but could not run (see the note on stderr; `python3 -m pip install duckdb`)".to_string());
        }
        peer
    } else {
        None
    };
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
    if let Some(peer) = &peer {
        for w in &workloads {
            match peer.measure(w, &suite.flows, suite.warmup) {
                Ok(measured) => {
                    for r in &measured {
                        println!("  {r}");
                    }
                    records.extend(measured);
                }
                Err(e) => {
                    eprintln!("warning: the DuckDB peer failed: {e:#}");
                    notes.push(format!("the DuckDB peer failed: {e:#}"));
                    break;
                }
            }
        }
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

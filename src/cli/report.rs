//! `scdflow bench --report DIR`: `DIR/report.md` (every figure, the exact command, the machine)
//! and the SVG plots of latency percentiles against D and against history length per key.

use super::machine::Machine;
use super::plot::{self, Plot};
use anyhow::Context;
use scdflow::bench::{markdown_table, ratios_table, Record, Suite};
use scdflow::gen::Workload;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The plot of the displacement sweep.
pub const DISPLACEMENT_SVG: &str = "latency_vs_displacement.svg";
/// The plot of the history sweep.
pub const HISTORY_SVG: &str = "latency_vs_history.svg";

/// Everything a report shows.
pub struct Report<'a> {
    /// The exact command line.
    pub command: &'a str,
    /// When it ran.
    pub when: &'a str,
    /// Where it ran.
    pub machine: &'a Machine,
    /// The plan.
    pub suite: &'a Suite,
    /// Each point's workload, in run order.
    pub workloads: &'a [Workload],
    /// Every figure, in table order.
    pub records: &'a [Record],
    /// Remarks (skipped peers, memory caveats).
    pub notes: &'a [String],
}

/// Writes `report.md` and the plots into `dir` (created if missing); returns the files.
pub fn write(dir: &Path, report: &Report) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let suite = report.suite;
    let mut files = Vec::new();

    let k = suite.displacement_sweep_keys();
    let mut ds = suite.displacements.clone();
    ds.sort_unstable();
    ds.dedup();
    let at_k = move |r: &Record| (r.keys == k).then_some(r.displacement);
    let by_displacement = Plot {
        title: format!(
            "Latency per commit against reordering depth D (K = {k}, N = {}, B = {})",
            suite.workload.events, suite.batch
        ),
        x_desc: "D: each event displaced by up to D positions".into(),
        ticks: ds.iter().map(|&d| (d, d.to_string())).collect(),
        x: &at_k,
    };
    let d = suite.history_sweep_displacement();
    let mut ks = suite.keys.clone();
    ks.sort_unstable_by(|a, b| b.cmp(a));
    ks.dedup();
    let n = suite.workload.events;
    let at_d = move |r: &Record| (r.displacement == d).then_some(r.keys);
    let by_history = Plot {
        title: format!(
            "Latency per commit against history length per key (D = {d}, N = {n}, B = {})",
            suite.batch
        ),
        x_desc: "events per key: N / K".into(),
        ticks: ks.iter().map(|&k| (k, per_key(n, k))).collect(),
        x: &at_d,
    };
    for (file, plot) in [
        (DISPLACEMENT_SVG, &by_displacement),
        (HISTORY_SVG, &by_history),
    ] {
        let path = dir.join(file);
        plot::write(&path, plot, &suite.flows, report.records)?;
        files.push(path);
    }

    let path = dir.join("report.md");
    std::fs::write(&path, markdown(report))
        .with_context(|| format!("{}: cannot write", path.display()))?;
    files.insert(0, path);
    Ok(files)
}

/// `N / K` with at most one decimal.
fn per_key(n: u64, k: u64) -> String {
    let v = n as f64 / k.max(1) as f64;
    if (v - v.round()).abs() < 0.05 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn markdown(r: &Report) -> String {
    let suite = r.suite;
    let mut m = String::new();
    let _ = writeln!(m, "# scdflow bench: latency under reordering\n");
    let _ = writeln!(m, "Run {} with:\n\n```sh\n{}\n```\n", r.when, r.command);
    let _ = writeln!(m, "## Machine\n");
    let machine = r.machine;
    let _ = writeln!(m, "- CPU: {} x {}", machine.cpus, machine.cpu);
    if let Some(mem) = machine.memory {
        let _ = writeln!(m, "- memory: {:.1} GiB", mem as f64 / (1u64 << 30) as f64);
    }
    let _ = writeln!(m, "- OS: {}", machine.os);
    let _ = writeln!(
        m,
        "- compiler: {} (the rustc on PATH when the report was written)",
        machine.rustc.as_deref().unwrap_or("unknown")
    );
    let _ = writeln!(
        m,
        "- scdflow {}, {} build\n",
        env!("CARGO_PKG_VERSION"),
        if cfg!(debug_assertions) {
            "debug (figures not representative)"
        } else {
            "release"
        }
    );
    let _ = writeln!(m, "## Settings\n");
    let _ = writeln!(
        m,
        "- flows: {}; systems: {}",
        suite
            .flows
            .iter()
            .map(|f| f.label())
            .collect::<Vec<_>>()
            .join(", "),
        suite
            .systems
            .iter()
            .map(|s| s.label())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(m, "- {}", suite.feeding());
    let _ = writeln!(
        m,
        "- displacement sweep: D in {:?} at K = {}; history sweep: K in {:?} at D = {}",
        suite.displacements,
        suite.displacement_sweep_keys(),
        suite.keys,
        suite.history_sweep_displacement()
    );
    let _ = writeln!(m, "- workloads (`scdflow::gen`, one per point):\n");
    for w in r.workloads {
        let _ = writeln!(m, "  - {w}");
    }
    let _ = writeln!(m, "\n## Figures\n");
    let _ = writeln!(
        m,
        "Latency: per commit, from handing it to the inputs ({}) until the output frontier \
         passes it; percentiles from an HdrHistogram (3 significant digits), in microseconds. \
         Peak RSS: VmHWM, reset before each run; state per key: (peak RSS - RSS at the start) / K, \
         an estimate and often a lower bound, as the allocator reuses memory freed by earlier \
         runs (see `scdflow::bench`). `n of C` commits: the run was cut short by --budget; its \
         figures cover the first n commits, the shortest histories.\n",
        if suite.rate.is_some() {
            "open loop: from its due time"
        } else {
            "closed loop"
        }
    );
    m.push_str(&markdown_table(r.records));
    let _ = writeln!(m, "\n## Ratios\n");
    let _ = writeln!(
        m,
        "scdflow's throughput over each other system's, and each other system's p99 over \
         scdflow's (above 1: scdflow is faster / has the lower p99).\n"
    );
    m.push_str(&ratios_table(r.records));
    let _ = writeln!(m, "\n## Plots\n");
    let _ = writeln!(
        m,
        "Colour: system; marker: percentile (p50 circle, p90 triangle, p99 square and thicker \
         line, p99.9 cross); latency on a log scale.\n"
    );
    let _ = writeln!(m, "![latency against D]({DISPLACEMENT_SVG})\n");
    let _ = writeln!(m, "![latency against history length]({HISTORY_SVG})");
    if !r.notes.is_empty() {
        let _ = writeln!(m, "\n## Notes\n");
        for n in r.notes {
            let _ = writeln!(m, "- {n}");
        }
    }
    m
}

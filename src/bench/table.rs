//! The figures as Markdown tables (printed by `scdflow bench` and embedded in its report).

use super::{Record, System, MIB};
use std::fmt::Write;

/// Every record, one row each, in the order given: flow, D, K, events per key, system,
/// commits measured (`n of C` when a budget stopped the run), throughput, latency percentiles
/// (µs; dashes for a peer that measures throughput only), peak RSS, and the state's bytes per
/// table row beside the rows' raw width (where counted: the state loop's; [`super::StateSize`]).
pub fn markdown_table(records: &[Record]) -> String {
    let mut t = String::from(
        "| flow | D | K | events/key | system | commits | events/s | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | peak RSS MiB | state B/row (raw B/row) |\n\
         |---|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for r in records {
        let l = &r.latency;
        let rss = r
            .rss
            .map_or("–".into(), |rss| format!("{:.0}", rss.peak as f64 / MIB));
        let state = r.state.map_or("–".into(), |s| {
            format!("{:.0} ({:.0})", s.per_row(), s.raw_per_row())
        });
        let commits = if r.complete() {
            r.commits.to_string()
        } else {
            format!("{} of {}", r.commits, r.planned)
        };
        // A peer that measures throughput only has no latencies.
        let latency = if l.count == 0 {
            "– | – | – | – | –".to_string()
        } else {
            format!(
                "{} | {} | {} | {} | {}",
                l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us
            )
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {commits} | {:.0} | {latency} | {rss} | {state} |",
            r.flow,
            r.displacement,
            r.keys,
            per_key(r.history),
            r.system,
            r.events_per_second(),
        );
    }
    t
}

/// Per flow and point where scdflow was measured: its throughput over each other system's
/// (`x state loop` above 1 means faster), and each other system's p99 over scdflow's (above 1
/// means scdflow's is lower).
pub fn ratios_table(records: &[Record]) -> String {
    let mut others: Vec<&str> = Vec::new();
    for r in records {
        if !r.is(System::Scdflow) && !others.contains(&r.system.as_str()) {
            others.push(&r.system);
        }
    }
    let mut t = String::from("| flow | D | K |");
    for o in &others {
        let _ = write!(t, " throughput vs {o} | p99: {o} / scdflow |");
    }
    t.push_str("\n|---|--:|--:|");
    t.push_str(&"--:|--:|".repeat(others.len()));
    t.push('\n');
    for ours in records.iter().filter(|r| r.is(System::Scdflow)) {
        let _ = write!(
            t,
            "| {} | {} | {} |",
            ours.flow, ours.displacement, ours.keys
        );
        for o in &others {
            let theirs = records.iter().find(|r| {
                r.system == *o
                    && r.flow == ours.flow
                    && r.displacement == ours.displacement
                    && r.keys == ours.keys
            });
            match theirs {
                Some(theirs) => {
                    let p99 = if theirs.latency.count == 0 {
                        "–".to_string()
                    } else {
                        format!(
                            "{:.2}x",
                            theirs.latency.p99_us as f64 / ours.latency.p99_us.max(1) as f64
                        )
                    };
                    let _ = write!(
                        t,
                        " {:.2}x | {p99} |",
                        ours.events_per_second() / theirs.events_per_second().max(1e-9),
                    );
                }
                None => t.push_str(" – | – |"),
            }
        }
        t.push('\n');
    }
    t
}

/// Events per key: one decimal below 10.
fn per_key(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

//! What the benchmarks that run the release binary share: running it, reading the metrics log
//! of a durable run, and a peer's JSON line.

// Each benchmark uses a part of what is here.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// The release binary the benchmark measures.
pub const SCDFLOW: &str = env!("CARGO_BIN_EXE_scdflow");

/// Runs `cmd` and fails unless it succeeds.
pub fn run_ok(cmd: &mut Command) {
    let output = cmd.output().expect("run");
    assert!(output.status.success(), "{cmd:?}: {output:?}");
}

/// Runs a peer and parses its last stdout line, a JSON object.
pub fn last_json(cmd: &mut Command) -> serde_json::Value {
    let output = cmd.output().expect("run the peer");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or("{}");
    serde_json::from_str(last).expect("the peer's JSON line")
}

/// Whether the metrics log records commit `version`'s latency.
pub fn latency_logged(log: &Path, version: u64) -> bool {
    let needle = format!("{{\"latency\":{{\"commit_version\":{version},");
    std::fs::read_to_string(log).is_ok_and(|text| text.contains(&needle))
}

/// The latencies (ms) the metrics log records for commits after `after`.
pub fn latencies(log: &Path, after: u64) -> Vec<f64> {
    let text = std::fs::read_to_string(log).expect("metrics log");
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            let l = v.get("latency")?;
            (l["commit_version"].as_u64()? > after).then(|| l["latency_ms"].as_f64())?
        })
        .collect()
}

/// The exact nearest-rank `q` quantile of `sorted` (ascending, not empty).
pub fn nearest(sorted: &[f64], q: f64) -> f64 {
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

//! `scdflow bench --peers`: the DuckDB peer (`benches/peers/duckdb_incremental.py`) on the same
//! workloads, written as the CSV commit files of `scdflow generate`.
//!
//! The script's contract: `python3 SCRIPT --events-dir DIR --scd 1|2 --json` prints, as its
//! last line on stdout, `{"peer":"duckdb","scd":1,"events":N,"commits":C,"seconds":S,
//! "p50_us":..,"p90_us":..,"p99_us":..,"p999_us":..,"max_us":..}`.

use anyhow::{bail, Context};
use scdflow::bench::{Flow, Record, Summary};
use scdflow::gen::{self, Workload};
use scdflow::io::OutputFormat;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The interpreter the peer runs with.
const PYTHON: &str = "python3";

/// Where the script lives in the source tree.
const SCRIPT: &str = "benches/peers/duckdb_incremental.py";

/// The peer's figures, as its last stdout line gives them.
#[derive(Debug, Deserialize, PartialEq)]
pub struct Figures {
    /// Its name (`duckdb`).
    pub peer: String,
    /// 1 or 2.
    pub scd: u8,
    /// Events it applied.
    pub events: u64,
    /// Commits (batches) it applied.
    pub commits: u64,
    /// Its wall time for all commits.
    pub seconds: f64,
    /// Latency percentiles, microseconds.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// The largest latency.
    pub max_us: f64,
}

impl Figures {
    /// The figures as a record of `workload`'s point.
    pub fn record(&self, workload: &Workload, flow: Flow) -> Record {
        let us = |v: f64| v.max(0.0).round() as u64;
        Record {
            flow,
            displacement: workload.displacement,
            keys: workload.keys,
            history: workload.events as f64 / workload.keys.max(1) as f64,
            system: self.peer.clone(),
            events: self.events,
            commits: self.commits,
            planned: self.commits,
            seconds: self.seconds,
            latency: Summary {
                count: self.commits,
                p50_us: us(self.p50_us),
                p90_us: us(self.p90_us),
                p99_us: us(self.p99_us),
                p999_us: us(self.p999_us),
                max_us: us(self.max_us),
                mean_us: 0,
            },
            rows: None,
            rss: None,
        }
    }
}

/// The DuckDB peer, ready to run.
pub struct Peer {
    python: String,
    script: PathBuf,
}

impl Peer {
    /// The peer if its script exists and `python3 -c "import duckdb"` works; otherwise `None`,
    /// after a note on stderr saying what is missing and how to install it.
    pub fn find(script: Option<&Path>) -> Option<Peer> {
        let script = script.map(Path::to_path_buf).unwrap_or_else(|| {
            let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(SCRIPT);
            if source.exists() {
                source
            } else {
                PathBuf::from(SCRIPT)
            }
        });
        if !script.is_file() {
            eprintln!(
                "note: --peers: no peer script at {}; skipping the DuckDB peer (give one with --peer-script)",
                script.display()
            );
            return None;
        }
        let duckdb = Command::new(PYTHON)
            .args(["-c", "import duckdb"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !duckdb {
            eprintln!(
                "note: --peers: python3 cannot import duckdb; install it with `{PYTHON} -m pip install duckdb` \
                 (skipping the DuckDB peer)"
            );
            return None;
        }
        Some(Peer {
            python: PYTHON.to_string(),
            script,
        })
    }

    /// Runs the peer over `workload` for each of `flows` it supports (SCD1, SCD2), with the
    /// commit files written to a scratch directory that is removed afterwards; the first
    /// `warmup` commits are bulk-loaded untimed (`--preload`).
    pub fn measure(
        &self,
        workload: &Workload,
        flows: &[Flow],
        warmup: u64,
    ) -> anyhow::Result<Vec<Record>> {
        let flows: Vec<Flow> = flows
            .iter()
            .copied()
            .filter(|f| matches!(f, Flow::Scd1 | Flow::Scd2))
            .collect();
        if flows.is_empty() {
            return Ok(Vec::new());
        }
        let scratch = Scratch::new()?;
        let events = scratch.0.join(gen::EVENTS_DIR);
        write_events(workload, &events)?;
        let mut records = Vec::new();
        for flow in flows {
            let figures = run(&self.python, &self.script, &events, flow, warmup)?;
            records.push(figures.record(workload, flow));
        }
        Ok(records)
    }
}

/// Writes `workload` as `scdflow generate` does: `dir/commit_NNNNNN.csv`.
fn write_events(workload: &Workload, dir: &Path) -> anyhow::Result<()> {
    let schema = gen::schema(workload);
    let digits = workload.commits.to_string().len().max(6);
    for (i, rows) in gen::commit_rows(workload).enumerate() {
        let name = format!("commit_{:0digits$}.csv", i + 1);
        scdflow::io::write_rows(&dir.join(name), OutputFormat::Csv, &schema, &rows)?;
    }
    Ok(())
}

/// Runs `script` over `events` for `flow` and parses its figures.
fn run(
    python: &str,
    script: &Path,
    events: &Path,
    flow: Flow,
    warmup: u64,
) -> anyhow::Result<Figures> {
    let scd = if flow == Flow::Scd1 { "1" } else { "2" };
    let out = Command::new(python)
        .arg(script)
        .arg("--events-dir")
        .arg(events)
        .args(["--scd", scd, "--json", "--preload", &warmup.to_string()])
        .output()
        .with_context(|| format!("cannot run {python} {}", script.display()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        bail!(
            "{} --scd {scd} failed ({}): {}",
            script.display(),
            out.status,
            last.unwrap_or("no message")
        );
    }
    parse(&String::from_utf8_lossy(&out.stdout))
        .with_context(|| format!("{} --scd {scd}", script.display()))
}

/// The figures on the last non-empty line of the peer's stdout.
fn parse(stdout: &str) -> anyhow::Result<Figures> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .context("printed nothing; expected a JSON line of figures")?;
    serde_json::from_str(line.trim())
        .with_context(|| format!("the last line is not the JSON figures: {line}"))
}

/// A scratch directory under the system's temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> anyhow::Result<Scratch> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "scdflow-bench-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("{}: cannot create", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIGURES: &str = r#"{"peer":"duckdb","scd":2,"events":2000,"commits":20,"seconds":0.5,"p50_us":1200.4,"p90_us":2000,"p99_us":3000,"p999_us":3100,"max_us":3200}"#;

    #[test]
    fn parses_the_last_line() {
        let f = parse(&format!("loading...\n{FIGURES}\n\n")).unwrap();
        assert_eq!(
            (f.peer.as_str(), f.scd, f.events, f.commits),
            ("duckdb", 2, 2000, 20)
        );
        let w = Workload {
            displacement: 7,
            keys: 9,
            ..Workload::default()
        };
        let r = f.record(&w, Flow::Scd2);
        assert_eq!(
            (r.system.as_str(), r.displacement, r.keys),
            ("duckdb", 7, 9)
        );
        assert_eq!((r.latency.p50_us, r.latency.max_us), (1200, 3200));
        assert!((r.events_per_second() - 4000.0).abs() < 1e-6);
    }

    #[test]
    fn rejects_output_without_figures() {
        assert!(parse("").is_err());
        let err = parse("{\"peer\":\"duckdb\"}\n").unwrap_err();
        assert!(
            format!("{err:#}").contains("not the JSON figures"),
            "{err:#}"
        );
    }

    /// A fake peer script, run the way the real one is: its arguments reach it and its last
    /// line is parsed. Skipped without python3.
    #[test]
    fn runs_a_fake_script() {
        if Command::new(PYTHON).arg("--version").output().is_err() {
            eprintln!("no {PYTHON}: skipped");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("fake.py");
        std::fs::write(
            &script,
            r#"import json, os, sys
args = sys.argv[1:]
assert args[0] == "--events-dir" and os.path.isdir(args[1]), args
assert args[2] == "--scd" and args[4] == "--json", args
assert args[5:] == ["--preload", "1"], args
print("some progress")
print(json.dumps({"peer": "duckdb", "scd": int(args[3]), "events": len(os.listdir(args[1])),
                  "commits": 3, "seconds": 0.25, "p50_us": 10, "p90_us": 20, "p99_us": 30,
                  "p999_us": 40, "max_us": 50}))
"#,
        )
        .unwrap();
        let events = dir.path().join("events");
        let w = Workload {
            events: 30,
            keys: 5,
            commits: 3,
            ..Workload::default()
        };
        write_events(&w, &events).unwrap();
        let f = run(PYTHON, &script, &events, Flow::Scd1, 1).unwrap();
        assert_eq!((f.scd, f.events, f.p999_us), (1, 3, 40.0));
        let peer = Peer {
            python: PYTHON.into(),
            script,
        };
        let records = peer.measure(&w, &Flow::ALL, 1).unwrap();
        let flows: Vec<_> = records.iter().map(|r| r.flow).collect();
        assert_eq!(flows, [Flow::Scd1, Flow::Scd2]);
    }
}

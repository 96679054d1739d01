//! `scdflow bench --peers`: the peers (`benches/peers/`) on the same workloads, written as the
//! CSV commit files of `scdflow generate`: DuckDB (`duckdb_incremental.py`, SCD1 and SCD2,
//! per-commit latency) and Apache Flink (`flink_dedup.py`, SCD1, throughput only).
//!
//! A script's contract: `PYTHON SCRIPT --events-dir DIR --scd 1|2 --json --preload N` prints, as
//! its last line on stdout, `{"peer":"duckdb","scd":1,"events":N,"commits":C,"seconds":S,
//! "p50_us":..,"p90_us":..,"p99_us":..,"p999_us":..,"max_us":..}`; a peer without per-commit
//! latencies leaves the percentiles out.

use anyhow::{bail, Context};
use scdflow::bench::{Flow, Record, Summary};
use scdflow::gen::{self, Workload};
use scdflow::io::OutputFormat;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The interpreter the DuckDB peer runs with (and the Flink peer's default).
pub const PYTHON: &str = "python3";

/// What a peer is and needs.
struct Kind {
    /// Its name in notes.
    name: &'static str,
    /// Where its script lives in the source tree.
    script: &'static str,
    /// The Python module it imports.
    module: &'static str,
    /// How to install that module.
    install: &'static str,
    /// Whether it needs a Java runtime.
    java: bool,
    /// The flows it measures.
    flows: &'static [Flow],
}

const DUCKDB: Kind = Kind {
    name: "DuckDB",
    script: "benches/peers/duckdb_incremental.py",
    module: "duckdb",
    install: "-m pip install duckdb",
    java: false,
    flows: &[Flow::Scd1, Flow::Scd2],
};

const FLINK: Kind = Kind {
    name: "Flink",
    script: "benches/peers/flink_dedup.py",
    module: "pyflink",
    install: "-m pip install apache-flink",
    java: true,
    flows: &[Flow::Scd1],
};

/// The peer's figures, as its last stdout line gives them.
#[derive(Debug, Deserialize, PartialEq)]
pub struct Figures {
    /// Its name (`duckdb`, `flink`).
    pub peer: String,
    /// 1 or 2.
    pub scd: u8,
    /// Events it applied.
    pub events: u64,
    /// Commits (batches) it applied.
    pub commits: u64,
    /// Its wall time for all commits.
    pub seconds: f64,
    /// Latency percentiles, microseconds; absent for a peer that measures throughput only.
    #[serde(default)]
    pub p50_us: Option<f64>,
    /// 90th percentile.
    #[serde(default)]
    pub p90_us: Option<f64>,
    /// 99th percentile.
    #[serde(default)]
    pub p99_us: Option<f64>,
    /// 99.9th percentile.
    #[serde(default)]
    pub p999_us: Option<f64>,
    /// The largest latency.
    #[serde(default)]
    pub max_us: Option<f64>,
}

impl Figures {
    /// The figures as a record of `workload`'s point (no latencies, a count of 0, unless the
    /// peer gave every percentile).
    pub fn record(&self, workload: &Workload, flow: Flow) -> Record {
        let us = |v: f64| v.max(0.0).round() as u64;
        let latency = match (
            self.p50_us,
            self.p90_us,
            self.p99_us,
            self.p999_us,
            self.max_us,
        ) {
            (Some(p50), Some(p90), Some(p99), Some(p999), Some(max)) => Summary {
                count: self.commits,
                p50_us: us(p50),
                p90_us: us(p90),
                p99_us: us(p99),
                p999_us: us(p999),
                max_us: us(max),
                mean_us: 0,
            },
            _ => Summary::default(),
        };
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
            latency,
            rows: None,
            rss: None,
            state: None,
        }
    }
}

/// A peer, ready to run.
pub struct Peer {
    name: &'static str,
    python: String,
    script: PathBuf,
    flows: &'static [Flow],
}

impl Peer {
    /// The DuckDB peer, with `script` or the source tree's.
    pub fn duckdb(script: Option<&Path>) -> Result<Peer, String> {
        Peer::find(&DUCKDB, script, PYTHON)
    }

    /// The Flink peer, with `script` or the source tree's, run by `python` (where
    /// apache-flink is installed: often a virtual environment's).
    pub fn flink(script: Option<&Path>, python: &str) -> Result<Peer, String> {
        Peer::find(&FLINK, script, python)
    }

    /// The peer if its script exists, `python -c "import MODULE"` works and, where needed,
    /// Java runs; otherwise a note saying what is missing and how to install it.
    fn find(kind: &Kind, script: Option<&Path>, python: &str) -> Result<Peer, String> {
        let script = script.map(Path::to_path_buf).unwrap_or_else(|| {
            let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(kind.script);
            if source.exists() {
                source
            } else {
                PathBuf::from(kind.script)
            }
        });
        let name = kind.name;
        if !script.is_file() {
            return Err(format!(
                "the {name} peer was skipped: no script at {}",
                script.display()
            ));
        }
        let runs = |program: &str, args: &[&str]| {
            Command::new(program)
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let import = format!("import {}", kind.module);
        if !runs(python, &["-c", &import]) {
            return Err(format!(
                "the {name} peer was skipped: {python} cannot import {}; install it with `{python} {}`",
                kind.module, kind.install
            ));
        }
        let java_home = std::env::var_os("JAVA_HOME").map(|h| Path::new(&h).join("bin/java"));
        let java = java_home
            .as_deref()
            .and_then(Path::to_str)
            .unwrap_or("java");
        if kind.java && !runs(java, &["-version"]) {
            return Err(format!(
                "the {name} peer was skipped: it needs a Java runtime (11 or later) on PATH or in JAVA_HOME"
            ));
        }
        Ok(Peer {
            name,
            python: python.to_string(),
            script,
            flows: kind.flows,
        })
    }

    /// `DuckDB`, `Flink`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether the peer measures any of `flows`.
    pub fn measures_any(&self, flows: &[Flow]) -> bool {
        flows.iter().any(|f| self.flows.contains(f))
    }

    /// Runs the peer over `workload`'s commit files in `events` ([`Events::write`]) for each
    /// of `flows` it measures; the first `warmup` commits are bulk-loaded untimed
    /// (`--preload`) by a peer that times commits.
    pub fn measure(
        &self,
        workload: &Workload,
        events: &Events,
        flows: &[Flow],
        warmup: u64,
    ) -> anyhow::Result<Vec<Record>> {
        let mut records = Vec::new();
        for &flow in flows.iter().filter(|f| self.flows.contains(f)) {
            let figures = run(&self.python, &self.script, &events.dir(), flow, warmup)?;
            records.push(figures.record(workload, flow));
        }
        Ok(records)
    }
}

/// A workload's commit files, in a scratch directory removed on drop.
pub struct Events(Scratch);

impl Events {
    /// Writes `workload` as `scdflow generate` does: `SCRATCH/events/commit_NNNNNN.csv`.
    pub fn write(workload: &Workload) -> anyhow::Result<Events> {
        let scratch = Scratch::new()?;
        write_events(workload, &scratch.0.join(gen::EVENTS_DIR))?;
        Ok(Events(scratch))
    }

    fn dir(&self) -> PathBuf {
        self.0 .0.join(gen::EVENTS_DIR)
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

    /// A peer that measures throughput only (Flink) leaves the percentiles out: its record has
    /// no latencies, and the table shows dashes for them.
    #[test]
    fn figures_without_latencies_are_throughput_only() {
        let line =
            r#"{"peer":"flink","scd":1,"events":1000,"commits":10,"seconds":0.25,"parallelism":2}"#;
        let f = parse(line).unwrap();
        assert_eq!(f.p50_us, None);
        let r = f.record(&Workload::default(), Flow::Scd1);
        assert_eq!(r.latency, Summary::default());
        assert!((r.events_per_second() - 4000.0).abs() < 1e-6);
        let table = scdflow::bench::markdown_table(&[r]);
        let row = table.lines().last().unwrap();
        assert!(
            row.contains("| flink | 10 | 4000 | – | – | – | – | – |"),
            "{row}"
        );
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
        assert_eq!((f.scd, f.events, f.p999_us), (1, 3, Some(40.0)));
        let events = Events::write(&w).unwrap();
        for (kind, expected) in [
            (&DUCKDB, vec![Flow::Scd1, Flow::Scd2]),
            (&FLINK, vec![Flow::Scd1]),
        ] {
            let peer = Peer {
                name: kind.name,
                python: PYTHON.into(),
                script: script.clone(),
                flows: kind.flows,
            };
            assert!(peer.measures_any(&Flow::ALL));
            assert!(!peer.measures_any(&[Flow::Bitemporal, Flow::Snapshot]));
            let records = peer.measure(&w, &events, &Flow::ALL, 1).unwrap();
            let flows: Vec<_> = records.iter().map(|r| r.flow).collect();
            assert_eq!(flows, expected, "{}", kind.name);
        }
        let dir = events.dir();
        assert!(dir.join("commit_000003.csv").is_file());
        drop(events);
        assert!(!dir.exists(), "the scratch directory is removed");
    }
}

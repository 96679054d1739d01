//! A mutation fuzzer over what users hand scdflow: the bundled pipelines, their CSV and JSON
//! inputs, and a durable run's state and outputs. Each case mutates one of them (byte flips,
//! cut and doubled spans, SQL tokens, quotes, line ends, bytes that are not UTF-8, truncation)
//! and runs the binary on it, asserting what the issue on hardening asks of every bad input:
//!
//! - no panic, no abort, no hang (a watchdog kills a case after [`WATCHDOG`]);
//! - exit status 0, or 2 with exactly one `error: ` line, the last;
//! - on exit 2, the outputs of the earlier good run are untouched, byte for byte.
//!
//! The slice CI runs is bounded by time: `SCDFLOW_FUZZ_SECONDS` (default 40). A longer run, with
//! another seed: `SCDFLOW_FUZZ_SECONDS=3600 SCDFLOW_FUZZ_SEED=7 cargo test --release --test
//! integration fuzz -- --nocapture`. A failing case is kept under `target/fuzz-failures/` with
//! the command that reproduces it.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one case may run.
const WATCHDOG: Duration = Duration::from_secs(60);

/// What the SQL mutations insert: clause words, punctuation and shapes that stress the parser.
const SQL_TOKENS: &[&str] = &[
    ",",
    "(",
    ")",
    "'",
    "`",
    "\"",
    ";",
    "--",
    "/*",
    "*/",
    " AND ",
    " OR ",
    " + ",
    " NOT ",
    " NULL ",
    " KEYS ",
    " SEQUENCE BY ",
    " STORED AS SCD TYPE 3",
    " COLUMNS * EXCEPT ",
    " TRACK HISTORY ON ",
    " IGNORE NULL UPDATES ",
    " APPLY AS DELETE WHEN ",
    " WHERE ",
    "\u{0}",
    "\u{feff}",
    "../",
    "/etc/",
    "`a/b`",
    "`..`",
    " 99999999999999999999 ",
    "1e308",
    " CAST(",
    " AS BIGINT)",
    "\n",
    "\t",
    "read_files(",
    "format => 'json'",
    "schema => 'x INT'",
];

/// What the data mutations insert.
const DATA_TOKENS: &[&[u8]] = &[
    b",",
    b"\"",
    b"\"\"",
    b"\n",
    b"\r\n",
    b"\r",
    b"\xff",
    b"\xc3",
    b"\xef\xbb\xbf",
    b"{",
    b"}",
    b"[",
    b"null",
    b"NULL",
    b"-",
    b"1e400",
    b"99999999999999999999999",
    b"2025-13-45",
    b"\\",
    b"\0",
    b"true",
];

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_scdflow")
}

/// Every file under `dir` with its bytes.
fn files_of(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                files.insert(path.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    files
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in files_of(from) {
        let path = to.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// One mutation of `bytes`; `tokens` are what insertions pick from.
fn mutate(rng: &mut ChaCha8Rng, bytes: &mut Vec<u8>, tokens: &[&[u8]]) {
    let at = |rng: &mut ChaCha8Rng, len: usize| rng.random_range(0..=len);
    match rng.random_range(0..7) {
        0 if !bytes.is_empty() => {
            let i = rng.random_range(0..bytes.len());
            bytes[i] = rng.random();
        }
        1 if !bytes.is_empty() => {
            let from = rng.random_range(0..bytes.len());
            let to = (from + rng.random_range(1..40)).min(bytes.len());
            bytes.drain(from..to);
        }
        2 if !bytes.is_empty() => {
            let from = rng.random_range(0..bytes.len());
            let to = (from + rng.random_range(1..200)).min(bytes.len());
            let span = bytes[from..to].to_vec();
            let i = at(rng, bytes.len());
            bytes.splice(i..i, span);
        }
        3 => {
            let cut = at(rng, bytes.len());
            bytes.truncate(cut);
        }
        4 => {
            let i = at(rng, bytes.len());
            let long = vec![b'9'; rng.random_range(1..5000)];
            bytes.splice(i..i, long);
        }
        _ => {
            let token = tokens[rng.random_range(0..tokens.len())];
            let i = at(rng, bytes.len());
            bytes.splice(i..i, token.iter().copied());
        }
    }
}

/// The outcome of one run: exit code (`None`: killed by a signal), stderr.
fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(binary())
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + WATCHDOG;
    loop {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            return (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return (None, format!("hung: killed after {WATCHDOG:?}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Why an outcome breaks the contract, if it does.
fn broken(code: Option<i32>, err: &str) -> Option<String> {
    let errors = err.lines().filter(|l| l.starts_with("error: ")).count();
    let crashed = ["panicked", "stack backtrace", "RUST_BACKTRACE"]
        .iter()
        .any(|s| err.contains(s));
    match code {
        _ if crashed => Some("a panic".into()),
        Some(0) => None,
        Some(2) if errors == 1 && err.lines().last().is_some_and(|l| l.starts_with("error: ")) => {
            None
        }
        Some(2) => Some(format!("{errors} error lines, or not last")),
        Some(c) => Some(format!("exit status {c}")),
        None => Some("killed by a signal or the watchdog".into()),
    }
}

/// What one case does.
#[derive(Clone, Copy, Debug)]
enum Target {
    Sql,
    Data,
    State,
}

struct Fuzzer {
    rng: ChaCha8Rng,
    /// Cases by what they mutated and how the run ended (`0`, `2`), for the summary.
    outcomes: BTreeMap<(String, i32), u64>,
    seed: u64,
    /// The bundled pipelines with their data, and each one's good outputs.
    base: tempfile::TempDir,
    pipelines: Vec<String>,
    data: Vec<PathBuf>,
}

impl Fuzzer {
    fn new(seed: u64) -> Fuzzer {
        let base = tempfile::tempdir().unwrap();
        let dataflows = Path::new(env!("CARGO_MANIFEST_DIR")).join("dataflows");
        copy_tree(&dataflows, base.path());
        let mut pipelines: Vec<String> = std::fs::read_dir(base.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        pipelines.sort();
        let data = files_of(&base.path().join("data")).into_keys().collect();
        for p in &pipelines {
            let out = format!("out-{p}");
            let (code, err) = run(base.path(), &["run", p, "--out", &out]);
            assert_eq!(code, Some(0), "{p}: {err}");
        }
        Fuzzer {
            rng: ChaCha8Rng::seed_from_u64(seed),
            outcomes: BTreeMap::new(),
            seed,
            base,
            pipelines,
            data,
        }
    }

    /// Runs case `n`; `Err` keeps its directory and says why.
    fn case(&mut self, n: u64) -> Result<(), String> {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        copy_tree(self.base.path(), d);
        let pipeline = self.pipelines[self.rng.random_range(0..self.pipelines.len())].clone();
        let out = format!("out-{pipeline}");
        let target = match self.rng.random_range(0..10) {
            0..=3 => Target::Sql,
            4..=7 => Target::Data,
            _ => Target::State,
        };
        let mut args: Vec<String> = ["run", pipeline.as_str(), "--out", out.as_str()]
            .map(String::from)
            .to_vec();
        if matches!(target, Target::State) {
            args.extend(["--state".into(), "st".into()]);
            let first: Vec<&str> = args.iter().map(String::as_str).collect();
            std::fs::remove_dir_all(d.join(&out)).unwrap();
            let (code, err) = run(d, &first);
            if code != Some(0) {
                return Err(format!("the good durable run failed: {err}"));
            }
        }
        let what = match target {
            Target::Sql => {
                self.mutate_file(&d.join(&pipeline), SQL_TOKENS.iter().map(|t| t.as_bytes()))
            }
            Target::Data => {
                let file = self.data[self.rng.random_range(0..self.data.len())].clone();
                self.mutate_file(&d.join("data").join(file), DATA_TOKENS.iter().copied())
            }
            Target::State => {
                let mut files: Vec<PathBuf> = files_of(&d.join("st"))
                    .into_keys()
                    .map(|p| Path::new("st").join(p))
                    .chain(
                        files_of(&d.join(&out))
                            .into_keys()
                            .map(|p| Path::new(&out).join(p)),
                    )
                    .filter(|p| !p.ends_with("LOCK"))
                    .collect();
                files.sort();
                let file = files[self.rng.random_range(0..files.len())].clone();
                if self.rng.random_bool(0.15) {
                    std::fs::remove_file(d.join(&file)).unwrap();
                    format!("removed {}", file.display())
                } else {
                    self.mutate_file(&d.join(file), DATA_TOKENS.iter().copied())
                }
            }
        };
        let before = files_of(&d.join(&out));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, err) = run(d, &args);
        let ended = (format!("{target:?}"), code.unwrap_or(-1));
        *self.outcomes.entry(ended).or_default() += 1;
        let mut why = broken(code, &err);
        if why.is_none() && code == Some(2) && files_of(&d.join(&out)) != before {
            why = Some("a failed run changed the earlier outputs".into());
        }
        let Some(why) = why else {
            return Ok(());
        };
        let keep = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/fuzz-failures")
            .join(format!("seed{}-case{n}", self.seed));
        let _ = std::fs::remove_dir_all(&keep);
        copy_tree(d, &keep);
        Err(format!(
            "case {n} ({target:?}: {what}): {why}\nrepeat: cd {} && {} {}\n{err}",
            keep.display(),
            binary(),
            args.join(" ")
        ))
    }

    /// Mutates `path` one to three times; says what it did.
    fn mutate_file<'t>(&mut self, path: &Path, tokens: impl Iterator<Item = &'t [u8]>) -> String {
        let tokens: Vec<&[u8]> = tokens.collect();
        let mut bytes = std::fs::read(path).unwrap();
        for _ in 0..self.rng.random_range(1..4) {
            mutate(&mut self.rng, &mut bytes, &tokens);
        }
        std::fs::write(path, &bytes).unwrap();
        format!("mutated {}", path.file_name().unwrap().to_string_lossy())
    }
}

#[test]
fn mutated_pipelines_inputs_and_states_fail_cleanly() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let seconds = env("SCDFLOW_FUZZ_SECONDS", 40);
    let seed = env("SCDFLOW_FUZZ_SEED", 13);
    let mut fuzzer = Fuzzer::new(seed);
    let started = Instant::now();
    let mut failures = Vec::new();
    let mut cases = 0;
    while started.elapsed() < Duration::from_secs(seconds) && failures.len() < 5 {
        if let Err(why) = fuzzer.case(cases) {
            failures.push(why);
        }
        cases += 1;
    }
    eprintln!(
        "fuzz: seed {seed}, {cases} cases in {:?}; by (mutated, exit status): {:?}",
        started.elapsed(),
        fuzzer.outcomes
    );
    assert!(cases >= 20, "only {cases} cases ran");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

//! Durable runs (`scdflow run PIPELINE --state DIR`): each run processes only the input that is
//! new since the last one, continues the commit numbering and the change feeds, and commits
//! atomically, so that a crash at any instant loses nothing committed and duplicates nothing.
//!
//! One run, in order:
//! 1. open and lock the state directory; check the pipeline against the state's fingerprint;
//!    cut appended outputs back to their committed lengths (what a crashed run left);
//! 2. find the new input ([`crate::driver`]'s `new_input`) and read it into commits
//!    `base + 1, ...`;
//! 3. execute: every operator restores its state from the last checkpoint (the restored tables
//!    reappear at version `base`), applies the new commits, and saves its state into a staged
//!    checkpoint;
//! 4. append this run's change feeds, set-aside rows and metrics to their files, synced;
//! 5. commit: the staged checkpoint and a new manifest (new input offsets, appended lengths)
//!    replace the old ones atomically;
//! 6. rewrite the target tables and `metrics.json`, which are functions of the committed state.
//!
//! A crash before 5 leaves the previous commit: the next run cuts the appended files back and
//! reads the same input again. A crash after 5 leaves the new commit, and the next run rewrites
//! the tables. Restart cost is loading the checkpoint, proportional to the state, never to the
//! input history. An appended file the manifest does not know (a new state, or after
//! `--full-refresh`) starts empty: what it held came from another run.
//!
//! [`Session`] keeps the directory open (and locked) across runs; [`follow`] steps it whenever
//! new input appears (`scdflow run --follow`). Each step restores the operators from the last
//! checkpoint and saves them again, so a step with new input costs O(state) besides its commits.
//!
//! Limits: one process (`--processes 1`); output directory and format are fixed by the first
//! run; the state directory is locked while a run uses it.

use crate::driver::{self, Evaluation, Options};
use crate::io::{self, OutputFormat};
use crate::plan::Pipeline;
use crate::runtime::{Persistence, Progress};
use crate::state::store::METRICS_LOG;
use crate::state::{appended, Appended, Fingerprint, Manifest, StateDir};
use crate::{changefeed, output, Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Where a durable run keeps its state and writes its outputs.
#[derive(Clone, Debug)]
pub struct Durability {
    /// The state directory.
    pub state: PathBuf,
    /// The output directory.
    pub out: PathBuf,
    /// The output format.
    pub format: OutputFormat,
    /// Forget every earlier run first: reprocess all input (and rerun ONCE flows).
    pub full_refresh: bool,
}

/// What a durable run did.
#[derive(Debug)]
pub struct DurableRun {
    /// The run's results: whole tables, this run's change feeds and metrics.
    pub evaluation: Evaluation,
    /// Commits of earlier runs.
    pub base: u64,
    /// Commits this run added.
    pub commits: u64,
    /// Finding the new input.
    pub prepare_time: Duration,
    /// Executing (restore, new commits, save).
    pub execute_time: Duration,
    /// Bytes of the committed checkpoint.
    pub state_bytes: u64,
    /// The files written.
    pub written: Vec<PathBuf>,
}

/// One line of the metrics log.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum LogLine {
    Flow {
        flow: String,
        metrics: driver::FlowCommitMetrics,
    },
    Table {
        table: String,
        metrics: driver::TableCommitMetrics,
    },
}

/// Runs `pipeline` durably once; see the module docs.
pub fn run(
    pipeline: &Pipeline,
    options: &Options,
    durability: &Durability,
    progress: Option<Progress>,
) -> Result<DurableRun> {
    Session::open(pipeline, options, durability)?.step(progress)
}

/// Input a [`Session`] has not consumed yet, as the commits it will make.
pub struct NewInput(Vec<(driver::CommitSource, driver::new_input::Consumed)>);

impl NewInput {
    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A state directory opened (and locked) for a pipeline: each [`Session::step`] is one durable
/// run, so a long-running process (`--follow`) opens it once and steps whenever input arrives.
pub struct Session<'a> {
    pipeline: &'a Pipeline,
    options: &'a Options,
    format: OutputFormat,
    out: PathBuf,
    dir: StateDir,
    fingerprint: Fingerprint,
    /// The last committed manifest (the directory's, or the one this session committed).
    manifest: Manifest,
    /// Whether the manifest exists on disk (false before the first commit of a new state).
    stored: bool,
}

impl<'a> Session<'a> {
    /// Opens the state directory: checks the pipeline against it and cuts appended outputs back
    /// to their committed lengths.
    pub fn open(
        pipeline: &'a Pipeline,
        options: &'a Options,
        durability: &Durability,
    ) -> Result<Self> {
        if options.cluster.is_some() {
            return Err(Error::new(
                ErrorKind::Validation,
                "--state runs in a single process (--processes 1)",
            ));
        }
        let (dir, manifest) = StateDir::open(&durability.state, durability.full_refresh)?;
        let out =
            std::path::absolute(&durability.out).map_err(|e| Error::read(&durability.out, &e))?;
        let ext = durability.format.extension().to_string();
        let fingerprint = Fingerprint::of(pipeline);
        if let Some(m) = &manifest {
            m.fingerprint
                .check(&fingerprint)
                .map_err(|e| e.in_file(dir.path()))?;
            if m.out != out || m.format != ext {
                return Err(Error::new(
                    ErrorKind::State,
                    format!(
                        "the state was written with --out {} --format {}; its change feeds \
                         continue there: pass the same, or start over with --full-refresh",
                        m.out.display(),
                        m.format
                    ),
                )
                .in_file(dir.path()));
            }
            appended::recover(&m.appended)?;
        }
        let stored = manifest.is_some();
        let manifest = manifest.unwrap_or_else(|| Manifest {
            version: 0,
            last_timestamp: i64::MIN,
            fingerprint: fingerprint.clone(),
            out: out.clone(),
            format: ext,
            workers: 1,
            checkpoint: None,
            inputs: Vec::new(),
            snapshot_versions: Vec::new(),
            appended: Vec::new(),
            live_tombstones: Vec::new(),
        });
        Ok(Session {
            pipeline,
            options,
            format: durability.format,
            out,
            dir,
            fingerprint,
            manifest,
            stored,
        })
    }

    /// The input that the last commit has not consumed.
    pub fn new_input(&self) -> Result<NewInput> {
        let found = driver::new_input::find(self.pipeline, self.stored.then_some(&self.manifest))?;
        Ok(NewInput(found))
    }

    /// One durable run: the new input (if any) as commits, then the outputs; see the module docs.
    pub fn step(&mut self, progress: Option<Progress>) -> Result<DurableRun> {
        let started = Instant::now();
        let new = self.new_input()?;
        self.step_on(new, started, progress)
    }

    /// [`Session::step`] on input found since `started`.
    fn step_on(
        &mut self,
        NewInput(new): NewInput,
        started: Instant,
        progress: Option<Progress>,
    ) -> Result<DurableRun> {
        let (pipeline, options) = (self.pipeline, self.options);
        let mut next = self.manifest.clone();
        let base = next.version;
        let commits = new.len() as u64;
        let persistence = Persistence {
            base,
            restore: next
                .checkpoint
                .as_ref()
                .map(|c| (self.dir.checkpoint(c), next.workers)),
            save: if commits > 0 {
                Some(self.dir.stage(base + commits)?)
            } else {
                None
            },
        };
        let staged = persistence.save.clone();
        let prepare_time = started.elapsed();
        let (sources, consumed): (Vec<_>, Vec<_>) = new.into_iter().unzip();
        let live_tombstones = pipeline
            .targets
            .iter()
            .map(|t| {
                next.live_tombstones
                    .iter()
                    .find(|(name, _)| *name == t.name)
                    .map_or(0, |(_, n)| *n)
            })
            .collect();
        let resume = driver::Resume {
            last_timestamp: self.stored.then_some(next.last_timestamp),
            persistence,
            live_tombstones,
        };
        let started = Instant::now();
        let (evaluation, ends) = driver::run(pipeline, options, &sources, resume, progress)?;
        let execute_time = started.elapsed();

        let (out, ext) = (&self.out, self.format.extension());
        let mut written = Vec::new();
        if commits > 0 {
            for (c, end) in consumed.iter().zip(&ends) {
                driver::new_input::record(&mut next, c, *end)?;
            }
            next.version = base + commits;
            next.last_timestamp = evaluation
                .commit_timestamps
                .last()
                .copied()
                .unwrap_or(next.last_timestamp);
            next.workers = options.workers.max(1);
            next.fingerprint = self.fingerprint.clone();
            next.live_tombstones = pipeline
                .targets
                .iter()
                .zip(&evaluation.live_tombstones)
                .map(|(t, n)| (t.name.clone(), *n))
                .collect();
            for (t, target) in pipeline.targets.iter().enumerate() {
                let path = out.join(format!("{}.changes.{ext}", target.name));
                let header = committed(&next, &path) == 0;
                let rows = output::feed(&evaluation, t);
                let text = feed_text(self.format, &changefeed::schema(target), &rows, header)?;
                append(&mut next, &path, &text)?;
                written.push(path);
            }
            for (owner, records) in quarantined(&evaluation) {
                let path = out.join("_quarantine").join(format!("{owner}.jsonl"));
                let text = io::render_quarantine(&records);
                append(&mut next, &path, &text)?;
                written.push(path);
            }
            let log = self.dir.path().join(METRICS_LOG);
            let text = metrics_lines(pipeline, &evaluation)?;
            append(&mut next, &log, &text)?;
        }
        // A run with nothing new changes nothing on disk but the rewritten tables.
        if commits > 0 || !self.stored {
            self.dir.commit(&mut next, staged)?;
        }
        self.manifest = next;
        self.stored = true;
        for t in 0..pipeline.targets.len() {
            written.push(output::write_target(
                pipeline,
                &evaluation,
                t,
                out,
                self.format,
            )?);
        }
        written.push(write_metrics(
            pipeline,
            &self.dir.path().join(METRICS_LOG),
            out,
        )?);
        let state_bytes = match &self.manifest.checkpoint {
            Some(c) => dir_size(&self.dir.checkpoint(c))?,
            None => 0,
        };
        Ok(DurableRun {
            evaluation,
            base,
            commits,
            prepare_time,
            execute_time,
            state_bytes,
            written,
        })
    }
}

/// Keeps `session` up to date until `stop` is set (a signal handler sets it; the step under way
/// finishes and commits first): steps whenever new input appears, looking every `poll`, and
/// hands each run to `on_run`.
pub fn follow(
    session: &mut Session,
    poll: Duration,
    stop: &AtomicBool,
    mut on_run: impl FnMut(&DurableRun) -> Result<()>,
) -> Result<()> {
    const SLICE: Duration = Duration::from_millis(20);
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        let new = session.new_input()?;
        if !new.is_empty() {
            let run = session.step_on(new, started, None)?;
            on_run(&run)?;
            continue;
        }
        let idle = Instant::now();
        while idle.elapsed() < poll && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(SLICE.min(poll));
        }
    }
    Ok(())
}

/// Appends `text` to `path` and records its new length in `manifest`. A file the manifest does
/// not know yet (a new state, or after --full-refresh) starts empty: what it held came from
/// another run.
fn append(manifest: &mut Manifest, path: &Path, text: &str) -> Result<()> {
    if !manifest.appended.iter().any(|a| a.path == path) {
        appended::recover(&[Appended {
            path: path.to_path_buf(),
            len: 0,
        }])?;
    }
    let len = appended::append(path, text.as_bytes())?;
    set_committed(manifest, path, len);
    Ok(())
}

fn committed(manifest: &Manifest, path: &Path) -> u64 {
    manifest
        .appended
        .iter()
        .find(|a| a.path == path)
        .map_or(0, |a| a.len)
}

fn set_committed(manifest: &mut Manifest, path: &Path, len: u64) {
    match manifest.appended.iter_mut().find(|a| a.path == path) {
        Some(a) => a.len = len,
        None => manifest.appended.push(Appended {
            path: path.to_path_buf(),
            len,
        }),
    }
}

/// Change-feed rows as appended text: CSV gets its header only at the start of the file.
fn feed_text(
    format: OutputFormat,
    schema: &crate::value::Schema,
    rows: &[crate::value::Row],
    header: bool,
) -> Result<String> {
    let text = io::render_rows(format, schema, rows)?;
    if format == OutputFormat::Csv && !header {
        return Ok(text
            .split_once('\n')
            .map_or(String::new(), |(_, rest)| rest.to_string()));
    }
    Ok(text)
}

/// This run's set-aside rows, by owner.
fn quarantined(evaluation: &Evaluation) -> Vec<(String, Vec<(PathBuf, io::RowError)>)> {
    let mut by_owner: Vec<(String, Vec<(PathBuf, io::RowError)>)> = Vec::new();
    for q in &evaluation.quarantined {
        let record = (q.file.clone(), q.error.clone());
        match by_owner.iter_mut().find(|(o, _)| *o == q.owner) {
            Some((_, records)) => records.push(record),
            None => by_owner.push((q.owner.clone(), vec![record])),
        }
    }
    by_owner
}

/// This run's metrics as lines of the metrics log.
fn metrics_lines(pipeline: &Pipeline, evaluation: &Evaluation) -> Result<String> {
    let mut text = String::new();
    let mut push = |line: &LogLine| -> Result<()> {
        let json = serde_json::to_string(line)
            .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
        text.push_str(&json);
        text.push('\n');
        Ok(())
    };
    for (flow, entries) in evaluation.flows.iter().zip(&evaluation.metrics) {
        for m in entries {
            push(&LogLine::Flow {
                flow: flow.name.clone(),
                metrics: m.clone(),
            })?;
        }
    }
    for (table, entries) in pipeline.tables.iter().zip(&evaluation.table_metrics) {
        for m in entries {
            push(&LogLine::Table {
                table: table.name.clone(),
                metrics: m.clone(),
            })?;
        }
    }
    Ok(text)
}

/// `OUT/metrics.json` from the whole metrics log.
fn write_metrics(pipeline: &Pipeline, log: &Path, out: &Path) -> Result<PathBuf> {
    let flows = driver::flows::all(pipeline);
    let mut metrics = vec![Vec::new(); flows.len()];
    let mut table_metrics = vec![Vec::new(); pipeline.tables.len()];
    let text = match std::fs::read_to_string(log) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::read(log, &e)),
    };
    for (i, line) in text.lines().enumerate() {
        let parsed: LogLine = serde_json::from_str(line).map_err(|e| {
            Error::new(ErrorKind::State, format!("metrics log damaged: {e}"))
                .at_line(i as u64 + 1)
                .in_file(log)
        })?;
        match parsed {
            LogLine::Flow { flow, metrics: m } => {
                if let Some(f) = flows.iter().position(|f| f.name == flow) {
                    metrics[f].push(m);
                }
            }
            LogLine::Table { table, metrics: m } => {
                if let Some(t) = pipeline.tables.iter().position(|t| t.name == table) {
                    table_metrics[t].push(m);
                }
            }
        }
    }
    output::write_metrics(pipeline, &metrics, &table_metrics, out)
}

fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| Error::read(dir, &e))? {
        let entry = entry.map_err(|e| Error::read(dir, &e))?;
        total += entry.metadata().map_err(|e| Error::read(dir, &e))?.len();
    }
    Ok(total)
}

#[cfg(test)]
mod tests;

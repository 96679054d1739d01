//! Durable runs (`scdflow run PIPELINE --state DIR`): each run processes only the input that is
//! new since the last one, continues the commit numbering and the change feeds, and commits
//! atomically, so that a crash at any instant loses nothing committed and duplicates nothing.
//!
//! A [`Session`] opens and locks the state directory, checks the pipeline against the state's
//! fingerprint and cuts appended outputs back to their committed lengths (what a crashed run
//! left). A new state's empty manifest is written before anything else, so a state directory
//! without one is a lost (or mistyped) state: opening it is refused, unless `--full-refresh`,
//! when it holds checkpoints or `--out` holds change feeds, which starting over would rewrite
//! from version 1. Its first step starts the engine ([`Driver`]), restoring every operator's state from
//! the last checkpoint; the engine then stays up, with its state in memory, for every later step
//! of the session (`--follow`), so a step costs its commits, not a restore. One step, in order:
//! 1. find the new input (the driver's `new_input`) and apply it as commits `base + 1, ...`;
//! 2. append the step's change feeds, set-aside rows and metrics to their files, synced (a
//!    feed as its commits come, once it holds [`FEED_BUFFER`] bytes, so a long step never
//!    holds its whole feed; the rest when the commits are applied);
//! 3. save what every operator's state changed since the last save into a staged delta — or,
//!    when the deltas have grown to half the base (or [`MAX_DELTAS`]), or the worker count
//!    changed, the whole state into a staged base checkpoint (compaction). A step publishing
//!    Delta tables prepares each commit's versions on threads of their own ([`preparing`]:
//!    its streaming tables' from the moment the commit is read, its targets' once the engine
//!    has applied it) while the engine goes on, and its workers save as soon as they have
//!    applied the last commit ([`Driver::apply_and_save`]), while its versions are prepared.
//!    A step whose commits all read streams puts the versions in the tables' logs as soon as
//!    they are prepared, before 4 ([`catch_up`]); it appends its set-aside rows and metrics
//!    (2) once they are written. A step of change-feed files saves after syncing them, which
//!    ends its commits' latency, so the save takes no core from their rendering;
//! 4. commit: the staged delta or base and a new manifest (new input offsets, appended
//!    lengths) replace the old ones atomically (a new base removes the old one and its deltas);
//! 5. rewrite the target tables (read from the engine's states) and `metrics.json` — or, for
//!    tables published as Delta tables (`published`: the targets, and the streaming tables
//!    each commit appends to), put the versions the step prepared and its manifest names into
//!    the tables' logs (unless 3 did), then start the upkeep they are due (checkpoints,
//!    vacuums) on a thread of its own, while the tables merge ahead of the next version
//!    ([`preparing`]).
//!
//! A crash before 4 leaves the previous commit: the next run cuts the appended files back and
//! reads the same input again — for the commits published tables hold already, exactly the
//! input they read, and their versions are not written again ([`catch_up`]). A crash after 4
//! leaves the new commit, and the next run rewrites the tables. A step that fails (or whose
//! manifest does not commit) drops the engine (its state went past the last commit); the next
//! step restores it from the checkpoint. An appended file the manifest does not know (a
//! new state, or after `--full-refresh`) starts empty: what it held came from another run.
//!
//! Other writers' edits of published targets (DML through `scdflow sql`) are taken into the
//! engine's state at the start of each step, before its commits ([`table_edits`]); a step holds
//! the tables' locks, so an edit lands between steps, never inside one.
//!
//! Limits: one process (`--processes 1`); output directory and format are fixed by the first
//! run; the state directory is locked while a run uses it; every step rewrites every target
//! file (O(table); a published Delta table gets only the step's versions); a restart restores
//! the base and every delta (O(state + deltas)) and reads published tables whole once.

use crate::driver::new_input::Consumed;
use crate::driver::{
    self, CommitLatency, CommitOutput, Driver, Options, Quarantined, Resume, Sink,
};
use crate::engine::changefeed;
use crate::io::{self, OutputFormat};
use crate::output::{self, Layout};
use crate::persist::catch_up::{Ahead, CatchUp, CommitInput};
use crate::persist::store::Staged;
use crate::persist::store::METRICS_LOG;
use crate::persist::table_edits::{self, Absorbed};
use crate::persist::{
    appended, published, Appended, Checks, Fingerprint, Manifest, Publishing, StateDir,
};
use crate::plan::Pipeline;
use crate::runtime::{Checkpoint, Progress};
use crate::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
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
    /// Per published table ([`Pipeline::published`]: the targets, then the streaming tables),
    /// the Delta table it is published as (see `published`); empty: the targets are files in
    /// `out`.
    pub published: Vec<PathBuf>,
}

/// What a durable run did.
#[derive(Debug)]
pub struct DurableRun {
    /// Every target's table file and its rows.
    pub tables: Vec<(PathBuf, usize)>,
    /// This run's rows set aside.
    pub quarantined: Vec<Quarantined>,
    /// This run's problems that did not stop it.
    pub warnings: Vec<String>,
    /// Events this run handed to the engine.
    pub events: u64,
    /// Commits of earlier runs.
    pub base: u64,
    /// Commits this run added.
    pub commits: u64,
    /// Finding the new input.
    pub prepare_time: Duration,
    /// Executing the new commits and saving; a restore when the engine starts runs on its
    /// workers meanwhile, and what waits for them next (the commits, or reading the tables)
    /// absorbs it.
    pub execute_time: Duration,
    /// Bytes of the committed state: the base checkpoint and its deltas.
    pub state_bytes: u64,
    /// Bytes this run's save wrote (0 without new input), and whether they are a delta (the
    /// keys changed since the last save) rather than a whole base checkpoint.
    pub saved: (u64, bool),
    /// The files written.
    pub written: Vec<PathBuf>,
    /// Per commit of this run: its latency (input complete to change feeds synced).
    pub latencies: Vec<CommitLatency>,
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
    Latency(CommitLatency),
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
pub struct NewInput(Vec<(driver::CommitSource, Consumed)>);

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
    /// The engine, from the first step on (restored from the checkpoint when it started).
    driver: Option<Driver<'a>>,
    /// Known input files verified unchanged, so that a poll does not read them again.
    checked: std::cell::RefCell<driver::new_input::Checked>,
    /// Per published table, its Delta table's directory (absolute); empty: files in `out`.
    published: Vec<PathBuf>,
    /// The published tables, from the first step on (opened again after a failed step), with
    /// their merges and upkeep still running after the last step.
    publisher: Option<Publisher>,
    /// Other writers' edits of the tables that the engine holds.
    absorbed: Absorbed,
    /// The commits the published tables hold and the state does not, until it holds them.
    catch_up: Option<CatchUp>,
    /// The lock on `--out` ([`output::lock`]), held as long as the session.
    _out_lock: std::fs::File,
}

impl<'a> Session<'a> {
    /// Opens the state directory: checks the pipeline against it and cuts appended outputs back
    /// to their committed lengths.
    pub fn open(
        pipeline: &'a Pipeline,
        options: &'a Options,
        durability: &Durability,
    ) -> Result<Self> {
        Self::open_for(pipeline, options, durability, false)
    }

    /// [`Session::open`]; with `rewinding`, published tables may hold commits after the
    /// state's last (see [`Session::rewind`]).
    fn open_for(
        pipeline: &'a Pipeline,
        options: &'a Options,
        durability: &Durability,
        rewinding: bool,
    ) -> Result<Self> {
        if options.cluster.is_some() {
            return Err(Error::new(
                ErrorKind::Validation,
                "--state runs in a single process (--processes 1)",
            ));
        }
        output::refuse_input_folder(pipeline, &durability.out, "--out")?;
        output::refuse_input_folder(pipeline, &durability.state, "--state")?;
        let out_lock = output::lock(&durability.out, "")?;
        // Absolute, so that the state works from any working directory.
        let state = crate::io::normal_path(&durability.state)?;
        let (dir, mut manifest) = StateDir::open(&state, durability.full_refresh)?;
        if let Some(m) = manifest.as_mut() {
            absolute_paths(m, &state)?;
        }
        // The empty manifest of a state that never committed, if that is what there is.
        let fresh = manifest
            .as_ref()
            .filter(|m| m.version == 0 && m.checkpoint.is_none())
            .cloned();
        let mut out =
            std::path::absolute(&durability.out).map_err(|e| Error::read(&durability.out, &e))?;
        let ext = durability.format.extension().to_string();
        let fingerprint = Fingerprint::of(pipeline);
        let published = (durability.published.iter())
            .map(|d| std::path::absolute(d).map_err(|e| Error::read(d, &e)))
            .collect::<Result<Vec<_>>>()?;
        // A state that never committed (its first run failed or crashed) binds nothing yet: it
        // starts afresh, with this pipeline and --out; unless its first step published.
        let manifest = match manifest {
            Some(m) if m.version > 0 || m.checkpoint.is_some() => Some(m),
            Some(m) if published::holds_commits(pipeline, &m, &published)? => Some(m),
            _ => None,
        };
        let mut catch_up = None;
        if let Some(m) = &manifest {
            m.fingerprint
                .check(&fingerprint)
                .map_err(|e| e.in_file(dir.path()))?;
            if !same_dir(&m.out, &out) || m.format != ext {
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
            // The appended files are known by the spelling the state was written with.
            out = m.out.clone();
            appended::recover(&m.appended, &m.checks.appended)?;
            let held = published::resume(pipeline, m, &published, rewinding)?;
            if !rewinding {
                catch_up = CatchUp::of(pipeline, m, &published, held)?;
            }
        } else if !(durability.full_refresh
            || fresh.as_ref().is_some_and(|f| same_dir(&f.out, &out)))
        {
            refuse_foreign_feeds(pipeline, &Layout::new(&out, durability.format), dir.path())?;
        }
        if manifest.is_none() {
            published::start(pipeline, &published, durability.full_refresh)?;
        }
        let manifest = match manifest {
            Some(m) => m,
            None => {
                let mut m = Manifest {
                    version: 0,
                    last_timestamp: i64::MIN,
                    fingerprint: fingerprint.clone(),
                    out: out.clone(),
                    format: ext,
                    workers: 1,
                    checkpoint: None,
                    deltas: Vec::new(),
                    inputs: Vec::new(),
                    snapshot_versions: Vec::new(),
                    appended: Vec::new(),
                    live_tombstones: Vec::new(),
                    checks: Default::default(),
                    publishing: Publishing {
                        tables: published.clone(),
                        // A fresh state's name stays: the tables may hold its first step.
                        id: (fresh.map(|f| f.publishing.id))
                            .filter(|id| !id.is_empty() && !durability.full_refresh)
                            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
                        prepared: Vec::new(),
                    },
                    rewound: None,
                };
                // A new state's empty manifest goes to disk before any output: from now on a
                // state directory without a manifest is one whose manifest was lost, never one
                // whose first run crashed (see `refuse_foreign_feeds`).
                dir.commit(&mut m, None)?;
                m
            }
        };
        Ok(Session {
            pipeline,
            options,
            format: durability.format,
            out,
            dir,
            fingerprint,
            manifest,
            driver: None,
            checked: Default::default(),
            published,
            publisher: None,
            absorbed: Absorbed::default(),
            catch_up,
            _out_lock: out_lock,
        })
    }

    /// The input that the last commit has not consumed.
    pub fn new_input(&self) -> Result<NewInput> {
        let manifest = Some(&self.manifest);
        let found =
            driver::new_input::find(self.pipeline, manifest, &mut self.checked.borrow_mut())?;
        Ok(NewInput(found))
    }

    /// A watch on the directories the pipeline's new input comes from, which wakes a follower
    /// ([`super::follow`]) when they change.
    pub fn watch_input(&self) -> io::watch::DirWatch {
        io::watch::DirWatch::new(driver::new_input::watched_dirs(self.pipeline))
    }

    /// One durable run: the new input (if any) as commits, then the outputs; see the module docs.
    pub fn step(&mut self, progress: Option<Progress>) -> Result<DurableRun> {
        let started = Instant::now();
        let new = self.new_input()?;
        self.step_on(new, started, progress, true)
    }

    /// [`Session::step`] on input found since `started`; the tables and `metrics.json` are
    /// rewritten only with `write_tables` ([`Session::write_tables`] does it later).
    pub(super) fn step_on(
        &mut self,
        NewInput(new): NewInput,
        started: Instant,
        progress: Option<Progress>,
        write_tables: bool,
    ) -> Result<DurableRun> {
        let prepare_time = started.elapsed();
        let started = Instant::now();
        let base = self.manifest.version;
        // Other writers' edits (DML) wait while a step reads, writes and publishes the tables.
        let _locks = (self.published.iter())
            .map(|dir| output::lock(dir, ""))
            .collect::<Result<Vec<_>>>()?;
        let result = self.apply(new, progress);
        if result.is_err() {
            // The engine's state may have gone past the last commit: the next step restores.
            self.driver = None;
        }
        let (mut next, staged, mut appender) = result?;
        let execute_time = started.elapsed();
        let commits = next.version - base;
        let saved = match &staged {
            Some(s) => (dir_size(&s.dir)?, s.delta),
            None => (0, false),
        };
        // A run with nothing new changes nothing on disk but the rewritten tables.
        if commits > 0 {
            if let Err(e) = self.dir.commit(&mut next, staged) {
                self.driver = None;
                return Err(e);
            }
            self.manifest = next;
            if (self.catch_up.as_ref()).is_some_and(|c| c.last() <= self.manifest.version) {
                self.catch_up = None;
            }
            // The versions the manifest names go into the tables' logs only now; if that
            // fails, the next step opens the tables again and completes them first.
            (appender.publisher).publish(&self.manifest.publishing.prepared)?;
            self.absorbed.published(&self.manifest.publishing.prepared);
        }
        if !self.published.is_empty() {
            self.publisher = Some(std::mem::take(&mut appender.publisher));
        }
        let mut written = std::mem::take(&mut appender.written);
        let tables = match write_tables {
            true => self.write_tables()?,
            false => Vec::new(),
        };
        written.extend(tables.iter().map(|(path, _)| path.clone()));
        let (base_bytes, delta_bytes) = self.checkpoint_bytes()?;
        Ok(DurableRun {
            tables,
            quarantined: appender.quarantined,
            warnings: appender.warnings,
            events: appender.events,
            base,
            commits,
            prepare_time,
            execute_time,
            state_bytes: base_bytes + delta_bytes,
            saved,
            written,
            latencies: std::mem::take(&mut appender.latencies),
        })
    }

    /// Starts the published tables' merges ahead of their next versions where none has
    /// started since they were opened (see [`preparing`]); [`follow`] calls this while it
    /// waits for input.
    pub fn merge_ahead(&mut self) -> Result<()> {
        match &mut self.publisher {
            Some(publisher) => publisher.merge_ahead(),
            None => Ok(()),
        }
    }

    /// Rewrites every target's table (read from the engine's states) and `metrics.json` (from
    /// the metrics log) after the last step; returns the tables' files and rows, then
    /// `metrics.json` with its row count 0.
    pub fn write_tables(&mut self) -> Result<Vec<(PathBuf, usize)>> {
        let Some(driver) = self.driver.as_mut() else {
            return Ok(Vec::new());
        };
        let log = self.dir.path().join(METRICS_LOG);
        if let Some(publisher) = &mut self.publisher {
            let rows = publisher.rows()?;
            let mut files = (self.published.iter().cloned())
                .zip(rows)
                .collect::<Vec<_>>();
            files.push((write_metrics(self.pipeline, &log, &self.out)?, 0));
            return Ok(files);
        }
        let tables = driver.rendered_tables(self.format, &self.out)?;
        let layout = Layout::new(&self.out, self.format);
        let mut files = Vec::new();
        for (t, target) in self.pipeline.targets.iter().enumerate() {
            let path = layout.table(&target.name);
            io::write_table(&path, self.format, &target.schema, |out| {
                tables.write(t, out)
            })?;
            files.push((path, tables.rows(t)));
        }
        files.push((write_metrics(self.pipeline, &log, &self.out)?, 0));
        Ok(files)
    }

    /// Bytes of the committed base checkpoint and of its deltas.
    fn checkpoint_bytes(&self) -> Result<(u64, u64)> {
        let base = match &self.manifest.checkpoint {
            Some(c) => dir_size(&self.dir.checkpoint(c))?,
            None => 0,
        };
        let mut deltas = 0;
        for d in &self.manifest.deltas {
            deltas += dir_size(&self.dir.checkpoint(d))?;
        }
        Ok((base, deltas))
    }

    /// Whether the next save writes a whole base checkpoint rather than a delta: there is no
    /// base yet, the engine runs on another number of workers than wrote it, or the deltas
    /// have grown to half the base's size or to [`MAX_DELTAS`].
    fn compacts(&self) -> Result<bool> {
        let m = &self.manifest;
        if m.checkpoint.is_none() || m.workers != self.options.workers.max(1) {
            return Ok(true);
        }
        if m.deltas.len() >= MAX_DELTAS {
            return Ok(true);
        }
        let (base, deltas) = self.checkpoint_bytes()?;
        Ok(deltas * 2 >= base)
    }

    /// Applies `new` on the engine (starting it if needed), appends the step's outputs and
    /// saves the states; returns the manifest to commit and the staged checkpoint.
    fn apply(
        &mut self,
        new: Vec<(driver::CommitSource, Consumed)>,
        progress: Option<Progress>,
    ) -> Result<(Manifest, Option<Staged>, Appender<'a>)> {
        let (pipeline, options) = (self.pipeline, self.options);
        let next = self.manifest.clone();
        let base = next.version;
        if self.driver.is_none() {
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
            let restore = next.checkpoint.as_ref().map(|c| Checkpoint {
                base: self.dir.checkpoint(c),
                deltas: next.deltas.iter().map(|d| self.dir.checkpoint(d)).collect(),
                workers: next.workers,
            });
            let resume = Resume {
                base,
                last_timestamp: Some(next.last_timestamp),
                restore,
                live_tombstones,
                track_changes: true,
            };
            self.driver = Some(Driver::open(pipeline, options, resume, progress)?);
            self.absorbed.reset();
        }
        let id = &self.manifest.publishing.id;
        if self.publisher.is_none() && !self.published.is_empty() {
            // After a step that failed publishing, what it prepared goes in first, and what it
            // published is caught up with.
            let held = published::resume(pipeline, &self.manifest, &self.published, false)?;
            self.catch_up = CatchUp::of(pipeline, &self.manifest, &self.published, held)?;
        }
        // Other writers' edits made after the commits the state catches up with wait for it.
        if !self.published.is_empty() && self.catch_up.is_none() {
            let driver = self.driver.as_mut().expect("started above");
            let now = driver.last_timestamp();
            let edits =
                table_edits::pending(pipeline, &self.published, id, &mut self.absorbed, now)?;
            if !edits.is_empty() {
                driver.edit(edits)?;
                // Tables opened before the edits hold the version before them.
                self.publisher = None;
            }
        }
        if self.publisher.is_none() && !self.published.is_empty() {
            let tables = published::open(pipeline, &self.published, id)?;
            self.publisher = Some(Publisher::new(pipeline, tables)?);
        }
        let new = match &mut self.catch_up {
            Some(catch_up) => {
                catch_up.look_for_edits(pipeline, &self.manifest, &self.published)?;
                catch_up.select(pipeline, base, new)?
            }
            None => new,
        };
        let compacts = self.compacts()?;
        let driver = self.driver.as_mut().expect("started above");
        let commits = new.len() as u64;
        let (sources, consumed): (Vec<_>, Vec<_>) = new.into_iter().unzip();
        let layout = Layout::new(&self.out, self.format);
        let mut appender = Appender::new(pipeline, layout, next);
        appender.next.publishing.prepared = vec![Vec::new(); self.published.len()];
        appender.next.rewound = None;
        appender.publisher = self.publisher.take().unwrap_or_default();
        let held = self.catch_up.as_ref().map(|c| c.held.clone());
        appender.publisher.begin(held.unwrap_or_default());
        appender.ahead = (self.catch_up.iter().flat_map(|c| &c.ahead))
            .filter(|a| a.commit > base)
            .cloned()
            .collect();
        // A step of streams' commits puts its versions in the logs before its manifest.
        appender.early = consumed
            .iter()
            .all(|c| matches!(c, Consumed::Lines { .. } | Consumed::Version { .. }));
        appender.base = base;
        appender.consumed = consumed.clone();
        if commits == 0 {
            driver.apply(&sources, &mut appender)?;
            return Ok((appender.next.clone(), None, appender));
        }
        let log = self.dir.path().join(METRICS_LOG);
        let (ends, staged) = match appender.publishes() {
            // A version is published once the state holding it is saved: the workers save
            // as soon as they have applied the last commit, while its versions are prepared.
            true => {
                let staged = self.dir.stage(base + commits, !compacts)?;
                let (dir, delta) = (&staged.dir, staged.delta);
                let ends = driver.apply_and_save(&sources, &mut appender, dir, delta)?;
                appender.wait_prepared()?;
                appender.append(&log)?;
                (ends, staged)
            }
            // The change feeds are synced (each commit's latency ends) before the workers
            // save, which would otherwise take a core from their rendering.
            false => {
                let ends = driver.apply(&sources, &mut appender)?;
                appender.append(&log)?;
                let staged = self.dir.stage(base + commits, !compacts)?;
                driver.save(&staged.dir, staged.delta)?;
                (ends, staged)
            }
        };
        let mut next = appender.next.clone();
        for (c, end) in consumed.iter().zip(&ends) {
            driver::new_input::record(&mut next, c, *end)?;
        }
        next.version = base + commits;
        next.last_timestamp = driver.last_timestamp();
        next.workers = options.workers.max(1);
        next.fingerprint = self.fingerprint.clone();
        next.live_tombstones = pipeline
            .targets
            .iter()
            .zip(driver.live_tombstones())
            .map(|(t, n)| (t.name.clone(), *n))
            .collect();
        Ok((next, Some(staged), appender))
    }
}

/// Deltas after a base checkpoint before the next save compacts them into a new base.
pub const MAX_DELTAS: usize = 64;

/// A durable step's sink: it renders the step's change feeds, set-aside rows and metrics log
/// lines as they come, and appends them (synced) once the step's commits are applied.
struct Appender<'p> {
    pipeline: &'p Pipeline,
    layout: Layout,
    /// The manifest the step commits, with the lengths of what it appended so far.
    next: Manifest,
    /// Per target: its change feed's schema and the step's rows not appended yet, rendered (no
    /// CSV header).
    feeds: Vec<(crate::value::Schema, String)>,
    /// The pipeline's flows ([`driver::flows::all`]), as commits' metrics index them.
    flows: Vec<driver::FlowRef>,
    quarantined: Vec<Quarantined>,
    warnings: Vec<String>,
    events: u64,
    log: String,
    /// Per commit: its version and when its input was complete.
    inputs: Vec<(u64, Instant)>,
    /// Per commit, once appended: its latency.
    latencies: Vec<CommitLatency>,
    written: Vec<PathBuf>,
    /// The published tables (none when the targets are files), whose versions the step
    /// prepares into `next`.
    publisher: Publisher,
    /// The last commit's change rows, rendered into `feeds`: freed with the appender, once the
    /// feeds are synced, not before. Freeing the 26,000 rows of a 10,000-event SCD2 commit,
    /// made on the workers' threads, was 0.6 ms of its latency.
    rendered: Vec<Vec<(crate::engine::changefeed::ChangeType, crate::value::Row)>>,
    /// The state's last commit before the step.
    base: u64,
    /// What each of the step's commits reads.
    consumed: Vec<Consumed>,
    /// Whether the step's versions go into the logs before its manifest (its commits all read
    /// streams, see [`crate::persist::catch_up`]).
    early: bool,
    /// The step's commits that the published tables hold already, with what they read.
    ahead: Vec<Ahead>,
    /// Per commit whose input was read and outcome not taken yet: what its versions note of
    /// its input.
    noted: std::collections::VecDeque<(u64, Option<serde_json::Value>)>,
}

impl<'p> Appender<'p> {
    fn new(pipeline: &'p Pipeline, layout: Layout, next: Manifest) -> Self {
        Appender {
            pipeline,
            layout,
            next,
            feeds: (pipeline.targets.iter())
                .map(|t| (changefeed::schema(t), String::new()))
                .collect(),
            flows: driver::flows::all(pipeline),
            quarantined: Vec::new(),
            warnings: Vec::new(),
            events: 0,
            log: String::new(),
            inputs: Vec::new(),
            latencies: Vec::new(),
            written: Vec::new(),
            publisher: Publisher::default(),
            rendered: Vec::new(),
            base: 0,
            consumed: Vec::new(),
            early: false,
            ahead: Vec::new(),
            noted: Default::default(),
        }
    }

    /// Appends the change feeds rendered and not appended yet of every target whose feed holds
    /// at least `least` bytes, and records their lengths in `next`. A step of many commits (a
    /// first run over a long input) appends as it goes, so that its feeds never wait in memory
    /// whole; only the manifest the step commits makes what they appended count, and a crash
    /// before it leaves bytes the next run cuts off.
    fn append_feeds(&mut self, least: usize) -> Result<()> {
        if self.publishes() {
            return Ok(());
        }
        let format = self.layout.format;
        for (t, target) in self.pipeline.targets.iter().enumerate() {
            let (schema, rows) = &mut self.feeds[t];
            if rows.len() < least {
                continue;
            }
            let path = self.layout.changes(&target.name);
            // Only a feed's first append carries a header: the rows are appended as they are,
            // never copied behind one.
            if committed(&self.next, &path) == 0 {
                let mut header = String::new();
                io::render_rows_into(&mut header, format, schema, &[], true)?;
                rows.insert_str(0, &header);
            }
            append(&mut self.next, &path, rows)?;
            rows.clear();
            if !self.written.contains(&path) {
                self.written.push(path);
            }
        }
        Ok(())
    }

    /// Whether the step publishes its targets as Delta tables (their change data feeds are
    /// the change feeds).
    fn publishes(&self) -> bool {
        self.publisher.publishes()
    }

    /// Waits for the versions being prepared, if any: the tables come back, and the log
    /// entries go into `next`.
    fn wait_prepared(&mut self) -> Result<()> {
        self.publisher.wait(&mut self.next.publishing.prepared)
    }

    /// Appends the step's outputs to their files and records their lengths in `next`.
    fn append(&mut self, log: &Path) -> Result<()> {
        self.append_feeds(0)?;
        let next = &mut self.next;
        for (owner, records) in output::by_owner(&self.quarantined) {
            let path = self.layout.quarantine(&owner);
            append(next, &path, &io::render_quarantine(&records))?;
            self.written.push(path);
        }
        // The change feeds are durable now: that ends each commit's latency.
        for (version, since) in &self.inputs {
            let latency = CommitLatency::since(*version, *since);
            push_log(&mut self.log, &LogLine::Latency(latency.clone()))?;
            self.latencies.push(latency);
        }
        append(next, log, &self.log)
    }
}

impl Sink for Appender<'_> {
    fn input(
        &mut self,
        commit: (u64, i64),
        end: Option<driver::ReadFrom>,
        appended: &mut [(usize, Vec<crate::value::Row>)],
    ) -> Result<()> {
        if !self.publishes() {
            return Ok(());
        }
        let version = commit.0;
        let consumed =
            (version.checked_sub(self.base + 1)).and_then(|c| self.consumed.get(c as usize));
        let input = match consumed {
            Some(consumed) => CommitInput::of(consumed, end)?,
            None => None,
        };
        // A commit the tables hold must read what it read then, before anything is published.
        if let Some(ahead) = self.ahead.iter().find(|a| a.commit == version) {
            if input.as_ref() != Some(&ahead.input) {
                return Err(ahead.changed("it reads differently now (cut or rewritten since)"));
            }
        }
        let input = input.map(|i| i.to_json());
        let prepared = &mut self.next.publishing.prepared;
        (self.publisher).input(self.pipeline, commit, input.as_ref(), appended, prepared)?;
        self.noted.push_back((version, input));
        Ok(())
    }

    fn applied(&mut self) -> Result<()> {
        if !(self.early && self.publishes()) {
            return Ok(());
        }
        self.wait_prepared()?;
        self.publisher.put(&self.next.publishing.prepared)
    }

    fn commit(&mut self, mut commit: CommitOutput) -> Result<()> {
        self.inputs.push((commit.version, commit.input_complete));
        let (version, timestamp) = (commit.version, commit.timestamp);
        // Published targets' change feeds are their tables' change data feeds: the commit's
        // versions are prepared, in order, while the step goes on.
        if self.publishes() {
            while self.noted.front().is_some_and(|(v, _)| *v < version) {
                self.noted.pop_front();
            }
            let input = match self.noted.front() {
                Some((v, input)) if *v == version => self.noted.pop_front().and_then(|n| n.1),
                _ => None,
            };
            let prepared = &mut self.next.publishing.prepared;
            let (pipeline, flows) = (self.pipeline, &self.flows);
            (self.publisher).commit(pipeline, flows, &mut commit, input.as_ref(), prepared)?;
        } else {
            for (t, changes) in commit.changes.iter().enumerate() {
                let format = self.layout.format;
                let (schema, out) = &mut self.feeds[t];
                let at = (version, timestamp);
                output::feed_text(format, schema, at, changes, false, commit.idle, out)?;
            }
            self.rendered = std::mem::take(&mut commit.changes);
        }
        for (f, m) in &commit.metrics {
            push_log(
                &mut self.log,
                &LogLine::Flow {
                    flow: self.flows[*f].name.clone(),
                    metrics: m.clone(),
                },
            )?;
        }
        for (t, m) in &commit.table_metrics {
            push_log(
                &mut self.log,
                &LogLine::Table {
                    table: self.pipeline.tables[*t].name.clone(),
                    metrics: m.clone(),
                },
            )?;
        }
        self.quarantined.extend(commit.quarantined);
        self.warnings.extend(commit.warnings);
        self.events += commit.events;
        self.append_feeds(FEED_BUFFER)
    }
}

/// Bytes of a change feed a step renders before appending them (see [`Appender::append_feeds`]).
/// The library's own tests append at every commit, so that their steps of several commits
/// append early.
const FEED_BUFFER: usize = if cfg!(test) { 1 } else { 8 << 20 };

fn push_log(text: &mut String, line: &LogLine) -> Result<()> {
    let json =
        serde_json::to_string(line).map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
    text.push_str(&json);
    text.push('\n');
    Ok(())
}

/// Whether `a` and `b` name one directory: the same path, or the same once the file system
/// resolves them (`../x/out`, a symlink).
/// Makes the paths of a manifest written before they were recorded absolute. Of the appended
/// files only the metrics log could be relative (it lives in the state directory, `--out` was
/// always recorded absolute); any other relative path was relative to the working directory of
/// the run that wrote it, which a state used from the same place still has.
fn absolute_paths(manifest: &mut Manifest, state: &Path) -> Result<()> {
    let normal = |path: &mut PathBuf| -> Result<()> {
        if path.is_relative() {
            *path = crate::io::normal_path(path)?;
        }
        Ok(())
    };
    let log = |path: &mut PathBuf| {
        if path.is_relative() {
            *path = state.join(METRICS_LOG);
        }
    };
    let Manifest {
        inputs,
        appended,
        checks,
        ..
    } = manifest;
    inputs.iter_mut().try_for_each(|p| normal(&mut p.file))?;
    appended.iter_mut().for_each(|a| log(&mut a.path));
    checks.appended.iter_mut().for_each(|(p, _)| log(p));
    checks.snapshots.iter_mut().try_for_each(|(p, _)| normal(p))
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// Fails when a new state would write change feeds that `--out` already holds: they come from
/// a run whose state is lost (or a mistyped `--state`, or a plain run), and continuing them
/// from version 1 would corrupt them.
fn refuse_foreign_feeds(pipeline: &Pipeline, layout: &Layout, state: &Path) -> Result<()> {
    for target in &pipeline.targets {
        let feed = layout.changes(&target.name);
        if std::fs::metadata(&feed).is_ok_and(|m| m.len() > 0) {
            return Err(Error::new(
                ErrorKind::State,
                format!(
                    "the output directory already holds the change feed {} of an earlier run, \
                     but the state directory {} has no manifest (a new, mistyped or lost \
                     state): pass the state of that run, or start over with --full-refresh",
                    feed.display(),
                    state.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Appends `text` to `path` and records its new length in `manifest`. A file the manifest does
/// not know yet (a new state, or after --full-refresh) starts empty: what it held came from
/// another run.
fn append(manifest: &mut Manifest, path: &Path, text: &str) -> Result<()> {
    if !manifest.appended.iter().any(|a| a.path == path) {
        appended::recover(
            &[Appended {
                path: path.to_path_buf(),
                len: 0,
            }],
            &[],
        )?;
    }
    let len = appended::append(path, text.as_bytes())?;
    set_committed(manifest, path, len);
    let tail = appended::tail_crc(path, len)?;
    Checks::set(&mut manifest.checks.appended, path, tail);
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

/// `OUT/metrics.json` from the whole metrics log.
fn write_metrics(pipeline: &Pipeline, log: &Path, out: &Path) -> Result<PathBuf> {
    let flows = driver::flows::all(pipeline);
    let mut run = output::RunMetrics::new(pipeline);
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
                    run.flows[f].push(m);
                }
            }
            LogLine::Table { table, metrics: m } => {
                if let Some(t) = pipeline.tables.iter().position(|t| t.name == table) {
                    run.tables[t].push(m);
                }
            }
            LogLine::Latency(latency) => run.latency.push(latency),
        }
    }
    output::write_metrics(pipeline, &run, out)
}

fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| Error::read(dir, &e))? {
        let entry = entry.map_err(|e| Error::read(dir, &e))?;
        total += entry.metadata().map_err(|e| Error::read(dir, &e))?.len();
    }
    Ok(total)
}

mod preparing;
mod rewind;
use preparing::Publisher;
pub use rewind::Rewound;

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;

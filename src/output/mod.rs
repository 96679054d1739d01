//! Writes a run's outputs in the CLI's layout: `DIR/<target>.<ext>` (the table),
//! `DIR/<target>.changes.<ext>` (the change feed), `DIR/metrics.json` and, for invalid rows set
//! aside, `DIR/_quarantine/<flow>.jsonl`. A process of a cluster with partitioned outputs
//! writes its partition of each table and change feed as `DIR/<target>.part-<p>.<ext>` and
//! `DIR/<target>.changes.part-<p>.<ext>`.
//!
//! [`StagedRun`] is a plain run's sink: change feeds and set-aside rows are appended commit by
//! commit to files in a staging directory beside `DIR` (`.<DIR name>.scdflow-staging-<pid>`, on
//! the same file system), so nothing grows in memory with the number of updates; when the run
//! succeeds the tables and `metrics.json` join them and the files move into place — the whole
//! directory in one rename when `DIR` does not exist yet, otherwise as a group that moves in
//! whole or not at all ([`io::swap_in`]). A run that fails leaves `DIR` as it was (the staging
//! directory is removed, or — after a crash — by the next run into the same `DIR`, which first
//! completes a group that was moving in).
//!
//! With a warehouse ([`Layout::publish`]) each target is a Delta table there instead, its
//! change feed the table's change data feed, and each streaming table the pipeline declares is
//! one too, each commit's rows appended ([`published`]); `DIR` keeps `metrics.json` and the
//! set-aside rows, and the tables move in with them as one group.
//!
//! The files the commits appended to are synced on a thread of their own from the moment the
//! last commit is delivered ([`StagedRun::settle`]), while the tables are rendered: a plain
//! run of 1M SCD2 events (a change feed of 2.4M rows, 181 MB) waited 100 ms for that sync
//! after its tables were rendered, and took 1.42-1.44 s where it now takes 1.30-1.32.
//!
//! Limits: into an existing `DIR`, a reader listing it during the renames (microseconds per
//! file) can see some files new and others old.

mod published;

pub use published::{
    appended_changes, each_table, flow_progress, kept, refuse_foreign, table_properties,
    APPENDS_PROPERTY, FEED_READERS_PROPERTY, TARGET_PROPERTY,
};

use crate::driver::{CommitLatency, CommitOutput, FlowCommitMetrics, Sink, TableCommitMetrics};
use crate::engine::changefeed;
use crate::io::{self, OutputFormat};
use crate::plan::Pipeline;
use crate::runtime::RenderedTables;
use crate::value::Row;
use crate::{Error, ErrorKind, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Where a run's files go.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The output directory.
    pub dir: PathBuf,
    /// The format of tables and change feeds.
    pub format: OutputFormat,
    /// Before the extension of tables and change feeds: `.part-<p>` for a partition.
    pub suffix: String,
    /// Per published table ([`Pipeline::published`]: the targets, then the streaming
    /// tables), the Delta table it is published as; empty: targets are files in `dir`.
    pub published: Vec<PathBuf>,
}

impl Layout {
    /// Whole files in `dir`.
    pub fn new(dir: &Path, format: OutputFormat) -> Layout {
        Layout {
            dir: dir.to_path_buf(),
            format,
            suffix: String::new(),
            published: Vec::new(),
        }
    }

    /// The tables published as the Delta tables `dirs` (one per [`Pipeline::published`]
    /// table) instead of files.
    pub fn publish(self, dirs: Vec<PathBuf>) -> Layout {
        Layout {
            published: dirs,
            ..self
        }
    }

    /// Process `process`'s partition files in `dir`.
    pub fn part(dir: &Path, format: OutputFormat, process: usize) -> Layout {
        Layout {
            suffix: format!(".part-{process}"),
            ..Layout::new(dir, format)
        }
    }

    /// A target's table file.
    pub fn table(&self, target: &str) -> PathBuf {
        let (suffix, ext) = (&self.suffix, self.format.extension());
        self.dir.join(format!("{target}{suffix}.{ext}"))
    }

    /// A target's change-feed file.
    pub fn changes(&self, target: &str) -> PathBuf {
        let (suffix, ext) = (&self.suffix, self.format.extension());
        self.dir.join(format!("{target}.changes{suffix}.{ext}"))
    }

    /// A flow's (or table's) file of set-aside rows.
    pub fn quarantine(&self, owner: &str) -> PathBuf {
        self.dir.join("_quarantine").join(format!("{owner}.jsonl"))
    }

    /// `metrics.json`.
    pub fn metrics(&self) -> PathBuf {
        self.dir.join("metrics.json")
    }

    /// The same file names in another directory.
    fn within(&self, dir: &Path) -> Layout {
        Layout {
            dir: dir.to_path_buf(),
            ..self.clone()
        }
    }
}

/// A commit's change-feed rows of one target, rendered into `out`: CSV has its header only at
/// the start of a file (`header`).
///
/// With `split`, a commit's feed of many rows is rendered in two halves on the helpers
/// ([`crate::runtime::cores`]): rendering was a fifth of a followed 10,000-event commit's latency
/// (5.2 ms of 26,000 SCD2 rows on one thread), and a followed step's workers wait meanwhile.
/// Without it (the workers apply the next commits meanwhile,
/// [`crate::driver::CommitOutput::idle`]) a helper would take a worker's core: the plain
/// 1M-event SCD2 run took 1.76 s with pinned helpers splitting, 1.55–1.56 s without.
pub fn feed_text(
    format: OutputFormat,
    schema: &crate::value::Schema,
    (version, timestamp): (u64, i64),
    changes: &[(changefeed::ChangeType, Row)],
    header: bool,
    split: bool,
    out: &mut String,
) -> Result<()> {
    // Below this a thread costs more than the half it renders.
    const SPLIT_AT: usize = 8192;
    io::render_rows_into(out, format, schema, &[], header)?;
    let feed = FeedRows {
        format,
        schema,
        version,
        timestamp,
    };
    if !split || changes.len() < SPLIT_AT {
        feed.render(changes, out);
        return Ok(());
    }
    let (first, second) = changes.split_at(changes.len() / 2);
    let mut rest = String::new();
    crate::runtime::cores::join(
        || feed.render(first, out),
        || feed.render(second, &mut rest),
    );
    out.push_str(&rest);
    Ok(())
}

/// What every row of one commit's feed shares.
#[derive(Clone, Copy)]
struct FeedRows<'a> {
    format: OutputFormat,
    schema: &'a crate::value::Schema,
    version: u64,
    timestamp: i64,
}

impl FeedRows<'_> {
    /// Appends `changes`' rows to `out`.
    fn render(self, changes: &[(changefeed::ChangeType, Row)], out: &mut String) {
        use crate::value::Value;
        // The last three columns are the same for every row of a kind: rendered once per kind.
        let (columns, extra) = (self.schema.columns).split_at(self.schema.columns.len() - 3);
        let mut tails: Vec<(changefeed::ChangeType, String)> = Vec::new();
        let start = out.len();
        for (i, (kind, row)) in changes.iter().enumerate() {
            // Room for the rest at the first row's length: a commit's feed is megabytes, and
            // doubling its way there copied it about twice over.
            if i == 1 {
                out.reserve((out.len() - start) * (changes.len() - 1) * 9 / 8);
            }
            let tail = match tails.iter().find(|(k, _)| k == kind) {
                Some((_, tail)) => tail,
                None => {
                    let values = [
                        Value::Str(kind.as_str().to_string()),
                        Value::Int(self.version as i64),
                        Value::Timestamp(self.timestamp),
                    ];
                    tails.push((*kind, io::row_tail(self.format, extra, &values)));
                    &tails.last().expect("just pushed").1
                }
            };
            io::push_row_with_tail(out, self.format, columns, row.iter(), tail);
        }
    }
}

/// Metrics of a run, gathered commit by commit.
#[derive(Debug, Default)]
pub struct RunMetrics {
    /// Per flow (indexed like [`crate::driver::flows::all`]).
    pub flows: Vec<Vec<FlowCommitMetrics>>,
    /// Per source table.
    pub tables: Vec<Vec<TableCommitMetrics>>,
    /// Per commit: its latency.
    pub latency: Vec<CommitLatency>,
}

impl RunMetrics {
    /// Empty metrics of `pipeline`.
    pub fn new(pipeline: &Pipeline) -> RunMetrics {
        RunMetrics {
            flows: vec![Vec::new(); crate::driver::flows::all(pipeline).len()],
            tables: vec![Vec::new(); pipeline.tables.len()],
            latency: Vec::new(),
        }
    }

    /// Adds a commit's entries.
    pub fn add(&mut self, commit: &CommitOutput) {
        for (f, m) in &commit.metrics {
            self.flows[*f].push(m.clone());
        }
        for (t, m) in &commit.table_metrics {
            self.tables[*t].push(m.clone());
        }
    }
}

/// A plain run's sink; see the module docs.
pub struct StagedRun<'p> {
    pipeline: &'p Pipeline,
    layout: Layout,
    stage: Layout,
    /// Whether this process writes `metrics.json` and the set-aside rows (process 0).
    run_files: bool,
    /// Per target: its change feed's schema and staged file, or its staged Delta table.
    feeds: Vec<Feed>,
    /// The published streaming tables' staged Delta tables, with their tables' indices.
    streams: Vec<(usize, published::Published)>,
    quarantine: BTreeMap<String, BufWriter<File>>,
    metrics: RunMetrics,
    /// The pipeline's flows, as commits' metrics index them.
    flows: Vec<crate::driver::FlowRef>,
    /// Rows set aside and warnings, for the caller to report.
    pub quarantined: Vec<crate::driver::Quarantined>,
    /// Problems that did not stop the run.
    pub warnings: Vec<String>,
    /// Events the run handed to the engine.
    pub events: u64,
    text: String,
    /// The sync of the files the commits wrote, once begun ([`StagedRun::settle`]).
    syncing: Option<std::thread::JoinHandle<Result<()>>>,
    /// The lock on `--out` ([`lock`]), held until the run ends.
    _lock: File,
}

/// Where a target's change feed goes.
enum Feed {
    /// A file, its rows in this schema.
    File(crate::value::Schema, BufWriter<File>),
    /// A Delta table's change data feed.
    Delta(Box<published::Published>),
}

/// The staging directory of a run into `DIR` is `.<DIR name>` + this + the process id.
const STAGING: &str = ".scdflow-staging-";

impl<'p> StagedRun<'p> {
    /// Starts a run's outputs in `layout` (`run_files`: this process writes `metrics.json` and
    /// set-aside rows). Staging directories left by crashed runs are removed.
    pub fn create(pipeline: &'p Pipeline, layout: Layout, run_files: bool) -> Result<Self> {
        let dir = std::path::absolute(&layout.dir).map_err(|e| Error::write(&layout.dir, &e))?;
        let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
            return Err(Error::new(
                crate::ErrorKind::Validation,
                format!("--out {} names no directory to write into", dir.display()),
            ));
        };
        std::fs::create_dir_all(parent).map_err(|e| Error::write(parent, &e))?;
        let lock = lock(&dir, &layout.suffix)?;
        // Partitions of one `DIR` (processes of a cluster) stage apart.
        let prefix = format!(".{}{}{STAGING}", name.to_string_lossy(), layout.suffix);
        remove_stale_stages(parent, &prefix)?;
        let stage_dir = parent.join(format!("{prefix}{}", std::process::id()));
        std::fs::create_dir_all(&stage_dir).map_err(|e| Error::write(&stage_dir, &e))?;
        let stage = layout.within(&stage_dir);
        let mut feeds = Vec::new();
        let mut text = String::new();
        let publications = pipeline.published();
        for (t, target) in pipeline.targets.iter().enumerate() {
            if let Some(dir) = layout.published.get(t) {
                let table = &publications[t];
                let staged = published::Published::create(pipeline, table, dir)?;
                feeds.push(Feed::Delta(Box::new(staged)));
                continue;
            }
            let path = stage.changes(&target.name);
            let mut file = create(&path)?;
            let schema = changefeed::schema(target);
            // An empty change feed still has its header.
            feed_text(layout.format, &schema, (0, 0), &[], true, false, &mut text)?;
            file.write_all(text.as_bytes())
                .map_err(|e| Error::write(&path, &e))?;
            text.clear();
            feeds.push(Feed::File(schema, file));
        }
        let mut streams = Vec::new();
        for (table, dir) in publications.iter().zip(&layout.published) {
            if let crate::plan::Publishes::Table(t) = table.of {
                streams.push((t, published::Published::create(pipeline, table, dir)?));
            }
        }
        Ok(StagedRun {
            pipeline,
            layout,
            stage,
            run_files,
            feeds,
            streams,
            quarantine: BTreeMap::new(),
            metrics: RunMetrics::new(pipeline),
            flows: crate::driver::flows::all(pipeline),
            quarantined: Vec::new(),
            warnings: Vec::new(),
            events: 0,
            text,
            syncing: None,
            _lock: lock,
        })
    }

    /// Says that every commit has been delivered: the files they appended to (change feeds,
    /// set-aside rows) are flushed and synced on a thread of their own, which
    /// [`StagedRun::finish`] waits for (see the module docs). A commit after it is an error.
    pub fn settle(&mut self) -> Result<()> {
        if self.syncing.is_some() {
            return Ok(());
        }
        let mut files = Vec::new();
        let feeds =
            (self.feeds.iter_mut().zip(&self.pipeline.targets)).filter_map(|(feed, target)| {
                match feed {
                    Feed::File(_, feed) => Some((self.stage.changes(&target.name), feed)),
                    Feed::Delta(_) => None,
                }
            });
        let quarantine = (self.quarantine.iter_mut())
            .filter(|_| self.run_files)
            .map(|(owner, file)| (self.stage.quarantine(owner), file));
        for (path, file) in feeds.chain(quarantine) {
            file.flush().map_err(|e| Error::write(&path, &e))?;
            let file = file.get_ref().try_clone();
            files.push((file.map_err(|e| Error::write(&path, &e))?, path));
        }
        let files = std::sync::Arc::new(files);
        let theirs = std::sync::Arc::clone(&files);
        let builder = std::thread::Builder::new().name("scdflow-sync".into());
        match builder.spawn(move || sync_all(&theirs)) {
            Ok(thread) => {
                self.syncing = Some(thread);
                Ok(())
            }
            Err(_) => sync_all(&files),
        }
    }

    /// Writes the tables and `metrics.json` beside the staged feeds, then moves every file into
    /// place; returns the table files with their row counts.
    pub fn finish(mut self, tables: &RenderedTables) -> Result<Vec<(PathBuf, usize)>> {
        self.settle()?;
        let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
        let mut published = Vec::new();
        for (t, target) in self.pipeline.targets.iter().enumerate() {
            if let Feed::Delta(table) = &self.feeds[t] {
                staged.push(table.staged());
                published.push((t, table.published()));
                continue;
            }
            let path = self.stage.changes(&target.name);
            staged.push((path, self.layout.changes(&target.name)));
            let path = self.stage.table(&target.name);
            io::write_table(&path, self.layout.format, &target.schema, |out| {
                tables.write(t, out)
            })?;
            staged.push((path, self.layout.table(&target.name)));
        }
        staged.extend(self.streams.iter().map(|(_, table)| table.staged()));
        if self.run_files {
            for owner in self.quarantine.keys() {
                staged.push((self.stage.quarantine(owner), self.layout.quarantine(owner)));
            }
            let path = write_metrics(self.pipeline, &self.metrics, &self.stage.dir)?;
            staged.push((path, self.layout.metrics()));
        }
        if let Some(thread) = self.syncing.take() {
            let panicked =
                || Error::new(ErrorKind::Internal, "the thread syncing the feeds panicked");
            thread.join().map_err(|_| panicked())??;
        }
        // A new `DIR` appears whole; another process may create it first (partitions).
        let whole = published.is_empty()
            && self.streams.is_empty()
            && !self.layout.dir.exists()
            && std::fs::rename(&self.stage.dir, &self.layout.dir).is_ok();
        if !whole {
            io::swap_in(&self.stage.dir, &staged)?;
            let _ = std::fs::remove_dir_all(&self.stage.dir);
        }
        crate::persist::frames::sync_parent(&self.layout.metrics())?;
        crate::persist::frames::sync_parent(&self.layout.dir)?;
        let mut written: Vec<(PathBuf, usize)> = (self.pipeline.targets.iter())
            .enumerate()
            .map(|(t, target)| (self.layout.table(&target.name), tables.rows(t)))
            .collect();
        for (t, table) in published {
            written[t] = table;
        }
        written.extend(self.streams.iter().map(|(_, table)| table.published()));
        Ok(written)
    }
}

/// Syncs `files` (each with its path, for errors), in order.
fn sync_all(files: &[(File, PathBuf)]) -> Result<()> {
    (files.iter()).try_for_each(|(file, path)| file.sync_all().map_err(|e| Error::write(path, &e)))
}

impl Drop for StagedRun<'_> {
    fn drop(&mut self) {
        // After `finish` only the empty directory is left; after a failure, what was staged.
        let _ = std::fs::remove_dir_all(&self.stage.dir);
    }
}

impl Sink for StagedRun<'_> {
    fn commit(&mut self, mut commit: CommitOutput) -> Result<()> {
        if self.syncing.is_some() {
            let message = "a commit after the run's files were settled";
            return Err(Error::new(ErrorKind::Internal, message));
        }
        // Every commit is a version of each published table, so that Delta's versions are
        // scdflow's.
        let appended: Vec<_> = (self.streams.iter())
            .map(|(t, _)| appended_changes(&mut commit.appended, *t))
            .collect();
        let mut jobs: Vec<(&mut published::Published, &[_], Vec<_>)> = (self.streams.iter_mut())
            .zip(&appended)
            .map(|((_, table), changes)| (table, changes.as_slice(), Vec::new()))
            .collect();
        for (t, feed) in self.feeds.iter_mut().enumerate() {
            if let Feed::Delta(table) = feed {
                let changes = commit.changes.get(t).map_or(&[][..], Vec::as_slice);
                jobs.push((
                    table,
                    changes,
                    flow_progress(&self.flows, t, &commit.metrics),
                ));
            }
        }
        let (version, timestamp) = (commit.version, commit.timestamp);
        each_table(jobs, |(table, changes, progress)| {
            table.commit(version, timestamp, changes, &progress)
        })?;
        for (t, target) in self.pipeline.targets.iter().enumerate() {
            let changes = commit.changes.get(t).map_or(&[][..], Vec::as_slice);
            let (schema, file) = match &mut self.feeds[t] {
                Feed::Delta(_) => continue,
                _ if changes.is_empty() => continue,
                Feed::File(schema, file) => (schema, file),
            };
            self.text.clear();
            let format = self.layout.format;
            let at = (commit.version, commit.timestamp);
            feed_text(
                format,
                schema,
                at,
                changes,
                false,
                commit.idle,
                &mut self.text,
            )?;
            file.write_all(self.text.as_bytes())
                .map_err(|e| Error::write(&self.stage.changes(&target.name), &e))?;
        }
        if self.run_files {
            for (owner, records) in by_owner(&commit.quarantined) {
                let path = self.stage.quarantine(&owner);
                let file = match self.quarantine.entry(owner) {
                    std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::btree_map::Entry::Vacant(e) => e.insert(create(&path)?),
                };
                file.write_all(io::render_quarantine(&records).as_bytes())
                    .map_err(|e| Error::write(&path, &e))?;
            }
        }
        self.metrics.add(&commit);
        let latency = CommitLatency::since(commit.version, commit.input_complete);
        self.metrics.latency.push(latency);
        self.events += commit.events;
        self.warnings.extend(commit.warnings);
        self.quarantined.extend(commit.quarantined);
        Ok(())
    }
}

/// What a plain run wrote, and what it has to say.
#[derive(Debug)]
pub struct Written {
    /// Every published table's ([`Pipeline::published`]) file or Delta table and its rows
    /// (none outside process 0 of a gathering cluster).
    pub tables: Vec<(PathBuf, usize)>,
    /// Rows set aside.
    pub quarantined: Vec<crate::driver::Quarantined>,
    /// Problems that did not stop the run.
    pub warnings: Vec<String>,
    /// Events handed to the engine.
    pub events: u64,
}

/// Runs `pipeline` over all its input and writes its outputs in `layout` (`run_files`: this
/// process writes `metrics.json` and set-aside rows), all together when the run succeeds and
/// nothing when it fails. A process of a gathering cluster other than 0 writes nothing.
pub fn run(
    pipeline: &Pipeline,
    options: &crate::driver::Options,
    layout: Layout,
    progress: Option<crate::runtime::Progress>,
) -> Result<Written> {
    use crate::driver::{Driver, Resume};
    refuse_input_folder(pipeline, &layout.dir, "--out")?;
    let sources = crate::driver::sources(pipeline)?;
    let cluster = options.cluster.as_ref();
    let gathers = cluster.is_none_or(|c| c.gathers());
    let mut driver = Driver::open(pipeline, options, Resume::default(), progress)?;
    if !gathers && !options.partitioned_output {
        let mut discard = Discard::default();
        driver.apply(&sources, &mut discard)?;
        // Reading the tables is collective: this process's rows go to process 0.
        driver.rendered_tables(layout.format, &layout.dir)?;
        driver.finish()?;
        return Ok(Written {
            tables: Vec::new(),
            quarantined: Vec::new(),
            warnings: discard.warnings,
            events: 0,
        });
    }
    let format = layout.format;
    let mut sink = StagedRun::create(pipeline, layout, gathers)?;
    driver.apply(&sources, &mut sink)?;
    sink.settle()?;
    let tables = driver.rendered_tables(format, &sink.stage.dir)?;
    driver.finish()?;
    let quarantined = std::mem::take(&mut sink.quarantined);
    let warnings = std::mem::take(&mut sink.warnings);
    let events = sink.events;
    let tables = sink.finish(&tables)?;
    Ok(Written {
        tables,
        quarantined,
        warnings,
        events,
    })
}

/// A sink that keeps only the warnings (a cluster process whose results go to process 0).
#[derive(Default)]
struct Discard {
    warnings: Vec<String>,
}

impl Sink for Discard {
    fn commit(&mut self, commit: CommitOutput) -> Result<()> {
        self.warnings.extend(commit.warnings);
        Ok(())
    }
}

/// Set-aside rows by owner, owners in order of first appearance.
pub fn by_owner(
    quarantined: &[crate::driver::Quarantined],
) -> Vec<(String, Vec<(PathBuf, io::RowError)>)> {
    let mut owners: Vec<(String, Vec<(PathBuf, io::RowError)>)> = Vec::new();
    for q in quarantined {
        let record = (q.file.clone(), q.error.clone());
        match owners.iter_mut().find(|(o, _)| *o == q.owner) {
            Some((_, records)) => records.push(record),
            None => owners.push((q.owner.clone(), vec![record])),
        }
    }
    owners
}

fn create(path: &Path) -> Result<BufWriter<File>> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::write(parent, &e))?;
    }
    let file = File::create(path).map_err(|e| Error::write(path, &e))?;
    Ok(BufWriter::with_capacity(1 << 20, file))
}

/// Fails when `dir` (`--out` or `--state`, named by `what`) is a folder the pipeline reads its
/// input from: every file written there would be read as input by the next run. Paths are
/// compared as the file system resolves them (`..`, symlinks).
pub fn refuse_input_folder(pipeline: &Pipeline, dir: &Path, what: &str) -> Result<()> {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        // A directory that does not exist yet is no input folder.
        return Ok(());
    };
    let tables = pipeline.tables.iter().filter_map(|t| match &t.input {
        crate::plan::SourceInput::Files { path, .. } => Some((t.name.as_str(), path)),
        _ => None,
    });
    let snapshots = pipeline
        .snapshot_flows
        .iter()
        .filter_map(|f| match &f.source {
            crate::plan::SnapshotSource::Files { path, .. } => Some((f.name.as_str(), path)),
            crate::plan::SnapshotSource::Versioned(v) => match &v.input {
                crate::plan::VersionedInput::Files { path, .. } => Some((f.name.as_str(), path)),
                crate::plan::VersionedInput::Delta { .. } => None,
            },
            crate::plan::SnapshotSource::Table { .. } => None,
        });
    for (name, input) in tables.chain(snapshots) {
        if std::fs::canonicalize(input).is_ok_and(|p| p == dir) {
            return Err(Error::new(
                crate::ErrorKind::Validation,
                format!(
                    "{what} {} is the input folder of `{name}`: what scdflow writes there would \
                     be read as input by the next run; choose another directory",
                    dir.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Locks the output directory `dir` (its partition `suffix`) for this process until the
/// returned file is dropped: `.<DIR name><suffix>.scdflow-lock` beside it, so that it can be
/// taken before `DIR` exists. Two runs writing one `--out` at once would interleave or cut
/// each other's files (and a plain run removes the staging directories it finds); the second
/// is refused instead. The lock dies with its process, however it ends.
pub fn lock(dir: &Path, suffix: &str) -> Result<File> {
    lock_as(
        dir,
        suffix,
        "the output directory",
        std::time::Duration::ZERO,
    )
}

/// [`lock`], waiting up to `wait` for another process to let go, then saying that `what` is in
/// use.
pub fn lock_as(dir: &Path, suffix: &str, what: &str, wait: std::time::Duration) -> Result<File> {
    let dir = std::path::absolute(dir).map_err(|e| Error::write(dir, &e))?;
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(Error::new(
            crate::ErrorKind::Validation,
            format!("--out {} names no directory to write into", dir.display()),
        ));
    };
    std::fs::create_dir_all(parent).map_err(|e| Error::write(parent, &e))?;
    let path = parent.join(format!(".{}{suffix}.scdflow-lock", name.to_string_lossy()));
    crate::persist::store::lock_file_within(&path, &dir, what, wait)
}

/// Removes the staging directories in `dir` (named from `prefix`) of runs that did not finish,
/// after completing the move of any whose files were moving in when its process died.
fn remove_stale_stages(dir: &Path, prefix: &str) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::read(dir, &e))? {
        let entry = entry.map_err(|e| Error::read(dir, &e))?;
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            let path = entry.path();
            io::finish_swap(&path)?;
            std::fs::remove_dir_all(&path).map_err(|e| Error::write(&path, &e))?;
        }
    }
    Ok(())
}

/// `metrics.json`: structs rather than JSON maps, so keys keep this order.
#[derive(Serialize)]
struct Metrics<'a> {
    flows: Vec<FlowMetrics<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tables: Vec<TableMetrics<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    latency: &'a [CommitLatency],
}

#[derive(Serialize)]
struct FlowMetrics<'a> {
    flow: &'a str,
    target: &'a str,
    commits: &'a [crate::driver::FlowCommitMetrics],
}

#[derive(Serialize)]
struct TableMetrics<'a> {
    table: &'a str,
    commits: &'a [crate::driver::TableCommitMetrics],
}

/// Writes `DIR/metrics.json` from a run's metrics.
pub fn write_metrics(pipeline: &Pipeline, run: &RunMetrics, dir: &Path) -> Result<PathBuf> {
    let (metrics, table_metrics) = (&run.flows, &run.tables);
    let all = crate::driver::flows::all(pipeline);
    let flows = all
        .iter()
        .zip(metrics)
        .map(|(flow, commits)| FlowMetrics {
            flow: &flow.name,
            target: &pipeline.targets[flow.target].name,
            commits,
        })
        .collect();
    let tables = pipeline
        .tables
        .iter()
        .zip(table_metrics)
        .filter(|(table, _)| !table.expectations.is_empty())
        .map(|(table, commits)| TableMetrics {
            table: &table.name,
            commits,
        })
        .collect();
    let latency = &run.latency;
    let text = serde_json::to_string_pretty(&Metrics {
        flows,
        tables,
        latency,
    })
    .map_err(|e| Error::new(crate::ErrorKind::Internal, e.to_string()))?;
    let path = dir.join("metrics.json");
    io::replace_file(&path, (text + "\n").as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::{feed_text, lock, FeedRows};
    use crate::engine::changefeed::{with_feed_columns, ChangeType};
    use crate::io::OutputFormat;
    use crate::value::{DataType, Row, Schema, Value};

    /// A feed long enough to be rendered in two halves reads as if rendered in one pass: same
    /// rows, same order, one header.
    #[test]
    fn a_feed_rendered_in_halves_is_the_feed_rendered_whole() {
        let schema = with_feed_columns(&Schema::new([
            ("k".to_string(), DataType::BigInt),
            ("name".to_string(), DataType::String),
        ]));
        let kinds = [
            ChangeType::Insert,
            ChangeType::Delete,
            ChangeType::UpdatePreimage,
        ];
        let changes: Vec<(ChangeType, Row)> = (0..20_001)
            .map(|i: i64| {
                let name = Value::Str(format!("n,{i}\"q"));
                (kinds[i as usize % 3], Row::from([Value::Int(i), name]))
            })
            .collect();
        for format in [OutputFormat::Csv, OutputFormat::Jsonl] {
            let mut split = String::new();
            feed_text(
                format,
                &schema,
                (7, 1_000_000),
                &changes,
                true,
                true,
                &mut split,
            )
            .unwrap();
            let mut whole = String::new();
            crate::io::render_rows_into(&mut whole, format, &schema, &[], true).unwrap();
            let feed = FeedRows {
                format,
                schema: &schema,
                version: 7,
                timestamp: 1_000_000,
            };
            feed.render(&changes, &mut whole);
            assert_eq!(split, whole);
            let header = usize::from(format == OutputFormat::Csv);
            assert_eq!(split.lines().count(), changes.len() + header);
        }
    }

    /// Issue 13, item 5: one run at a time writes an output directory (or partition).
    #[test]
    fn an_output_directory_is_locked_by_one_run() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let held = lock(&out, "").unwrap();
        let second = lock(&out, "").unwrap_err();
        assert_eq!(second.kind(), crate::ErrorKind::State);
        assert!(
            second.to_string().contains("in use by another scdflow run"),
            "{second}"
        );
        // Partitions of one directory are written by different processes at once.
        let partition = lock(&out, ".part-1").unwrap();
        drop(held);
        drop(lock(&out, "").unwrap());
        drop(partition);
        assert!(
            !out.exists(),
            "the lock is beside the directory, which need not exist"
        );
    }
}

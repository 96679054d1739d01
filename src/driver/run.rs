//! [`Driver`]: reads a pipeline's commits one at a time, hands them to a long-lived
//! [`Engine`], and delivers each commit's results — change-feed rows, metrics, set-aside rows —
//! to a [`Sink`] as soon as the commit is complete.
//!
//! Reading runs ahead of the engine by at most the engine's window, so memory is the states
//! plus a few commits, never the input size. Each commit's change feed comes labelled from the
//! engine (each worker labels its keys' updates, [`crate::engine::changefeed::label`]);
//! the tables are read from the states ([`Driver::tables`]). A run that fails part-way has
//! delivered the commits before the failure: a sink that must write all or nothing stages what
//! it receives.
//!
//! In a cluster ([`Options::cluster`]) every process runs the commits process 0 listed; process
//! `p` of `n` reads commits `p`, `p + n`, ... (in commit order, from 0) and feeds `None` for
//! the others; what it learns of its commits (metrics, set-aside rows, warnings) travels to
//! process 0 with the commit, so process 0's sink sees the whole run and the others' see empty
//! commits. A process that cannot read its
//! share announces it, and every process stops at that commit.

use super::commit::{CommitSource, ReadFrom, Span};
use super::flows::{self, FlowRef};
use super::metrics::{self, FlowCommitMetrics, TableCommitMetrics};
use super::report::{self, CommitReport};
use super::{new_input, now_micros, sort_rows, OnInvalid, Options, Quarantined};
use crate::engine::changefeed::ChangeType;
use crate::io::{self, OutputFormat};
use crate::persist::ShardRecords;
use crate::plan::{Pipeline, SourceInput, Target};
use crate::runtime::{
    Checkpoint, CommitEvents, Engine, EngineConfig, Outcome, Progress, RenderRows, RenderedTable,
    RenderedTables, Rendering,
};
use crate::value::Row;
use crate::{Error, ErrorKind, Result};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Where a run starts: after the commits of earlier runs, whose operator state it restores.
#[derive(Debug, Default)]
pub struct Resume {
    /// Commits applied by earlier runs: this run's commits are versions `base + 1, ...`.
    pub base: u64,
    /// Commit time of the last earlier commit (µs): commit times never go back.
    pub last_timestamp: Option<i64>,
    /// A checkpoint to restore the states from.
    pub restore: Option<Checkpoint>,
    /// Per target: tombstones held after the earlier commits.
    pub live_tombstones: Vec<i64>,
    /// Whether the states record changed keys, so that [`Driver::save`] can write deltas.
    pub track_changes: bool,
}

/// One commit's results, as a [`Sink`] receives them.
#[derive(Debug)]
pub struct CommitOutput {
    /// The commit version.
    pub version: u64,
    /// The commit (ingestion) time, µs since the epoch.
    pub timestamp: i64,
    /// Per target: the change-feed rows, in feed order.
    pub changes: Vec<Vec<(ChangeType, Row)>>,
    /// The rows the commit appends to published source tables
    /// ([`crate::plan::SourceTable::published`]): `(table, rows)`, each table once.
    pub appended: Vec<(usize, Vec<Row>)>,
    /// The metrics entries of the flows that had input: `(flow, metrics)`, flows indexed like
    /// [`flows::all`].
    pub metrics: Vec<(usize, FlowCommitMetrics)>,
    /// Expectation counts of source tables: `(table, metrics)`.
    pub table_metrics: Vec<(usize, TableCommitMetrics)>,
    /// Rows set aside, in line order.
    pub quarantined: Vec<Quarantined>,
    /// Problems that did not stop the run.
    pub warnings: Vec<String>,
    /// Events, rows and snapshot rows the commit handed to the engine.
    pub events: u64,
    /// When the commit's input was complete (the driver began reading it): a sink that makes
    /// the outputs durable measures the commit's latency from here, reading included.
    pub input_complete: Instant,
    /// Whether the engine holds no later commit: its workers idle while this one's outputs are
    /// written, so a sink may spread that work over the cores ([`crate::runtime::cores`]).
    /// Otherwise the workers apply the next commits meanwhile, and a helper would take their core.
    pub idle: bool,
}

/// Receives a run's results as they are produced.
pub trait Sink {
    /// One commit's results; commits arrive in version order.
    fn commit(&mut self, commit: CommitOutput) -> Result<()>;

    /// Commit `(version, timestamp)`'s input, read and about to be applied, in version order,
    /// before its results; `end`: where its complete lines end, for a read from an offset
    /// ([`Span::From`]). A sink may take the rows it appends to published source tables
    /// (`(table, rows)`, as [`CommitOutput::appended`], which then holds none), since they are
    /// the input's, and write them while the engine works. Only a run of one process shows
    /// its input (a cluster's commit is read in shares); the others never call this.
    fn input(
        &mut self,
        commit: (u64, i64),
        end: Option<ReadFrom>,
        appended: &mut [(usize, Vec<Row>)],
    ) -> Result<()> {
        let _ = (commit, end, appended);
        Ok(())
    }

    /// Every commit handed over was applied, and its results taken; a save asked for with
    /// them ([`Driver::apply_and_save`]) may still be under way.
    fn applied(&mut self) -> Result<()> {
        Ok(())
    }
}

/// A pipeline's targets on a long-lived engine; see the module docs.
pub struct Driver<'p> {
    pipeline: &'p Pipeline,
    options: Options,
    flows: Vec<FlowRef>,
    engine: Engine,
    /// The next commit's version.
    next: u64,
    skip_once: bool,
    last_timestamp: i64,
    live_tombstones: Vec<i64>,
    progress: Option<Progress>,
    /// Commits handed over, oldest first: version, this process's report, when its input was
    /// complete.
    pending: VecDeque<(u64, Option<CommitReport>, Instant)>,
}

impl<'p> Driver<'p> {
    /// Starts the engine for `pipeline` after `resume` (restoring its states).
    pub fn open(
        pipeline: &'p Pipeline,
        options: &Options,
        resume: Resume,
        progress: Option<Progress>,
    ) -> Result<Self> {
        let mut targets: Vec<Target> = pipeline.targets.clone();
        if let Some(seconds) = options.tombstone_gc_seconds {
            targets
                .iter_mut()
                .for_each(|t| t.tombstone_gc_seconds = seconds);
        }
        let flows = flows::all(pipeline);
        let engine = Engine::open(
            &targets,
            EngineConfig {
                workers: options.workers,
                cluster: options.cluster.clone(),
                partitioned: options.partitioned_output,
                terms: match options.cluster {
                    Some(_) => super::cluster::terms(pipeline, options),
                    None => Vec::new(),
                },
                restore: resume.restore,
                track_changes: resume.track_changes,
                files: Some(Arc::new(ShardRecords)),
                stages: pipeline.stages(),
                feeder: super::feeds::feeder(pipeline, &flows, resume.base > 0),
                pin_workers: options.pin_workers,
            },
        )?;
        let mut live_tombstones = resume.live_tombstones;
        live_tombstones.resize(pipeline.targets.len(), 0);
        Ok(Driver {
            pipeline,
            options: options.clone(),
            flows,
            engine,
            next: resume.base + 1,
            skip_once: resume.base > 0,
            last_timestamp: resume.last_timestamp.unwrap_or(i64::MIN),
            live_tombstones,
            progress,
            pending: VecDeque::new(),
        })
    }

    /// Every flow of the pipeline, as metrics index them.
    pub fn flows(&self) -> &[FlowRef] {
        &self.flows
    }

    /// The time of the last commit (µs), `i64::MIN` before any.
    pub fn last_timestamp(&self) -> i64 {
        self.last_timestamp
    }

    /// Per target: tombstones held after the last commit (D11).
    pub fn live_tombstones(&self) -> &[i64] {
        &self.live_tombstones
    }

    /// Reads `sources` as the next commits, applies them and hands each commit's results to
    /// `sink`; returns, per source, where a read of complete lines ended. In a cluster every
    /// process calls it at the same point and process 0's `sources` count.
    pub fn apply(
        &mut self,
        sources: &[CommitSource],
        sink: &mut dyn Sink,
    ) -> Result<Vec<Option<ReadFrom>>> {
        self.apply_then(sources, sink, None)
    }

    /// As [`Driver::apply`], then saves the states into `dir` as [`Driver::save`] does, all of
    /// them or with `changes` a delta: each worker saves as soon as it has applied the last
    /// commit ([`Engine::save_after`]), while that commit's outcome is labelled and handed to
    /// `sink`. A step whose outputs count only once its state is saved (published tables)
    /// starts the save that much earlier; a step whose latency ends before the save (synced
    /// change feeds) leaves those threads to the outputs with [`Driver::apply`].
    ///
    /// [`Engine::save_after`]: crate::runtime::Engine::save_after
    pub fn apply_and_save(
        &mut self,
        sources: &[CommitSource],
        sink: &mut dyn Sink,
        dir: &Path,
        changes: bool,
    ) -> Result<Vec<Option<ReadFrom>>> {
        self.apply_then(sources, sink, Some((dir, changes)))
    }

    fn apply_then(
        &mut self,
        sources: &[CommitSource],
        sink: &mut dyn Sink,
        save: Option<(&Path, bool)>,
    ) -> Result<Vec<Option<ReadFrom>>> {
        let (processes, process) = self
            .options
            .cluster
            .as_ref()
            .map_or((1, 0), |c| (c.addresses.len(), c.process));
        // Every process runs the commits process 0 listed.
        let agreed;
        let sources = match self.options.cluster {
            Some(_) => {
                agreed = super::cluster::agree_on_commits(&mut self.engine, sources)?;
                &agreed[..]
            }
            None => sources,
        };
        let mut ends = vec![None; sources.len()];
        for (c, source) in sources.iter().enumerate() {
            // The input is complete when it is read: its latency runs from here.
            let input_complete = Instant::now();
            let version = self.next;
            self.next += 1;
            // A large file is read by every process, each its share of the records; any other
            // commit by one process.
            let share = share_of(self.pipeline, &self.options, source, processes, process);
            let split = !matches!(share, Ok(None));
            if !split && c % processes != process {
                self.engine.feed(version, None, None)?;
                self.pending.push_back((version, None, input_complete));
            } else {
                let read = share.and_then(|share| match share {
                    Some(share) => self.read(&share, version),
                    None => self.read_idle(source, version),
                });
                match read {
                    Ok((mut commit, mut report)) => {
                        // Commit time is ingestion time, never decreasing even if the clock
                        // steps back.
                        self.last_timestamp = now_micros().max(self.last_timestamp);
                        commit.timestamp = self.last_timestamp;
                        ends[c] = report.end;
                        if self.options.cluster.is_none() {
                            let at = (version, commit.timestamp);
                            sink.input(at, report.end, &mut report.appended)?;
                        }
                        // Process 0 hears the others' reports through the engine.
                        let (text, kept) = match process {
                            0 => (None, Some(report)),
                            _ => (Some(to_text(&report)), None),
                        };
                        self.engine.feed(version, Some(commit), text)?;
                        self.pending.push_back((version, kept, input_complete));
                    }
                    Err(e) if self.options.cluster.is_none() => return Err(e),
                    Err(e) => {
                        // Every process stops at this commit; this one with its own error.
                        let why = format!("process {process}: {e}");
                        self.engine.fail(version, why)?;
                        self.pending.push_back((version, None, input_complete));
                        while let Ok(true) = self.deliver(true, sink) {}
                        return Err(e);
                    }
                }
            }
            if let (Some((dir, changes)), true) = (save, c + 1 == sources.len()) {
                self.engine.save_after(dir, changes)?;
            }
            while self.deliver(false, sink)? {}
        }
        while self.deliver(true, sink)? {}
        if !sources.is_empty() {
            sink.applied()?;
        }
        match save {
            Some((dir, changes)) if sources.is_empty() => self.engine.save(dir, changes)?,
            Some(_) => self.engine.saved()?,
            None => {}
        }
        Ok(ends)
    }

    /// Reads commit `version` from `source` (or this process's share of it).
    fn read(&self, source: &CommitSource, version: u64) -> Result<(CommitEvents, CommitReport)> {
        report::read(
            self.pipeline,
            &self.flows,
            source,
            version,
            self.options.on_invalid,
            self.skip_once,
        )
    }

    /// Reads commit `version` from `source`; a large file read while no commit is in flight
    /// (the workers wait for this one) in two halves on two threads
    /// ([`Options::read_halves_over`]). The halves' events follow each other in file order,
    /// and their reports add up as a split file's do in a cluster; an error in the first half
    /// is the one reported, as a single read would. The middle is a guess ([`io::halves`]): a
    /// first half that stops short of it (a quoted field with a line break spans it) has the
    /// part read whole instead.
    ///
    /// [`io::halves`]: crate::io::halves
    fn read_idle(
        &self,
        source: &CommitSource,
        version: u64,
    ) -> Result<(CommitEvents, CommitReport)> {
        let halves = match self.pending.is_empty() && self.options.cluster.is_none() {
            true => halves_of(self.pipeline, &self.options, source)?,
            false => None,
        };
        let Some((first, second, middle)) = halves else {
            return self.read(source, version);
        };
        let (pipeline, flows) = (self.pipeline, &self.flows[..]);
        let (on_invalid, skip_once) = (self.options.on_invalid, self.skip_once);
        let read = |source: &CommitSource| {
            report::read(pipeline, flows, source, version, on_invalid, skip_once)
        };
        let (first, second) = crate::runtime::cores::join(|| read(&first), || read(&second));
        let (mut input, mut report) = first?;
        if report.end.is_none_or(|end| end.offset != middle) {
            return self.read(source, version);
        }
        let (more, other) = second?;
        if more.snapshots.iter().any(Option::is_some) {
            return Err(Error::new(
                ErrorKind::Internal,
                "a file read in halves fed a snapshot",
            ));
        }
        for (mine, theirs) in input.events.iter_mut().zip(more.events) {
            mine.reserve_exact(theirs.len());
            mine.extend(theirs);
        }
        for (mine, theirs) in input.rows.iter_mut().zip(more.rows) {
            mine.reserve_exact(theirs.len());
            mine.extend(theirs);
        }
        // Where the part ends is where the second half does (a growing file's); the first's end
        // was the middle.
        let end = other.end;
        report.absorb(other);
        report.end = end;
        Ok((input, report))
    }

    /// Delivers the oldest pending commit's results if it is complete (or, with `wait`, once
    /// it is); false when there was none to deliver.
    fn deliver(&mut self, wait: bool, sink: &mut dyn Sink) -> Result<bool> {
        let Some(outcome) = self.engine.outcome(wait)? else {
            return Ok(false);
        };
        let (version, kept, input_complete) = self
            .pending
            .pop_front()
            .ok_or_else(|| Error::new(ErrorKind::Internal, "an outcome nobody waited for"))?;
        debug_assert_eq!(version, outcome.version);
        self.last_timestamp = self.last_timestamp.max(outcome.timestamp);
        let mut output = self.output(outcome, kept, input_complete)?;
        output.idle = self.pending.is_empty();
        sink.commit(output)?;
        if let Some(report) = self.progress.as_ref() {
            report(version);
        }
        Ok(true)
    }

    /// A commit's results from the engine's outcome and the reports of the processes that
    /// read it.
    fn output(
        &mut self,
        outcome: Outcome,
        kept: Option<CommitReport>,
        input_complete: Instant,
    ) -> Result<CommitOutput> {
        let mut reports: Vec<CommitReport> = kept.into_iter().collect();
        for text in &outcome.reports {
            reports.push(serde_json::from_str(text).map_err(|e| {
                Error::new(
                    ErrorKind::Internal,
                    format!("a commit report does not parse: {e}"),
                )
            })?);
        }
        // A split file's commit has one report per process.
        let mut report = reports.pop().unwrap_or_default();
        for other in reports {
            report.absorb(other);
        }
        // Reading a target's feed for a later stage failed (see `feeds`).
        if let Some(why) = report.failed.take() {
            return Err(Error::new(ErrorKind::InvalidRow, why));
        }
        if let (OnInvalid::Fail, Some(first)) = (self.options.on_invalid, report.invalid.first()) {
            return Err(first.error.clone().into_error(&first.file));
        }
        let partitioned = self.options.partitioned_output && self.options.cluster.is_some();
        let mut entries = report.metrics;
        let mut changes = Vec::with_capacity(outcome.changes.len());
        for (t, feed) in outcome.changes.into_iter().enumerate() {
            // With partitioned outputs this process holds only its keys' changes; process 0
            // was sent every process's counts.
            let counted = match partitioned {
                true => outcome.changed.get(t).copied().unwrap_or_default(),
                false => ChangeType::tally(feed.iter().map(|(kind, _)| *kind)),
            };
            let stats = outcome.stats.get(t).copied().unwrap_or_default();
            let live = &mut self.live_tombstones[t];
            metrics::attribute(&self.flows, t, counted, &stats, live, &mut entries);
            changes.push(feed);
        }
        Ok(CommitOutput {
            version: outcome.version,
            timestamp: outcome.timestamp,
            changes,
            appended: report.appended,
            metrics: entries,
            table_metrics: report.tables,
            quarantined: report.invalid,
            warnings: report.warnings,
            events: report.events,
            input_complete,
            idle: false,
        })
    }

    /// Every target's table after the commits applied so far, sorted like the target's file
    /// ([`sort_rows`]); in a gathering cluster, empty outside process 0. Collective: in a
    /// cluster every process reads the tables at the same point.
    pub fn tables(&mut self) -> Result<Vec<Vec<Row>>> {
        let mut tables = self.engine.tables()?;
        for (target, rows) in self.pipeline.targets.iter().zip(&mut tables) {
            sort_rows(target, rows);
        }
        Ok(tables)
    }

    /// Every target's table rendered in `format` (without a CSV header), in the order
    /// [`Driver::tables`] sorts them, read from the states key by key so that no copy of a
    /// table's rows is held ([`RenderedTables`]; text past a few megabytes per worker goes to
    /// unnamed files in the existing directory `spill`). In a gathering cluster process 0 has
    /// every table, the others none. Collective, as [`Driver::tables`].
    pub fn rendered_tables(
        &mut self,
        format: OutputFormat,
        spill: &std::path::Path,
    ) -> Result<RenderedTables> {
        let targets: Arc<Vec<Target>> = Arc::new(self.pipeline.targets.clone());
        let render: RenderRows = Arc::new(move |t, rows: &mut Vec<Row>, text: &mut String| {
            let target = &targets[t];
            sort_rows(target, rows);
            io::render_rows_into(text, format, &target.schema, rows, false)
        });
        let gathers = self.options.cluster.is_some() && !self.options.partitioned_output;
        if !gathers {
            let spill = spill.to_path_buf();
            return self.engine.render_tables(Rendering {
                rows: render,
                spill,
            });
        }
        let mut tables = Vec::new();
        for (t, mut rows) in self.tables()?.into_iter().enumerate() {
            let mut text = String::new();
            render(t, &mut rows, &mut text)?;
            tables.push(RenderedTable::whole(text, rows.len()));
        }
        Ok(RenderedTables::whole(tables))
    }

    /// Saves every state into the checkpoint directory `dir`: all of it, or (`changes`, with
    /// [`Resume::track_changes`]) what changed since the last save.
    pub fn save(&mut self, dir: &Path, changes: bool) -> Result<()> {
        self.engine.save(dir, changes)
    }

    /// Sets target rows by hand before the next commit ([`Engine::edit`]); a failure leaves
    /// the states partly edited, so the driver must then be dropped.
    pub fn edit(&mut self, edits: Vec<crate::runtime::Edits>) -> Result<()> {
        self.engine.edit(edits)
    }

    /// Lets the engine complete and stops its workers.
    pub fn finish(self) -> Result<()> {
        self.engine.finish()
    }
}

fn to_text(report: &CommitReport) -> String {
    serde_json::to_string(report).expect("reports serialize")
}

/// A commit's file part that may be read in shares of its records, from `from` (to the end of
/// the file, or of its complete records when `growing`: a durable run's `Span::From`).
struct Splittable<'s> {
    table: usize,
    file: &'s std::path::PathBuf,
    format: crate::plan::Format,
    from: ReadFrom,
    growing: bool,
}

impl Splittable<'_> {
    /// `source`'s file part if it is at least `least` bytes (0: never) and may be split: files
    /// that feed periodic snapshots are read whole (a snapshot is checked as a whole), and so
    /// are Parquet files (read by row group).
    fn of<'s>(
        pipeline: &Pipeline,
        source: &'s CommitSource,
        least: u64,
    ) -> Result<Option<Splittable<'s>>> {
        let CommitSource::Table { table, file, span } = source else {
            return Ok(None);
        };
        let SourceInput::Files { format, .. } = &pipeline.tables[*table].input else {
            return Ok(None);
        };
        let (from, growing) = match span {
            Span::Whole => (ReadFrom { offset: 0, line: 1 }, false),
            Span::From(from) => (*from, true),
            _ => return Ok(None),
        };
        if least == 0
            || *format == crate::plan::Format::Parquet
            || new_input::feeds_periodic_snapshot(pipeline, *table)
            || crate::io::file_len(file)?.saturating_sub(from.offset) < least
        {
            return Ok(None);
        }
        Ok(Some(Splittable {
            table: *table,
            file,
            format: *format,
            from,
            growing,
        }))
    }

    /// The records that begin in `from..to`.
    fn share(&self, (offset, line): (u64, u64), to: u64) -> CommitSource {
        let from = ReadFrom { offset, line };
        self.read_as(Span::Share { from, to })
    }

    /// The file's records that `span` takes.
    fn read_as(&self, span: Span) -> CommitSource {
        CommitSource::Table {
            table: self.table,
            file: self.file.clone(),
            span,
        }
    }
}

/// The two halves of a commit's file part that [`Driver::read_idle`] reads on two threads, and
/// the guessed middle, where the first must end for the second to start at a record: `None` to
/// read the part whole (see [`Splittable::of`] and [`Options::read_halves_over`]).
type Halves = (CommitSource, CommitSource, u64);

fn halves_of(
    pipeline: &Pipeline,
    options: &Options,
    source: &CommitSource,
) -> Result<Option<Halves>> {
    let Some(part) = Splittable::of(pipeline, source, options.read_halves_over)? else {
        return Ok(None);
    };
    let (from, growing) = (part.from, part.growing);
    let Some(((middle, line), end)) =
        crate::io::halves(part.file, part.format, from.offset, from.line, growing)?
    else {
        return Ok(None);
    };
    let first = part.read_as(Span::Upto { from, to: middle });
    let at = ReadFrom {
        offset: middle,
        line,
    };
    // A growing file's second half is its complete records, as a read of the part takes them.
    let second = match growing {
        true => part.read_as(Span::From(at)),
        false => part.read_as(Span::Share { from: at, to: end }),
    };
    Ok(Some((first, second, middle)))
}

/// In a cluster, this process's share of a commit whose file is split among the processes:
/// `None` when the commit is read whole (by one process). Only whole files are split
/// (`Span::Whole`), at least [`Options::split_bytes`] long.
fn share_of(
    pipeline: &Pipeline,
    options: &Options,
    source: &CommitSource,
    processes: usize,
    process: usize,
) -> Result<Option<CommitSource>> {
    let whole = matches!(
        source,
        CommitSource::Table {
            span: Span::Whole,
            ..
        }
    );
    if processes < 2 || !whole {
        return Ok(None);
    }
    let Some(part) = Splittable::of(pipeline, source, options.split_bytes)? else {
        return Ok(None);
    };
    let points = crate::io::split_points(part.file, part.format, processes)?;
    Ok(Some(part.share(points[process], points[process + 1].0)))
}

//! One commit's input: which file it reads, and how its rows become each target's input —
//! events for AUTO CDC flows, a full snapshot for snapshot flows, rows for REPLACE USING flows —
//! after the flows' projections and the targets' expectations.

use super::expect::{self, ExpectationCount, Verdict};
use super::flows::{FlowKind, FlowRef};
use super::metrics::{FlowCommitMetrics, TableCommitMetrics};
use super::Quarantined;
use crate::ingest::{self, SourceCommit};
use crate::io::{self, RowError, SourceRow};
use crate::plan::{
    CdcFlow, Expectation, Pipeline, ReplaceFlow, SnapshotFlow, SnapshotSource, TargetKind,
};
use crate::prepare::to_event;
use crate::runtime::{CommitEvents, Snapshot};
use crate::value::{Datum, Decoded, Row, Schema};
use crate::Result;
use std::collections::HashMap;
use std::path::PathBuf;

/// What a commit reads.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CommitSource {
    /// One input file of a `read_files` source table.
    Table {
        /// Index into [`Pipeline::tables`].
        table: usize,
        /// The file.
        file: PathBuf,
        /// What of the file the commit reads.
        span: Span,
    },
    /// One versioned snapshot file of a snapshot flow.
    Snapshot {
        /// Index into [`Pipeline::snapshot_flows`].
        flow: usize,
        /// The version from the file name.
        version: i64,
        /// The file.
        file: PathBuf,
        /// Whether the version is not newer than the last applied one (D12): it is skipped.
        skipped: bool,
    },
}

/// What part of a file a commit reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Span {
    /// All of it.
    Whole,
    /// The complete lines from this point on (durable runs; a writer may be appending).
    From(ReadFrom),
    /// The records that begin in `from..to`: one process's share of a file split among the
    /// processes of a cluster ([`crate::io::split_points`]).
    Share {
        /// The first record's offset and line.
        from: ReadFrom,
        /// Where the share ends.
        to: u64,
    },
    /// The complete records from `from` that end by `to` (just past a `\n`): the first half of
    /// a part read in halves, whose middle `to` is a guess ([`crate::io::halves`]). The
    /// commit's end (`SourceCommit::end`) is where the records read end: short of `to` when a
    /// record spans it.
    Upto {
        /// The first record's offset and line.
        from: ReadFrom,
        /// The guessed middle.
        to: u64,
    },
    /// This version of a Delta table source (the commit's `file` is the table's directory):
    /// the rows it added, or its changes ([`crate::plan::DeltaRead`]).
    Version(u64),
    /// Every row a Delta table source holds at this version: a snapshot flow's read, or a
    /// change-feed stream's first commit.
    TableAt(u64),
}

impl Span {
    /// The Delta table version the span reads, if it reads one.
    pub fn delta_version(self) -> Option<u64> {
        match self {
            Span::Version(v) | Span::TableAt(v) => Some(v),
            _ => None,
        }
    }
}

/// Where a read starts: a record boundary and its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReadFrom {
    /// Byte offset (the start of a line).
    pub offset: u64,
    /// 1-based line number of that line.
    pub line: u64,
}

impl CommitSource {
    /// The file the commit reads.
    pub fn file(&self) -> &PathBuf {
        match self {
            CommitSource::Table { file, .. } | CommitSource::Snapshot { file, .. } => file,
        }
    }
}

/// The commits of a run, in order: every `VALUES` table's rows, every source table's files
/// (tables in pipeline order), then
/// every Delta table source's versions that change data (a table read as snapshots: its newest
/// such version), then every snapshot flow's versioned files in increasing version order (a
/// version that repeats is skipped, D12), then the versions `WITH VERSION` flows choose.
pub fn sources(pipeline: &Pipeline) -> Result<Vec<CommitSource>> {
    let values = ingest::values_inputs(pipeline).into_iter();
    let mut commits: Vec<CommitSource> = values
        .chain(ingest::input_files(pipeline)?)
        .map(|(table, file)| CommitSource::Table {
            table,
            file,
            span: Span::Whole,
        })
        .collect();
    for (table, dir) in ingest::delta_inputs(pipeline) {
        let versions = ingest::delta_versions(pipeline, table, dir, None)?;
        commits.extend(versions.into_iter().map(|span| CommitSource::Table {
            table,
            file: dir.to_path_buf(),
            span,
        }));
    }
    for (flow, sf) in pipeline.snapshot_flows.iter().enumerate() {
        let SnapshotSource::Files {
            path,
            version: regex,
            ..
        } = &sf.source
        else {
            continue;
        };
        let mut last: Option<i64> = None;
        for (version, file) in io::versioned_files(path, regex)? {
            let skipped = last.is_some_and(|l| version <= l);
            last = Some(last.map_or(version, |l| l.max(version)));
            commits.push(CommitSource::Snapshot {
                flow,
                version,
                file,
                skipped,
            });
        }
    }
    let mut skipped = super::versions::Skipped::default();
    commits.extend(super::versions::commits(pipeline, |_| None, &mut skipped)?);
    Ok(commits)
}

/// A commit's input for the runtime, plus what was set aside and counted.
pub struct Prepared {
    /// The runtime's input (its timestamp is set by the caller).
    pub input: CommitEvents,
    /// Invalid rows, in line order.
    pub invalid: Vec<Quarantined>,
    /// Expectation counts of source tables: `(table, metrics)`.
    pub tables: Vec<(usize, TableCommitMetrics)>,
    /// Snapshot versions skipped: `(snapshot flow, version)`.
    pub skipped: Vec<(usize, i64)>,
    /// For a [`ReadFrom`] read: where the complete lines read end.
    pub end: Option<ReadFrom>,
    /// The rows of published source tables ([`crate::plan::SourceTable::published`]):
    /// `(table, rows)`.
    pub appended: Vec<(usize, Vec<Row>)>,
}

/// Reads and prepares commit `version` from `source`; metrics entries go to `metrics`
/// (indexed like `flows`). With `skip_once`, `ONCE` flows take nothing (they ran in an earlier
/// run, SPEC 3.13).
pub fn prepare(
    pipeline: &Pipeline,
    flows: &[FlowRef],
    source: &CommitSource,
    version: u64,
    skip_once: bool,
    metrics: &mut [Vec<FlowCommitMetrics>],
) -> Result<Prepared> {
    let (flow, v, skipped) = match source {
        CommitSource::Table { table, file, span } => {
            let commit = ingest::read_commit(pipeline, *table, file.clone(), *span)?;
            let read = prepare_read(
                pipeline, flows, *table, &commit, version, skip_once, metrics,
            );
            return read.map(|prepared| Prepared {
                end: commit.end,
                ..prepared
            });
        }
        CommitSource::Snapshot {
            flow,
            version: v,
            skipped,
            ..
        } => (*flow, *v, *skipped),
    };
    let mut prepared = Prepared::empty(pipeline);
    let mut step = Step {
        pipeline,
        file: source.file().clone(),
        version,
        skip_once,
        prepared: &mut prepared,
    };
    let f = position(flows, FlowKind::Snapshot(flow));
    let entry = step.entry(0);
    if skip_once && pipeline.snapshot_flows[flow].once {
        // Nothing to do: the flow ran once, in an earlier run.
    } else if skipped {
        step.prepared.skipped.push((flow, v));
        metrics[f].push(FlowCommitMetrics {
            num_skipped_snapshots: 1,
            ..entry
        });
    } else {
        let rows = step.snapshot_rows(flow, v)?;
        metrics[f].push(step.snapshot(flow, v, rows, entry)?);
    }
    prepared.invalid.sort_by_key(|q| q.error.line);
    Ok(prepared)
}

/// Prepares commit `version`'s rows of table `table` (`commit`, already read and derived: a
/// file's, a Delta version's, or a target's change data feed in its own pipeline).
pub fn prepare_read(
    pipeline: &Pipeline,
    flows: &[FlowRef],
    table: usize,
    commit: &SourceCommit,
    version: u64,
    skip_once: bool,
    metrics: &mut [Vec<FlowCommitMetrics>],
) -> Result<Prepared> {
    let mut prepared = Prepared::empty(pipeline);
    let mut step = Step {
        pipeline,
        file: commit.file.clone(),
        version,
        skip_once,
        prepared: &mut prepared,
    };
    step.table_commit(flows, table, commit, metrics)?;
    prepared.invalid.sort_by_key(|q| q.error.line);
    Ok(prepared)
}

impl Prepared {
    fn empty(pipeline: &Pipeline) -> Self {
        let n = pipeline.targets.len();
        Prepared {
            input: CommitEvents {
                events: vec![Vec::new(); n],
                snapshots: vec![None; n],
                rows: vec![Vec::new(); n],
                timestamp: 0,
            },
            invalid: Vec::new(),
            tables: Vec::new(),
            skipped: Vec::new(),
            end: None,
            appended: Vec::new(),
        }
    }
}

/// Whether a flow is `ONCE`.
fn once(pipeline: &Pipeline, kind: FlowKind) -> bool {
    match kind {
        FlowKind::AutoCdc(i) => pipeline.flows[i].once,
        FlowKind::Snapshot(i) => pipeline.snapshot_flows[i].once,
        FlowKind::ReplaceUsing(i) => pipeline.replace_flows[i].once,
    }
}

fn position(flows: &[FlowRef], kind: FlowKind) -> usize {
    flows
        .iter()
        .position(|f| f.kind == kind)
        .expect("every flow is listed")
}

/// The tables that read table `first`'s file in this commit, directly or through others.
fn involved(pipeline: &Pipeline, first: usize) -> Vec<bool> {
    let mut involved = vec![false; pipeline.tables.len()];
    involved[first] = true;
    for (t, table) in pipeline.tables.iter().enumerate().skip(first + 1) {
        involved[t] = table.input.parents().iter().any(|&p| involved[p]);
    }
    involved
}

struct Step<'a> {
    pipeline: &'a Pipeline,
    file: PathBuf,
    version: u64,
    skip_once: bool,
    prepared: &'a mut Prepared,
}

impl Step<'_> {
    fn entry(&self, input_rows: usize) -> FlowCommitMetrics {
        FlowCommitMetrics {
            commit_version: self.version,
            source_file: self.file.display().to_string(),
            num_input_rows: input_rows as u64,
            ..Default::default()
        }
    }

    fn invalid(&mut self, owner: &str, line: u64, reason: String, row: &Row, schema: &Schema) {
        self.prepared.invalid.push(Quarantined {
            owner: owner.to_string(),
            file: self.file.clone(),
            error: RowError {
                line,
                column: None,
                reason: format!("flow `{owner}`: {reason}"),
                raw: ingest::row_to_json(row, schema),
            },
        });
    }

    /// Checks a flow's row against the expectations of target `target`.
    fn expect(
        &self,
        target: usize,
        expectations: &[Expectation],
        counts: &mut [ExpectationCount],
        row: &SourceRow,
        schema: &Schema,
    ) -> Result<bool> {
        match expect::check(expectations, &row.row, counts) {
            Verdict::Keep => Ok(true),
            Verdict::Drop => Ok(false),
            Verdict::Fail(name) => {
                let owner = &self.pipeline.targets[target].name;
                Err(ingest::expectation_failed(&name, owner, &row.row, schema)
                    .at_line(row.line)
                    .in_file(&self.file))
            }
        }
    }

    fn table_commit(
        &mut self,
        flows: &[FlowRef],
        table: usize,
        commit: &SourceCommit,
        metrics: &mut [Vec<FlowCommitMetrics>],
    ) -> Result<()> {
        for (t, error) in &commit.invalid {
            let owner = owner_of_table(self.pipeline, *t);
            self.prepared.invalid.push(Quarantined {
                owner,
                file: self.file.clone(),
                error: error.clone(),
            });
        }
        for (t, counts) in commit
            .expectations
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.is_empty())
        {
            let entry = TableCommitMetrics {
                commit_version: self.version,
                source_file: self.file.display().to_string(),
                expectations: counts.clone(),
            };
            self.prepared.tables.push((t, entry));
        }
        for (t, rows) in commit.rows.iter().enumerate() {
            if self.pipeline.tables[t].published.is_some() && !rows.is_empty() {
                let rows = rows.iter().map(|r| r.row.clone()).collect();
                self.prepared.appended.push((t, rows));
            }
        }
        let involved = involved(self.pipeline, table);
        for (f, flow) in flows.iter().enumerate() {
            if self.skip_once && once(self.pipeline, flow.kind) {
                continue;
            }
            let entry = match flow.kind {
                FlowKind::AutoCdc(i) if involved[self.pipeline.flows[i].source] => self.cdc(
                    &self.pipeline.flows[i],
                    &commit.rows[self.pipeline.flows[i].source],
                )?,
                FlowKind::Snapshot(i) => match self.pipeline.snapshot_flows[i].source {
                    SnapshotSource::Table { table: st } if involved[st] => {
                        let rows = self.periodic_rows(i, &commit.rows[st]);
                        let entry = self.entry(commit.rows[st].len());
                        self.snapshot(i, self.version as i64, rows, entry)?
                    }
                    _ => continue,
                },
                FlowKind::ReplaceUsing(i) if involved[self.pipeline.replace_flows[i].source] => {
                    let rf = &self.pipeline.replace_flows[i];
                    self.replace(rf, &commit.rows[rf.source])?
                }
                _ => continue,
            };
            metrics[f].push(entry);
        }
        Ok(())
    }

    fn cdc(&mut self, flow: &CdcFlow, rows: &[SourceRow]) -> Result<FlowCommitMetrics> {
        let mut entry = self.entry(rows.len());
        let mut counts = expect::counts(&flow.expectations);
        let target = &self.pipeline.targets[flow.target];
        let schema = &self.pipeline.tables[flow.source].schema;
        // Room made once: a commit's events are large, and doubling their way to it copied them.
        self.prepared.input.events[flow.target].reserve(rows.len());
        // Each row decoded into one buffer reused for the commit's rows (`RowRef::decode_into`);
        // a row of more values than it holds is unpacked.
        let mut values = [Datum::Null; 16];
        for row in rows {
            if !self.expect(flow.target, &flow.expectations, &mut counts, row, schema)? {
                continue;
            }
            let wide;
            let datums = match row.row.as_row_ref().decode_into(&mut values) {
                Some(n) => &values[..n],
                None => {
                    wide = row.row.unpack();
                    &wide[..]
                }
            };
            match to_event(
                flow,
                target,
                schema,
                &Decoded::new(row.row.as_row_ref(), datums),
            ) {
                Ok(event) => self.prepared.input.events[flow.target].push(event),
                Err(bad) => {
                    let reason = format!("{}: {}", bad.column, bad.reason);
                    self.invalid(&flow.name, row.line, reason, &row.row, schema);
                }
            }
        }
        entry.expectations = counts;
        Ok(entry)
    }

    /// A periodic snapshot: the table's rows of this commit through the flow's projection.
    fn periodic_rows(&mut self, i: usize, rows: &[SourceRow]) -> Vec<SourceRow> {
        let sf = &self.pipeline.snapshot_flows[i];
        let SnapshotSource::Table { table } = sf.source else {
            return Vec::new();
        };
        let input = &self.pipeline.tables[table].schema;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            match ingest::project(
                sf.projection.as_deref(),
                sf.filter.as_ref(),
                &sf.schema,
                &row.row,
            ) {
                Ok(projected) => {
                    out.extend(
                        projected
                            .into_row(|| row.row.clone())
                            .map(|kept| SourceRow {
                                line: row.line,
                                row: kept,
                            }),
                    )
                }
                Err((column, reason)) => {
                    self.invalid(
                        &sf.name,
                        row.line,
                        format!("column `{column}`: {reason}"),
                        &row.row,
                        input,
                    );
                }
            }
        }
        out
    }

    /// A snapshot's rows: a versioned file's, or what a `WITH VERSION` flow's snapshot query
    /// returns for `version`. Rows that cannot be read are set aside.
    fn snapshot_rows(&mut self, i: usize, version: i64) -> Result<Vec<SourceRow>> {
        let sf = &self.pipeline.snapshot_flows[i];
        let read = match &sf.source {
            SnapshotSource::Files {
                format,
                header,
                file_schema,
                ..
            } => {
                let rows = ingest::read_whole(&self.file, *format, *header, file_schema)?;
                vec![(self.file.clone(), rows)]
            }
            SnapshotSource::Versioned(v) => {
                let queries = crate::warehouse::snapshot_versions::Queries::new(v)?;
                let what = format!("flow `{}`, snapshot version {version}", sf.name);
                let read = (queries.read(version))
                    .map_err(|e| super::versions::located(e, &what, self.pipeline, sf.line))?;
                read.into_iter().map(|f| (f.file, f.rows)).collect()
            }
            SnapshotSource::Table { .. } => return Ok(Vec::new()),
        };
        let mut rows = Vec::new();
        for (file, read) in read {
            for row in read {
                match row {
                    Ok(row) => rows.push(row),
                    Err(e) => self.prepared.invalid.push(Quarantined {
                        owner: sf.name.clone(),
                        file: file.clone(),
                        error: e,
                    }),
                }
            }
        }
        Ok(rows)
    }

    /// Checks a snapshot's rows (expectations, duplicate keys) and hands it to the target.
    fn snapshot(
        &mut self,
        i: usize,
        version: i64,
        rows: Vec<SourceRow>,
        mut entry: FlowCommitMetrics,
    ) -> Result<FlowCommitMetrics> {
        let sf: &SnapshotFlow = &self.pipeline.snapshot_flows[i];
        entry.num_input_rows = rows.len() as u64;
        let mut counts = expect::counts(&sf.expectations);
        let mut seen: HashMap<Row, u64> = HashMap::new();
        let mut kept = Vec::with_capacity(rows.len());
        // A REPLACE WHERE target holds a multiset of rows: no key to repeat.
        let keyed = self.pipeline.targets[sf.target].replace_where.is_none();
        for row in rows {
            if !self.expect(sf.target, &sf.expectations, &mut counts, &row, &sf.schema)? {
                continue;
            }
            if !keyed {
                kept.push(row.row);
                continue;
            }
            let key = row.row.project(&sf.keys);
            if let Some(first) = seen.get(&key) {
                let names: Vec<&str> = sf
                    .keys
                    .iter()
                    .map(|&k| sf.schema.columns[k].name.as_str())
                    .collect();
                let reason = format!(
                    "KEYS ({}): duplicate key in snapshot version {version} (first at line {first})",
                    names.join(", ")
                );
                self.invalid(&sf.name, row.line, reason, &row.row, &sf.schema);
                continue;
            }
            seen.insert(key, row.line);
            kept.push(row.row);
        }
        entry.expectations = counts;
        self.prepared.input.snapshots[sf.target] = Some(Snapshot {
            version,
            rows: kept,
        });
        Ok(entry)
    }

    fn replace(&mut self, rf: &ReplaceFlow, rows: &[SourceRow]) -> Result<FlowCommitMetrics> {
        let mut entry = self.entry(rows.len());
        let mut counts = expect::counts(&rf.expectations);
        let target = &self.pipeline.targets[rf.target];
        let input = &self.pipeline.tables[rf.source].schema;
        let TargetKind::ReplaceUsing { sequence } = target.kind else {
            return Ok(entry);
        };
        for row in rows {
            let projected = match ingest::project(
                rf.projection.as_deref(),
                rf.filter.as_ref(),
                &target.schema,
                &row.row,
            ) {
                Ok(projected) => match projected.into_row(|| row.row.clone()) {
                    Some(kept) => SourceRow {
                        line: row.line,
                        row: kept,
                    },
                    None => continue,
                },
                Err((column, reason)) => {
                    self.invalid(
                        &rf.name,
                        row.line,
                        format!("column `{column}`: {reason}"),
                        &row.row,
                        input,
                    );
                    continue;
                }
            };
            if projected.row.get(sequence).is_none_or(Datum::is_null) {
                let reason = "SEQUENCE BY: the sequence value is NULL".to_string();
                self.invalid(&rf.name, row.line, reason, &row.row, input);
                continue;
            }
            if self.expect(
                rf.target,
                &rf.expectations,
                &mut counts,
                &projected,
                &target.schema,
            )? {
                self.prepared.input.rows[rf.target].push(projected.row);
            }
        }
        entry.expectations = counts;
        Ok(entry)
    }
}

/// The flow that reads table `t` directly (the first one of any kind), or the table's own name.
pub fn owner_of_table(pipeline: &Pipeline, t: usize) -> String {
    let cdc = pipeline
        .flows
        .iter()
        .find(|f| f.source == t)
        .map(|f| f.name.clone());
    let replace = || {
        pipeline
            .replace_flows
            .iter()
            .find(|f| f.source == t)
            .map(|f| f.name.clone())
    };
    let snapshot = || {
        pipeline
            .snapshot_flows
            .iter()
            .find(|f| matches!(f.source, SnapshotSource::Table { table } if table == t))
            .map(|f| f.name.clone())
    };
    cdc.or_else(replace)
        .or_else(snapshot)
        .unwrap_or_else(|| pipeline.tables[t].name.clone())
}

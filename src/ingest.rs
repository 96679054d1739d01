//! Sources → commits: each input file of a `read_files` table is one commit (files of a
//! directory in name order; tables in pipeline order), and so is each version of a Delta table
//! source that adds rows, and each `VALUES` table's rows. Tables reading `STREAM(other)` receive the projected, filtered rows of
//! the same commit. Text files are read by `io`; Parquet files whole, here, through
//! `delta::read_parquet_file` (the Arrow reader lives with the Delta code, which `io` must not
//! import: `delta` uses `io`'s name checks).

use crate::driver::expect::{self, ExpectationCount, Verdict};
use crate::driver::{ReadFrom, Span};
use crate::engine::changefeed::{ChangeType, FEED_COLUMNS};
use crate::expr::Expr;
use crate::io::{self, RowError, SourceRow};
use crate::plan::{DeltaRead, Format, Pipeline, SnapshotSource, SourceInput};
use crate::value::{Packer, Row, Schema, Value};
use crate::Result;
use std::path::{Path, PathBuf};

/// One commit's rows, per source table.
#[derive(Debug)]
pub struct SourceCommit {
    /// The input file this commit read.
    pub file: PathBuf,
    /// Rows per table (indexed like [`Pipeline::tables`]; empty for tables not involved).
    pub rows: Vec<Vec<SourceRow>>,
    /// Rows that could not be read or projected, with the table they belong to.
    pub invalid: Vec<(usize, RowError)>,
    /// Per table, the counts of its expectations in this commit (empty when not involved).
    pub expectations: Vec<Vec<ExpectationCount>>,
    /// For a read from an offset: where the complete lines read end (byte offset, and the
    /// line number there).
    pub end: Option<ReadFrom>,
}

impl SourceCommit {
    /// A commit of `file` with no rows yet, for every table of `pipeline`.
    fn empty(pipeline: &Pipeline, file: PathBuf) -> Self {
        SourceCommit {
            rows: vec![Vec::new(); pipeline.tables.len()],
            invalid: Vec::new(),
            expectations: vec![Vec::new(); pipeline.tables.len()],
            file,
            end: None,
        }
    }
}

/// Rows that have no lines (a Parquet file's, a Delta table's, `VALUES`), numbered from 1 as
/// lines are in a text file, so messages can point at them.
pub(crate) fn numbered(rows: impl IntoIterator<Item = Row>) -> impl Iterator<Item = SourceRow> {
    (rows.into_iter().enumerate()).map(|(i, row)| SourceRow {
        line: i as u64 + 1,
        row,
    })
}

/// The input files of `pipeline` in commit order, each with the table it feeds. Listing them
/// first reports a missing input before anything is read.
pub fn input_files(pipeline: &Pipeline) -> Result<Vec<(usize, PathBuf)>> {
    let mut files = Vec::new();
    for (t, table) in pipeline.tables.iter().enumerate() {
        if let SourceInput::Files { path, .. } = &table.input {
            files.extend(io::list_files(path)?.into_iter().map(|f| (t, f)));
        }
    }
    Ok(files)
}

/// The `VALUES` tables of `pipeline`, each with the name its one commit reads as a file
/// ([`values_key`] of the pipeline file).
pub fn values_inputs(pipeline: &Pipeline) -> Vec<(usize, PathBuf)> {
    (pipeline.tables.iter().enumerate())
        .filter(|(_, table)| matches!(table.input, SourceInput::Values { .. }))
        .map(|(t, table)| (t, values_key(&pipeline.file, &table.name)))
        .collect()
}

/// `<pipeline file>#<table>`: where the rows of `VALUES` table `table` come from, as a file
/// name no file has (messages name it; durable runs record it as read).
pub fn values_key(pipeline_file: &Path, table: &str) -> PathBuf {
    PathBuf::from(format!("{}#{table}", pipeline_file.display()))
}

/// The Delta table sources of `pipeline`: each table and its directory.
pub fn delta_inputs(pipeline: &Pipeline) -> Vec<(usize, &Path)> {
    (pipeline.tables.iter().enumerate())
        .filter_map(|(t, table)| match &table.input {
            SourceInput::Delta { dir, .. } => Some((t, dir.as_path())),
            _ => None,
        })
        .collect()
}

/// The commits a run reads of Delta source table `t` (at `dir`), each a version span, when
/// `read` versions were read before (`None`: none yet). A stream takes each version that
/// changes data, from the one after those read, else from its `startingVersion`, else from 0;
/// a table read as snapshots its newest such version, whole; a change-feed stream without a
/// starting version begins with the latest version whole (Spark's initial snapshot).
pub fn delta_versions(
    pipeline: &Pipeline,
    t: usize,
    dir: &Path,
    read: Option<u64>,
) -> Result<Vec<Span>> {
    let log = crate::delta::Log::open(dir)?;
    let SourceInput::Delta { read: how, .. } = pipeline.tables[t].input else {
        let message = format!(
            "table `{}` does not read a Delta table",
            pipeline.tables[t].name
        );
        return Err(crate::Error::new(crate::ErrorKind::Internal, message));
    };
    let each = |from: u64| -> Result<Vec<Span>> {
        Ok(log
            .data_versions(from)?
            .into_iter()
            .map(Span::Version)
            .collect())
    };
    match how {
        DeltaRead::Snapshots => {
            let newest = log.last_data_version(read.unwrap_or(0))?;
            Ok(newest.map(Span::TableAt).into_iter().collect())
        }
        DeltaRead::Appends {
            starting_version, ..
        } => each(read.or(starting_version).unwrap_or(0)),
        DeltaRead::ChangeFeed { starting_version } => match read.or(starting_version) {
            Some(from) => each(from),
            None => Ok(vec![Span::TableAt(log.latest_version()?)]),
        },
    }
}

/// Reads one input file of table `t` as a commit: the part of it `span` says.
pub fn read_commit(
    pipeline: &Pipeline,
    t: usize,
    file: PathBuf,
    span: Span,
) -> Result<SourceCommit> {
    if let (SourceInput::Delta { table, read, .. }, Some(version)) =
        (&pipeline.tables[t].input, span.delta_version())
    {
        let whole = matches!(span, Span::TableAt(_));
        return read_version(pipeline, t, (file, table), version, whole, *read);
    }
    if let SourceInput::Values { rows, .. } = &pipeline.tables[t].input {
        let mut commit = SourceCommit::empty(pipeline, file);
        commit.rows[t] = numbered(rows.iter().cloned()).collect();
        derive(pipeline, t, &mut commit)?;
        return Ok(commit);
    }
    let SourceInput::Files {
        format,
        header,
        file_schema,
        ..
    } = &pipeline.tables[t].input
    else {
        return Err(crate::Error::new(
            crate::ErrorKind::Internal,
            format!("table `{}` does not read files", pipeline.tables[t].name),
        ));
    };
    let mut commit = SourceCommit::empty(pipeline, file);
    if *format == Format::Parquet {
        let from = match span {
            Span::From(from) => from.offset,
            _ => 0,
        };
        commit.rows[t] = read_parquet(&commit.file, from, file_schema)?;
        let len = io::file_len(&commit.file)?;
        let line = commit.rows[t].len() as u64 + 1;
        commit.end = Some(ReadFrom { offset: len, line });
        derive(pipeline, t, &mut commit)?;
        return Ok(commit);
    }
    let rows = match span {
        Span::Whole => io::read_file(&commit.file, *format, *header, file_schema)?,
        Span::Share { from, to } => io::read_file_range(
            &commit.file,
            *format,
            *header,
            file_schema,
            from.offset,
            from.line,
            to,
        )?,
        Span::Version(_) | Span::TableAt(_) => {
            let message = format!(
                "table `{}` does not read a Delta table",
                pipeline.tables[t].name
            );
            return Err(crate::Error::new(crate::ErrorKind::Internal, message));
        }
        Span::From(from) | Span::Upto { from, .. } => {
            let (path, at) = (&commit.file, (from.offset, from.line));
            let tail = match span {
                Span::Upto { to, .. } => {
                    io::read_file_upto(path, *format, *header, file_schema, at, to)?
                }
                _ => io::read_file_from(path, *format, *header, file_schema, at.0, at.1)?,
            };
            commit.end = Some(ReadFrom {
                offset: tail.end,
                line: tail.end_line,
            });
            tail.rows
        }
    };
    // Collected in place (the rows are smaller than the reads), as `shape` keeps them: a
    // vector of 10,000 rows grown by doubling moved them about as many times again, each
    // time to pages never touched before.
    let invalid = &mut commit.invalid;
    commit.rows[t] = (rows.into_iter())
        .filter_map(|read| read.map_err(|e| invalid.push((t, e))).ok())
        .collect();
    derive(pipeline, t, &mut commit)?;
    Ok(commit)
}

/// Every row of one file of any format, as a whole-file read gives it (a snapshot's file).
pub fn read_whole(
    file: &Path,
    format: Format,
    header: bool,
    schema: &Schema,
) -> Result<Vec<std::result::Result<SourceRow, RowError>>> {
    match format {
        Format::Parquet => Ok(read_parquet(file, 0, schema)?.into_iter().map(Ok).collect()),
        _ => io::read_file(file, format, header, schema),
    }
}

/// The rows of the Parquet file `file`, numbered from 1. `from` is what a durable run read of it
/// before (0 or its whole length): a Parquet file is read whole, once, so a file read before
/// that has any other length was rewritten, which input files never are.
fn read_parquet(file: &Path, from: u64, schema: &Schema) -> Result<Vec<SourceRow>> {
    if from > 0 {
        let message = format!(
            "this Parquet file changed after a run read its {from} bytes: input files are \
             only added, never rewritten; write a new file, or reprocess all input with \
             --full-refresh"
        );
        return Err(crate::Error::new(crate::ErrorKind::Format, message).in_file(file));
    }
    let rows = crate::delta::read_parquet_file(file, schema)?;
    Ok(numbered(rows).collect())
}

/// One commit's changes of a target (`rows`: its columns, then the change data feed's three)
/// as the commit of table `t`, which reads the target's feed in the same pipeline, derived
/// through the tables reading it; `label` names the feed in messages, as a file would be.
pub fn feed_commit(
    pipeline: &Pipeline,
    t: usize,
    label: PathBuf,
    rows: Vec<Row>,
) -> Result<SourceCommit> {
    let mut commit = SourceCommit::empty(pipeline, label);
    commit.rows[t] = numbered(rows).collect();
    derive(pipeline, t, &mut commit)?;
    Ok(commit)
}

/// Reads `version` of the Delta table at `dir` (table `t`, the warehouse's `name`) as a commit,
/// as `read` says: the rows it adds (a stream), its changes (a change-feed stream), or with
/// `whole` every row the table holds then (a snapshot, or a change-feed stream's first commit,
/// its rows `insert`s of that version). Rows are numbered from 1, as lines are in a file. For a
/// stream, a version that is not an append fails, as Spark's does, unless the stream skips
/// such versions (`skipChangeCommits`).
fn read_version(
    pipeline: &Pipeline,
    t: usize,
    (dir, name): (PathBuf, &str),
    version: u64,
    whole: bool,
    read: DeltaRead,
) -> Result<SourceCommit> {
    let schema = &pipeline.tables[t].schema;
    let rows = match read {
        DeltaRead::ChangeFeed { .. } => {
            let columns = schema.columns.len().saturating_sub(FEED_COLUMNS);
            let table_schema = Schema {
                columns: schema.columns[..columns].to_vec(),
            };
            let log = crate::delta::Log::open(&dir)?;
            match whole {
                false => log.version_changes(version, &table_schema)?,
                true => {
                    let timestamp = log.timestamp(version)?;
                    let rows = snapshot_rows(&dir, name, Some(version), &table_schema)?;
                    (rows.into_iter())
                        .map(|mut row| {
                            row.push(Value::Str(ChangeType::Insert.as_str().to_string()));
                            row.push(Value::Int(version as i64));
                            row.push(Value::Timestamp(timestamp));
                            row
                        })
                        .collect()
                }
            }
        }
        _ if whole => snapshot_rows(&dir, name, Some(version), schema)?,
        DeltaRead::Appends {
            skip_change_commits,
            ..
        } => match crate::delta::Log::open(&dir)?.version_rows(version, schema)? {
            crate::delta::VersionRows::Appended(rows) => rows,
            crate::delta::VersionRows::Changed(_) if skip_change_commits => Vec::new(),
            crate::delta::VersionRows::Changed(operation) => {
                let what = operation.map_or_else(|| "a change".to_string(), |o| format!("a {o}"));
                let message = format!(
                    "version {version} of {name} is {what} that removes rows, not an append: a \
                     stream of a table reads appended rows only; read the table again from its \
                     current version (--full-refresh), skip such versions (WITH \
                     (skipChangeCommits = true)) or read its change data feed (WITH \
                     (readChangeFeed = true))"
                );
                return Err(crate::Error::new(crate::ErrorKind::Format, message).in_file(&dir));
            }
        },
        DeltaRead::Snapshots => snapshot_rows(&dir, name, Some(version), schema)?,
    };
    let mut commit = SourceCommit::empty(pipeline, dir);
    commit.rows[t] = numbered(rows).collect();
    derive(pipeline, t, &mut commit)?;
    Ok(commit)
}

/// Every row of the Delta table at `dir` (the warehouse's `name`) at `version` (the latest
/// without one), whose columns must still be `schema`'s, the ones the pipeline was planned with.
pub(crate) fn snapshot_rows(
    dir: &Path,
    name: &str,
    version: Option<u64>,
    schema: &Schema,
) -> Result<Vec<Row>> {
    let table = crate::delta::Table::open_version(dir, version)?;
    if table.schema() != schema {
        let which = version.map_or_else(
            || "the latest version".to_string(),
            |v| format!("version {v}"),
        );
        let message = format!(
            "{which} of {name} has the columns ({}), not ({schema}) as when the pipeline was \
             planned; run it again",
            table.schema()
        );
        return Err(crate::Error::new(crate::ErrorKind::Format, message).in_file(dir));
    }
    table.rows()
}

/// Applies projections, filters and expectations, from the file-backed table `first` to every
/// table reading it (directly or through others; tables are in dependency order). A violated
/// `FAIL UPDATE` expectation fails the commit.
fn derive(pipeline: &Pipeline, first: usize, commit: &mut SourceCommit) -> Result<()> {
    let raw = std::mem::take(&mut commit.rows[first]);
    commit.rows[first] = shape(pipeline, first, raw, commit)?;
    // Per table, the reads of its rows still to come: one per table reading it, and one for
    // the flows reading it, or publishing it, after this. The last read takes the rows rather
    // than a copy.
    let mut reads: Vec<usize> = (0..pipeline.tables.len())
        .map(|t| usize::from(read_by_flows(pipeline, t) || pipeline.tables[t].published.is_some()))
        .collect();
    for table in &pipeline.tables {
        for &parent in table.input.parents() {
            reads[parent] += 1;
        }
    }
    for (t, table) in pipeline.tables.iter().enumerate().skip(first + 1) {
        let mut input = Vec::new();
        for &parent in table.input.parents() {
            reads[parent] -= 1;
            match reads[parent] {
                // One parent (the common case) hands its rows over without a copy.
                0 if input.is_empty() => input = std::mem::take(&mut commit.rows[parent]),
                0 => input.append(&mut commit.rows[parent]),
                _ => input.extend_from_slice(&commit.rows[parent]),
            }
        }
        if !input.is_empty() {
            commit.rows[t] = shape(pipeline, t, input, commit)?;
        }
    }
    Ok(())
}

/// Whether a flow reads table `t`'s rows of a commit.
fn read_by_flows(pipeline: &Pipeline, t: usize) -> bool {
    pipeline.flows.iter().any(|f| f.source == t)
        || pipeline.replace_flows.iter().any(|f| f.source == t)
        || (pipeline.snapshot_flows.iter())
            .any(|f| matches!(f.source, SnapshotSource::Table { table } if table == t))
}

/// Filters and projects rows of table `t`'s input into its schema, then checks the table's
/// expectations.
fn shape(
    pipeline: &Pipeline,
    t: usize,
    rows: Vec<SourceRow>,
    commit: &mut SourceCommit,
) -> Result<Vec<SourceRow>> {
    let table = &pipeline.tables[t];
    let input_schema = match &table.input {
        SourceInput::Files { file_schema, .. } => file_schema,
        SourceInput::Table(parent) => &pipeline.tables[*parent].schema,
        SourceInput::Union(_) => &table.schema,
        SourceInput::Delta { .. } | SourceInput::TargetFeed(_) => &table.schema,
        SourceInput::Values { schema, .. } => schema,
    };
    let mut counts = expect::counts(&table.expectations);
    let (invalid, file) = (&mut commit.invalid, &commit.file);
    // Kept in the rows' own vector (collected in place), not in a new one.
    let kept = (rows.into_iter()).filter_map(|source| {
        let line = source.line;
        let projected = project(
            table.projection.as_deref(),
            table.filter.as_ref(),
            &table.schema,
            &source.row,
        );
        let row = match projected {
            Ok(projected) => projected.into_row(|| source.row)?,
            Err((column, reason)) => {
                let raw = row_to_json(&source.row, input_schema);
                let error = RowError {
                    line,
                    column: Some(column),
                    reason,
                    raw,
                };
                invalid.push((t, error));
                return None;
            }
        };
        match expect::check(&table.expectations, &row, &mut counts) {
            Verdict::Keep => Some(Ok(SourceRow { line, row })),
            Verdict::Drop => None,
            Verdict::Fail(name) => {
                let failed = expectation_failed(&name, &table.name, &row, &table.schema);
                Some(Err(failed.at_line(line).in_file(file)))
            }
        }
    });
    let kept = kept.collect::<Result<Vec<_>>>()?;
    if !table.expectations.is_empty() {
        commit.expectations[t] = counts;
    }
    Ok(kept)
}

/// The error of a violated `ON VIOLATION FAIL UPDATE` expectation.
pub fn expectation_failed(name: &str, owner: &str, row: &Row, schema: &Schema) -> crate::Error {
    crate::Error::new(
        crate::ErrorKind::InvalidRow,
        format!(
            "expectation `{name}` of `{owner}` failed (ON VIOLATION FAIL UPDATE) on {}",
            row_to_json_text(row, schema)
        ),
    )
}

/// What [`project`] made of a row.
pub enum Projected {
    /// The filter dropped it.
    Dropped,
    /// It passed and nothing projects it: the row itself, which the caller has (and may move
    /// on instead of copying).
    Unchanged,
    /// The projected row.
    Row(Row),
}

impl Projected {
    /// The row to keep, if any; `unchanged` gives the row itself.
    pub fn into_row(self, unchanged: impl FnOnce() -> Row) -> Option<Row> {
        match self {
            Projected::Dropped => None,
            Projected::Unchanged => Some(unchanged()),
            Projected::Row(row) => Some(row),
        }
    }
}

/// Filters `row` with `filter` and projects it with `projection` (whose outputs are the columns
/// of `output`); `Err((column, reason))` when an expression fails.
pub fn project(
    projection: Option<&[Expr]>,
    filter: Option<&Expr>,
    output: &Schema,
    row: &Row,
) -> Result<Projected, (String, String)> {
    if projection.is_none() && filter.is_none() {
        return Ok(Projected::Unchanged);
    }
    let datums = row.unpack();
    if let Some(filter) = filter {
        let passes = filter
            .eval_predicate(&datums)
            .map_err(|e| ("WHERE".to_string(), e))?;
        if !passes {
            return Ok(Projected::Dropped);
        }
    }
    let Some(projection) = projection else {
        return Ok(Projected::Unchanged);
    };
    let mut out = Packer::new();
    for (e, c) in projection.iter().zip(&output.columns) {
        e.eval_into(&datums, &mut out)
            .map_err(|err| (c.name.clone(), err))?;
    }
    Ok(Projected::Row(out.finish()))
}

/// The record as compact JSON object text, keys in column order (for messages).
pub fn row_to_json_text(row: &Row, schema: &Schema) -> String {
    let fields = schema
        .columns
        .iter()
        .map(|c| (c.name.clone(), c.ty.clone()))
        .collect();
    io::value_to_json_text(
        &Value::Struct(row.to_values()),
        &crate::value::DataType::Struct(fields),
    )
}

/// The record as a JSON object, for quarantine output.
pub fn row_to_json(row: &Row, schema: &Schema) -> serde_json::Value {
    let object = schema
        .columns
        .iter()
        .zip(row.iter())
        .map(|(c, v)| (c.name.clone(), io::value_to_json(&v.to_value(), &c.ty)))
        .collect();
    serde_json::Value::Object(object)
}

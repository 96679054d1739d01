//! Sources → commits: each input file of a `read_files` table is one commit (files of a
//! directory in name order; tables in pipeline order). Tables reading `STREAM(other)` receive
//! the projected, filtered rows of the same commit.

use crate::io::{self, RowError, SourceRow};
use crate::plan::{Pipeline, SourceInput, SourceTable};
use crate::value::{Row, Schema, Value};
use crate::Result;
use std::path::PathBuf;

/// One commit's rows, per source table.
#[derive(Debug)]
pub struct SourceCommit {
    /// The input file this commit read.
    pub file: PathBuf,
    /// Rows per table (indexed like [`Pipeline::tables`]; empty for tables not involved).
    pub rows: Vec<Vec<SourceRow>>,
    /// Rows that could not be read or projected, with the table they belong to.
    pub invalid: Vec<(usize, RowError)>,
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

/// Reads one input file of table `t` as a commit.
pub fn read_commit(pipeline: &Pipeline, t: usize, file: PathBuf) -> Result<SourceCommit> {
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
    let mut commit = SourceCommit {
        rows: vec![Vec::new(); pipeline.tables.len()],
        invalid: Vec::new(),
        file,
    };
    for read in io::read_file(&commit.file, *format, *header, file_schema)? {
        match read {
            Ok(row) => commit.rows[t].push(row),
            Err(e) => commit.invalid.push((t, e)),
        }
    }
    derive(pipeline, t, &mut commit);
    Ok(commit)
}

/// Applies projections and filters, from the file-backed table `first` to every table reading
/// it (directly or through others; tables are in dependency order).
fn derive(pipeline: &Pipeline, first: usize, commit: &mut SourceCommit) {
    let raw = std::mem::take(&mut commit.rows[first]);
    commit.rows[first] = shape(pipeline, first, raw, &mut commit.invalid);
    for (t, table) in pipeline.tables.iter().enumerate().skip(first + 1) {
        if let SourceInput::Table(parent) = table.input {
            if !commit.rows[parent].is_empty() {
                let input = commit.rows[parent].clone();
                commit.rows[t] = shape(pipeline, t, input, &mut commit.invalid);
            }
        }
    }
}

/// Filters and projects rows of table `t`'s input into its schema.
fn shape(
    pipeline: &Pipeline,
    t: usize,
    rows: Vec<SourceRow>,
    invalid: &mut Vec<(usize, RowError)>,
) -> Vec<SourceRow> {
    let table = &pipeline.tables[t];
    let input_schema = match &table.input {
        SourceInput::Files { file_schema, .. } => file_schema,
        SourceInput::Table(parent) => &pipeline.tables[*parent].schema,
    };
    let mut kept = Vec::with_capacity(rows.len());
    for source in rows {
        match shape_row(table, &source.row) {
            Ok(Some(row)) => kept.push(SourceRow {
                line: source.line,
                row,
            }),
            Ok(None) => {}
            Err((column, reason)) => invalid.push((
                t,
                RowError {
                    line: source.line,
                    column: Some(column),
                    reason,
                    raw: row_to_json(&source.row, input_schema),
                },
            )),
        }
    }
    kept
}

fn shape_row(table: &SourceTable, row: &Row) -> Result<Option<Row>, (String, String)> {
    if let Some(filter) = &table.filter {
        match filter.eval(row) {
            Ok(Value::Bool(true)) => {}
            Ok(_) => return Ok(None),
            Err(e) => return Err(("WHERE".to_string(), e)),
        }
    }
    let Some(projection) = &table.projection else {
        return Ok(Some(row.clone()));
    };
    projection
        .iter()
        .zip(&table.schema.columns)
        .map(|(e, c)| e.eval(row).map_err(|err| (c.name.clone(), err)))
        .collect::<Result<Row, _>>()
        .map(Some)
}

/// The record as a JSON object, for quarantine output.
pub fn row_to_json(row: &[Value], schema: &Schema) -> serde_json::Value {
    let object = schema
        .columns
        .iter()
        .zip(row)
        .map(|(c, v)| (c.name.clone(), io::value_to_json(v, &c.ty)))
        .collect();
    serde_json::Value::Object(object)
}

//! The queries of a `WITH VERSION` snapshot flow ([`VersionedSnapshots`], SPEC 2.4), run
//! between commits: which version comes next, and that version's rows.
//!
//! Invariants:
//! - A version is a BIGINT (INT widens). The version query returns at most one row: more is an
//!   error (SPEC Q9: refused, with the `ORDER BY ... LIMIT 1` that picks one), so is a NULL
//!   version.
//! - The plan-time check ([`Queries::check`]) evaluates both queries in a dry scope, with a
//!   placeholder current version: every name, type and subquery shape is checked there, so a
//!   run only meets problems of the data (a bad row, a table changed since planning).
//! - A snapshot over files reads only the files its `WHERE` keeps by their `_metadata` alone:
//!   the conjuncts of the `WHERE` that read no data column are evaluated per file, before the
//!   file is read, so picking one file of many by name costs one file's read (as Spark prunes
//!   on file metadata). The other conjuncts are evaluated per row.
//! - A row that cannot be read or evaluated is handed back as a [`RowError`] with its file and
//!   line, for the driver's quarantine policy, as other snapshot rows are.

use super::scope::{version_relation, Scope};
use super::select::{bound_expr, in_clause};
use super::Warehouse;
use crate::expr::Expr;
use crate::io::{RowError, SourceRow};
use crate::plan::{VersionedInput, VersionedSnapshots, METADATA_COLUMNS};
use crate::value::{DataType, Datum, Packer, Schema, Value};
use crate::{Error, ErrorKind, Result};
use sqlparser::ast;
use std::path::PathBuf;
use std::time::UNIX_EPOCH;

/// The rows a snapshot read from one file (or table), in its order.
pub struct FileRows {
    /// The file, or the table's directory.
    pub file: PathBuf,
    /// Each row, projected to the snapshot's schema, or why it could not be.
    pub rows: Vec<std::result::Result<SourceRow, RowError>>,
}

/// One flow's queries, ready to run.
pub struct Queries<'a> {
    flow: &'a VersionedSnapshots,
    warehouse: Option<Warehouse>,
}

impl<'a> Queries<'a> {
    /// The queries of `flow`, their names resolving as it was planned.
    pub fn new(flow: &'a VersionedSnapshots) -> Result<Self> {
        let warehouse = match &flow.names.warehouse {
            Some((root, catalog, schema)) => {
                Some(Warehouse::open(root, Some(catalog), Some(schema))?)
            }
            None => None,
        };
        Ok(Queries { flow, warehouse })
    }

    fn scope(&self) -> Scope<'_> {
        Scope::new(self.warehouse.as_ref(), &self.flow.names.base)
    }

    fn version(&self, value: Option<i64>) -> super::select::Relation {
        let column = &self.flow.version_column;
        version_relation(column, DataType::BigInt, value.map(Value::Int))
    }

    /// Checks both queries without reading data; returns the snapshot's schema, its columns
    /// named `names` (one per `SELECT` item).
    pub fn check(&self, names: &[String]) -> Result<Schema> {
        let scope = self
            .scope()
            .dry()
            .with_last_snapshot_version(self.version(None));
        let relation = super::select::query(&scope, &self.flow.version_query)
            .map_err(|e| in_clause("WITH VERSION", e))?;
        let [column] = relation.schema.columns.as_slice() else {
            let message = format!(
                "WITH VERSION: the version query returns {} columns; it returns one, the version",
                relation.schema.columns.len()
            );
            return Err(Error::new(ErrorKind::Validation, message));
        };
        if !matches!(column.ty, DataType::Int | DataType::BigInt | DataType::Null) {
            let message = format!(
                "WITH VERSION: the version `{}` is {}; versions are integers here (CAST it AS BIGINT)",
                column.name, column.ty
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
        let scope = self
            .scope()
            .dry()
            .with_current_snapshot_version(self.version(Some(0)));
        let compiled = self.compiled(&scope)?;
        if let Some(filter) = &compiled.filter {
            if !matches!(filter.ty(), DataType::Boolean | DataType::Null) {
                let message = format!("WHERE: `{filter}` is {}, not BOOLEAN", filter.ty());
                return Err(Error::new(ErrorKind::Validation, message));
            }
        }
        let columns = names.iter().zip(&compiled.select);
        Ok(Schema::new(
            columns.map(|(n, e)| (n.clone(), e.ty().clone())),
        ))
    }

    /// The version after `last` (`None`: nothing committed yet), or `None` when the version
    /// query returns no row.
    pub fn next_version(&self, last: Option<i64>) -> Result<Option<i64>> {
        let scope = self.scope().with_last_snapshot_version(self.version(last));
        let relation = super::select::query(&scope, &self.flow.version_query)
            .map_err(|e| in_clause("WITH VERSION", e))?;
        let value = match relation.rows.as_slice() {
            [] => return Ok(None),
            [row] => row.value(0),
            rows => {
                let message = format!(
                    "WITH VERSION: the version query returned {} rows; it must return at most \
                     one, the next version (add ORDER BY version LIMIT 1)",
                    rows.len()
                );
                return Err(Error::new(ErrorKind::Validation, message));
            }
        };
        match value {
            Value::Int(v) => Ok(Some(v)),
            _ => {
                let message =
                    "WITH VERSION: the version query returned NULL; a version is a number";
                Err(Error::new(ErrorKind::Validation, message))
            }
        }
    }

    /// The snapshot at `version`: the snapshot query's rows, file by file.
    pub fn read(&self, version: i64) -> Result<Vec<FileRows>> {
        let scope = self
            .scope()
            .with_current_snapshot_version(self.version(Some(version)));
        let compiled = self.compiled(&scope)?;
        match &self.flow.input {
            VersionedInput::Files {
                path,
                written,
                format,
                header,
                file_schema,
            } => {
                let mut read = Vec::new();
                for file in crate::io::list_files(path)? {
                    let metadata = metadata(&file, path, written)?;
                    if !compiled.keeps_file(file_schema.columns.len(), &metadata)? {
                        continue;
                    }
                    let rows = crate::ingest::read_whole(&file, *format, *header, file_schema)?;
                    let schema = &self.flow.input_schema;
                    let rows = (rows.into_iter())
                        .filter_map(|r| {
                            r.and_then(|row| compiled.apply(row, &metadata, schema))
                                .transpose()
                        })
                        .collect();
                    read.push(FileRows { file, rows });
                }
                Ok(read)
            }
            VersionedInput::Delta { dir, table } => {
                let schema = &self.flow.input_schema;
                let rows = crate::ingest::snapshot_rows(dir, table, None, schema)?;
                let rows = crate::ingest::numbered(rows)
                    .filter_map(|row| compiled.apply(row, &[], schema).transpose())
                    .collect();
                Ok(vec![FileRows {
                    file: dir.clone(),
                    rows,
                }])
            }
        }
    }

    /// The snapshot query's expressions with their subqueries bound in `scope`.
    fn compiled(&self, scope: &Scope) -> Result<Compiled> {
        let schema = &self.flow.input_schema;
        let select = (self.flow.select.iter())
            .map(|e| bound_expr(scope, e, schema, "SELECT"))
            .collect::<Result<Vec<_>>>()?;
        let mut conjuncts = Vec::new();
        if let Some(filter) = &self.flow.filter {
            split_and(filter, &mut conjuncts);
        }
        let filter = match &self.flow.filter {
            Some(f) => Some(bound_expr(scope, f, schema, "WHERE")?),
            None => None,
        };
        let data = schema.columns.len() - self.metadata_len();
        let mut on_files = Vec::new();
        let mut on_rows = Vec::new();
        for conjunct in conjuncts {
            let e = bound_expr(scope, conjunct, schema, "WHERE")?;
            match e.reads_only(data..schema.columns.len()) && self.metadata_len() > 0 {
                true => on_files.push(e),
                false => on_rows.push(e),
            }
        }
        Ok(Compiled {
            select,
            filter,
            on_files,
            on_rows,
        })
    }

    fn metadata_len(&self) -> usize {
        match self.flow.input {
            VersionedInput::Files { .. } => METADATA_COLUMNS.len(),
            VersionedInput::Delta { .. } => 0,
        }
    }
}

/// A snapshot query compiled for one version.
struct Compiled {
    select: Vec<Expr>,
    /// The whole `WHERE` (for its type).
    filter: Option<Expr>,
    /// Its conjuncts that read only `_metadata`, and the others.
    on_files: Vec<Expr>,
    on_rows: Vec<Expr>,
}

impl Compiled {
    /// Whether a file with `metadata` passes the conjuncts on files (its data columns NULL).
    fn keeps_file(&self, data: usize, metadata: &[Value]) -> Result<bool> {
        let mut packer = Packer::new();
        for _ in 0..data {
            packer.push(&Value::Null);
        }
        for value in metadata {
            packer.push(value);
        }
        let row = packer.finish();
        let datums: Vec<Datum> = row.iter().collect();
        for e in &self.on_files {
            let keep = e
                .eval_predicate(&datums)
                .map_err(|why| Error::new(ErrorKind::InvalidRow, format!("WHERE `{e}`: {why}")))?;
            if !keep {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `row` with `metadata` appended, filtered by the row conjuncts and projected.
    fn apply(
        &self,
        row: SourceRow,
        metadata: &[Value],
        schema: &Schema,
    ) -> std::result::Result<Option<SourceRow>, RowError> {
        let full = match metadata.is_empty() {
            true => row.row,
            false => {
                let mut packer = Packer::new();
                packer.extend_from(row.row.as_row_ref());
                for value in metadata {
                    packer.push(value);
                }
                packer.finish()
            }
        };
        let datums: Vec<Datum> = full.iter().collect();
        let failed = |clause: &str, e: &Expr, why: String| RowError {
            line: row.line,
            column: None,
            reason: format!("{clause} `{e}`: {why}"),
            raw: crate::ingest::row_to_json(&full, schema),
        };
        for e in &self.on_rows {
            match e.eval_predicate(&datums) {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(why) => return Err(failed("WHERE", e, why)),
            }
        }
        let mut packer = Packer::new();
        for e in &self.select {
            e.eval_into(&datums, &mut packer)
                .map_err(|why| failed("SELECT", e, why))?;
        }
        Ok(Some(SourceRow {
            line: row.line,
            row: packer.finish(),
        }))
    }
}

/// `a AND b AND c` as its conjuncts.
fn split_and<'e>(e: &'e ast::Expr, out: &mut Vec<&'e ast::Expr>) {
    match e {
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::And,
            right,
        } => {
            split_and(left, out);
            split_and(right, out);
        }
        ast::Expr::Nested(inner) => split_and(inner, out),
        other => out.push(other),
    }
}

/// The `_metadata` values of `file`, found under `dir`, which the query wrote as `written`.
fn metadata(file: &std::path::Path, dir: &std::path::Path, written: &str) -> Result<Vec<Value>> {
    let meta = std::fs::metadata(file).map_err(|e| Error::read(file, &e))?;
    let name = file
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let shown = match file.strip_prefix(dir) {
        Ok(rest) if !rest.as_os_str().is_empty() => {
            format!(
                "{}/{}",
                written.trim_end_matches('/'),
                rest.to_string_lossy()
            )
        }
        _ => written.to_string(),
    };
    let modified = (meta.modified().ok())
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(Value::Null, |d| {
            Value::Timestamp(i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        });
    Ok(vec![
        Value::Str(shown),
        Value::Str(name),
        Value::Int(i64::try_from(meta.len()).unwrap_or(i64::MAX)),
        modified,
    ])
}

//! `list_files(path [, recursive => true|false])`: one row per file under a path, as
//! Databricks SQL's table-valued function gives it — `path STRING`, `size BIGINT`,
//! `modification_time TIMESTAMP` (UTC, microseconds).
//!
//! `path` is the path as the query wrote it (`/Volumes/main/s/v/` stays a volume path) joined
//! with the file's place under it, so what a query extracts from it (a version, a date) does
//! not depend on where the warehouse lives. Recursive by default; `recursive => false` lists
//! the immediate entries, directories with size 0. Names starting with `.` or `_` are skipped
//! at every level, as `read_files` skips them. Rows are in path order.
//!
//! Left out: Databricks's fourth column `file` (a FILE reference; scdflow has no such type) and
//! `connection =>` (remote file systems).

use super::scope::Scope;
use super::select::{packed, Relation};
use crate::value::{DataType, Schema, Value};
use crate::{Error, ErrorKind, Result};
use std::path::Path;
use std::time::UNIX_EPOCH;

/// The listing of `written` (resolved by `scope`); empty in a dry scope.
pub(crate) fn list_files(scope: &Scope, written: &str, recursive: bool) -> Result<Relation> {
    let schema = Schema::new([
        ("path".to_string(), DataType::String),
        ("size".to_string(), DataType::BigInt),
        ("modification_time".to_string(), DataType::Timestamp),
    ]);
    let dir = scope.path(written)?;
    let mut rows = Vec::new();
    if !scope.is_dry() {
        let mut found = Vec::new();
        let meta = std::fs::metadata(&dir).map_err(|e| not_listed(written, &e))?;
        if meta.is_dir() {
            walk(&dir, written.trim_end_matches('/'), recursive, &mut found)?;
        } else {
            found.push((written.to_string(), meta));
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        for (path, meta) in found {
            let size = if meta.is_dir() { 0 } else { meta.len() };
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(Value::Null, |d| {
                    Value::Timestamp(i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
                });
            let size = Value::Int(i64::try_from(size).unwrap_or(i64::MAX));
            rows.push(packed(vec![Value::Str(path), size, modified], &schema)?);
        }
    }
    Ok(Relation { schema, rows })
}

/// Collects `(shown path, metadata)` of the entries under `dir`, shown under `shown`.
fn walk(
    dir: &Path,
    shown: &str,
    recursive: bool,
    found: &mut Vec<(String, std::fs::Metadata)>,
) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::read(dir, &e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::read(dir, &e))?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        // `metadata` follows symlinks, as `read_files` does.
        let path = entry.path();
        let meta = std::fs::metadata(&path).map_err(|e| Error::read(&path, &e))?;
        let child = format!("{shown}/{name}");
        match (meta.is_dir(), recursive) {
            (true, true) => walk(&path, &child, true, found)?,
            _ => found.push((child, meta)),
        }
    }
    Ok(())
}

fn not_listed(written: &str, e: &std::io::Error) -> Error {
    let message = format!("list_files: cannot list `{written}`: {e}");
    Error::new(ErrorKind::Io, message)
}

//! One AUTO CDC FROM SNAPSHOT flow (SPEC 2.3, 2.4, 3.7, D12): its snapshot source resolved into
//! a [`SnapshotFlow`], plus the [`Shape`] it gives its target.
//!
//! Snapshots come from a versioned `read_files` directory, every commit of a table (periodic),
//! or a `WITH VERSION` query ([`super::versioned`]).
//!
//! A snapshot flow has no sequence (the snapshot version is one, BIGINT), no delete, truncate or
//! partial-update clauses and no column selection (the snapshot query selects); those clauses
//! are rejected by name. Its rows are whole images, so the target's image is the snapshot's
//! schema and its keys index into it.

use super::cursor::invalid;
use super::flows::{check_track_history, key_columns, required, reserved_column, tracked, Shape};
use super::snapshot_files::snapshot_files;
use super::sources::{predicate, project};
use super::syntax::{CdcClauses, FlowStmt, From, Located, Query};
use super::targets::Context;
use crate::expr::Expr;
use crate::plan::{ScdType, SnapshotFlow, SnapshotSource};
use crate::value::{DataType, Schema};
use crate::Result;

/// The snapshots as resolved: where they come from and their rows' shape.
struct Resolved {
    source: SnapshotSource,
    projection: Option<Vec<Expr>>,
    filter: Option<Expr>,
    schema: Schema,
    /// The source as messages name it: a table name or the `read_files` path.
    name: String,
}

/// Resolves snapshot `flow` (whose clauses are `clauses`) into target `target_index`.
/// Expectations are left empty for the caller.
pub(crate) fn build_snapshot_flow(
    cx: &Context,
    flow: &FlowStmt,
    clauses: &CdcClauses,
    target_index: usize,
    warnings: &mut Vec<(u64, String)>,
) -> Result<(SnapshotFlow, Shape)> {
    check_clauses(clauses)?;
    let Some(query) = &clauses.snapshot else {
        return Err(invalid(flow.line, "AUTO CDC: the FROM clause is required"));
    };
    let keys = required(&clauses.keys, "KEYS", flow.line)?;
    let resolved = match &clauses.version {
        Some(version) => {
            let (snapshots, schema, name) = super::versioned::versioned(cx, query, version)?;
            Resolved {
                source: SnapshotSource::Versioned(Box::new(snapshots)),
                projection: None,
                filter: None,
                schema,
                name,
            }
        }
        None => resolve(cx, query)?,
    };
    let schema = &resolved.schema;
    if let Some(column) = reserved_column(schema) {
        let message = format!(
            "FROM SNAPSHOT: the snapshot of `{}` has a column named `{}`, which is reserved for AUTO CDC targets; rename it in the snapshot query",
            resolved.name, column.name
        );
        return Err(invalid(query.line, message));
    }
    let what = format!("the snapshot of `{}`", resolved.name);
    let key_indices = key_columns("KEYS", keys, schema, &what)?;
    let scd = clauses
        .stored_as
        .as_ref()
        .map_or(ScdType::Type1, |s| s.value);
    check_track_history(clauses, scd)?;
    let shape = Shape {
        keys: key_indices
            .iter()
            .map(|&k| schema.columns[k].name.clone())
            .collect(),
        image: schema.clone(),
        key_positions: key_indices.clone(),
        sequence_type: DataType::BigInt,
        system_sequence_type: None,
        scd,
        tracked: tracked(clauses, schema, &resolved.name, warnings),
        partial: false,
    };
    let flow = SnapshotFlow {
        name: flow.name.text.clone(),
        target: target_index,
        source: resolved.source,
        projection: resolved.projection,
        filter: resolved.filter,
        schema: resolved.schema,
        keys: key_indices,
        expectations: Vec::new(),
        once: clauses.once,
        line: flow.line,
    };
    Ok((flow, shape))
}

/// Rejects the change-feed clauses, each by name (SPEC 2.3: a snapshot flow has none of them).
fn check_clauses(c: &CdcClauses) -> Result<()> {
    let rejected: [(Option<u64>, &str, &str); 8] = [
        (
            c.delete_when.as_ref().map(|l| l.line),
            "APPLY AS DELETE WHEN",
            " (a key missing from a snapshot is deleted)",
        ),
        (
            c.truncate_when.as_ref().map(|l| l.line),
            "APPLY AS TRUNCATE WHEN",
            "",
        ),
        (
            c.sequence_by.as_ref().map(|l| l.line),
            "SEQUENCE BY",
            " (the snapshot version is the sequence)",
        ),
        (
            c.system_sequence_by.as_ref().map(|l| l.line),
            "SYSTEM SEQUENCE BY",
            "",
        ),
        (
            c.columns.as_ref().map(|l| l.line),
            "COLUMNS",
            " (the snapshot's columns are the target's: choose them in the snapshot query or schema)",
        ),
        (
            c.ignore_null_updates.as_ref().map(|l| l.line),
            "IGNORE NULL UPDATES",
            " (snapshot rows are whole rows)",
        ),
        (
            c.columns_to_update.as_ref().map(|n| n.line),
            "COLUMNS TO UPDATE",
            " (snapshot rows are whole rows)",
        ),
        (
            c.stored_as
                .as_ref()
                .filter(|s| s.value == ScdType::Bitemporal)
                .map(|s| s.line),
            "STORED AS BITEMPORAL",
            "",
        ),
    ];
    let first = rejected
        .into_iter()
        .find_map(|(line, clause, why)| Some((line?, clause, why)));
    match first {
        Some((line, clause, why)) => Err(invalid(
            line,
            format!("{clause}: not allowed in AUTO CDC FROM SNAPSHOT flows{why}"),
        )),
        None => Ok(()),
    }
}

/// The snapshot query against its input: a versioned `read_files` directory or a source table.
fn resolve(cx: &Context, query: &Located<Query>) -> Result<Resolved> {
    let q = &query.value;
    let (source, input, name) = match &q.from {
        From::ReadFiles(spec) => {
            // A snapshot file's rows are the target image as read; projecting them is future
            // work, so a SELECT list or WHERE over the files is refused rather than ignored.
            if q.projection.is_some() || q.filter.is_some() {
                let message = "FROM SNAPSHOT: a SELECT list or WHERE over read_files is not supported yet; write FROM SNAPSHOT read_files(...) and choose the columns with schema => '...'";
                return Err(invalid(spec.line, message));
            }
            let (source, file_schema) = snapshot_files(spec, cx.paths)?;
            (source, file_schema, spec.path.clone())
        }
        From::Warehouse { .. } | From::Feed(_) => {
            let message = "a snapshot flow reads a warehouse table or a feed directly";
            return Err(crate::Error::new(crate::ErrorKind::Internal, message));
        }
        From::Values { line, .. } => {
            let message = "FROM SNAPSHOT: VALUES is not a source of snapshots; read a table or read_files(...)";
            return Err(invalid(*line, message));
        }
        From::Table(table) => {
            let i = cx.source_table(table, "FROM SNAPSHOT")?;
            let source = SnapshotSource::Table { table: i };
            (source, cx.tables[i].schema.clone(), table.text.clone())
        }
    };
    let (projection, schema) = project(q, &input)?;
    let filter = match &q.filter {
        Some(f) => Some(predicate("WHERE", f, &input)?),
        None => None,
    };
    Ok(Resolved {
        source,
        projection,
        filter,
        schema,
        name,
    })
}

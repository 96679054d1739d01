//! One REPLACE WHERE flow (`INSERT INTO t BY NAME REPLACE WHERE condition SELECT ... FROM
//! table`, or inline `CREATE STREAMING TABLE t FLOW REPLACE WHERE condition BY NAME SELECT
//! ...`): at each update, the target's rows the condition holds for are replaced by the
//! query's rows it holds for; the other rows stay, even when the source no longer has them.
//!
//! It runs as a snapshot flow ([`SnapshotFlow`] into a [`TargetKind::Snapshot`] target whose
//! [`ReplaceWhere`] condition the engine evaluates): the query reads a warehouse table as a
//! batch, whole, and each new version of the table is an update. Columns are matched BY NAME
//! as in REPLACE USING ([`super::replace`]). The target is a multiset of rows: no keys, equal
//! rows may repeat.
//!
//! Limits: the query reads one table of the warehouse (Lakeflow's also joins); a table of the
//! pipeline, `read_files` and `VALUES` are refused, as is a second flow into the target. An
//! update happens when the table has a new version, so a condition on `CURRENT_DATE()` moves
//! with the table's versions, not with the clock alone.
//!
//! [`TargetKind::Snapshot`]: crate::plan::TargetKind::Snapshot

use super::cursor::{in_clause, invalid};
use super::flows::Shape;
use super::replace::by_name;
use super::syntax::{FlowStmt, From, ReplaceWhere as ReplaceWhereStmt, TableStmt};
use super::targets::Context;
use crate::plan::{DeltaRead, ReplaceWhere, ScdType, SnapshotFlow, SnapshotSource, SourceInput};
use crate::value::DataType;
use crate::Result;

/// Resolves REPLACE WHERE `flow` into `target` (its declaration; index `target_index`): the
/// snapshot flow, the target's shape and its condition. Expectations are left empty for the
/// caller.
pub(crate) fn build_replace_where_flow(
    cx: &Context,
    flow: &FlowStmt,
    replace: &ReplaceWhereStmt,
    target: &TableStmt,
    target_index: usize,
) -> Result<(SnapshotFlow, Shape, ReplaceWhere)> {
    let query = &replace.query;
    let kind = match replace.view {
        true => "a materialized view",
        false => "a REPLACE WHERE flow",
    };
    let table = batch_source(cx, query, kind)?;
    let writer = format!("flow `{}`", flow.name.text);
    let (projection, filter, schema) = by_name(query, &cx.tables[table].schema, target, &writer)?;
    let condition = ReplaceWhere {
        condition: replace.condition.value.clone(),
        schema: schema.clone(),
        materialized_view: replace.view,
    };
    // Checked once here, at an arbitrary instant: the clock functions only change literals.
    let line = replace.condition.line;
    let compiled = condition
        .at(0)
        .map_err(|e| in_clause("REPLACE WHERE", e, line))?;
    if !matches!(compiled.ty(), DataType::Boolean) {
        let message = format!(
            "REPLACE WHERE: the condition must be BOOLEAN over the columns of {writer}, `{compiled}` is {}",
            compiled.ty()
        );
        return Err(invalid(line, message));
    }
    let all: Vec<usize> = (0..schema.len()).collect();
    let shape = Shape {
        keys: schema.names().map(str::to_string).collect(),
        key_positions: all.clone(),
        sequence_type: DataType::BigInt,
        system_sequence_type: None,
        scd: ScdType::Type1,
        tracked: vec![true; schema.len()],
        partial: false,
        image: schema.clone(),
    };
    let flow = SnapshotFlow {
        name: flow.name.text.clone(),
        target: target_index,
        source: SnapshotSource::Table { table },
        projection,
        filter,
        schema,
        keys: all,
        expectations: Vec::new(),
        once: replace.once,
        line: flow.line,
    };
    Ok((flow, shape, condition))
}

/// The table the query reads whole at each of its versions: a warehouse table, through its
/// implicit source table.
fn batch_source(cx: &Context, query: &super::syntax::Query, kind: &str) -> Result<usize> {
    let refused = |line, what: &str| {
        let message = format!(
            "FROM: {kind} reads a table of the warehouse, whole at each new version (FROM \
             catalog.schema.table); {what} is not supported as its source"
        );
        Err(invalid(line, message))
    };
    match &query.from {
        From::Table(name) => {
            let target = cx.catalog.table(&name.text);
            if target.is_some_and(|t| !cx.catalog.tables[t].is_source()) {
                let message = format!(
                    "FROM: `{}` is a target of this pipeline; {kind} over it is not supported \
                     yet: keep a table from its change data feed instead (STREAM({}) WITH \
                     (readChangeFeed = true)), or read its published table from another \
                     pipeline",
                    name.text, name.text
                );
                return Err(invalid(name.line, message));
            }
            let t = cx.source_table(name, "FROM")?;
            match cx.tables[t].input {
                SourceInput::Delta {
                    read: DeltaRead::Snapshots,
                    ..
                } => Ok(t),
                _ => refused(
                    name.line,
                    &format!("`{}`, a table of this pipeline,", name.text),
                ),
            }
        }
        From::ReadFiles(spec) => refused(spec.line, "read_files(...)"),
        From::Values { line, .. } => refused(*line, "VALUES"),
        From::Warehouse { .. } | From::Feed(_) => Err(crate::Error::new(
            crate::ErrorKind::Internal,
            "a flow reads a warehouse table or a feed directly, not through its implicit table",
        )),
    }
}

//! One REPLACE USING flow (SPEC 2.6, 3.12): its query resolved against its streaming source
//! into a [`ReplaceFlow`], plus the [`Shape`] it gives its target.
//!
//! Columns are matched BY NAME: without a declared column list the target is the query's output;
//! with one, the declared order and types rule, every declared column must be produced and
//! every produced column declared, and the projection is reordered to the declared order. Keys
//! and the sequence are columns of that output. The target is SCD type 1 in shape (`tracked`
//! all true, no partial updates), but a key holds a set of rows (SPEC 3.12).

use super::cursor::{invalid, Name};
use super::flows::{key_columns, resolve_in, Shape};
use super::schema::{check_declared_by_name, declared_order};
use super::sources::{predicate, project};
use super::syntax::{FlowStmt, From, Located, Query, ReplaceUsing, TableStmt};
use super::targets::Context;
use crate::expr::Expr;
use crate::plan::{ReplaceFlow, ScdType};
use crate::value::{DataType, Schema};
use crate::Result;
use sqlparser::ast;

/// Resolves REPLACE USING `flow` into `target` (its declaration; index `target_index`).
/// Expectations are left empty for the caller.
pub(crate) fn build_replace_flow(
    cx: &Context,
    flow: &FlowStmt,
    replace: &ReplaceUsing,
    target: &TableStmt,
    target_index: usize,
) -> Result<(ReplaceFlow, Shape)> {
    let query = &replace.query;
    let source = streaming_source(cx, query)?;
    let writer = format!("flow `{}`", flow.name.text);
    let (projection, filter, schema) = by_name(query, &cx.tables[source].schema, target, &writer)?;
    let what = format!("the output of {writer}");
    let keys = key_columns("REPLACE USING", &replace.keys, &schema, &what)?;
    check_orderable(&replace.keys, &keys, &schema)?;
    let sequence = sequence_column(&replace.sequence, &schema, &what)?;
    let shape = Shape {
        system_sequence_type: None,
        keys: keys
            .iter()
            .map(|&k| schema.columns[k].name.clone())
            .collect(),
        key_positions: keys.clone(),
        sequence_type: schema.columns[sequence].ty.clone(),
        scd: ScdType::Type1,
        tracked: vec![true; schema.len()],
        partial: false,
        image: schema,
    };
    let flow = ReplaceFlow {
        name: flow.name.text.clone(),
        target: target_index,
        source,
        projection,
        filter,
        keys,
        sequence,
        expectations: Vec::new(),
        once: replace.once,
        line: flow.line,
    };
    Ok((flow, shape))
}

/// A query over `input` whose output `writer` writes into `target` BY NAME: its projection,
/// filter and output schema, reordered to the target's declared columns when it has them.
pub(crate) fn by_name(
    query: &Query,
    input: &Schema,
    target: &TableStmt,
    writer: &str,
) -> Result<(Option<Vec<Expr>>, Option<Expr>, Schema)> {
    let (projection, produced) = project(query, input)?;
    let filter = match &query.filter {
        Some(f) => Some(predicate("WHERE", f, input)?),
        None => None,
    };
    let (projection, schema) = match &target.columns {
        None => (projection, produced),
        Some(declared) => {
            check_declared_by_name(declared, &produced, &target.name.text, writer, target.line)?;
            declared_order(declared, projection, &produced, input)
        }
    };
    Ok((projection, filter, schema))
}

/// SPEC 2.6: the source must be read as a stream, `FROM STREAM(src)` of a source table.
fn streaming_source(cx: &Context, query: &Query) -> Result<usize> {
    match &query.from {
        From::Table(name) if query.streamed => cx.source_table(name, "FROM"),
        From::Table(name) => {
            let message = format!(
                "FROM: REPLACE USING needs a streaming source: FROM STREAM({})",
                name.text
            );
            Err(invalid(name.line, message))
        }
        From::Warehouse { .. } | From::Feed(_) => Err(crate::Error::new(
            crate::ErrorKind::Internal,
            "a flow reads a warehouse table or a feed directly, not through its implicit table",
        )),
        From::Values { line, .. } => {
            let message = "FROM: REPLACE USING needs a streaming source: FROM STREAM(src); declare the VALUES as a streaming table src (an INSERT INTO ONCE src BY NAME SELECT * FROM VALUES ... flow)";
            Err(invalid(*line, message))
        }
        From::ReadFiles(spec) => {
            let message = "FROM: REPLACE USING needs a streaming source: FROM STREAM(src), where src is a streaming table (CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files(...))";
            Err(invalid(spec.line, message))
        }
    }
}

/// SPEC 2.6: every key type must be orderable; our ARRAYs are not accepted as keys.
fn check_orderable(names: &Located<Vec<Name>>, keys: &[usize], schema: &Schema) -> Result<()> {
    for (name, &k) in names.value.iter().zip(keys) {
        let ty = &schema.columns[k].ty;
        if holds_array(ty) {
            let message = format!(
                "REPLACE USING: key column `{}` is {ty}, which is not orderable; use atomic types (numbers, strings, dates, ...)",
                name.text
            );
            return Err(invalid(name.line, message));
        }
    }
    Ok(())
}

fn holds_array(ty: &DataType) -> bool {
    match ty {
        DataType::Array(_) => true,
        DataType::Struct(fields) => fields.iter().any(|(_, t)| holds_array(t)),
        _ => false,
    }
}

/// SPEC 2.6: exactly one `SEQUENCE BY` column, named; expressions are rejected.
fn sequence_column(sequence: &Located<ast::Expr>, schema: &Schema, what: &str) -> Result<usize> {
    let ast::Expr::Identifier(ident) = &sequence.value else {
        let message = format!(
            "SEQUENCE BY: REPLACE USING sequences by one column name, found the expression `{}`; compute it in the SELECT list under a name",
            sequence.value
        );
        return Err(invalid(sequence.line, message));
    };
    let line = match ident.span.start.line {
        0 => sequence.line,
        line => line,
    };
    let name = Name {
        text: ident.value.clone(),
        line,
        qualifier: Vec::new(),
    };
    resolve_in("SEQUENCE BY", &name, schema, what)
}

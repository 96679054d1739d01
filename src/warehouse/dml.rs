//! `UPDATE`, `DELETE` and `TRUNCATE TABLE` in `scdflow sql`: each statement one Delta version
//! that rewrites the files holding the rows it changes ([`Table::rewrite`]).
//!
//! As in Spark: a row whose `WHERE` is NULL is not matched; `SET` values go into their columns
//! by the store-assignment rule `INSERT` uses (numbers into numbers, text into dates and
//! timestamps, nothing else without a `CAST`), and every column not set keeps its value; a
//! statement that matches no row makes no version. Refused with their names: `UPDATE ... FROM`,
//! `DELETE ... USING`, `RETURNING`, `LIMIT`, `ORDER BY`, tuple assignments and partitions.

use super::select::{compiled, evaluation, open, packed, table_name, unsupported};
use super::statements::Outcome;
use super::target_edits::EditCheck;
use super::Warehouse;
use crate::delta::{Fate, Rewrite, Rewritten, Table};
use crate::expr::store_assignable;
use crate::expr::Expr;
use crate::value::{DataType, Datum, Row, Schema};
use crate::{Error, ErrorKind, Result};
use sqlparser::ast::{self, TableFactor};

/// `UPDATE t SET c = e, ... [WHERE p]`.
pub(super) fn update(warehouse: &Warehouse, update: &ast::Update) -> Result<Outcome> {
    if update.from.is_some() {
        return Err(unsupported("UPDATE ... FROM"));
    }
    if update.returning.is_some() || update.or.is_some() || update.limit.is_some() {
        return Err(unsupported("UPDATE with RETURNING, OR or LIMIT"));
    }
    if !update.table.joins.is_empty() {
        return Err(unsupported("UPDATE of a join"));
    }
    let name = target(warehouse, &update.table.relation)?;
    let mut table = open(warehouse, &name)?;
    let edits = EditCheck::of(warehouse, &name, &table)?;
    let schema = table.schema().clone();
    let mut set: Vec<Option<Expr>> = vec![None; schema.columns.len()];
    for assignment in &update.assignments {
        let ast::AssignmentTarget::ColumnName(column) = &assignment.target else {
            return Err(unsupported("tuple assignments in SET"));
        };
        let column = column.to_string();
        let Some(at) = schema.index_of(&column) else {
            let message = format!("table {name} has no column `{column}`");
            return Err(Error::new(ErrorKind::Validation, message));
        };
        let expr = compiled(&assignment.value, &schema, "SET")?;
        let into = &schema.columns[at];
        if !store_assignable(expr.ty(), &into.ty) {
            let message = format!(
                "SET: column `{}` is {}, `{}` is {}; CAST it",
                into.name,
                into.ty,
                assignment.value,
                expr.ty()
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
        if set[at].replace(expr).is_some() {
            let message = format!("SET: column `{}` is assigned twice", into.name);
            return Err(Error::new(ErrorKind::Validation, message));
        }
    }
    let predicate = predicate(update.selection.as_ref(), &schema)?;
    let statement = Rewrite::Update(update.selection.as_ref().map(ToString::to_string));
    let fate = &mut |row: &Row| {
        let datums: Vec<Datum> = row.iter().collect();
        if !matched(predicate.as_ref(), &datums)? {
            return Ok(Fate::Keep);
        }
        let mut values = Vec::with_capacity(set.len());
        for (i, expr) in set.iter().enumerate() {
            values.push(match expr {
                Some(expr) => expr.eval(&datums).map_err(|e| evaluation("SET", &e))?,
                None => row.value(i),
            });
        }
        Ok(Fate::Update(packed(values, &schema)?))
    };
    let done = table.rewrite(statement, fate, &|changes| edits.check(changes))?;
    Ok(Outcome::Done(summary(
        &table,
        &name,
        "updated",
        done.updated,
        done,
    )))
}

/// `DELETE FROM t [WHERE p]`.
pub(super) fn delete(warehouse: &Warehouse, delete: &ast::Delete) -> Result<Outcome> {
    if !delete.tables.is_empty() || delete.using.is_some() {
        return Err(unsupported("DELETE of several tables or with USING"));
    }
    if delete.returning.is_some() || !delete.order_by.is_empty() || delete.limit.is_some() {
        return Err(unsupported("DELETE with RETURNING, ORDER BY or LIMIT"));
    }
    let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
        &delete.from;
    let [one] = from.as_slice() else {
        return Err(unsupported("DELETE from several tables"));
    };
    if !one.joins.is_empty() {
        return Err(unsupported("DELETE from a join"));
    }
    let name = target(warehouse, &one.relation)?;
    let mut table = open(warehouse, &name)?;
    let edits = EditCheck::of(warehouse, &name, &table)?;
    let schema = table.schema().clone();
    let predicate = predicate(delete.selection.as_ref(), &schema)?;
    let statement = Rewrite::Delete(delete.selection.as_ref().map(ToString::to_string));
    let fate = &mut |row: &Row| {
        let datums: Vec<Datum> = row.iter().collect();
        Ok(match matched(predicate.as_ref(), &datums)? {
            true => Fate::Delete,
            false => Fate::Keep,
        })
    };
    let done = table.rewrite(statement, fate, &|changes| edits.check(changes))?;
    Ok(Outcome::Done(summary(
        &table,
        &name,
        "deleted",
        done.deleted,
        done,
    )))
}

/// `TRUNCATE TABLE t, ...`: every row deleted, one version per table.
pub(super) fn truncate(warehouse: &Warehouse, truncate: &ast::Truncate) -> Result<Outcome> {
    if truncate.partitions.is_some() {
        return Err(unsupported("TRUNCATE TABLE ... PARTITION"));
    }
    let mut said = Vec::new();
    for target in &truncate.table_names {
        let name = table_name(warehouse, &target.name)?;
        if truncate.if_exists && !Table::exists(&warehouse.table_dir(&name)) {
            continue;
        }
        let mut table = open(warehouse, &name)?;
        let edits = EditCheck::of(warehouse, &name, &table)?;
        let check = |changes: &[_]| edits.check(changes);
        let done = table.rewrite(Rewrite::Delete(None), &mut |_| Ok(Fate::Delete), &check)?;
        said.push(summary(&table, &name, "truncated", done.deleted, done));
    }
    Ok(Outcome::Done(match said.is_empty() {
        true => "no table truncated".to_string(),
        false => said.join("; "),
    }))
}

/// The table an `UPDATE` or `DELETE` names.
fn target(warehouse: &Warehouse, relation: &TableFactor) -> Result<super::TableName> {
    match relation {
        TableFactor::Table { name, args, .. } if args.is_none() => table_name(warehouse, name),
        other => Err(unsupported(&format!("a statement on {other}"))),
    }
}

/// The compiled `WHERE`, which must be a BOOLEAN.
fn predicate(selection: Option<&ast::Expr>, schema: &Schema) -> Result<Option<Expr>> {
    let Some(selection) = selection else {
        return Ok(None);
    };
    let predicate = compiled(selection, schema, "WHERE")?;
    if !matches!(predicate.ty(), DataType::Boolean | DataType::Null) {
        let message = format!("WHERE: `{predicate}` is {}, not BOOLEAN", predicate.ty());
        return Err(Error::new(ErrorKind::Validation, message));
    }
    Ok(Some(predicate))
}

/// Whether a row meets the `WHERE` (no `WHERE`: every row does).
fn matched(predicate: Option<&Expr>, row: &[Datum]) -> Result<bool> {
    match predicate {
        None => Ok(true),
        Some(p) => p.eval_predicate(row).map_err(|e| evaluation("WHERE", &e)),
    }
}

fn summary(
    table: &Table,
    name: &super::TableName,
    verb: &str,
    rows: u64,
    done: Rewritten,
) -> String {
    let plural = if rows == 1 { "row" } else { "rows" };
    match done.version {
        Some(version) => format!("{verb} {rows} {plural} of {name} (version {version})"),
        None => format!(
            "{verb} no row of {name}; the table is unchanged (version {})",
            table.version()
        ),
    }
}

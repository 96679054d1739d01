//! Queries of `scdflow sql`: `VALUES` lists and `SELECT` over one relation — `VALUES`, a
//! subquery or a warehouse table — with a projection (`*`, `* EXCEPT (...)`, expressions with
//! aliases), `WHERE`, `ORDER BY` and `LIMIT`.
//!
//! A `VALUES` list's columns are `col1`, `col2`, ... (as in Spark) unless an alias names them
//! (`AS t(a, b)`); each column's type is the one its values meet at, NULL fitting any. Joins,
//! grouping, set operations and CTEs are refused with their name.

use super::{TableName, Warehouse};
use crate::delta::Table;
use crate::expr::{cast_value, compile, unify};
use crate::value::{DataType, Datum, Packer, Row, Schema, Value};
use crate::{Error, ErrorKind, Result};
use sqlparser::ast::{self, SetExpr, TableFactor};
use std::cmp::Ordering;

/// A query's result: its columns and rows.
#[derive(Debug)]
pub struct Relation {
    /// The columns.
    pub schema: Schema,
    /// The rows, laid out as `schema`.
    pub rows: Vec<Row>,
}

/// Evaluates `query` against the warehouse.
pub fn query(warehouse: &Warehouse, query: &ast::Query) -> Result<Relation> {
    if query.with.is_some() {
        return Err(unsupported("WITH (common table expressions)"));
    }
    if query.fetch.is_some() || !query.locks.is_empty() || !query.pipe_operators.is_empty() {
        return Err(unsupported("FETCH, FOR UPDATE and pipe operators"));
    }
    let mut relation = body(warehouse, &query.body)?;
    if let Some(order_by) = &query.order_by {
        order(&mut relation, order_by)?;
    }
    if let Some(limit) = &query.limit_clause {
        apply_limit(&mut relation, limit)?;
    }
    Ok(relation)
}

fn body(warehouse: &Warehouse, body: &SetExpr) -> Result<Relation> {
    match body {
        SetExpr::Values(values) => values_list(&values.rows),
        SetExpr::Query(q) => query(warehouse, q),
        SetExpr::Select(select) => select_from(warehouse, select),
        SetExpr::SetOperation { op, .. } => Err(unsupported(&op.to_string())),
        SetExpr::Table(_) => Err(unsupported("TABLE t")),
        _ => Err(unsupported("a statement as a query")),
    }
}

fn select_from(warehouse: &Warehouse, select: &ast::Select) -> Result<Relation> {
    let clauses = [
        (select.distinct.is_some(), "DISTINCT"),
        (select.top.is_some(), "TOP"),
        (!select.lateral_views.is_empty(), "LATERAL VIEW"),
        (
            !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty()),
            "GROUP BY",
        ),
        (select.having.is_some(), "HAVING"),
        (select.qualify.is_some(), "QUALIFY"),
        (!select.named_window.is_empty(), "WINDOW"),
        (select.into.is_some(), "SELECT INTO"),
    ];
    if let Some((_, name)) = clauses.iter().find(|(used, _)| *used) {
        return Err(unsupported(name));
    }
    let input = match select.from.as_slice() {
        [] => Relation {
            schema: Schema::default(),
            rows: vec![Row::new()],
        },
        [one] if one.joins.is_empty() => factor(warehouse, &one.relation)?,
        _ => return Err(unsupported("joins (FROM with more than one table)")),
    };
    let mut kept = input.rows;
    if let Some(predicate) = &select.selection {
        let predicate = compiled(predicate, &input.schema, "WHERE")?;
        if predicate.ty() != &DataType::Boolean && predicate.ty() != &DataType::Null {
            let message = format!("WHERE: `{predicate}` is {}, not BOOLEAN", predicate.ty());
            return Err(Error::new(ErrorKind::Validation, message));
        }
        let mut filtered = Vec::with_capacity(kept.len());
        for row in kept {
            let datums: Vec<Datum> = row.iter().collect();
            if predicate
                .eval_predicate(&datums)
                .map_err(|e| evaluation("WHERE", &e))?
            {
                filtered.push(row);
            }
        }
        kept = filtered;
    }
    project(&input.schema, kept, &select.projection)
}

/// The relation a `FROM` item names.
fn factor(warehouse: &Warehouse, factor: &TableFactor) -> Result<Relation> {
    let (mut relation, alias) = match factor {
        TableFactor::Table {
            name, alias, args, ..
        } if args.is_none() => {
            let name = table_name(warehouse, name)?;
            let table = open(warehouse, &name)?;
            let relation = Relation {
                schema: table.schema().clone(),
                rows: table.rows()?,
            };
            (relation, alias)
        }
        TableFactor::Derived {
            subquery, alias, ..
        } => (query(warehouse, subquery)?, alias),
        other => return Err(unsupported(&format!("FROM {other}"))),
    };
    if let Some(alias) = alias.as_ref().filter(|a| !a.columns.is_empty()) {
        if alias.columns.len() != relation.schema.columns.len() {
            let message = format!(
                "FROM: the alias `{alias}` names {} columns, but the relation has {}",
                alias.columns.len(),
                relation.schema.columns.len()
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
        for (column, name) in relation.schema.columns.iter_mut().zip(&alias.columns) {
            column.name = name.name.value.clone();
        }
    }
    Ok(relation)
}

/// The full name of a table named in SQL.
pub(crate) fn table_name(warehouse: &Warehouse, name: &ast::ObjectName) -> Result<TableName> {
    let parts = name_parts(name)?;
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    warehouse
        .table_name(&parts)
        .map_err(|e| Error::new(ErrorKind::Validation, e))
}

/// The identifiers of a dotted name.
pub(crate) fn name_parts(name: &ast::ObjectName) -> Result<Vec<String>> {
    name.0
        .iter()
        .map(|part| match part.as_ident() {
            Some(ident) => Ok(ident.value.clone()),
            None => {
                let message = format!("`{name}` is not a table name");
                Err(Error::new(ErrorKind::Validation, message))
            }
        })
        .collect()
}

/// Opens a warehouse table, saying which name was not found.
pub(crate) fn open(warehouse: &Warehouse, name: &TableName) -> Result<Table> {
    let dir = warehouse.table_dir(name);
    if !Table::exists(&dir) {
        let message = format!(
            "table {name} does not exist (no Delta table at {})",
            dir.display()
        );
        return Err(Error::new(ErrorKind::Validation, message));
    }
    Table::open(&dir)
}

/// `VALUES (...), (...)`: columns `col1`... typed by the values they hold.
fn values_list(rows: &[Vec<ast::Expr>]) -> Result<Relation> {
    let width = rows.first().map_or(0, Vec::len);
    let empty = Schema::default();
    let mut values: Vec<Vec<Value>> = Vec::with_capacity(rows.len());
    let mut types = vec![DataType::Null; width];
    for (r, row) in rows.iter().enumerate() {
        if row.len() != width {
            let message = format!(
                "VALUES: row {} has {} values, the first row has {width}",
                r + 1,
                row.len()
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
        let mut out = Vec::with_capacity(width);
        for (c, expr) in row.iter().enumerate() {
            let compiled = compiled(expr, &empty, "VALUES")?;
            types[c] = unify(&types[c], compiled.ty()).ok_or_else(|| {
                let message = format!(
                    "VALUES: column col{} holds both {} and {} (`{expr}`, row {})",
                    c + 1,
                    types[c],
                    compiled.ty(),
                    r + 1
                );
                Error::new(ErrorKind::Validation, message)
            })?;
            out.push(compiled.eval(&[]).map_err(|e| evaluation("VALUES", &e))?);
        }
        values.push(out);
    }
    let schema = Schema::new(
        types
            .iter()
            .enumerate()
            .map(|(c, t)| (format!("col{}", c + 1), t.clone())),
    );
    let rows = values
        .into_iter()
        .map(|row| packed(row, &schema))
        .collect::<Result<Vec<_>>>()?;
    Ok(Relation { schema, rows })
}

/// `values` cast to `schema`'s types, packed.
pub(crate) fn packed(values: Vec<Value>, schema: &Schema) -> Result<Row> {
    let mut packer = Packer::new();
    for (value, column) in values.into_iter().zip(&schema.columns) {
        let value = if column.ty == DataType::Null {
            value
        } else {
            cast_value(value, &column.ty).map_err(|e| {
                let message = format!("column `{}`: {e}", column.name);
                Error::new(ErrorKind::InvalidRow, message)
            })?
        };
        packer.push(&value);
    }
    Ok(packer.finish())
}

/// The `SELECT` list over `rows` of `schema`.
fn project(schema: &Schema, rows: Vec<Row>, items: &[ast::SelectItem]) -> Result<Relation> {
    let mut columns: Vec<(String, crate::expr::Expr)> = Vec::new();
    for item in items {
        match item {
            ast::SelectItem::Wildcard(options) => {
                if options.opt_ilike.is_some()
                    || options.opt_exclude.is_some()
                    || options.opt_replace.is_some()
                    || options.opt_rename.is_some()
                {
                    return Err(unsupported(&format!("SELECT {item}")));
                }
                let except: Vec<&str> = options
                    .opt_except
                    .iter()
                    .flat_map(|e| {
                        std::iter::once(e.first_element.value.as_str())
                            .chain(e.additional_elements.iter().map(|i| i.value.as_str()))
                    })
                    .collect();
                for name in &except {
                    if schema.index_of(name).is_none() {
                        let message = format!("SELECT * EXCEPT: no column `{name}`");
                        return Err(Error::new(ErrorKind::Validation, message));
                    }
                }
                for (i, column) in schema.columns.iter().enumerate() {
                    if !except.iter().any(|e| e.eq_ignore_ascii_case(&column.name)) {
                        columns.push((column.name.clone(), crate::expr::Expr::column(i, column)));
                    }
                }
            }
            ast::SelectItem::UnnamedExpr(expr) => {
                let name = match expr {
                    ast::Expr::Identifier(ident) => schema
                        .index_of(&ident.value)
                        .map_or_else(|| ident.value.clone(), |i| schema.columns[i].name.clone()),
                    other => other.to_string(),
                };
                columns.push((name, compiled(expr, schema, "SELECT")?));
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                columns.push((alias.value.clone(), compiled(expr, schema, "SELECT")?));
            }
            ast::SelectItem::QualifiedWildcard(..) => {
                return Err(unsupported(&format!("SELECT {item}")));
            }
        }
    }
    let out = Schema::new(columns.iter().map(|(n, e)| (n.clone(), e.ty().clone())));
    let mut packer = Packer::new();
    let mut projected = Vec::with_capacity(rows.len());
    for row in rows {
        let datums: Vec<Datum> = row.iter().collect();
        for (_, expr) in &columns {
            expr.eval_into(&datums, &mut packer)
                .map_err(|e| evaluation("SELECT", &e))?;
        }
        projected.push(packer.finish());
    }
    Ok(Relation {
        schema: out,
        rows: projected,
    })
}

fn order(relation: &mut Relation, order_by: &ast::OrderBy) -> Result<()> {
    let ast::OrderByKind::Expressions(keys) = &order_by.kind else {
        return Err(unsupported("ORDER BY ALL"));
    };
    let mut compiled_keys = Vec::with_capacity(keys.len());
    for key in keys {
        let expr = compiled(&key.expr, &relation.schema, "ORDER BY")?;
        let ascending = key.options.asc.unwrap_or(true);
        // NULL sorts lowest: first ascending, last descending, unless told otherwise.
        let nulls_first = key.options.nulls_first.unwrap_or(ascending);
        compiled_keys.push((expr, ascending, nulls_first));
    }
    let mut keyed = Vec::with_capacity(relation.rows.len());
    for row in std::mem::take(&mut relation.rows) {
        let datums: Vec<Datum> = row.iter().collect();
        let values = compiled_keys
            .iter()
            .map(|(e, _, _)| e.eval(&datums).map_err(|e| evaluation("ORDER BY", &e)))
            .collect::<Result<Vec<_>>>()?;
        keyed.push((values, row));
    }
    keyed.sort_by(|(a, _), (b, _)| {
        for ((x, y), (_, ascending, nulls_first)) in a.iter().zip(b).zip(&compiled_keys) {
            let ordering = match (x.is_null(), y.is_null()) {
                (true, true) => Ordering::Equal,
                (true, false) if *nulls_first => Ordering::Less,
                (true, false) => Ordering::Greater,
                (false, true) if *nulls_first => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) if *ascending => x.cmp(y),
                (false, false) => y.cmp(x),
            };
            if ordering != Ordering::Equal {
                return ordering;
            }
        }
        Ordering::Equal
    });
    relation.rows = keyed.into_iter().map(|(_, row)| row).collect();
    Ok(())
}

fn apply_limit(relation: &mut Relation, limit: &ast::LimitClause) -> Result<()> {
    let ast::LimitClause::LimitOffset {
        limit,
        offset,
        limit_by,
    } = limit
    else {
        return Err(unsupported("LIMIT offset, count"));
    };
    if !limit_by.is_empty() {
        return Err(unsupported("LIMIT BY"));
    }
    let count = |expr: &ast::Expr, clause: &str| -> Result<usize> {
        let value = compiled(expr, &Schema::default(), clause)?
            .eval(&[])
            .map_err(|e| evaluation(clause, &e))?;
        match value {
            Value::Int(n) if n >= 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
            other => {
                let message = format!("{clause}: expected a count, found {other:?}");
                Err(Error::new(ErrorKind::Validation, message))
            }
        }
    };
    let skip = match offset {
        Some(offset) => count(&offset.value, "OFFSET")?,
        None => 0,
    };
    let take = match limit {
        Some(limit) => count(limit, "LIMIT")?,
        None => usize::MAX,
    };
    relation.rows = std::mem::take(&mut relation.rows)
        .into_iter()
        .skip(skip)
        .take(take)
        .collect();
    Ok(())
}

pub(crate) fn compiled(
    expr: &ast::Expr,
    schema: &Schema,
    clause: &str,
) -> Result<crate::expr::Expr> {
    compile(expr, schema).map_err(|e| {
        let message = format!("{clause}: {}", e.message());
        let error = Error::new(e.kind(), message);
        match e.location().line {
            Some(line) => error.at_line(line),
            None => error,
        }
    })
}

pub(crate) fn evaluation(clause: &str, why: &str) -> Error {
    Error::new(ErrorKind::InvalidRow, format!("{clause}: {why}"))
}

pub(crate) fn unsupported(what: &str) -> Error {
    let message = format!("{what} is not supported by scdflow sql");
    Error::new(ErrorKind::Validation, message)
}

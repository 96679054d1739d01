//! Queries: `VALUES` lists and `SELECT` over one relation — `VALUES`, a subquery, a common
//! table expression, a warehouse table or a table-valued function ([`Scope`]) — with a
//! projection (`*`, `* EXCEPT (...)`, expressions with aliases), `WHERE`, `ORDER BY`, `LIMIT`,
//! and uncorrelated subqueries in expressions ([`super::subqueries`]).
//!
//! A `VALUES` list's columns are `col1`, `col2`, ... (as in Spark) unless an alias names them
//! (`AS t(a, b)`); each column's type is the one its values meet at, NULL fitting any. A common
//! table expression is evaluated once, where its `WITH` is, and is visible to the rest of that
//! `WITH` and its query (inner ones shadow outer ones). A view ([`super::views`]) is read by
//! running its query. Joins, grouping, set operations and
//! recursive CTEs are refused with their name.

use super::scope::Scope;
use super::views::{View, MAX_NESTING};
use super::{TableName, Warehouse};
use crate::delta::Table;
use crate::expr::{cast_value, compile, unify};
use crate::value::{DataType, Datum, Packer, Row, Schema, Value};
use crate::{Error, ErrorKind, Result};
use sqlparser::ast::{self, SetExpr, TableFactor};
use sqlparser::dialect::DatabricksDialect;
use sqlparser::parser::Parser;
use std::cmp::Ordering;

/// A query's result: its columns and rows.
#[derive(Clone, Debug)]
pub struct Relation {
    /// The columns.
    pub schema: Schema,
    /// The rows, laid out as `schema`.
    pub rows: Vec<Row>,
}

/// Where a query is evaluated: its scope and the common table expressions in effect.
pub(crate) struct Env<'s> {
    scope: &'s Scope<'s>,
    ctes: Vec<(String, Relation)>,
    /// How many views deep this query is (a view's query sees none of its reader's CTEs).
    views: usize,
}

impl<'s> Env<'s> {
    fn new(scope: &'s Scope<'s>) -> Self {
        Env {
            scope,
            ctes: Vec::new(),
            views: 0,
        }
    }

    /// `expr` with its subqueries bound, compiled against `schema`.
    fn compiled(
        &self,
        expr: &ast::Expr,
        schema: &Schema,
        clause: &str,
    ) -> Result<crate::expr::Expr> {
        let bound = super::subqueries::bind(expr, self).map_err(|e| in_clause(clause, e))?;
        compiled(&bound, schema, clause)
    }
}

/// `expr` with its subqueries evaluated in `scope`, compiled against `schema`; errors name
/// `clause`.
pub fn bound_expr(
    scope: &Scope,
    expr: &ast::Expr,
    schema: &Schema,
    clause: &str,
) -> Result<crate::expr::Expr> {
    Env::new(scope).compiled(expr, schema, clause)
}

/// Evaluates `query` in `scope`.
pub fn query(scope: &Scope, query: &ast::Query) -> Result<Relation> {
    query_in(&Env::new(scope), query)
}

/// Evaluates `query` in `env` (a subquery sees the CTEs around it).
pub(crate) fn query_in(env: &Env, query: &ast::Query) -> Result<Relation> {
    if query.fetch.is_some() || !query.locks.is_empty() || !query.pipe_operators.is_empty() {
        return Err(unsupported("FETCH, FOR UPDATE and pipe operators"));
    }
    let inner;
    let env = match &query.with {
        None => env,
        Some(with) => {
            inner = with_ctes(env, with)?;
            &inner
        }
    };
    let mut relation = body(env, &query.body)?;
    if let Some(order_by) = &query.order_by {
        order(env, &mut relation, order_by)?;
    }
    if let Some(limit) = &query.limit_clause {
        apply_limit(&mut relation, limit)?;
    }
    Ok(relation)
}

/// `env` extended by the common table expressions of `with`, each evaluated in turn.
fn with_ctes<'s>(env: &Env<'s>, with: &ast::With) -> Result<Env<'s>> {
    if with.recursive {
        return Err(unsupported("WITH RECURSIVE"));
    }
    let mut inner = Env {
        scope: env.scope,
        ctes: env.ctes.clone(),
        views: env.views,
    };
    for cte in &with.cte_tables {
        let mut relation = query_in(&inner, &cte.query)?;
        rename_columns(&mut relation, &cte.alias)?;
        inner.ctes.push((cte.alias.name.value.clone(), relation));
    }
    Ok(inner)
}

fn body(env: &Env, body: &SetExpr) -> Result<Relation> {
    match body {
        SetExpr::Values(values) => values_relation(&values.rows),
        SetExpr::Query(q) => query_in(env, q),
        SetExpr::Select(select) => select_from(env, select),
        SetExpr::SetOperation { op, .. } => Err(unsupported(&op.to_string())),
        SetExpr::Table(_) => Err(unsupported("TABLE t")),
        _ => Err(unsupported("a statement as a query")),
    }
}

fn select_from(env: &Env, select: &ast::Select) -> Result<Relation> {
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
        [one] if one.joins.is_empty() => factor(env, &one.relation)?,
        _ => return Err(unsupported("joins (FROM with more than one table)")),
    };
    let mut kept = input.rows;
    if let Some(predicate) = &select.selection {
        let predicate = env.compiled(predicate, &input.schema, "WHERE")?;
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
    project(env, &input.schema, kept, &select.projection)
}

/// The relation a `FROM` item (or `MERGE`'s `USING`) names, in `scope`.
pub(crate) fn from_item(scope: &Scope, item: &TableFactor) -> Result<Relation> {
    factor(&Env::new(scope), item)
}

/// The relation a `FROM` item names.
fn factor(env: &Env, factor: &TableFactor) -> Result<Relation> {
    let (mut relation, alias) = match factor {
        TableFactor::Table {
            name, alias, args, ..
        } => {
            let relation = match args {
                Some(args) => table_function(env, name, args)?,
                None => named(env, name)?,
            };
            (relation, alias)
        }
        TableFactor::Derived {
            subquery, alias, ..
        } => (query_in(env, subquery)?, alias),
        other => return Err(unsupported(&format!("FROM {other}"))),
    };
    if let Some(alias) = alias {
        rename_columns(&mut relation, alias)?;
    }
    Ok(relation)
}

/// A CTE in effect (innermost first) or a warehouse table; a dry scope reads no rows.
fn named(env: &Env, name: &ast::ObjectName) -> Result<Relation> {
    if let [part] = name.0.as_slice() {
        let cte = part.as_ident().and_then(|id| {
            let mut ctes = env.ctes.iter().rev();
            ctes.find(|(n, _)| n.eq_ignore_ascii_case(&id.value))
        });
        if let Some((_, relation)) = cte {
            return Ok(relation.clone());
        }
    }
    let warehouse = env.scope.warehouse(&format!("`{name}`"))?;
    let full = table_name(warehouse, name)?;
    if let Some(view) = warehouse.view(&full)? {
        return view_rows(env, &full, &view);
    }
    let table = open(warehouse, &full)?;
    let rows = match env.scope.is_dry() {
        true => Vec::new(),
        false => table.rows()?,
    };
    Ok(Relation {
        schema: table.schema().clone(),
        rows,
    })
}

/// The rows of view `name`: its query, run in the catalog and schema it was created in, where
/// no CTE of the reader is seen.
fn view_rows(env: &Env, name: &TableName, view: &View) -> Result<Relation> {
    if env.views >= MAX_NESTING {
        let message = format!(
            "view {name}: views read views more than {MAX_NESTING} deep; do they read each \
             other in a cycle?"
        );
        return Err(Error::new(ErrorKind::Validation, message));
    }
    let query = Parser::new(&DatabricksDialect {})
        .try_with_sql(&view.query)
        .and_then(|mut p| p.parse_query())
        .map_err(|e| {
            let message = format!("view {name}: its stored query does not parse: {e}");
            Error::new(ErrorKind::Format, message)
        })?;
    let home = (env.scope.warehouse("a view")?)
        .with_defaults(&view.catalog, &view.schema)
        .map_err(|e| e.prefixed(&format!("view {name}")))?;
    let scope = env.scope.over(&home);
    let inner = Env {
        scope: &scope,
        ctes: Vec::new(),
        views: env.views + 1,
    };
    let mut relation = query_in(&inner, &query).map_err(|e| e.prefixed(&format!("view {name}")))?;
    if !view.columns.is_empty() {
        if view.columns.len() != relation.schema.columns.len() {
            let message = format!(
                "view {name} names {} columns, its query now gives {}; create it again",
                view.columns.len(),
                relation.schema.columns.len()
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
        for (column, given) in relation.schema.columns.iter_mut().zip(&view.columns) {
            column.name = given.clone();
        }
    }
    Ok(relation)
}

/// `list_files(path [, recursive => b])`, `table_changes('t', start [, end])`,
/// `last_snapshot_version()`, `current_snapshot_version()`.
fn table_function(
    env: &Env,
    name: &ast::ObjectName,
    args: &ast::TableFunctionArgs,
) -> Result<Relation> {
    let text = name.to_string();
    if let Some(relation) = env.scope.snapshot_function(&text) {
        if !args.args.is_empty() {
            let message = format!("{text}() takes no arguments");
            return Err(Error::new(ErrorKind::Validation, message));
        }
        return relation;
    }
    if text.eq_ignore_ascii_case("table_changes") {
        return super::table_changes::table_changes(env.scope, &args.args);
    }
    if text.eq_ignore_ascii_case("event_log") {
        return super::event_log::event_log(env.scope, &args.args);
    }
    if !text.eq_ignore_ascii_case("list_files") {
        let message = format!(
            "unknown table function `{text}` (supported: list_files, table_changes, \
             event_log, last_snapshot_version, current_snapshot_version)"
        );
        return Err(Error::new(ErrorKind::Validation, message));
    }
    let mut path = None;
    let mut recursive = true;
    for arg in &args.args {
        match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) if path.is_none() => {
                path = Some(constant_text(e, "list_files path")?);
            }
            ast::FunctionArg::Named {
                name,
                arg: ast::FunctionArgExpr::Expr(e),
                ..
            } if name.value.eq_ignore_ascii_case("recursive") => {
                recursive = constant_text(e, "list_files recursive")?.eq_ignore_ascii_case("true");
            }
            other => {
                let message = format!("list_files: unsupported argument `{other}` (list_files(path [, recursive => true|false]))");
                return Err(Error::new(ErrorKind::Validation, message));
            }
        }
    }
    let Some(path) = path else {
        let message = "list_files: the path is required: list_files('/Volumes/c/s/v/dir/')";
        return Err(Error::new(ErrorKind::Validation, message));
    };
    super::list_files::list_files(env.scope, &path, recursive)
}

/// A constant argument's value as text (a string, a number, a boolean).
fn constant_text(e: &ast::Expr, what: &str) -> Result<String> {
    let value = compiled(e, &Schema::default(), what)?
        .eval(&[])
        .map_err(|why| evaluation(what, &why))?;
    match cast_value(value, &DataType::String) {
        Ok(Value::Str(text)) => Ok(text),
        _ => {
            let message = format!("{what}: `{e}` is not a constant");
            Err(Error::new(ErrorKind::Validation, message))
        }
    }
}

/// Applies an alias's column names (`AS t(a, b)`) to `relation`.
fn rename_columns(relation: &mut Relation, alias: &ast::TableAlias) -> Result<()> {
    if alias.columns.is_empty() {
        return Ok(());
    }
    if alias.columns.len() != relation.schema.columns.len() {
        let message = format!(
            "the alias `{alias}` names {} columns, but the relation has {}",
            alias.columns.len(),
            relation.schema.columns.len()
        );
        return Err(Error::new(ErrorKind::Validation, message));
    }
    for (column, name) in relation.schema.columns.iter_mut().zip(&alias.columns) {
        column.name = name.name.value.clone();
    }
    Ok(())
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
pub fn values_relation(rows: &[Vec<ast::Expr>]) -> Result<Relation> {
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
fn project(
    env: &Env,
    schema: &Schema,
    rows: Vec<Row>,
    items: &[ast::SelectItem],
) -> Result<Relation> {
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
                columns.push((name, env.compiled(expr, schema, "SELECT")?));
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                columns.push((alias.value.clone(), env.compiled(expr, schema, "SELECT")?));
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

fn order(env: &Env, relation: &mut Relation, order_by: &ast::OrderBy) -> Result<()> {
    let ast::OrderByKind::Expressions(keys) = &order_by.kind else {
        return Err(unsupported("ORDER BY ALL"));
    };
    let mut compiled_keys = Vec::with_capacity(keys.len());
    for key in keys {
        let expr = env.compiled(&key.expr, &relation.schema, "ORDER BY")?;
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
    compile(expr, schema).map_err(|e| in_clause(clause, e))
}

/// `error` said of `clause`, keeping its kind and line.
pub(crate) fn in_clause(clause: &str, error: Error) -> Error {
    error.prefixed(clause)
}

pub(crate) fn evaluation(clause: &str, why: &str) -> Error {
    Error::new(ErrorKind::InvalidRow, format!("{clause}: {why}"))
}

pub(crate) fn unsupported(what: &str) -> Error {
    let message = format!("{what} is not supported in scdflow's queries");
    Error::new(ErrorKind::Validation, message)
}

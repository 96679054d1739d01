//! Source tables (`CREATE STREAMING TABLE s AS SELECT ... FROM STREAM ...`): resolved in
//! dependency order, so a table only reads tables before it in `Pipeline::tables`, with
//! `read_files` paths resolved against the pipeline file's directory and projections, filters
//! and constraints (`SourceTable::expectations`, against the table's own rows) compiled.

use super::catalog::Catalog;
use super::cursor::{in_clause, invalid, syntax, Name};
use super::expectations::compile_expectations;
use super::paths::Paths;
use super::schema::{check_declared, parse_schema_text, stored_by_name};
use super::syntax::{From, Located, Query, ReadFiles, SelectItem, TableKind, TableStmt};
use super::target_feeds::Feeds;
use crate::engine::changefeed::{with_feed_columns, FEED_COLUMN_NAMES};
use crate::expr::{compile, Expr};
use crate::plan::{DeltaRead, Format, SourceInput, SourceTable};
use crate::value::{Column, DataType, Schema};
use crate::Result;
use std::collections::BTreeMap;
use std::path::Path;

/// Builds every table with a query, dependencies first; `read_files` paths resolve by `paths`,
/// a target's change data feed takes its columns from `feeds` (by the target's name,
/// [`super::target_feeds`]). Returns the tables and, per table, its index in the catalog.
pub(crate) fn build_sources(
    catalog: &Catalog,
    paths: Paths,
    feeds: &Feeds,
) -> Result<(Vec<SourceTable>, Vec<usize>)> {
    let mut order = Vec::new();
    let mut visiting = Vec::new();
    for i in 0..catalog.tables.len() {
        visit(catalog, i, &mut visiting, &mut order)?;
    }
    let mut tables: Vec<SourceTable> = Vec::with_capacity(order.len());
    for &i in &order {
        let table = build_one(catalog, i, (&tables, &order), paths, feeds)?;
        tables.push(table);
    }
    Ok((tables, order))
}

/// The catalog tables table `i` reads from: the one its query streams, or its append flows'.
fn upstream(catalog: &Catalog, i: usize) -> Vec<&Name> {
    let table = &catalog.tables[i];
    match table.query.as_ref().map(|q| &q.from) {
        Some(From::Table(name)) => vec![name],
        Some(_) => Vec::new(),
        None => table.appended.iter().collect(),
    }
}

/// Depth-first topological order of the tables with a query; `visiting` is the current path.
fn visit(
    catalog: &Catalog,
    i: usize,
    visiting: &mut Vec<usize>,
    order: &mut Vec<usize>,
) -> Result<()> {
    if order.contains(&i) || !catalog.tables[i].is_source() {
        return Ok(());
    }
    visiting.push(i);
    for name in upstream(catalog, i) {
        let j = catalog.resolve(name, "FROM")?;
        if !catalog.tables[j].is_source() {
            let read = match catalog.tables[i].kind {
                TableKind::View { .. } => {
                    "; a view over a target is created with `scdflow sql` \
                    (CREATE VIEW) over its published table, not yet in its pipeline"
                }
                TableKind::StreamingTable | TableKind::Implicit => {
                    "; read its source instead, or its change data feed: \
                    STREAM(t) WITH (readChangeFeed = true)"
                }
            };
            let message = format!(
                "FROM: `{}` is maintained by AUTO CDC flows, not an append-only stream{read}",
                catalog.tables[j].name.text
            );
            return Err(invalid(name.line, message));
        }
        if let Some(start) = visiting.iter().position(|&v| v == j) {
            let cycle: Vec<&str> = visiting[start..]
                .iter()
                .chain(std::iter::once(&j))
                .map(|&v| catalog.tables[v].name.text.as_str())
                .collect();
            let message = format!(
                "FROM: streaming tables read each other in a cycle: {}",
                cycle.join(" -> ")
            );
            return Err(invalid(name.line, message));
        }
        visit(catalog, j, visiting, order)?;
    }
    visiting.pop();
    order.push(i);
    Ok(())
}

/// The input reading the change data feed of the pipeline's target `name`, and its columns:
/// the target's, then the feed's three.
fn feed(catalog: &Catalog, name: &Name, feeds: &Feeds) -> Result<(SourceInput, Schema)> {
    let j = catalog.resolve(name, "FROM")?;
    let schema = (feeds.get(&catalog.tables[j].name.text))
        .ok_or_else(|| internal("a change data feed is read before its target is planned"))?;
    // Targets are the catalog's tables without a query, in catalog order.
    let target = catalog.tables[..j]
        .iter()
        .filter(|t| !t.is_source())
        .count();
    Ok((SourceInput::TargetFeed(target), with_feed_columns(schema)))
}

/// The input reading Delta table `name` at `dir` as `read` says, and its columns: the
/// table's, and for its change data feed the feed's three after them. A feed the table does not
/// record is refused here, at the line reading it.
fn warehouse_table(
    name: &str,
    dir: &Path,
    read: DeltaRead,
    line: u64,
) -> Result<(SourceInput, Schema)> {
    let table = crate::delta::Table::open(dir).map_err(|e| e.at_line(line))?;
    if let Some(start) = read.starting_version().filter(|&v| v > table.version()) {
        let message = format!(
            "FROM STREAM({name}): startingVersion {start} is after the table's latest version, {}",
            table.version()
        );
        return Err(invalid(line, message));
    }
    let schema = match read {
        DeltaRead::ChangeFeed { .. } => {
            let properties = table.properties().map_err(|e| e.at_line(line))?;
            let recorded = properties
                .get(crate::delta::FEED_PROPERTY)
                .is_some_and(|v| v.eq_ignore_ascii_case("true"));
            if !recorded {
                let message = format!(
                    "FROM STREAM({name}) WITH (readChangeFeed = true): the table does not \
                     record its change data feed (TBLPROPERTIES ('{}' = 'true'))",
                    crate::delta::FEED_PROPERTY
                );
                return Err(invalid(line, message));
            }
            if let Some(start) = read.starting_version() {
                let log = crate::delta::Log::open(dir).map_err(|e| e.at_line(line))?;
                log.check_feed_recorded(start, start)
                    .map_err(|e| e.at_line(line))?;
            }
            with_feed_columns(table.schema())
        }
        _ => table.schema().clone(),
    };
    let input = SourceInput::Delta {
        dir: dir.to_path_buf(),
        table: name.to_string(),
        read,
    };
    Ok((input, schema))
}

fn build_one(
    catalog: &Catalog,
    i: usize,
    (built, order): (&[SourceTable], &[usize]),
    paths: Paths,
    feeds: &Feeds,
) -> Result<SourceTable> {
    let stmt = &catalog.tables[i];
    let Some(query) = stmt.query.as_ref() else {
        return union(catalog, i, built, order, paths);
    };
    let (input, input_schema) = match &query.from {
        From::ReadFiles(spec) => read_files(spec, paths)?,
        From::Warehouse { name, dir, read } => warehouse_table(name, dir, *read, stmt.line)?,
        From::Feed(name) => feed(catalog, name, feeds)?,
        From::Values {
            rows,
            columns,
            line,
        } => values(rows, columns, *line)?,
        From::Table(name) => {
            // `visit` put the upstream table earlier in `order`, so it is built already.
            let upstream = catalog.resolve(name, "FROM")?;
            let position = order
                .iter()
                .position(|&o| o == upstream)
                .filter(|&p| p < built.len());
            let p =
                position.ok_or_else(|| internal("source tables are out of dependency order"))?;
            (SourceInput::Table(p), built[p].schema.clone())
        }
    };
    let (projection, schema) = project(query, &input_schema)?;
    let filter = match &query.filter {
        Some(f) => Some(predicate("WHERE", f, &input_schema)?),
        None => None,
    };
    let (projection, schema) = match &stmt.columns {
        Some(declared) if stmt.append_flow.is_some() => {
            let flow = stmt.append_flow.as_deref().unwrap_or_default();
            stored_by_name(
                declared,
                projection,
                &schema,
                &input_schema,
                (flow, stmt.line),
            )?
        }
        Some(declared) => {
            check_declared(declared, &schema, &stmt.name.text, "the query", stmt.line)?;
            (projection, schema)
        }
        None => (projection, schema),
    };
    let rows = format!("the rows of `{}`", stmt.name.text);
    Ok(SourceTable {
        expectations: compile_expectations(&stmt.constraints, &schema, &rows)?,
        published: publication(stmt, &schema, paths)?,
        name: stmt.name.text.clone(),
        schema,
        input,
        projection,
        filter,
        once: stmt.once,
        line: stmt.line,
    })
}

/// `VALUES` rows, evaluated now: each column typed by the values it holds (as `scdflow sql`
/// types a `VALUES` list), named by the alias.
fn values(
    rows: &[Vec<sqlparser::ast::Expr>],
    columns: &[Name],
    line: u64,
) -> Result<(SourceInput, Schema)> {
    let relation = crate::warehouse::select::values_relation(rows)
        .map_err(|e| in_clause("VALUES", e, line))?;
    let schema = Schema::new(
        (columns.iter().zip(&relation.schema.columns)).map(|(n, c)| (n.text.clone(), c.ty.clone())),
    );
    if let Some(c) = schema.columns.iter().find(|c| c.ty == DataType::Null) {
        let message = format!(
            "VALUES: column `{}` holds only NULL; write CAST(NULL AS type)",
            c.name
        );
        return Err(invalid(line, message));
    }
    let input = SourceInput::Values {
        rows: relation.rows,
        schema: schema.clone(),
    };
    Ok((input, schema))
}

/// A table several append flows write: the union of their implicit tables, which each give
/// the same columns (stored by name into the declared ones, or, undeclared, the same as the
/// first flow's).
fn union(
    catalog: &Catalog,
    i: usize,
    built: &[SourceTable],
    order: &[usize],
    paths: Paths,
) -> Result<SourceTable> {
    let stmt = &catalog.tables[i];
    if stmt.appended.is_empty() {
        return Err(internal("a target table was built as a source"));
    }
    let mut parents = Vec::with_capacity(stmt.appended.len());
    for name in &stmt.appended {
        let j = catalog.resolve(name, "INSERT INTO")?;
        let p = (order.iter().position(|&o| o == j))
            .filter(|&p| p < built.len())
            .ok_or_else(|| internal("source tables are out of dependency order"))?;
        parents.push(p);
    }
    let schema = built[parents[0]].schema.clone();
    for &p in &parents[1..] {
        if built[p].schema != schema {
            let message = format!(
                "INSERT INTO {}: its append flows produce different columns, ({schema}) and ({}); declare the table's columns, which each flow meets by name",
                stmt.name.text, built[p].schema
            );
            return Err(invalid(built[p].line, message));
        }
    }
    let rows = format!("the rows of `{}`", stmt.name.text);
    Ok(SourceTable {
        expectations: compile_expectations(&stmt.constraints, &schema, &rows)?,
        published: publication(stmt, &schema, paths)?,
        name: stmt.name.text.clone(),
        schema,
        input: SourceInput::Union(parents),
        projection: None,
        filter: None,
        once: false,
        line: stmt.line,
    })
}

/// The properties of a declared streaming table's published Delta table, when the pipeline
/// runs in a warehouse (`None` without one, and for views and implicit tables, which are
/// never published). Delta reserves the change data feed's
/// column names, so a table that has one cannot record its feed: asking for it is an error.
fn publication(
    stmt: &TableStmt,
    schema: &Schema,
    paths: Paths,
) -> Result<Option<BTreeMap<String, String>>> {
    if stmt.kind != TableKind::StreamingTable {
        return Ok(None);
    }
    let reserved = (schema.columns.iter()).find(|c| FEED_COLUMN_NAMES.contains(&c.name.as_str()));
    let feed = (stmt.properties.iter())
        .find(|(key, value, _)| key == crate::delta::FEED_PROPERTY && value.trim() == "true");
    if let (Some(column), Some((key, _, line))) = (reserved, feed) {
        let message = format!(
            "TBLPROPERTIES: `{}` has a column `{}`, a name Delta reserves for the change data \
             feed, so it cannot record one ({key}); rename the column with SELECT ... AS",
            stmt.name.text, column.name
        );
        return Err(invalid(*line, message));
    }
    let properties = super::targets::published_properties(&stmt.properties)?;
    Ok(paths.warehouse.map(|_| properties))
}

fn internal(message: &str) -> crate::Error {
    crate::Error::new(crate::ErrorKind::Internal, message)
}

/// Compiles a BOOLEAN predicate of `clause`.
pub(crate) fn predicate(
    clause: &str,
    e: &Located<sqlparser::ast::Expr>,
    schema: &Schema,
) -> Result<Expr> {
    let compiled = compile(&e.value, schema).map_err(|err| in_clause(clause, err, e.line))?;
    match compiled.ty() {
        DataType::Boolean => Ok(compiled),
        ty => Err(invalid(
            e.line,
            format!("{clause}: the condition must be BOOLEAN, `{compiled}` is {ty}"),
        )),
    }
}

fn read_files(spec: &ReadFiles, paths: Paths) -> Result<(SourceInput, Schema)> {
    if spec.version.is_some() {
        let message = "read_files: version => is only valid in AUTO CDC FROM SNAPSHOT read_files(...) (a source table reads every file)";
        return Err(invalid(spec.line, message));
    }
    let path = paths.of(spec)?;
    let format = file_format(spec, &path)?;
    let header = spec.header.unwrap_or(true);
    let (file_schema, declared) = match &spec.schema {
        Some(text) => (parse_schema_text(text, spec.line)?, true),
        None => (infer_schema(&path, format, header)?, false),
    };
    let schema = file_schema.clone();
    let input = SourceInput::Files {
        path,
        format,
        header,
        file_schema,
        declared,
    };
    Ok((input, schema))
}

/// The schema of the first file at `path` (a file, or a directory's first in name order):
/// a Parquet file's own columns, a text file's as [`crate::io::infer_schema`] infers them.
pub(crate) fn infer_schema(path: &Path, format: Format, header: bool) -> Result<Schema> {
    match format {
        Format::Parquet => crate::delta::parquet_file_schema(&crate::io::first_file(path)?),
        _ => crate::io::infer_schema(path, format, header),
    }
}

/// The `format =>` option, or else the format the file name's extension implies.
pub(crate) fn file_format(spec: &ReadFiles, path: &Path) -> Result<Format> {
    match &spec.format {
        Some(f) => match f.to_ascii_lowercase().as_str() {
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "parquet" => Ok(Format::Parquet),
            _ => Err(syntax(
                spec.line,
                format!("read_files: unsupported format `{f}` (supported: csv, json, parquet)"),
            )),
        },
        None => format_from_extension(path).ok_or_else(|| {
            let message = format!(
                "read_files: cannot tell the format of `{}` from its name; add format => 'csv', 'json' or 'parquet'",
                spec.path
            );
            invalid(spec.line, message)
        }),
    }
}

fn format_from_extension(path: &Path) -> Option<Format> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "csv" => Some(Format::Csv),
        "json" | "jsonl" | "ndjson" => Some(Format::Json),
        "parquet" => Some(Format::Parquet),
        _ => None,
    }
}

/// The compiled SELECT list and its output schema; `SELECT *` is `None` and keeps the input.
pub(crate) fn project(query: &Query, input: &Schema) -> Result<(Option<Vec<Expr>>, Schema)> {
    let Some(items) = &query.projection else {
        return Ok((None, input.clone()));
    };
    let mut exprs = Vec::new();
    let mut columns: Vec<Column> = Vec::new();
    for item in items {
        let (line, produced) = match item {
            SelectItem::Wildcard { line } => {
                let all = input.columns.iter().enumerate();
                (
                    *line,
                    all.map(|(i, c)| (Expr::column(i, c), c.name.clone()))
                        .collect(),
                )
            }
            SelectItem::Expr { expr, alias, line } => (
                *line,
                vec![select_item(expr, alias.as_ref(), *line, input)?],
            ),
        };
        for (expr, name) in produced {
            if columns.iter().any(|c| c.name.eq_ignore_ascii_case(&name)) {
                return Err(invalid(
                    line,
                    format!("SELECT: duplicate column name `{name}`"),
                ));
            }
            columns.push(Column {
                name,
                ty: expr.ty().clone(),
            });
            exprs.push(expr);
        }
    }
    Ok((Some(exprs), Schema { columns }))
}

/// One compiled SELECT item and its output name: the alias, or the column's own name.
fn select_item(
    e: &sqlparser::ast::Expr,
    alias: Option<&Name>,
    line: u64,
    input: &Schema,
) -> Result<(Expr, String)> {
    let expr = compile(e, input).map_err(|err| in_clause("SELECT", err, line))?;
    let name = match (alias, expr.column_index()) {
        (Some(alias), _) => alias.text.clone(),
        (None, Some(i)) => input.columns[i].name.clone(),
        (None, None) => {
            return Err(invalid(
                line,
                format!("SELECT: expression `{expr}` needs an alias (`{expr} AS name`)"),
            ));
        }
    };
    if *expr.ty() == DataType::Null {
        let message =
            format!("SELECT: column `{name}` has no type (a bare NULL); write CAST(NULL AS type)");
        return Err(invalid(line, message));
    }
    Ok((expr, name))
}

//! `scdflow sql`: the statements users run outside a pipeline, against a warehouse.
//!
//! Supported: `CREATE SCHEMA [IF NOT EXISTS]`; `CREATE [OR REPLACE] TABLE [IF NOT EXISTS]` with
//! columns or `AS` a query, and `TBLPROPERTIES`; `INSERT INTO t [(columns)]` a query (`VALUES` or
//! `SELECT`); `UPDATE`, `DELETE` and `TRUNCATE TABLE` (module `dml`); `DROP TABLE [IF
//! EXISTS]`; queries ([`select`](super::select)). Every writing statement is one Delta commit.
//!
//! Invariants: the whole text is parsed before any statement runs, so a syntax error anywhere
//! changes nothing; statements then run in order, each committed before the next starts, so a
//! failing statement leaves the earlier ones done and itself undone. Every error names the
//! statement's first line (and the file, when the text came from one).

use super::dml;
use super::metadata_statements::{repair, show_properties};
use super::parse::{parse, Parsed, Stmt};
use super::scope::Scope;
use super::select::{self, name_parts, open, packed, table_name, unsupported, Relation};
use super::target_edits::EditCheck;
use super::Warehouse;
use crate::delta::Table;
use crate::engine::changefeed::ChangeType;
use crate::expr::depth::{is_operator, MAX_EXPR_OPERATORS};
use crate::expr::{parse_type, store_assignable};
use crate::value::{Row, Schema, Value};
use crate::{Error, ErrorKind, Result};
use sqlparser::ast::{self, Statement};
use sqlparser::dialect::DatabricksDialect;
use sqlparser::tokenizer::{Token, Tokenizer};
use std::collections::BTreeMap;

/// What a statement did.
#[derive(Debug)]
pub enum Outcome {
    /// A writing statement's summary (`created table main.s.t (version 0, 8 rows)`).
    Done(String),
    /// A query's result.
    Rows(Relation),
}

/// Parses `text` and runs its statements in order, handing each outcome to `each` as soon as
/// the statement completes.
pub fn run(
    warehouse: &Warehouse,
    text: &str,
    each: &mut dyn FnMut(Outcome) -> Result<()>,
) -> Result<()> {
    refuse_deep_expressions(text)?;
    for Parsed { statement, line } in parse(text)? {
        let (outcome, verb) = match &statement {
            Stmt::Sql(statement) => (execute(warehouse, statement), verb(statement)),
            Stmt::ShowProperties { table, key } => (
                show_properties(warehouse, table, key.as_deref()),
                "SHOW TBLPROPERTIES".to_string(),
            ),
            Stmt::Repair { table, rest } => {
                (repair(warehouse, table, rest), "REPAIR TABLE".to_string())
            }
        };
        let outcome = outcome.map_err(|e| {
            let named = Error::new(e.kind(), format!("{verb}: {}", e.message()));
            match (e.location().line, line) {
                (Some(inner), _) => named.at_line(inner),
                (None, 0) => named,
                (None, line) => named.at_line(line),
            }
        })?;
        each(outcome)?;
    }
    Ok(())
}

/// Fails on a run of more than [`MAX_EXPR_OPERATORS`] operators between two commas or
/// semicolons: an expression as deep as that (`a + a + ...`) would overflow the stack when
/// compiled. Deep nesting across commas (`f(1, f(1, ...))`) is the parser's recursion limit's.
fn refuse_deep_expressions(text: &str) -> Result<()> {
    let tokens = Tokenizer::new(&DatabricksDialect {}, text)
        .tokenize_with_location()
        .map_err(|e| Error::new(ErrorKind::Syntax, e.message).at_line(e.location.line))?;
    let mut run = 0u32;
    for t in &tokens {
        run = match t.token {
            Token::Comma | Token::SemiColon => 0,
            ref token => run + u32::from(is_operator(token)),
        };
        if run > MAX_EXPR_OPERATORS {
            let message = format!(
                "an expression is too long: more than {MAX_EXPR_OPERATORS} operators (chained \
                 or nested); split it"
            );
            return Err(Error::new(ErrorKind::Syntax, message).at_line(t.span.start.line));
        }
    }
    Ok(())
}

/// The statement's leading words, as errors name it.
fn verb(statement: &Statement) -> String {
    let text = statement.to_string();
    let words: Vec<&str> = text.split_whitespace().take(3).collect();
    let keep = words
        .iter()
        .take_while(|w| w.chars().all(|c| c.is_ascii_uppercase()))
        .count()
        .max(1);
    words[..keep].join(" ")
}

/// What the queries of `scdflow sql` see: the warehouse, and relative paths from the working
/// directory.
pub(super) fn scope(warehouse: &Warehouse) -> Scope<'_> {
    Scope::new(Some(warehouse), std::path::Path::new(""))
}

fn execute(warehouse: &Warehouse, statement: &Statement) -> Result<Outcome> {
    match statement {
        Statement::CreateSchema {
            schema_name,
            if_not_exists,
            ..
        } => create_schema(warehouse, schema_name, *if_not_exists),
        Statement::CreateTable(create) => create_table(warehouse, create),
        Statement::Insert(insert) => insert_into(warehouse, insert),
        Statement::Update(update) => dml::update(warehouse, update),
        Statement::Delete(delete) => dml::delete(warehouse, delete),
        Statement::Truncate(truncate) => dml::truncate(warehouse, truncate),
        Statement::Merge(merge) => super::merge::merge(warehouse, merge),
        Statement::Query(query) => select::query(&scope(warehouse), query).map(Outcome::Rows),
        Statement::Drop {
            object_type: ast::ObjectType::Table,
            if_exists,
            names,
            ..
        } => drop_tables(warehouse, names, *if_exists),
        Statement::CreateView(create) => super::view_statements::create_view(warehouse, create),
        Statement::Drop {
            object_type: ast::ObjectType::View,
            if_exists,
            names,
            ..
        } => super::view_statements::drop_views(warehouse, names, *if_exists),
        other => {
            let what = verb(other);
            Err(unsupported(&what))
        }
    }
}

fn create_schema(
    warehouse: &Warehouse,
    name: &ast::SchemaName,
    if_not_exists: bool,
) -> Result<Outcome> {
    let ast::SchemaName::Simple(name) = name else {
        return Err(unsupported("AUTHORIZATION"));
    };
    let parts = name_parts(name)?;
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let (catalog, schema) = warehouse
        .schema_name(&parts)
        .map_err(|e| Error::new(ErrorKind::Validation, e))?;
    let created = warehouse.create_schema(&catalog, &schema)?;
    match (created, if_not_exists) {
        (true, _) => Ok(Outcome::Done(format!("created schema {catalog}.{schema}"))),
        (false, true) => Ok(Outcome::Done(format!("schema {catalog}.{schema} exists"))),
        (false, false) => {
            let message = format!("schema {catalog}.{schema} already exists (use IF NOT EXISTS)");
            Err(Error::new(ErrorKind::Validation, message))
        }
    }
}

fn create_table(warehouse: &Warehouse, create: &ast::CreateTable) -> Result<Outcome> {
    let refused = [
        (create.temporary, "TEMPORARY"),
        (
            create.external || create.location.is_some(),
            "EXTERNAL / LOCATION",
        ),
        (
            create.like.is_some() || create.clone.is_some(),
            "LIKE / CLONE",
        ),
        (create.partition_by.is_some(), "PARTITIONED BY"),
        (create.cluster_by.is_some(), "CLUSTER BY"),
        (!create.constraints.is_empty(), "table constraints"),
    ];
    if let Some((_, what)) = refused.iter().find(|(used, _)| *used) {
        return Err(unsupported(what));
    }
    let name = table_name(warehouse, &create.name)?;
    warehouse.require_schema(&name)?;
    if warehouse.view(&name)?.is_some() {
        let message = format!("{name} is a view; drop it first (DROP VIEW)");
        return Err(Error::new(ErrorKind::Validation, message));
    }
    let dir = warehouse.table_dir(&name);
    if Table::exists(&dir) && create.or_replace {
        let published = Table::open(&dir)?.properties()?;
        if let Some(target) = published.get(crate::output::TARGET_PROPERTY) {
            let message = format!(
                "table {name} is target `{target}` of a pipeline, which replaces it (scdflow run \
                 --full-refresh); CREATE OR REPLACE would leave the pipeline's state behind it"
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
    }
    if Table::exists(&dir) && !create.or_replace {
        if create.if_not_exists {
            return Ok(Outcome::Done(format!("table {name} exists")));
        }
        let message = format!("table {name} already exists (use CREATE OR REPLACE TABLE)");
        return Err(Error::new(ErrorKind::Validation, message));
    }
    let properties = table_properties(&create.table_options)?;
    let (schema, rows) = match &create.query {
        Some(query) => {
            let relation = select::query(&scope(warehouse), query)?;
            let schema = if create.columns.is_empty() {
                relation.schema
            } else {
                declared(&create.columns)?
            };
            (schema, relation.rows)
        }
        None if create.columns.is_empty() => {
            return Err(Error::new(
                ErrorKind::Validation,
                "a table needs columns or AS SELECT",
            ))
        }
        None => (declared(&create.columns)?, Vec::new()),
    };
    let table = Table::create(&dir, &schema, &properties, &rows, create.or_replace)?;
    Ok(Outcome::Done(format!(
        "created table {name} (version {}, {} rows)",
        table.version(),
        rows.len()
    )))
}

/// The columns a `CREATE TABLE` declares.
fn declared(columns: &[ast::ColumnDef]) -> Result<Schema> {
    let mut out = Vec::with_capacity(columns.len());
    for column in columns {
        if let Some(option) = column.options.first() {
            return Err(unsupported(&format!("column option `{}`", option.option)));
        }
        let ty = parse_type(&column.data_type.to_string()).map_err(|e| {
            let message = format!("column `{}`: {e}", column.name.value);
            Error::new(ErrorKind::Validation, message)
        })?;
        out.push((column.name.value.clone(), ty));
    }
    Ok(Schema::new(out))
}

/// `TBLPROPERTIES ('key' = 'value', ...)`: keys and values as text.
fn table_properties(options: &ast::CreateTableOptions) -> Result<BTreeMap<String, String>> {
    let list = match options {
        ast::CreateTableOptions::None => return Ok(BTreeMap::new()),
        ast::CreateTableOptions::TableProperties(list) => list,
        other => return Err(unsupported(&other.to_string())),
    };
    let mut properties = BTreeMap::new();
    for option in list {
        let ast::SqlOption::KeyValue { key, value } = option else {
            return Err(unsupported(&format!("TBLPROPERTIES entry `{option}`")));
        };
        let value = match value {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
                ast::Value::Boolean(b) => b.to_string(),
                ast::Value::Number(n, _) => n.clone(),
                other => other.to_string(),
            },
            other => other.to_string(),
        };
        properties.insert(key.value.clone(), value);
    }
    Ok(properties)
}

fn insert_into(warehouse: &Warehouse, insert: &ast::Insert) -> Result<Outcome> {
    let ast::TableObject::TableName(name) = &insert.table else {
        return Err(unsupported("INSERT INTO a table function"));
    };
    if insert.overwrite || insert.partitioned.is_some() || insert.on.is_some() {
        return Err(unsupported("INSERT OVERWRITE, PARTITION and ON CONFLICT"));
    }
    let Some(source) = &insert.source else {
        return Err(unsupported("INSERT without a query"));
    };
    let name = table_name(warehouse, name)?;
    let mut table = open(warehouse, &name)?;
    let edits = EditCheck::of(warehouse, &name, &table)?;
    let relation = select::query(&scope(warehouse), source)?;
    let schema = table.schema().clone();
    // Where each of the table's columns comes from in the query's rows.
    let sources: Vec<Option<usize>> = if insert.columns.is_empty() {
        (0..schema.columns.len()).map(Some).collect()
    } else {
        let mut sources = vec![None; schema.columns.len()];
        for (i, column) in insert.columns.iter().enumerate() {
            let Some(at) = schema.index_of(&column.to_string()) else {
                let message = format!("table {name} has no column `{column}`");
                return Err(Error::new(ErrorKind::Validation, message));
            };
            if sources[at].replace(i).is_some() {
                let message = format!("column `{column}` is listed twice");
                return Err(Error::new(ErrorKind::Validation, message));
            }
        }
        sources
    };
    let given = if insert.columns.is_empty() {
        schema.columns.len()
    } else {
        insert.columns.len()
    };
    if relation.schema.columns.len() != given {
        let message = format!(
            "the query gives {} columns, the table {name} takes {given}",
            relation.schema.columns.len()
        );
        return Err(Error::new(ErrorKind::Validation, message));
    }
    check_types(&relation.schema, &schema, &sources)?;
    let rows = relation
        .rows
        .iter()
        .enumerate()
        .map(|(r, row)| {
            let values: Vec<Value> = sources
                .iter()
                .map(|s| s.map_or(Value::Null, |i| row.value(i)))
                .collect();
            packed(values, &schema).map_err(|e| {
                let message = format!("row {}: {}", r + 1, e.message());
                Error::new(e.kind(), message)
            })
        })
        .collect::<Result<Vec<Row>>>()?;
    let inserted: Vec<_> = rows
        .iter()
        .map(|r| (ChangeType::Insert, r.clone()))
        .collect();
    edits.check(&inserted)?;
    let version = table.append(&rows)?;
    let plural = if rows.len() == 1 { "row" } else { "rows" };
    Ok(Outcome::Done(format!(
        "inserted {} {plural} into {name} (version {version})",
        rows.len()
    )))
}

/// Refuses query columns whose type cannot go into the table's column: as Spark's ANSI store
/// assignment, numbers go into numbers (checked for overflow) and text into dates and
/// timestamps (checked as it is cast), but a STRING into an INT is refused even when every
/// value would parse.
fn check_types(given: &Schema, table: &Schema, sources: &[Option<usize>]) -> Result<()> {
    for (column, source) in table.columns.iter().zip(sources) {
        let Some(i) = source else { continue };
        let from = &given.columns[*i].ty;
        if !store_assignable(from, &column.ty) {
            let message = format!(
                "column `{}` is {}, the query gives {from}; CAST it",
                column.name, column.ty
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
    }
    Ok(())
}

fn drop_tables(
    warehouse: &Warehouse,
    names: &[ast::ObjectName],
    if_exists: bool,
) -> Result<Outcome> {
    let mut dropped = Vec::new();
    for name in names {
        let name = table_name(warehouse, name)?;
        let dir = warehouse.table_dir(&name);
        if warehouse.view(&name)?.is_some() {
            let message = format!("{name} is a view; use DROP VIEW");
            return Err(Error::new(ErrorKind::Validation, message));
        }
        if !Table::exists(&dir) {
            if if_exists {
                continue;
            }
            let message = format!("table {name} does not exist");
            return Err(Error::new(ErrorKind::Validation, message));
        }
        std::fs::remove_dir_all(&dir).map_err(|e| Error::write(&dir, &e))?;
        dropped.push(name.to_string());
    }
    Ok(Outcome::Done(match dropped.is_empty() {
        true => "no table dropped".to_string(),
        false => format!("dropped table {}", dropped.join(", ")),
    }))
}

//! `FROM SNAPSHOT (query) WITH VERSION (version query)` (SPEC 2.4) resolved into
//! [`VersionedSnapshots`]: what the snapshot query reads, its `SELECT` list and `WHERE` kept as
//! written (their subqueries take values per version), both queries checked here by a dry run
//! ([`Queries::check`]).
//!
//! The snapshot query reads `read_files(path, ...)` — every file there, each row with Spark's
//! `_metadata` fields, so `WHERE _metadata.file_name = ...` picks a version's file — or a
//! warehouse table at its latest version. A streaming table of the pipeline has no "current
//! content" to take whole, so it is refused. Without `schema =>`, the files' schema is inferred
//! from the first file there.

use super::cursor::invalid;
use super::schema::parse_schema_text;
use super::sources::file_format;
use super::syntax::{From, Located, Query, SelectItem};
use super::targets::Context;
use crate::plan::{QueryNames, VersionedInput, VersionedSnapshots, METADATA_COLUMNS};
use crate::value::Schema;
use crate::warehouse::snapshot_versions::Queries;
use crate::Result;
use sqlparser::ast;

/// The snapshots of a `WITH VERSION` flow, their rows' schema, and the source as messages name it.
pub(crate) fn versioned(
    cx: &Context,
    query: &Located<Query>,
    version: &Located<ast::Query>,
) -> Result<(VersionedSnapshots, Schema, String)> {
    let q = &query.value;
    let (input, data, name) = match &q.from {
        From::ReadFiles(spec) => {
            if spec.version.is_some() {
                let message = "read_files: version => and WITH VERSION both choose the versions; keep WITH VERSION";
                return Err(invalid(spec.line, message));
            }
            let path = cx.paths.of(spec)?;
            let format = file_format(spec, &path)?;
            let header = spec.header.unwrap_or(true);
            let file_schema = match &spec.schema {
                Some(text) => parse_schema_text(text, spec.line)?,
                None => {
                    let first = crate::io::first_file(&path).map_err(|e| {
                        let message = format!(
                            "read_files: there is no file in `{}` to infer the schema from ({}); add schema => '...'",
                            spec.path,
                            e.message()
                        );
                        invalid(spec.line, message)
                    })?;
                    super::sources::infer_schema(&first, format, header)?
                }
            };
            let input = VersionedInput::Files {
                path,
                written: spec.path.clone(),
                format,
                header,
                file_schema: file_schema.clone(),
            };
            (input, file_schema, spec.path.clone())
        }
        From::Warehouse { name, dir, .. } => {
            let table = crate::delta::Table::open(dir)?;
            let input = VersionedInput::Delta {
                dir: dir.clone(),
                table: name.clone(),
            };
            (input, table.schema().clone(), name.clone())
        }
        From::Feed(_) => {
            let message = "a versioned snapshot flow reads a feed directly";
            return Err(crate::Error::new(crate::ErrorKind::Internal, message));
        }
        From::Values { line, .. } => {
            let message = "WITH VERSION: the snapshot query reads VALUES; a versioned snapshot reads a warehouse table or read_files(...) whole";
            return Err(invalid(*line, message));
        }
        From::Table(table) => {
            let message = format!(
                "WITH VERSION: the snapshot query reads `{}`, a streaming table of the pipeline; a versioned snapshot reads a warehouse table or read_files(...) whole",
                table.text
            );
            return Err(invalid(table.line, message));
        }
    };
    let mut input_schema = data.clone();
    if matches!(input, VersionedInput::Files { .. }) {
        let metadata = METADATA_COLUMNS
            .iter()
            .map(|(n, t)| (n.to_string(), t.clone()));
        input_schema = Schema::new(
            input_schema
                .columns
                .iter()
                .map(|c| (c.name.clone(), c.ty.clone()))
                .chain(metadata),
        );
    }
    let (select, names) = select_list(q, &data);
    let snapshots = VersionedSnapshots {
        version_column: version_column(&version.value),
        version_query: version.value.clone(),
        input,
        input_schema,
        select,
        filter: q.filter.as_ref().map(|f| f.value.clone()),
        names: QueryNames {
            warehouse: cx.paths.warehouse.map(|w| {
                let (catalog, schema) = w.defaults();
                (
                    w.root().to_path_buf(),
                    catalog.to_string(),
                    schema.to_string(),
                )
            }),
            base: cx.paths.base.to_path_buf(),
        },
    };
    let schema = Queries::new(&snapshots)
        .and_then(|queries| queries.check(&names))
        .map_err(|e| e.at_line(version.line))?;
    Ok((snapshots, schema, name))
}

/// The `SELECT` list as expressions over the input, and the names of the columns they make
/// (`*` is the data columns, never `_metadata`).
fn select_list(q: &Query, data: &Schema) -> (Vec<ast::Expr>, Vec<String>) {
    let all = || {
        (data.columns.iter()).map(|c| {
            (
                ast::Expr::Identifier(ast::Ident::with_quote('`', &c.name)),
                c.name.clone(),
            )
        })
    };
    let items: Vec<(ast::Expr, String)> = match &q.projection {
        None => all().collect(),
        Some(items) => items
            .iter()
            .flat_map(|item| match item {
                SelectItem::Wildcard { .. } => all().collect::<Vec<_>>(),
                SelectItem::Expr { expr, alias, .. } => {
                    let name = match (alias, &**expr) {
                        (Some(alias), _) => alias.text.clone(),
                        (None, ast::Expr::Identifier(id)) => data
                            .index_of(&id.value)
                            .map_or_else(|| id.value.clone(), |i| data.columns[i].name.clone()),
                        (None, ast::Expr::CompoundIdentifier(parts)) => {
                            parts.last().map_or_else(String::new, |p| p.value.clone())
                        }
                        (None, other) => other.to_string(),
                    };
                    vec![((**expr).clone(), name)]
                }
            })
            .collect(),
    };
    items.into_iter().unzip()
}

/// The name of the version query's column, as its outermost `SELECT` writes it (`version`
/// when that is not a plain name); the version functions' column is named alike.
fn version_column(query: &ast::Query) -> String {
    let ast::SetExpr::Select(select) = &*query.body else {
        return "version".to_string();
    };
    match select.projection.as_slice() {
        [ast::SelectItem::ExprWithAlias { alias, .. }] => alias.value.clone(),
        [ast::SelectItem::UnnamedExpr(ast::Expr::Identifier(id))] => id.value.clone(),
        [ast::SelectItem::UnnamedExpr(ast::Expr::CompoundIdentifier(parts))] => parts
            .last()
            .map_or_else(|| "version".to_string(), |p| p.value.clone()),
        _ => "version".to_string(),
    }
}

//! The SQL front end: a pipeline file → a validated [`Pipeline`].
//!
//! Stages, each in its own module:
//! 1. `cursor` + `statement`/`query`/`clauses`: tokens (sqlparser's tokenizer, Databricks
//!    dialect: `"..."` and `'...'` are strings, `` `...` `` quotes names) → `syntax` statements.
//!    Embedded expressions are parsed by sqlparser; the statement grammar is ours.
//! 2. `catalog`: statements → tables and flows by (case-insensitive) name; `target_feeds` and
//!    `warehouse_tables` add an implicit source table for each feed of the pipeline's targets
//!    and each table of the warehouse the pipeline reads; `target_views` rewrites a
//!    materialized view over a target into a flow from the target's feed first.
//! 3. `sources`: source tables in dependency order, with files and schemas resolved (a target's
//!    feed takes the target's columns, so a pipeline reading one is planned in rounds,
//!    `target_feeds`).
//! 4. `targets`: every flow checked against its source (`flows` for change feeds, `snapshots` +
//!    `snapshot_files` for AUTO CDC FROM SNAPSHOT, `replace` for REPLACE USING), targets derived
//!    from flows, and constraints compiled by `expectations`.
//!
//! Invariant: every user error is found here, before anything runs, and carries the pipeline
//! file and the line of the token it is about; its message starts with the clause it concerns.

// Crate-visible for `crate::flow_builder`, which lowers its options to this module's statements
// and validates them with the same functions as a pipeline file.
mod append_flows;
pub(crate) mod catalog;
pub(crate) mod clauses;
pub(crate) mod cursor;
mod declared_names;
mod describe;
mod describe_flows;
mod expectations;
mod flows;
mod insert;
pub(crate) mod paths;
mod query;
mod replace;
mod replace_where;
mod schema;
mod snapshot_files;
mod snapshots;
mod sources;
mod statement;
pub(crate) mod syntax;
mod target_feeds;
mod target_views;
pub(crate) mod targets;
mod versioned;
mod warehouse_tables;

#[cfg(test)]
mod tests;

pub use describe::describe;

use crate::plan::Pipeline;
use crate::warehouse::Warehouse;
use crate::{Error, Result};
use std::path::Path;

/// Reads and parses the pipeline file at `path`.
pub fn load(path: &Path) -> Result<Pipeline> {
    load_in(path, None)
}

/// Reads and parses the pipeline file at `path`, whose tables may read tables of `warehouse`
/// (`FROM STREAM(catalog.schema.table)`).
pub fn load_in(path: &Path, warehouse: Option<&Warehouse>) -> Result<Pipeline> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::read(path, &e))?;
    // Editors on Windows start UTF-8 files with a byte-order mark; it is not SQL.
    parse_in(
        text.strip_prefix('\u{feff}').unwrap_or(&text),
        path,
        warehouse,
    )
}

/// Parses pipeline `text`; `file` locates errors and anchors relative `read_files` paths.
pub fn parse(text: &str, file: &Path) -> Result<Pipeline> {
    parse_in(text, file, None)
}

/// Parses pipeline `text` as [`parse`] does, its tables able to read tables of `warehouse`.
pub fn parse_in(text: &str, file: &Path, warehouse: Option<&Warehouse>) -> Result<Pipeline> {
    build(text, file, warehouse).map_err(|e| e.in_file(file))
}

fn build(text: &str, given: &Path, warehouse: Option<&Warehouse>) -> Result<Pipeline> {
    // Paths stay as the user wrote them (relative to the working directory), so that error
    // messages name files the way the user knows them.
    let file = given.to_path_buf();
    let base = file.parent().unwrap_or(Path::new(""));
    let mut statements = statement::parse_statements(text)?;
    declared_names::canonicalize(&mut statements, warehouse)?;
    let mut catalog = catalog::Catalog::new(statements)?;
    target_views::declare(&mut catalog)?;
    target_feeds::declare(&mut catalog)?;
    warehouse_tables::declare(&mut catalog, warehouse)?;
    append_flows::fold(&mut catalog)?;
    let paths = paths::Paths { base, warehouse };
    let feeds = target_feeds::schemas(&mut catalog, paths)?;
    let (tables, sources) = sources::build_sources(&catalog, paths, &feeds)?;
    let mut warnings = Vec::new();
    let built = targets::build_targets(&catalog, &tables, &sources, paths, &mut warnings)?;
    for table in &catalog.tables {
        targets::unknown_properties(table, &mut warnings);
        if table.kind == (syntax::TableKind::View { temporary: false }) {
            let message = format!(
                "view `{}` feeds this pipeline's flows, as a TEMPORARY VIEW does: scdflow does \
                 not publish a pipeline's views yet (create one with `scdflow sql`)",
                table.name.text
            );
            warnings.push((table.line, message));
        }
    }
    warnings.sort_by_key(|(line, _)| *line);
    if tables.is_empty() && built.targets.is_empty() {
        // An empty file (or only comments) would run, write nothing and exit 0.
        let message = "the pipeline declares no table (CREATE STREAMING TABLE): there is \
                       nothing to run";
        return Err(cursor::invalid(1, message));
    }
    let warnings = warnings
        .into_iter()
        .map(|(line, message)| format!("{}:{line}: {message}", given.display()))
        .collect();
    let pipeline = Pipeline {
        file,
        tables,
        targets: built.targets,
        flows: built.flows,
        snapshot_flows: built.snapshot_flows,
        replace_flows: built.replace_flows,
        warnings,
    };
    target_feeds::check(&pipeline)?;
    Ok(pipeline)
}

//! `CREATE [OR REPLACE] VIEW [IF NOT EXISTS] v [(columns)] AS query` and `DROP VIEW [IF
//! EXISTS] v, ...` ([`super::views`] stores them).
//!
//! A view is created in an existing schema, under a name no table has; its query must run:
//! it is evaluated over empty tables first, and its column list (if any) must name as many
//! columns as it gives. `TEMPORARY` views (a session's; `scdflow sql` keeps none) and
//! materialized views (not yet) are refused with their name.

use super::select::{self, table_name, unsupported};
use super::statements::{scope, Outcome};
use super::views::View;
use super::Warehouse;
use crate::delta::Table;
use crate::{Error, ErrorKind, Result};
use sqlparser::ast;

/// `CREATE VIEW`.
pub(super) fn create_view(warehouse: &Warehouse, create: &ast::CreateView) -> Result<Outcome> {
    if create.temporary {
        return Err(unsupported(
            "CREATE TEMPORARY VIEW (a session's view; scdflow sql keeps no session: CREATE VIEW)",
        ));
    }
    if create.materialized {
        return Err(unsupported(
            "CREATE MATERIALIZED VIEW (not yet, here or in a pipeline)",
        ));
    }
    let name = table_name(warehouse, &create.name)?;
    warehouse.require_schema(&name)?;
    if Table::exists(&warehouse.table_dir(&name)) {
        let message = format!("{name} is a table; a view needs a name of its own");
        return Err(Error::new(ErrorKind::Validation, message));
    }
    if warehouse.view(&name)?.is_some() && !create.or_replace {
        if create.if_not_exists {
            return Ok(Outcome::Done(format!("view {name} exists")));
        }
        let message = format!("view {name} already exists (use CREATE OR REPLACE VIEW)");
        return Err(Error::new(ErrorKind::Validation, message));
    }
    let relation = select::query(&scope(warehouse).dry(), &create.query)?;
    let columns: Vec<String> = create
        .columns
        .iter()
        .map(|c| c.name.value.clone())
        .collect();
    if !columns.is_empty() && columns.len() != relation.schema.columns.len() {
        let message = format!(
            "the view names {} columns, its query gives {}",
            columns.len(),
            relation.schema.columns.len()
        );
        return Err(Error::new(ErrorKind::Validation, message));
    }
    let (catalog, schema) = warehouse.defaults();
    let view = View {
        query: create.query.to_string(),
        columns,
        catalog: catalog.to_string(),
        schema: schema.to_string(),
    };
    warehouse.put_view(&name, &view)?;
    Ok(Outcome::Done(format!("created view {name}")))
}

/// `DROP VIEW`.
pub(super) fn drop_views(
    warehouse: &Warehouse,
    names: &[ast::ObjectName],
    if_exists: bool,
) -> Result<Outcome> {
    let mut dropped = Vec::new();
    for name in names {
        let name = table_name(warehouse, name)?;
        if Table::exists(&warehouse.table_dir(&name)) {
            let message = format!("{name} is a table; use DROP TABLE");
            return Err(Error::new(ErrorKind::Validation, message));
        }
        match warehouse.drop_view(&name)? {
            true => dropped.push(name.to_string()),
            false if if_exists => {}
            false => {
                let message = format!("view {name} does not exist");
                return Err(Error::new(ErrorKind::Validation, message));
            }
        }
    }
    Ok(Outcome::Done(match dropped.is_empty() {
        true => "no view dropped".to_string(),
        false => format!("dropped view {}", dropped.join(", ")),
    }))
}

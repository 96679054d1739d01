//! Qualified names of the tables a pipeline declares: `CREATE OR REFRESH STREAMING TABLE
//! main.cdc_tutorial.target_versioned` publishes the target there (as a Lakeflow pipeline in
//! the default publishing mode does), and `AUTO CDC INTO main.cdc_tutorial.target_versioned`
//! names it.
//!
//! Invariant: after [`canonicalize`], every declared table has one name text, and every
//! reference to it — qualified or not — has that text: the table's own name when it lies in the
//! run's default catalog and schema (so such pipelines behave as before), else
//! `catalog.schema.table`, which [`crate::warehouse::Warehouse::published_dirs`] splits again.
//! With a warehouse, declared names with a dot in a part are refused here, so that split is
//! exact. A qualified declared name needs a warehouse; qualified references to anything else
//! are left for the warehouse's tables ([`super::warehouse_tables`]).

use super::cursor::{invalid, Name};
use super::syntax::{FlowBody, From, Statement};
use crate::warehouse::{TableName, Warehouse};
use crate::Result;

/// Gives every declared table and every reference to one its canonical name text.
pub(crate) fn canonicalize(
    statements: &mut [Statement],
    warehouse: Option<&Warehouse>,
) -> Result<()> {
    let mut declared: Vec<(TableName, String)> = Vec::new();
    for statement in statements.iter_mut() {
        let Statement::Table(table) = statement else {
            continue;
        };
        let name = &mut table.name;
        let Some(warehouse) = warehouse else {
            if !name.qualifier.is_empty() {
                let message = format!(
                    "CREATE STREAMING TABLE: `{}` names a table of a warehouse: give --warehouse DIR",
                    written(name)
                );
                return Err(invalid(name.line, message));
            }
            continue;
        };
        if let Some(part) = name
            .qualifier
            .iter()
            .chain([&name.text])
            .find(|p| p.contains('.'))
        {
            let message = format!(
                "CREATE STREAMING TABLE: `{part}`: the name of a table in a warehouse cannot hold a dot"
            );
            return Err(invalid(name.line, message));
        }
        let full = full_name(warehouse, name, "CREATE STREAMING TABLE")?;
        let (catalog, schema) = warehouse.defaults();
        if !name.qualifier.is_empty() {
            if (full.catalog.as_str(), full.schema.as_str()) != (catalog, schema) {
                name.text = format!("{}.{}.{}", full.catalog, full.schema, name.text);
            }
            name.qualifier.clear();
        }
        declared.push((full, name.text.clone()));
    }
    let Some(warehouse) = warehouse else {
        return Ok(());
    };
    let rename = |name: &mut Name, clause: &str, must_be_declared: bool| -> Result<()> {
        if name.qualifier.is_empty() {
            return Ok(());
        }
        let full = full_name(warehouse, name, clause)?;
        match declared.iter().find(|(f, _)| *f == full) {
            Some((_, text)) => {
                name.text = text.clone();
                name.qualifier.clear();
            }
            None if must_be_declared => {
                let message = format!(
                    "{clause}: `{}` is not a table the pipeline declares; declare it with CREATE STREAMING TABLE",
                    written(name)
                );
                return Err(invalid(name.line, message));
            }
            None => {}
        }
        Ok(())
    };
    for statement in statements.iter_mut() {
        match statement {
            Statement::Table(table) => {
                if let Some(query) = &mut table.query {
                    if let From::Table(name) = &mut query.from {
                        rename(name, "FROM", false)?;
                    }
                }
                if let Some(body) = &mut table.flow {
                    references(body, &rename)?;
                }
            }
            Statement::Flow(flow) => {
                rename(&mut flow.target, "INTO", true)?;
                references(&mut flow.body, &rename)?;
            }
        }
    }
    Ok(())
}

/// Renames the tables a flow reads.
fn references(
    body: &mut FlowBody,
    rename: &dyn Fn(&mut Name, &str, bool) -> Result<()>,
) -> Result<()> {
    match body {
        FlowBody::AutoCdc(clauses) => {
            if let Some(source) = &mut clauses.source {
                rename(source, "FROM", false)?;
            }
            if let Some(snapshot) = &mut clauses.snapshot {
                if let From::Table(name) = &mut snapshot.value.from {
                    rename(name, "FROM SNAPSHOT", false)?;
                }
            }
        }
        FlowBody::Replace(replace) => {
            if let From::Table(name) = &mut replace.query.from {
                rename(name, "FROM", false)?;
            }
        }
        FlowBody::Append(append) => {
            if let From::Table(name) = &mut append.query.from {
                rename(name, "FROM", false)?;
            }
        }
        FlowBody::ReplaceWhere(replace) => {
            if let From::Table(name) = &mut replace.query.from {
                rename(name, "FROM", false)?;
            }
        }
    }
    Ok(())
}

fn full_name(warehouse: &Warehouse, name: &Name, clause: &str) -> Result<TableName> {
    let parts: Vec<&str> = (name.qualifier.iter().map(String::as_str))
        .chain(std::iter::once(name.text.as_str()))
        .collect();
    (warehouse.table_name(&parts)).map_err(|e| invalid(name.line, format!("{clause}: {e}")))
}

fn written(name: &Name) -> String {
    let mut parts = name.qualifier.clone();
    parts.push(name.text.clone());
    parts.join(".")
}

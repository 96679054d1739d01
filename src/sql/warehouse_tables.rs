//! Tables of the warehouse a pipeline reads: `FROM STREAM(main.cdc_tutorial.users_cdf)`.
//!
//! Each warehouse table a flow or source table reads becomes an implicit source table of the
//! pipeline, named by the table's full name (`main.cdc_tutorial.users_cdf`), and every
//! reference to it is renamed so; from there on it is a source table like any other. A name
//! refers to the warehouse when it is qualified (`schema.t`, `catalog.schema.t`), or, given a
//! warehouse, when no table of the pipeline has it and the warehouse (under the default catalog
//! and schema) does.
//!
//! Limits: a periodic snapshot of a warehouse table (`FROM SNAPSHOT catalog.schema.t`) is
//! refused — a version is then the whole table, not the rows it adds — and so is a qualified
//! name without a warehouse.

use super::catalog::Catalog;
use super::cursor::{invalid, Name};
use super::syntax::{FlowBody, From, Query, TableStmt};
use crate::delta::Table;
use crate::warehouse::Warehouse;
use crate::Result;

/// Declares the warehouse tables `catalog` reads and renames the references to them.
pub(crate) fn declare(catalog: &mut Catalog, warehouse: Option<&Warehouse>) -> Result<()> {
    let pipeline_tables: Vec<String> = catalog.tables.iter().map(|t| t.name.text.clone()).collect();
    let own = |name: &Name| {
        name.qualifier.is_empty()
            && pipeline_tables
                .iter()
                .any(|t| t.eq_ignore_ascii_case(&name.text))
    };
    let mut found: Vec<TableStmt> = Vec::new();
    let mut resolve = |name: &mut Name| -> Result<()> {
        if own(name) {
            return Ok(());
        }
        let Some(warehouse) = warehouse else {
            if name.qualifier.is_empty() {
                return Ok(());
            }
            let message = format!(
                "FROM: `{}.{}` is a table of a warehouse: give --warehouse DIR",
                name.qualifier.join("."),
                name.text
            );
            return Err(invalid(name.line, message));
        };
        let parts: Vec<&str> = (name.qualifier.iter().map(String::as_str))
            .chain(std::iter::once(name.text.as_str()))
            .collect();
        let full = warehouse
            .table_name(&parts)
            .map_err(|e| invalid(name.line, format!("FROM: {e}")))?;
        let dir = warehouse.table_dir(&full);
        if !Table::exists(&dir) {
            if name.qualifier.is_empty() {
                // Neither the pipeline's nor the warehouse's: the catalog's error names it.
                return Ok(());
            }
            let message = format!(
                "FROM: table {full} does not exist in the warehouse (no Delta table at {})",
                dir.display()
            );
            return Err(invalid(name.line, message));
        }
        let text = full.to_string();
        if !found.iter().any(|t| t.name.text == text) {
            found.push(implicit(&text, dir, name.line));
        }
        name.text = text;
        name.qualifier.clear();
        Ok(())
    };
    for table in &mut catalog.tables {
        if let Some(Query {
            from: From::Table(name),
            ..
        }) = &mut table.query
        {
            resolve(name)?;
        }
    }
    for flow in &mut catalog.flows {
        match &mut flow.body {
            FlowBody::AutoCdc(clauses) => {
                if let Some(name) = &mut clauses.source {
                    resolve(name)?;
                }
                if let Some(snapshot) = &clauses.snapshot {
                    if let From::Table(name) = &snapshot.value.from {
                        refuse_snapshot(name, warehouse, &own)?;
                    }
                }
            }
            FlowBody::Replace(replace) => {
                if let From::Table(name) = &mut replace.query.from {
                    resolve(name)?;
                }
            }
        }
    }
    for table in found {
        catalog.add_table(table)?;
    }
    Ok(())
}

/// Fails when a periodic snapshot flow reads a warehouse table.
fn refuse_snapshot(
    name: &Name,
    warehouse: Option<&Warehouse>,
    own: &dyn Fn(&Name) -> bool,
) -> Result<()> {
    if own(name) {
        return Ok(());
    }
    let in_warehouse = warehouse.is_some_and(|w| {
        let parts: Vec<&str> = (name.qualifier.iter().map(String::as_str))
            .chain(std::iter::once(name.text.as_str()))
            .collect();
        w.table_name(&parts)
            .is_ok_and(|full| Table::exists(&w.table_dir(&full)))
    });
    if !name.qualifier.is_empty() || in_warehouse {
        let message = format!(
            "FROM SNAPSHOT: reading snapshots of a warehouse table (`{}`) is not supported yet; \
             read a streaming table of the pipeline, or versioned files with read_files",
            (name.qualifier.iter().chain(std::iter::once(&name.text)))
                .cloned()
                .collect::<Vec<_>>()
                .join(".")
        );
        return Err(invalid(name.line, message));
    }
    Ok(())
}

/// The implicit source table reading the warehouse table `name` at `dir`.
fn implicit(name: &str, dir: std::path::PathBuf, line: u64) -> TableStmt {
    TableStmt {
        name: Name {
            text: name.to_string(),
            line,
            qualifier: Vec::new(),
        },
        line,
        columns: None,
        constraints: Vec::new(),
        properties: Vec::new(),
        query: Some(Query {
            projection: None,
            from: From::Warehouse {
                name: name.to_string(),
                dir,
            },
            streamed: true,
            filter: None,
        }),
        flow: None,
    }
}

//! Tables of the warehouse a pipeline reads: `FROM STREAM(main.cdc_tutorial.users_cdf)`.
//!
//! Each warehouse table a flow or source table reads becomes an implicit source table of the
//! pipeline, named by the table's full name (`main.cdc_tutorial.users_cdf`), and every
//! reference to it is renamed so; from there on it is a source table like any other. A name
//! refers to the warehouse when it is qualified (`schema.t`, `catalog.schema.t`), or, given a
//! warehouse, when no table of the pipeline has it and the warehouse (under the default catalog
//! and schema) does.
//!
//! A snapshot flow's query over a warehouse table (`FROM SNAPSHOT (SELECT ... FROM
//! main.s.t)`) gets an implicit table that reads the table whole (see
//! [`SourceInput::Delta`](crate::plan::SourceInput::Delta)), a stream's one that reads its
//! appends; one pipeline reading a table both ways is refused, since the two implicit tables
//! would share its name. A qualified name without a warehouse is refused. A `WITH VERSION`
//! snapshot flow reads its table itself, when its version query chooses a version, so its query
//! names the table directly instead.

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
    // The warehouse table a name refers to, `None` when it is the pipeline's (or, without a
    // warehouse, unqualified: the catalog's error names it).
    let locate = |name: &Name| -> Result<Option<(String, std::path::PathBuf)>> {
        if own(name) {
            return Ok(None);
        }
        let Some(warehouse) = warehouse else {
            if name.qualifier.is_empty() {
                return Ok(None);
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
                return Ok(None);
            }
            let message = format!(
                "FROM: table {full} does not exist in the warehouse (no Delta table at {})",
                dir.display()
            );
            return Err(invalid(name.line, message));
        }
        Ok(Some((full.to_string(), dir)))
    };
    let mut found: Vec<TableStmt> = Vec::new();
    let mut resolve = |name: &mut Name, snapshots: bool| -> Result<()> {
        let Some((text, dir)) = locate(name)? else {
            return Ok(());
        };
        match found.iter().find(|t| t.name.text == text) {
            None => found.push(implicit(&text, dir, name.line, snapshots)),
            Some(t) if read_as_snapshots(t) != snapshots => {
                let message = format!(
                    "FROM: the pipeline reads table {text} both as a stream and as snapshots; \
                     read it one way"
                );
                return Err(invalid(name.line, message));
            }
            Some(_) => {}
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
            resolve(name, false)?;
        }
    }
    for flow in &mut catalog.flows {
        match &mut flow.body {
            FlowBody::AutoCdc(clauses) => {
                if let Some(name) = &mut clauses.source {
                    resolve(name, false)?;
                }
                let versioned = clauses.version.is_some();
                if let Some(snapshot) = &mut clauses.snapshot {
                    if let From::Table(name) = &mut snapshot.value.from {
                        match versioned {
                            // Its query reads the table when a version is chosen, so no
                            // implicit table reads it at every commit.
                            true => {
                                if let Some((name, dir)) = locate(name)? {
                                    snapshot.value.from = From::Warehouse {
                                        name,
                                        dir,
                                        snapshots: true,
                                    };
                                }
                            }
                            false => resolve(name, true)?,
                        }
                    }
                }
            }
            FlowBody::Replace(replace) => {
                if let From::Table(name) = &mut replace.query.from {
                    resolve(name, false)?;
                }
            }
            FlowBody::Append(append) => {
                if let From::Table(name) = &mut append.query.from {
                    resolve(name, false)?;
                }
            }
        }
    }
    for table in found {
        catalog.add_table(table)?;
    }
    Ok(())
}

/// Whether an implicit table reads its warehouse table as snapshots.
fn read_as_snapshots(table: &TableStmt) -> bool {
    matches!(
        &table.query,
        Some(Query {
            from: From::Warehouse {
                snapshots: true,
                ..
            },
            ..
        })
    )
}

/// The implicit source table reading the warehouse table `name` at `dir`.
fn implicit(name: &str, dir: std::path::PathBuf, line: u64, snapshots: bool) -> TableStmt {
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
                snapshots,
            },
            streamed: true,
            filter: None,
        }),
        once: false,
        append_flow: None,
        appended: Vec::new(),
        flow: None,
    }
}

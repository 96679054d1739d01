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
//! main.s.t)`), and a REPLACE WHERE flow's batch query, get an implicit table that reads the
//! table whole (see
//! [`SourceInput::Delta`](crate::plan::SourceInput::Delta)), a stream's one that reads its
//! appends, or its change data feed with `WITH (readChangeFeed = true)` (Spark's reader
//! options, [`DeltaRead`]); one pipeline reading a table in two ways is refused, since the two
//! implicit tables would share its name. Reader options on a table of the pipeline itself are
//! refused, but for a target's change data feed ([`super::target_feeds`], renamed before). A qualified name without a warehouse is refused. A `WITH VERSION`
//! snapshot flow reads its table itself, when its version query chooses a version, so its query
//! names the table directly instead.

use super::catalog::Catalog;
use super::cursor::{invalid, Name};
use super::syntax::{FlowBody, From, Query, ReadOptions, TableStmt};
use crate::delta::Table;
use crate::plan::DeltaRead;
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
        if warehouse.view(&full)?.is_some() {
            let message = format!(
                "FROM: {full} is a view of the warehouse; a pipeline streams tables (read the \
                 view's table, or declare the view in the pipeline)"
            );
            return Err(invalid(name.line, message));
        }
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
    let mut resolve = |name: &mut Name, read: DeltaRead, options: &ReadOptions| -> Result<()> {
        let Some((text, dir)) = locate(name)? else {
            if options.line != 0 && !own(name) {
                let message = match warehouse {
                    Some(w) => {
                        let (catalog, schema) = w.defaults();
                        format!(
                            "STREAM({}) WITH (...): no table `{}` in this pipeline, and none \
                             in the warehouse as {catalog}.{schema}.{}",
                            name.text, name.text, name.text
                        )
                    }
                    None => format!(
                        "STREAM({}) WITH (...): reader options read a Delta table of the \
                         warehouse: give --warehouse DIR",
                        name.text
                    ),
                };
                return Err(invalid(options.line, message));
            }
            if options.line != 0 {
                let message = format!(
                    "STREAM({}) WITH (...): reader options apply to Delta tables of the \
                     warehouse, and `{}` is this pipeline's table (of its own targets, \
                     STREAM(t) WITH (readChangeFeed = true) reads the change data feed)",
                    name.text, name.text
                );
                return Err(invalid(options.line, message));
            }
            return Ok(());
        };
        match found.iter().find(|t| t.name.text == text) {
            None => found.push(implicit(&text, dir, name.line, read)),
            Some(t) if read_of(t) != Some(read) => {
                let message = format!(
                    "FROM: the pipeline reads table {text} in two ways (as a stream, as \
                     snapshots, or its change data feed, with different options); read it one \
                     way"
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
            options,
            ..
        }) = &mut table.query
        {
            resolve(name, stream_read(options)?, options)?;
        }
    }
    for flow in &mut catalog.flows {
        match &mut flow.body {
            FlowBody::AutoCdc(clauses) => {
                if let Some(name) = &mut clauses.source {
                    let options = &clauses.source_options;
                    resolve(name, stream_read(options)?, options)?;
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
                                        read: DeltaRead::Snapshots,
                                    };
                                }
                            }
                            false => {
                                let none = ReadOptions::default();
                                resolve(name, DeltaRead::Snapshots, &none)?
                            }
                        }
                    }
                }
            }
            FlowBody::Replace(replace) => {
                let query = &mut replace.query;
                if let From::Table(name) = &mut query.from {
                    resolve(name, stream_read(&query.options)?, &query.options)?;
                }
            }
            FlowBody::Append(append) => {
                let query = &mut append.query;
                if let From::Table(name) = &mut query.from {
                    resolve(name, stream_read(&query.options)?, &query.options)?;
                }
            }
            // A batch query: each new version of its table is read whole.
            FlowBody::ReplaceWhere(replace) => {
                let query = &mut replace.query;
                if let From::Table(name) = &mut query.from {
                    if query.streamed || query.options.line != 0 {
                        let mut written = name.qualifier.clone();
                        written.push(name.text.clone());
                        let kind = match replace.view {
                            true => "a materialized view",
                            false => "a REPLACE WHERE flow",
                        };
                        let message = format!(
                            "FROM: {kind} reads its table as a batch, whole (FROM {}), not as \
                             a stream or with reader options",
                            written.join(".")
                        );
                        return Err(invalid(name.line, message));
                    }
                    resolve(name, DeltaRead::Snapshots, &ReadOptions::default())?;
                }
            }
        }
    }
    for table in found {
        catalog.add_table(table)?;
    }
    Ok(())
}

/// How a stream with `options` reads a warehouse table.
fn stream_read(options: &ReadOptions) -> Result<DeltaRead> {
    let starting_version = options.starting_version;
    match options.change_feed {
        true if options.skip_change_commits => Err(invalid(
            options.line,
            "STREAM ... WITH: skipChangeCommits passes over the versions a stream of appends \
             cannot read; a change data feed (readChangeFeed) reads every version",
        )),
        true => Ok(DeltaRead::ChangeFeed { starting_version }),
        false => Ok(DeltaRead::Appends {
            starting_version,
            skip_change_commits: options.skip_change_commits,
        }),
    }
}

/// How an implicit table reads its warehouse table.
fn read_of(table: &TableStmt) -> Option<DeltaRead> {
    match &table.query {
        Some(Query {
            from: From::Warehouse { read, .. },
            ..
        }) => Some(*read),
        _ => None,
    }
}

/// The implicit source table reading the warehouse table `name` at `dir`.
fn implicit(name: &str, dir: std::path::PathBuf, line: u64, read: DeltaRead) -> TableStmt {
    let named = Name {
        text: name.to_string(),
        line,
        qualifier: Vec::new(),
    };
    let query = Query {
        projection: None,
        from: From::Warehouse {
            name: name.to_string(),
            dir,
            read,
        },
        streamed: true,
        options: ReadOptions::default(),
        filter: None,
    };
    TableStmt::implicit(named, query)
}

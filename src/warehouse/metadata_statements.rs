//! Statements about a table rather than its rows: `SHOW TBLPROPERTIES t [(key)]` and
//! `REPAIR TABLE t SYNC METADATA`.
//!
//! `SHOW TBLPROPERTIES` answers as Delta does on Databricks: columns `key` and `value`, the
//! table's properties with its protocol versions and table features, sorted by key; with a
//! key, its one row, whose value for a property the table does not have is Spark's text
//! `Table <name> does not have property: <key>`. A view has no properties.
//!
//! `REPAIR TABLE t SYNC METADATA` makes a Databricks materialized view or streaming table
//! readable outside its pipeline; every table scdflow writes is a plain Delta table readable
//! by any reader already, so it does nothing but check the table exists. Other `REPAIR TABLE`
//! forms repair partitions, which scdflow's unpartitioned tables do not have.

use super::select::{open, table_name, Relation};
use super::statements::Outcome;
use super::Warehouse;
use crate::value::{DataType, Row, Schema, Value};
use crate::{Error, ErrorKind, Result};
use sqlparser::ast::ObjectName;

/// `SHOW TBLPROPERTIES table [(key)]`.
pub(super) fn show_properties(
    warehouse: &Warehouse,
    table: &ObjectName,
    key: Option<&str>,
) -> Result<Outcome> {
    let name = table_name(warehouse, table)?;
    let shown = match warehouse.view(&name)? {
        Some(_) => Default::default(),
        None => open(warehouse, &name)?.shown_properties()?,
    };
    let row = |key: &str, value: &str| {
        let mut row = Row::new();
        row.push(Value::Str(key.to_string()));
        row.push(Value::Str(value.to_string()));
        row
    };
    let rows = match key {
        Some(key) => {
            let value = shown
                .get(key)
                .cloned()
                .unwrap_or_else(|| format!("Table {name} does not have property: {key}"));
            vec![row(key, &value)]
        }
        None => shown.iter().map(|(k, v)| row(k, v)).collect(),
    };
    let schema = Schema::new([
        ("key".to_string(), DataType::String),
        ("value".to_string(), DataType::String),
    ]);
    Ok(Outcome::Rows(Relation { schema, rows }))
}

/// `REPAIR TABLE table <rest>`.
pub(super) fn repair(warehouse: &Warehouse, table: &ObjectName, rest: &str) -> Result<Outcome> {
    let name = table_name(warehouse, table)?;
    if !rest.eq_ignore_ascii_case("SYNC METADATA") {
        let message = format!(
            "`{rest}`: scdflow's tables have no partitions to repair; only SYNC METADATA is \
             accepted (and has nothing to do)"
        );
        return Err(Error::new(ErrorKind::Validation, message));
    }
    if warehouse.view(&name)?.is_none() {
        open(warehouse, &name)?;
    }
    Ok(Outcome::Done(format!(
        "{name} is readable outside its pipeline already (every scdflow table is a plain Delta \
         table); nothing to repair"
    )))
}

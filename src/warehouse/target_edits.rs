//! DML on a pipeline's published target (`INSERT`, `UPDATE`, `DELETE`, `TRUNCATE TABLE`):
//! checked so that the table stays a history the pipeline can go on from.
//!
//! A published target records the rules of its history (table property
//! [`HistoryRules::PROPERTY`]: SCD type, key and tracked columns). A statement on it is
//! refused, changing nothing, when some key it touches would no longer be a valid history
//! (SCD2: versions that overlap, end before they start, more than one open, or two touching
//! versions equal in their tracked columns; SCD1: two rows of one key) — the message names the
//! key and why. The statement holds the table's lock, so it never lands while a pipeline run
//! is writing the table (it waits for the run's step to end, up to the warehouse's
//! [`Warehouse::lock_wait`]); a durable run takes the edit into its state at its next step
//! (`crate::persist` `table_edits`), and later events apply on top of it. A plain run (without
//! `--state`) publishes its targets afresh, as a full refresh does: edits made before it are
//! gone, as on Databricks.
//!
//! Limits: the check reads the whole table once (the rows of the keys touched are needed, and
//! the table has no index by key); bitemporal, REPLACE USING and REPLACE WHERE targets,
//! materialized views, targets published before their rules were recorded, and published
//! streaming tables take no DML. Nor does a target whose change data feed other tables of its
//! pipeline are kept from in the same commit (table property
//! [`crate::output::FEED_READERS_PROPERTY`]): the pipeline takes an edit into the target's
//! state, not into theirs, so they would silently disagree with it.

use super::{TableName, Warehouse};
use crate::delta::Table;
use crate::engine::changefeed::ChangeType;
use crate::engine::HistoryRules;
use crate::value::Row;
use crate::{Error, ErrorKind, Result};
use std::collections::HashMap;
use std::fs::File;

/// What a statement on a table must keep: nothing for a plain table; a target's history rules
/// and the rows of each key.
pub(super) struct EditCheck {
    target: Option<Target>,
}

struct Target {
    name: String,
    table: TableName,
    rules: HistoryRules,
    /// Every row now, by key.
    rows: HashMap<Row, Vec<Row>>,
    /// The table's lock, held until the statement's version is in the log.
    _lock: File,
}

impl EditCheck {
    /// The check for a statement on `table` (named `name`) of `warehouse`.
    pub(super) fn of(warehouse: &Warehouse, name: &TableName, table: &Table) -> Result<EditCheck> {
        let properties = table.properties()?;
        let Some(target) = properties.get(crate::output::TARGET_PROPERTY) else {
            return Ok(EditCheck { target: None });
        };
        if properties.contains_key(crate::output::APPENDS_PROPERTY) {
            let message = format!(
                "table {name} is streaming table `{target}` of a pipeline, which appends each \
                 commit's rows to it: it takes no DML (edit the pipeline's input, or the \
                 tables its flows maintain)"
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
        let recorded = properties.get(HistoryRules::PROPERTY);
        let Some(rules) = recorded.and_then(|r| HistoryRules::parse(r, table.schema())) else {
            let message = format!(
                "table {name} is target `{target}` of a pipeline, which takes no DML: it is \
                 bitemporal, REPLACE USING, REPLACE WHERE or a materialized view, or it was \
                 published before scdflow recorded its history rules (publish it afresh: \
                 scdflow run --full-refresh)"
            );
            return Err(Error::new(ErrorKind::Validation, message));
        };
        if let Some(readers) = properties.get(crate::output::FEED_READERS_PROPERTY) {
            let message = format!(
                "table {name} is target `{target}` of a pipeline whose tables {readers} are \
                 kept from its change data feed in the pipeline: DML on it would not reach \
                 them, so it takes none (edit the pipeline's input, or read the feed from \
                 another pipeline)"
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
        let what = format!("table {name} (a pipeline run is writing it; try again after it)");
        let dir = warehouse.table_dir(name);
        let lock = crate::output::lock_as(&dir, "", &what, warehouse.lock_wait())?;
        let mut rows: HashMap<Row, Vec<Row>> = HashMap::new();
        for row in table.rows()? {
            rows.entry(rules.key_of(&row)).or_default().push(row);
        }
        Ok(EditCheck {
            target: Some(Target {
                name: target.clone(),
                table: name.clone(),
                rules,
                rows,
                _lock: lock,
            }),
        })
    }

    /// Fails, saying why, when `changes` would leave some key an invalid history.
    pub(super) fn check(&self, changes: &[(ChangeType, Row)]) -> Result<()> {
        let Some(target) = &self.target else {
            return Ok(());
        };
        let rules = &target.rules;
        let mut touched: HashMap<Row, Vec<Row>> = HashMap::new();
        for (kind, row) in changes {
            let key = rules.key_of(row);
            let rows = touched
                .entry(key.clone())
                .or_insert_with(|| target.rows.get(&key).cloned().unwrap_or_default());
            match kind.diff() > 0 {
                true => rows.push(row.clone()),
                false => {
                    if let Some(at) = rows.iter().position(|r| r == row) {
                        rows.swap_remove(at);
                    }
                }
            }
        }
        let mut keys: Vec<_> = touched.iter().collect();
        keys.sort();
        for (key, rows) in keys {
            if let Err(why) = rules.check(key, rows) {
                let message = format!(
                    "table {} is target `{}` of a pipeline, whose history the statement would \
                     break: {why}; nothing was changed",
                    target.table, target.name
                );
                return Err(Error::new(ErrorKind::Validation, message));
            }
        }
        Ok(())
    }
}

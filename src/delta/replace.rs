//! `CREATE OR REPLACE TABLE` over a table whose protocol delta-rs's own create refuses to
//! write (writer version 3 or more, such as every table with the change data feed: without its
//! query engine delta-rs cannot enforce what those versions may require).
//!
//! The version scdflow writes instead, through [`commit`], as delta-rs's would be: the new
//! metadata (schema and properties), the `remove` of every live file and the new rows' files.
//! The protocol stays the table's (Delta never downgrades one), so properties that need a
//! feature the table lacks are refused, naming the property; dropping the table first creates
//! it with any. Readers of the change data feed see the version as its removed rows deleted and
//! its new rows inserted (no change-data file is needed for whole files).

use super::batch::{arrow_schema, to_batch};
use super::commit::commit;
use super::files::{as_add, remove, write_parquet, Codec};
use super::table::{delta_columns, failed, Table};
use crate::value::{Row, Schema};
use crate::{Error, ErrorKind, Result};
use deltalake::kernel::{new_metadata, Action, StructType};
use deltalake::protocol::{DeltaOperation, SaveMode};
use std::collections::BTreeMap;

/// Whether a property turns on something the protocol must list (a table feature, or the
/// writer version of a legacy one).
fn needs_protocol(key: &str) -> bool {
    key.starts_with("delta.enable")
        || key.starts_with("delta.feature.")
        || matches!(
            key,
            "delta.appendOnly" | "delta.columnMapping.mode" | "delta.checkpointPolicy"
        )
}

impl Table {
    /// Whether `CREATE OR REPLACE` of this table takes [`Table::replace`]: its writer version
    /// is one delta-rs's create refuses.
    pub(super) fn needs_own_replace(&self) -> Result<bool> {
        let snapshot = self.inner.snapshot().map_err(|e| failed(&self.dir, e))?;
        Ok(snapshot.protocol().min_writer_version() >= 3)
    }

    /// Replaces the table's schema, properties and rows in one new version; returns it.
    pub(super) fn replace(
        &mut self,
        schema: &Schema,
        properties: &BTreeMap<String, String>,
        rows: &[Row],
    ) -> Result<u64> {
        let before = self.properties()?;
        let missing = (properties.iter())
            .find(|(key, value)| needs_protocol(key) && before.get(*key) != Some(*value));
        if let Some((key, value)) = missing {
            let message = format!(
                "Delta table {}: `{key}` = `{value}` needs what the table's protocol may not \
                 have, and a replaced table keeps its protocol; drop the table first (DROP \
                 TABLE) to create it with new table features",
                self.dir.display()
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
        let arrow = arrow_schema(schema)?;
        let columns = delta_columns(&arrow, &self.dir)?;
        let structure = StructType::try_new(columns).map_err(|e| failed(&self.dir, e))?;
        let metadata = new_metadata(&structure, Vec::<String>::new(), properties.iter())
            .map_err(|e| failed(&self.dir, e))?;
        let snapshot = self.inner.snapshot().map_err(|e| failed(&self.dir, e))?;
        let protocol = snapshot.protocol().clone();
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        let mut actions = vec![Action::Metadata(metadata.clone())];
        actions.extend(
            (snapshot.log_data().iter())
                .map(|f| Action::Remove(remove(&as_add(&f), timestamp, true))),
        );
        let url = self.inner.table_url().clone();
        if !rows.is_empty() {
            let batch = to_batch(schema, &arrow, rows)?;
            let adds = write_parquet(
                &self.runtime,
                &self.dir,
                url.as_str(),
                arrow.clone(),
                batch,
                Codec::Snappy,
            )?;
            actions.extend(adds.into_iter().map(Action::Add));
        }
        let operation = DeltaOperation::Create {
            mode: SaveMode::Overwrite,
            location: url,
            protocol,
            metadata,
        };
        let version = self.runtime.block_on(commit(
            &mut self.inner,
            actions,
            operation,
            false,
            &self.dir,
        ))?;
        self.schema = schema.clone();
        self.arrow = arrow;
        Ok(version)
    }
}

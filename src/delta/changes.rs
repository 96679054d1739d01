//! A Delta table's change data feed, version by version, as Delta's readers return it
//! (Spark's `table_changes` and `readChangeFeed`, deltalake's `load_cdf`).
//!
//! A version's changes are, by the protocol ("Change Data Files"): its change-data files
//! (`cdc` actions, each row with its `_change_type`) when it has any; otherwise the rows of the
//! files it adds with `dataChange` as `insert`s and of the files it removes with `dataChange`
//! as `delete`s. Every change also carries `_commit_version` and `_commit_timestamp`: the
//! version's in-commit timestamp, else its `commitInfo` timestamp (milliseconds, as writers
//! record it), else the log entry's modification time, as readers fall back.
//!
//! Limits, each refused with the version's number: a version at which the table did not
//! record its feed (`delta.enableChangeDataFeed` off: [`Log::check_feed_recorded`] checks the
//! table's metadata at the first version of a range and every metadata change after it, so
//! its answer is exact; [`Log::version_changes`] refuses a version that turns the feed off); a
//! version without change-data files that adds or removes files with deletion vectors (a
//! writer that does so must write change-data files); files vacuumed away (a feed is readable
//! for the table's file retention, `delta.deletedFileRetentionDuration`).

use super::log::Log;
use super::table::read_parquet;
use crate::engine::changefeed::ChangeType;
use crate::value::{Row, Schema, Value};
use crate::{Error, ErrorKind, Result};
use deltalake::kernel::Action;
use deltalake::Path as StorePath;

/// The table property that turns the feed on.
pub const FEED_PROPERTY: &str = "delta.enableChangeDataFeed";

impl Log {
    /// The changes of `version`, rows of `schema` (the table's columns) followed by
    /// `_change_type`, `_commit_version` and `_commit_timestamp`
    /// ([`with_feed_columns`](crate::engine::changefeed::with_feed_columns)), in the order the version's files list them.
    pub fn version_changes(&self, version: u64, schema: &Schema) -> Result<Vec<Row>> {
        let actions = self.actions(version)?;
        let turned_off = actions.iter().any(
            |a| matches!(a, Action::Metadata(m) if !is_on(m.configuration().get(FEED_PROPERTY))),
        );
        if turned_off {
            return Err(self.not_recorded(version));
        }
        let timestamp = self.commit_timestamp(version, &actions)?;
        let tail = |row: Row, kind: Option<ChangeType>| {
            let mut row = row;
            if let Some(kind) = kind {
                row.push(Value::Str(kind.as_str().to_string()));
            }
            row.push(Value::Int(version as i64));
            row.push(Value::Timestamp(timestamp));
            row
        };
        let cdc: Vec<&str> = (actions.iter())
            .filter_map(|a| match a {
                Action::Cdc(file) => Some(file.path.as_str()),
                _ => None,
            })
            .collect();
        let mut changes = Vec::new();
        if !cdc.is_empty() {
            let feed = super::files::feed_schema(schema);
            for path in cdc {
                let rows = self.read_file(version, path, &feed)?;
                changes.extend(rows.into_iter().map(|row| tail(row, None)));
            }
            return Ok(changes);
        }
        for action in &actions {
            let (path, kind, dv) = match action {
                Action::Add(add) if add.data_change => {
                    (&add.path, ChangeType::Insert, add.deletion_vector.is_some())
                }
                Action::Remove(remove) if remove.data_change => (
                    &remove.path,
                    ChangeType::Delete,
                    remove.deletion_vector.is_some(),
                ),
                _ => continue,
            };
            if dv {
                let message = format!(
                    "version {version} changes rows with deletion vectors (`{path}`) but \
                     records no change data, so its changes cannot be read"
                );
                return Err(self.refused(message));
            }
            let rows = self.read_file(version, path, schema)?;
            changes.extend(rows.into_iter().map(|row| tail(row, Some(kind))));
        }
        Ok(changes)
    }

    /// Fails unless the table records its change data feed at every version of
    /// `from..=to`: checked at `from` and at each metadata change after it.
    pub fn check_feed_recorded(&self, from: u64, to: u64) -> Result<()> {
        let at_start = super::Table::open_version(&self.dir, Some(from))?.properties()?;
        if !is_on(at_start.get(FEED_PROPERTY)) {
            return Err(self.not_recorded(from));
        }
        for version in from + 1..=to {
            for action in self.actions(version)? {
                if let Action::Metadata(metadata) = action {
                    if !is_on(metadata.configuration().get(FEED_PROPERTY)) {
                        return Err(self.not_recorded(version));
                    }
                }
            }
        }
        Ok(())
    }

    fn not_recorded(&self, version: u64) -> Error {
        self.refused(format!(
            "the change data feed was not recorded at version {version}: set \
             TBLPROPERTIES ('{FEED_PROPERTY}' = 'true') before the changes to read"
        ))
    }

    /// When `version` was committed, in microseconds (as its changes' `_commit_timestamp`).
    pub fn timestamp(&self, version: u64) -> Result<i64> {
        let actions = self.actions(version)?;
        self.commit_timestamp(version, &actions)
    }

    /// The version's commit time in microseconds.
    fn commit_timestamp(&self, version: u64, actions: &[Action]) -> Result<i64> {
        let info = actions.iter().find_map(|a| match a {
            Action::CommitInfo(info) => info.in_commit_timestamp.or(info.timestamp),
            _ => None,
        });
        if let Some(ms) = info {
            return Ok(ms.saturating_mul(1000));
        }
        let entry = Log::entry_path(&self.dir, version);
        let modified = std::fs::metadata(&entry)
            .and_then(|m| m.modified())
            .map_err(|e| Error::read(&entry, &e))?;
        let micros = match modified.duration_since(std::time::UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_micros()).unwrap_or(i64::MAX),
            Err(before) => -i64::try_from(before.duration().as_micros()).unwrap_or(i64::MAX),
        };
        Ok(micros)
    }

    fn read_file(&self, version: u64, path: &str, schema: &Schema) -> Result<Vec<Row>> {
        let store_path = StorePath::from_url_path(path).map_err(|e| {
            self.refused(format!(
                "version {version} names `{path}`, a path that does not parse: {e}"
            ))
        })?;
        if !self.dir.join(store_path.as_ref()).exists() {
            let message = format!(
                "version {version}'s file `{path}` was vacuumed away, so its changes are no \
                 longer readable (a change data feed is kept for the table's file retention, \
                 delta.deletedFileRetentionDuration)"
            );
            return Err(self.refused(message));
        }
        let store = self.store.object_store(None);
        read_parquet(&self.runtime, &store, &self.dir, &store_path, schema)
    }

    fn refused(&self, why: String) -> Error {
        let message = format!("Delta table {}: {why}", self.dir.display());
        Error::new(ErrorKind::Format, message)
    }
}

fn is_on(value: Option<&String>) -> bool {
    value.is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

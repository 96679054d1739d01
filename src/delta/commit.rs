//! One atomic Delta version of our own actions.
//!
//! Why not delta-rs's `CommitBuilder`: without its query engine (the `datafusion` feature) its
//! protocol check refuses every table of writer version 3 or more — it cannot enforce CHECK
//! constraints, generated columns or invariants — and so every table with the change data feed
//! (writer 4). This module checks instead what scdflow honours ([`writable`]) and writes the
//! version with the log store's put-if-absent (`write_commit_entry`), so two writers can never
//! both make one version.
//!
//! A writer that lost the race to the next version reloads the table and, for an append
//! (which commutes with any other append), tries again on top of the winner, unless the winner
//! changed the table's schema, properties or protocol; other operations fail, naming the
//! version another writer made.

use super::table::failed;
use crate::{Error, ErrorKind, Result};
use deltalake::kernel::transaction::{CommitData, TransactionError};
use deltalake::kernel::Action;
use deltalake::logstore::{CommitOrBytes, LogStore};
use deltalake::protocol::DeltaOperation;
use deltalake::{DeltaTable, DeltaTableError};
use std::collections::HashMap;
use std::path::Path;

/// How many times an append retries after losing the race to the next version.
const APPEND_ATTEMPTS: usize = 10;

/// The writer features whose rules scdflow keeps: `appendOnly` tables are only appended to
/// (rewrites refuse them); `invariants`, `checkConstraints` and `generatedColumns` are accepted
/// only while the table uses none of them ([`writable`] checks); the change data feed is
/// written by scdflow itself; a rewrite honours `deletionVectors` (the rows a file's vector
/// deletes stay deleted, and its removal carries the vector, [`super::rewrite`]), as the
/// maintained tables write them.
const WRITER_FEATURES: [&str; 7] = [
    "appendOnly",
    "invariants",
    "checkConstraints",
    "generatedColumns",
    "changeDataFeed",
    "timestampNtz",
    "deletionVectors",
];

/// Commits `actions` as the version after `table`'s, then loads that version into `table`.
/// `append` says whether the actions only add data (so a lost race may be retried).
pub(super) async fn commit(
    table: &mut DeltaTable,
    actions: Vec<Action>,
    operation: DeltaOperation,
    append: bool,
    dir: &Path,
) -> Result<u64> {
    let mut attempts = 0;
    loop {
        writable(table).map_err(|why| refused(dir, &why))?;
        let read = table.version().unwrap_or(0);
        let metadata = HashMap::from([("readVersion".to_string(), serde_json::json!(read))]);
        let data = CommitData::new(actions.clone(), operation.clone(), metadata, Vec::new());
        let bytes = entry(&data).map_err(|e| failed(dir, e))?;
        let store = table.log_store();
        let written = store
            .write_commit_entry(
                read + 1,
                CommitOrBytes::LogBytes(bytes.into()),
                uuid::Uuid::new_v4(),
            )
            .await;
        match written {
            Ok(()) => {
                table
                    .load_version(read + 1)
                    .await
                    .map_err(|e| failed(dir, e))?;
                return Ok(read + 1);
            }
            Err(TransactionError::VersionAlreadyExists(taken)) => {
                let before = shape(table).map_err(|e| failed(dir, e))?;
                table.update_state().await.map_err(|e| failed(dir, e))?;
                attempts += 1;
                let same = shape(table).map_err(|e| failed(dir, e))? == before;
                if !append || !same || attempts == APPEND_ATTEMPTS {
                    let message = format!(
                        "Delta table {}: another writer made version {taken} first; run the \
                         statement again",
                        dir.display()
                    );
                    return Err(Error::new(ErrorKind::Io, message));
                }
            }
            Err(e) => return Err(failed(dir, e)),
        }
    }
}

/// The log entry of `data`: one line per action, as delta-rs's `CommitData::get_bytes` writes
/// them, but without the fields it writes as `null` (an `add`'s `tags`, `baseRowId`,
/// `defaultRowCommitVersion` and `clusteringProvider`, 84 bytes): the protocol's optional
/// fields are absent when unset, as Spark and the Delta kernel write them, and readers take
/// either. A 1,000-event SCD2 commit's entry had ~14 of them (~1.2 KB of ~12 KB). Only an
/// action's own fields are dropped: a `null` inside one (a partition value) means NULL.
pub(super) fn entry(data: &CommitData) -> serde_json::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    for action in &data.actions {
        let mut json = serde_json::to_value(action)?;
        if let Some(fields) = (json.as_object_mut())
            .and_then(|action| action.values_mut().next())
            .and_then(serde_json::Value::as_object_mut)
        {
            fields.retain(|_, value| !value.is_null());
        }
        if !bytes.is_empty() {
            bytes.push(b'\n');
        }
        serde_json::to_writer(&mut bytes, &json)?;
    }
    Ok(bytes)
}

/// What a concurrent append must not have changed: schema, properties and protocol.
fn shape(table: &DeltaTable) -> Result<String, DeltaTableError> {
    let snapshot = table.snapshot()?;
    let metadata = snapshot.metadata();
    let mut properties: Vec<_> = metadata.configuration().iter().collect();
    properties.sort();
    Ok(format!(
        "{:?} {properties:?} {:?}",
        snapshot.schema(),
        snapshot.protocol()
    ))
}

/// Why scdflow cannot write `table` without breaking a rule of its protocol, if it cannot.
pub(super) fn writable(table: &DeltaTable) -> Result<(), String> {
    let snapshot = table.snapshot().map_err(|e| e.to_string())?;
    let protocol = snapshot.protocol();
    let version = protocol.min_writer_version();
    match version {
        5 => return Err("the table uses column mapping (writer version 5)".into()),
        6 => return Err("the table has identity columns (writer version 6)".into()),
        v if v > 7 => return Err(format!("the table needs writer version {v}")),
        _ => {}
    }
    let features = protocol.writer_features().unwrap_or_default();
    if let Some(f) = features
        .iter()
        .find(|f| !WRITER_FEATURES.contains(&f.as_ref()))
    {
        return Err(format!("the table uses the Delta writer feature `{f}`"));
    }
    let configuration = snapshot.metadata().configuration();
    if let Some(key) = configuration
        .keys()
        .find(|k| k.starts_with("delta.constraints."))
    {
        return Err(format!("the table has a CHECK constraint ({key})"));
    }
    let schema = snapshot.schema();
    for field in schema.fields() {
        for key in ["delta.generationExpression", "delta.invariants"] {
            if field.metadata().contains_key(key) {
                return Err(format!("column `{}` has {key}", field.name()));
            }
        }
    }
    Ok(())
}

/// The error of a table scdflow cannot write, saying why.
pub(super) fn refused(dir: &Path, why: &str) -> Error {
    let message = format!(
        "Delta table {}: scdflow cannot write it: {why}",
        dir.display()
    );
    Error::new(ErrorKind::Validation, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use deltalake::kernel::Add;
    use deltalake::protocol::SaveMode;

    #[test]
    fn an_entry_leaves_out_unset_fields_and_keeps_null_values() {
        let add = Add {
            path: "part-0.parquet".to_string(),
            partition_values: HashMap::from([("day".to_string(), None)]),
            size: 10,
            modification_time: 1,
            data_change: true,
            stats: Some("{\"numRecords\":1}".to_string()),
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
            clustering_provider: None,
        };
        let operation = DeltaOperation::Write {
            mode: SaveMode::Append,
            partition_by: None,
            predicate: None,
        };
        let data = CommitData::new(vec![Action::Add(add)], operation, HashMap::new(), vec![]);
        let ours = String::from_utf8(entry(&data).unwrap()).unwrap();
        let theirs = String::from_utf8(data.get_bytes().unwrap().to_vec()).unwrap();
        let lines: Vec<&str> = ours.lines().collect();
        assert_eq!(lines.len(), theirs.lines().count());
        let add = lines.iter().find(|l| l.starts_with("{\"add\"")).unwrap();
        assert!(
            !add.contains("\"tags\"") && !add.contains("baseRowId"),
            "{add}"
        );
        assert!(add.contains("\"partitionValues\":{\"day\":null}"), "{add}");
        // The same actions either way, once the unset fields read as absent.
        for (ours, theirs) in ours.lines().zip(theirs.lines()) {
            let ours: serde_json::Value = serde_json::from_str(ours).unwrap();
            let mut theirs: serde_json::Value = serde_json::from_str(theirs).unwrap();
            for fields in theirs.as_object_mut().unwrap().values_mut() {
                fields.as_object_mut().unwrap().retain(|_, v| !v.is_null());
            }
            assert_eq!(ours, theirs);
        }
    }
}

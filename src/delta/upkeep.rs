//! Upkeep of a maintained table after each version it publishes: Delta checkpoints, expired
//! log entries, and a vacuum of the files no version within the retention period needs.
//!
//! Schedule, from the table's properties (a target's `TBLPROPERTIES` set them):
//! - a **checkpoint** of version `v` when `v` is a multiple of `delta.checkpointInterval` (100,
//!   delta-rs's default; Spark's is 10), so a reader replays at most that many log entries. A
//!   checkpoint holds every live file's `add` and every `remove` tombstone within the
//!   retention: O(table), where a version is O(change). Every 10 versions it was the largest
//!   share of a 1,000-event commit's bytes after the change rows (36 KB of 206 KB); every 100,
//!   a reader replays at most 100 entries of a few KB each. Then the log entries
//!   and checkpoints that are older than `delta.logRetentionDuration` (30 days) and that the
//!   newest such checkpoint makes unnecessary are deleted (unless
//!   `delta.enableExpiredLogCleanup` is false): delta-rs's `create_checkpoint` and
//!   `cleanup_metadata`.
//! - a **vacuum** when `v` is a multiple of `scdflow.vacuumInterval` (100): the files the
//!   current version does not hold — data files merged away or emptied, superseded
//!   deletion-vector files, change-data files, the orphans of a crashed step — are deleted once
//!   they were removed (orphans: written) more than `delta.deletedFileRetentionDuration` (7
//!   days) ago, so every version within the retention stays readable (time travel and the
//!   change data feed). delta-rs's VACUUM plans it (full mode, so orphans count; live deletion
//!   vectors kept); the files are deleted here without the `VACUUM START`/`VACUUM END` versions
//!   delta-rs would commit, since a maintained table's versions are its scdflow commits (and
//!   delta-rs's commit path refuses these tables without its query engine).
//!
//! Upkeep may run while the writer prepares later versions (a durable step's runs on a thread
//! of its own, beside the merges ahead of the next version and the next step): then a vacuum
//! is told when the writer began writing files that no version it vacuums may hold (its step
//! began, or a merge ahead that no such version holds began, if earlier: a merge may span
//! steps), and deletes no file written since — with a retention of 0 those files would be
//! orphans to it.
//!
//! Invariant: upkeep never changes what any version within the retention holds, nor deletes a
//! file a later version may take in. Limits: a file written during an upkeep's step is kept
//! until the next vacuum; a wall clock stepped back by more than the retention could still
//! make a fresh file look old. Also: a
//! version put in by [`super::roll_forward`] after a crash gets no upkeep (the next multiple
//! does); the vacuum lists the table's directory, so its cost grows with the files kept for
//! the retention period.

use super::table::failed;
use crate::Result;
use deltalake::checkpoints::{cleanup_metadata, create_checkpoint};
use deltalake::logstore::object_store::ObjectStoreExt;
use deltalake::Path as StorePath;
use std::collections::HashMap;
use std::future::IntoFuture;
use std::path::Path;
use std::time::SystemTime;
use tokio::runtime::Runtime;

/// Versions between checkpoints, unless `delta.checkpointInterval` says otherwise (see the
/// module docs).
const CHECKPOINT_INTERVAL: u64 = 100;
/// Versions between vacuums, unless `scdflow.vacuumInterval` says otherwise.
const VACUUM_INTERVAL: u64 = 100;
/// The table property that sets the vacuum interval (versions).
pub const VACUUM_PROPERTY: &str = "scdflow.vacuumInterval";

/// When upkeep runs, as the table's properties say.
#[derive(Clone, Copy, Debug)]
pub(super) struct Schedule {
    checkpoint: u64,
    vacuum: u64,
}

impl Schedule {
    /// The schedule of a table whose properties are `configuration`.
    pub(super) fn of(configuration: &HashMap<String, String>, dir: &Path) -> Result<Schedule> {
        let interval = |key: &str, default: u64| -> Result<u64> {
            match configuration.get(key) {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        failed(
                            dir,
                            format!("{key} must be a positive whole number, found `{v}`"),
                        )
                    }),
            }
        };
        Ok(Schedule {
            checkpoint: interval("delta.checkpointInterval", CHECKPOINT_INTERVAL)?,
            vacuum: interval(VACUUM_PROPERTY, VACUUM_INTERVAL)?,
        })
    }

    /// Whether version `version` needs upkeep.
    pub(super) fn due(&self, version: u64) -> bool {
        version > 0
            && (version.is_multiple_of(self.checkpoint) || version.is_multiple_of(self.vacuum))
    }
}

/// Runs the upkeep `schedule` asks for after version `version` of the table at `url` (`dir`)
/// is in the log; with `fresh`, the vacuum deletes no file last modified since that time (see
/// the module docs).
pub(super) fn after(
    runtime: &Runtime,
    dir: &Path,
    url: &url::Url,
    schedule: Schedule,
    version: u64,
    fresh: Option<SystemTime>,
) -> Result<()> {
    if !schedule.due(version) {
        return Ok(());
    }
    let table = runtime
        .block_on(deltalake::open_table_with_version(url.clone(), version))
        .map_err(|e| failed(dir, e))?;
    if version.is_multiple_of(schedule.checkpoint) {
        runtime
            .block_on(create_checkpoint(&table, None))
            .map_err(|e| failed(dir, format!("checkpoint of version {version}: {e}")))?;
        let snapshot = table.snapshot().map_err(|e| failed(dir, e))?;
        if snapshot
            .table_config()
            .enable_expired_log_cleanup
            .unwrap_or(true)
        {
            runtime
                .block_on(cleanup_metadata(&table, None))
                .map_err(|e| failed(dir, format!("log cleanup: {e}")))?;
        }
    }
    if version.is_multiple_of(schedule.vacuum) {
        let store = table.object_store();
        let (_, plan) = runtime
            .block_on(
                table
                    .vacuum()
                    .with_mode(deltalake::operations::vacuum::VacuumMode::Full)
                    .with_dry_run(true)
                    .into_future(),
            )
            .map_err(|e| failed(dir, format!("vacuum: {e}")))?;
        for file in &plan.files_deleted {
            let path = StorePath::from(file.as_str());
            if let Some(fresh) = fresh {
                match runtime.block_on(store.head(&path)) {
                    Ok(meta) if SystemTime::from(meta.last_modified) < fresh => {}
                    Ok(_) | Err(deltalake::ObjectStoreError::NotFound { .. }) => continue,
                    Err(e) => return Err(failed(dir, format!("vacuum: {file}: {e}"))),
                }
            }
            match runtime.block_on(store.delete(&path)) {
                Ok(()) | Err(deltalake::ObjectStoreError::NotFound { .. }) => {}
                Err(e) => return Err(failed(dir, format!("vacuum: {file}: {e}"))),
            }
        }
    }
    Ok(())
}

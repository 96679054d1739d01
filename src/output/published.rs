//! A plain run's tables published as Delta tables in a warehouse, with their change data feed:
//! its targets, and the streaming tables it declares (each commit's rows appended, as
//! Lakeflow publishes a streaming table).
//!
//! Each table is built afresh in a staging directory beside it
//! (`.<table>.scdflow-staging-<pid>/table`, on the same file system): version 0 creates it,
//! and scdflow commit `n` is Delta version `n` ([`MaintainedTable`]: the commit's rows,
//! deletion vectors, change-data file and `txn` in one log entry). When the run succeeds the
//! staged table moves into place with the run's other outputs ([`crate::io::swap_in`]), so a
//! plain run replaces the table whole, its history included, as a full refresh does; a run
//! that fails leaves it as it was. Only a table scdflow published (table property
//! `scdflow.target`) is replaced: any other table in the way is an error naming it.
//!
//! Limits: readers of the table see the new one from the moment it moves in, never a mix, but
//! a reader holding the old table's files open may find them gone. A process that dies while
//! the group moves in leaves a journal the next run into the same `--out` completes; a run into
//! another `--out` removes the staged table instead (the old table stays, or, if it had moved
//! aside, is gone until the first run is repeated).

use crate::delta::{Kept, MaintainedTable, Table};
use crate::driver::{FlowCommitMetrics, FlowRef};
use crate::engine::changefeed::ChangeType;
use crate::engine::HistoryRules;
use crate::plan::{Pipeline, PublishedTable, Publishes, ScdType};
use crate::value::Row;
use crate::{Error, ErrorKind, Result};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The table property that marks a table as published by a pipeline (a target or a streaming
/// table), its value the table's name in the pipeline.
pub const TARGET_PROPERTY: &str = "scdflow.target";

/// The table property that marks a published table as a streaming table's, which runs append
/// rows to and nothing else writes.
pub const APPENDS_PROPERTY: &str = "scdflow.appends";

/// The table property of a published target whose change data feed other published tables
/// of its pipeline are kept from in the same commit ([`Pipeline::feed_readers`], by name): DML
/// on it would not reach them, so `scdflow sql` refuses it.
pub const FEED_READERS_PROPERTY: &str = "scdflow.feedReaders";

/// The properties published `table` of `pipeline` is created with: its own Delta ones (its
/// `TBLPROPERTIES`), [`TARGET_PROPERTY`] and, for a target whose rows DML may edit, the rules
/// its history keeps ([`HistoryRules::PROPERTY`]; `scdflow sql` checks edits by them) and the
/// tables kept from its feed ([`FEED_READERS_PROPERTY`]), for a streaming table
/// [`APPENDS_PROPERTY`].
pub fn table_properties(pipeline: &Pipeline, table: &PublishedTable) -> BTreeMap<String, String> {
    let mut properties = table.properties.clone();
    properties.insert(TARGET_PROPERTY.to_string(), table.name.to_string());
    match table.of {
        Publishes::Target(t) => {
            if let Ok(rules) = HistoryRules::of(&pipeline.targets[t]) {
                properties.insert(HistoryRules::PROPERTY.to_string(), rules.recorded());
            }
            let readers = pipeline.feed_readers(t);
            if !readers.is_empty() {
                properties.insert(FEED_READERS_PROPERTY.to_string(), readers.join(", "));
            }
        }
        Publishes::Table(_) => {
            properties.insert(APPENDS_PROPERTY.to_string(), "true".to_string());
        }
    }
    properties
}

/// What a published table's commits do to it: a target's apply its change feed (an SCD2 or
/// bitemporal target's, a history whose rows with an end are settled: `__END_AT`, or
/// `__SYSTEM_END_AT` for a bitemporal one), a streaming table's append rows.
pub fn kept(pipeline: &Pipeline, table: &PublishedTable) -> Kept {
    match table.of {
        Publishes::Target(t) => {
            let end = match pipeline.targets[t].scd {
                ScdType::Type1 => return Kept::Changes,
                ScdType::Type2 => "__END_AT",
                ScdType::Bitemporal => "__SYSTEM_END_AT",
            };
            (table.schema.columns.iter())
                .position(|c| c.name == end)
                .map_or(Kept::Changes, Kept::History)
        }
        Publishes::Table(_) => Kept::Appends,
    }
}

/// Target `t`'s flow progress in one commit, as its Delta version records it
/// ([`crate::delta::FLOW_PROGRESS`]): per flow into `t` with metrics in `metrics` (the
/// commit's, by index into `flows`), `{"flow": name, "metrics": {...}}`.
pub fn flow_progress(
    flows: &[FlowRef],
    t: usize,
    metrics: &[(usize, FlowCommitMetrics)],
) -> Vec<serde_json::Value> {
    (metrics.iter())
        .filter(|(f, _)| flows[*f].target == t)
        .map(|(f, m)| serde_json::json!({ "flow": flows[*f].name, "metrics": m }))
        .collect()
}

/// One commit's versions of several published tables, made side by side: `version(job)` for
/// each of `jobs` (one per table) on the helpers of [`crate::runtime::cores`]; the results come
/// back in job order, or the first error. A commit's tables share nothing, and a commit waits for
/// its slowest table rather than for their sum (the SCD2 target and its source's streaming
/// table of a 10,000-event commit: 21 and 5 ms of Parquet).
pub fn each_table<J: Send, T: Send>(
    jobs: Vec<J>,
    version: impl Fn(J) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    use rayon::prelude::*;
    match jobs.len() {
        0 | 1 => jobs.into_iter().map(version).collect(),
        _ => crate::runtime::cores::install(|| jobs.into_par_iter().map(&version).collect()),
    }
}

/// Takes published streaming table `table`'s rows out of a commit's `appended` rows
/// ([`crate::driver::CommitOutput::appended`]), as the inserts its Delta version holds.
pub fn appended_changes(
    appended: &mut [(usize, Vec<Row>)],
    table: usize,
) -> Vec<(ChangeType, Row)> {
    let rows = (appended.iter_mut())
        .find(|(t, _)| *t == table)
        .map(|(_, rows)| std::mem::take(rows));
    (rows.into_iter().flatten())
        .map(|row| (ChangeType::Insert, row))
        .collect()
}

/// What follows `.<table>` in the name of a table's staging directory.
const STAGING: &str = ".scdflow-staging-";

/// One published table, staged; see the module docs.
pub(super) struct Published {
    table: MaintainedTable,
    /// The staging directory (the new table is its `table`).
    stage: PathBuf,
    /// Where the table goes.
    dir: PathBuf,
    /// The lock on `dir` ([`super::lock`]), held until the run ends.
    _lock: File,
}

impl Published {
    /// Stages published `table` of `pipeline` for `dir`, after checking that `dir` is free or
    /// holds a table scdflow published. Staging directories left by crashed runs are removed.
    pub(super) fn create(
        pipeline: &Pipeline,
        table: &PublishedTable,
        dir: &Path,
    ) -> Result<Published> {
        let lock = super::lock(dir, "")?;
        refuse_foreign(table.name, dir)?;
        let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
            return Err(Error::new(
                ErrorKind::Internal,
                format!("{} names no table directory", dir.display()),
            ));
        };
        let prefix = format!(".{}{STAGING}", name.to_string_lossy());
        for entry in std::fs::read_dir(parent).map_err(|e| Error::read(parent, &e))? {
            let entry = entry.map_err(|e| Error::read(parent, &e))?;
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let path = entry.path();
                std::fs::remove_dir_all(&path).map_err(|e| Error::write(&path, &e))?;
            }
        }
        let stage = parent.join(format!("{prefix}{}", std::process::id()));
        let properties = table_properties(pipeline, table);
        let app_id = format!("scdflow:{}", table.name);
        let (schema, kept) = (table.schema, kept(pipeline, table));
        let table =
            MaintainedTable::create_as(&stage.join("table"), schema, &properties, &app_id, kept)?;
        Ok(Published {
            table,
            stage,
            dir: dir.to_path_buf(),
            _lock: lock,
        })
    }

    /// Writes commit `version`'s changes as the table's version `version`.
    pub(super) fn commit(
        &mut self,
        version: u64,
        timestamp: i64,
        changes: &[(ChangeType, Row)],
        progress: &[serde_json::Value],
    ) -> Result<()> {
        let written = self.table.commit(version, timestamp, changes, progress)?;
        if written.version != version {
            let message = format!(
                "Delta table {}: scdflow commit {version} became version {}",
                self.dir.display(),
                written.version
            );
            return Err(Error::new(ErrorKind::Internal, message));
        }
        Ok(())
    }

    /// The staged table and where it goes, for the run's group of moves.
    pub(super) fn staged(&self) -> (PathBuf, PathBuf) {
        (self.stage.join("table"), self.dir.clone())
    }

    /// Where the table goes, and its rows.
    pub(super) fn published(&self) -> (PathBuf, usize) {
        (self.dir.clone(), self.table.rows() as usize)
    }
}

/// Fails when `dir` (where table `name` is published) holds something scdflow did not
/// publish: a run replaces only a table with [`TARGET_PROPERTY`].
pub fn refuse_foreign(name: &str, dir: &Path) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let ours = Table::exists(dir)
        && Table::open(dir)?
            .properties()?
            .contains_key(TARGET_PROPERTY);
    if ours {
        return Ok(());
    }
    let message = format!(
        "`{}` is published as {}, where a table or folder scdflow did not publish is; drop it \
         (`DROP TABLE`) or rename the table in the pipeline",
        name,
        dir.display()
    );
    Err(Error::new(ErrorKind::Validation, message))
}

impl Drop for Published {
    fn drop(&mut self) {
        // After the move: the table it replaced; after a failure: the staged table.
        let _ = std::fs::remove_dir_all(&self.stage);
    }
}

//! A Delta table's log read version by version, as a stream reads it: which versions change
//! data, and the rows one version adds (its changes: [`super::changes`]).
//!
//! Opening a [`Log`] loads no snapshot (no log replay), so reading one version costs that
//! version's commit file and data files, however long the log is.

use super::table::{existing, failed, read_parquet};
use crate::value::{Row, Schema};
use crate::{Error, ErrorKind, Result};
use deltalake::kernel::{Action, Add};
use deltalake::logstore::{get_actions, LogStore, LogStoreRef};
use deltalake::{DeltaTableBuilder, Path as StorePath};
use std::path::{Path, PathBuf};
use tokio::runtime::Runtime;

/// The log of the Delta table at a directory.
pub struct Log {
    pub(super) runtime: Runtime,
    pub(super) store: LogStoreRef,
    pub(super) dir: PathBuf,
}

/// The rows one version added, or why they cannot be read as an append.
#[derive(Debug)]
pub enum VersionRows {
    /// Rows of the version's data files, in the order the log lists them.
    Appended(Vec<Row>),
    /// The version removes data files (`UPDATE`, `DELETE`, `MERGE`, an overwrite): the
    /// operation the log names, when it names one.
    Changed(Option<String>),
}

impl Log {
    /// The log of the table at `dir`.
    pub fn open(dir: &Path) -> Result<Log> {
        let (runtime, url) = existing(dir)?;
        let table = DeltaTableBuilder::from_url(url)
            .and_then(|b| b.build())
            .map_err(|e| failed(dir, e))?;
        Ok(Log {
            runtime,
            store: table.log_store(),
            dir: dir.to_path_buf(),
        })
    }

    /// Whether the log of the table at `dir` holds `version`'s commit file (a writer puts a new
    /// version there first).
    pub fn has_entry(dir: &Path, version: u64) -> bool {
        Log::entry_path(dir, version).is_file()
    }

    /// The path of `version`'s commit file in the log of the table at `dir`.
    pub(super) fn entry_path(dir: &Path, version: u64) -> PathBuf {
        dir.join("_delta_log").join(format!("{version:020}.json"))
    }

    /// The newest version: the highest version a commit file or checkpoint of `_delta_log`
    /// is named after (Delta's versions are contiguous, so no file past it can be missing).
    /// Read from the directory's names alone, so a follow step looking for other writers'
    /// versions costs one directory read, where delta-rs's listing (a log segment, each
    /// file's metadata) took 10 ms on a table of 100 versions; a log with no such name is left
    /// to delta-rs, for its error.
    pub fn latest_version(&self) -> Result<u64> {
        let log = self.dir.join("_delta_log");
        let entries = std::fs::read_dir(&log).map_err(|e| Error::read(&log, &e))?;
        let mut latest = None;
        for entry in entries {
            let entry = entry.map_err(|e| Error::read(&log, &e))?;
            if let Some(version) = entry.file_name().to_str().and_then(log_file_version) {
                latest = latest.max(Some(version));
            }
        }
        match latest {
            Some(version) => Ok(version),
            None => self
                .runtime
                .block_on(self.store.get_latest_version(0))
                .map_err(|e| failed(&self.dir, e)),
        }
    }

    /// The versions from `from` on that add or remove data or record changes, in order
    /// (versions that only change metadata or properties are left out).
    pub fn data_versions(&self, from: u64) -> Result<Vec<u64>> {
        let latest = self.latest_version()?;
        let mut versions = Vec::new();
        for version in from..=latest {
            if self.changes_data(version)? {
                versions.push(version);
            }
        }
        Ok(versions)
    }

    /// The newest version from `from` on that adds or removes data, if any: read from the
    /// newest back, so it costs the versions after it, not the whole log.
    pub fn last_data_version(&self, from: u64) -> Result<Option<u64>> {
        for version in (from..=self.latest_version()?).rev() {
            if self.changes_data(version)? {
                return Ok(Some(version));
            }
        }
        Ok(None)
    }

    /// The newest version that application `app_id` wrote (a `txn` of it), read from the
    /// newest back; 0 (the table's creation) when it wrote none.
    pub fn last_version_of(&self, app_id: &str) -> Result<u64> {
        for version in (1..=self.latest_version()?).rev() {
            if self.written_by(version, app_id)? {
                return Ok(version);
            }
        }
        Ok(0)
    }

    /// The newest version whose `txn` records application `app_id`'s commit `commit`, if the
    /// log still holds one: looked for from the newest version down, so a log that retention
    /// cut is an error only when the search reaches the cut.
    pub fn version_of_commit(&self, app_id: &str, commit: u64) -> Result<Option<u64>> {
        for version in (1..=self.latest_version()?).rev() {
            let recorded = self.actions(version)?.into_iter().any(|a| {
                matches!(a, Action::Txn(txn) if txn.app_id == app_id && txn.version == commit as i64)
            });
            if recorded {
                return Ok(Some(version));
            }
        }
        Ok(None)
    }

    /// Application `app_id`'s commits after `commit` that the log holds, oldest first: each
    /// commit's number, its version and its `commitInfo` field `field`. Read from the newest
    /// version back to the one holding `commit` (or the table's creation). Another writer's
    /// version that changes data among them (or between `commit` and the first of them) is an
    /// error: commits published after an edit cannot be told apart from it.
    pub fn commits_after(
        &self,
        app_id: &str,
        commit: u64,
        field: &str,
    ) -> Result<Vec<(u64, u64, Option<serde_json::Value>)>> {
        let mut found = Vec::new();
        for version in (1..=self.latest_version()?).rev() {
            let actions = self.actions(version)?;
            let own = actions.iter().find_map(|a| match a {
                Action::Txn(txn) if txn.app_id == app_id => Some(txn.version as u64),
                _ => None,
            });
            match own {
                Some(c) if c <= commit => break,
                Some(c) => {
                    let info = actions.into_iter().find_map(|a| match a {
                        Action::CommitInfo(mut info) => info.info.remove(field),
                        _ => None,
                    });
                    found.push((c, version, info));
                }
                None if found.is_empty() => {}
                None if changes_data(&actions) => {
                    let message = format!(
                        "Delta table {}: version {version}, another writer's, lies between \
                         commits this state published and has not applied yet; start over \
                         with --full-refresh",
                        self.dir.display()
                    );
                    return Err(Error::new(ErrorKind::State, message));
                }
                None => {}
            }
        }
        found.reverse();
        Ok(found)
    }

    /// The versions after `after` that change data and that application `app_id` did not
    /// write (other writers' edits), and the newest version looked at.
    pub fn others_versions(&self, after: u64, app_id: &str) -> Result<(Vec<u64>, u64)> {
        let latest = self.latest_version()?;
        let mut versions = Vec::new();
        for version in after + 1..=latest {
            let actions = self.actions(version)?;
            if !written_by(&actions, app_id) && changes_data(&actions) {
                versions.push(version);
            }
        }
        Ok((versions, latest.max(after)))
    }

    /// Field `name` of `version`'s `commitInfo`, if it has one; `Ok(None)` also when the
    /// version is no longer in the log (log retention removed it).
    pub fn commit_field(&self, version: u64, name: &str) -> Result<Option<serde_json::Value>> {
        let entry = self
            .runtime
            .block_on(self.store.read_commit_entry(version))
            .map_err(|e| failed(&self.dir, e))?;
        let Some(bytes) = entry else {
            return Ok(None);
        };
        let actions = get_actions(version, &bytes).map_err(|e| failed(&self.dir, e))?;
        Ok(actions.into_iter().find_map(|a| match a {
            Action::CommitInfo(mut info) => info.info.remove(name),
            _ => None,
        }))
    }

    fn written_by(&self, version: u64, app_id: &str) -> Result<bool> {
        Ok(written_by(&self.actions(version)?, app_id))
    }

    fn changes_data(&self, version: u64) -> Result<bool> {
        Ok(changes_data(&self.actions(version)?))
    }

    /// The rows `version` added, read as `schema`.
    pub fn version_rows(&self, version: u64, schema: &Schema) -> Result<VersionRows> {
        let actions = self.actions(version)?;
        let removes_data = actions
            .iter()
            .any(|a| matches!(a, Action::Remove(r) if r.data_change));
        if removes_data {
            let operation = actions.iter().find_map(|a| match a {
                Action::CommitInfo(info) => info.operation.clone(),
                _ => None,
            });
            return Ok(VersionRows::Changed(operation));
        }
        let mut rows = Vec::new();
        for action in &actions {
            if let Action::Add(add) = action {
                if add.data_change {
                    rows.extend(self.read_added(add, version, schema)?);
                }
            }
        }
        Ok(VersionRows::Appended(rows))
    }

    pub(super) fn actions(&self, version: u64) -> Result<Vec<Action>> {
        let actions = self
            .runtime
            .block_on(async {
                let Some(bytes) = self.store.read_commit_entry(version).await? else {
                    return Ok(None);
                };
                get_actions(version, &bytes).map(Some)
            })
            .map_err(|e| failed(&self.dir, e))?;
        actions.ok_or_else(|| {
            let message = format!(
                "Delta table {}: version {version} is no longer in the log (log retention \
                 removed it), so the rows it added cannot be read",
                self.dir.display()
            );
            Error::new(ErrorKind::Io, message)
        })
    }

    fn read_added(&self, add: &Add, version: u64, schema: &Schema) -> Result<Vec<Row>> {
        let refuse = |why: String| {
            let message = format!(
                "Delta table {}: version {version} adds `{}` {why}, which scdflow does not read",
                self.dir.display(),
                add.path
            );
            Error::new(ErrorKind::Format, message)
        };
        if add.deletion_vector.is_some() {
            return Err(refuse("with a deletion vector".into()));
        }
        if !add.partition_values.is_empty() {
            return Err(refuse("to a partition".into()));
        }
        let path = StorePath::from_url_path(&add.path)
            .map_err(|e| refuse(format!("(a path that does not parse: {e})")))?;
        let store = self.store.object_store(None);
        read_parquet(&self.runtime, &store, &self.dir, &path, schema)
    }
}

/// Whether `actions` (one version's) hold a `txn` of application `app_id`.
fn written_by(actions: &[Action], app_id: &str) -> bool {
    (actions.iter()).any(|a| matches!(a, Action::Txn(txn) if txn.app_id == app_id))
}

/// Whether `actions` (one version's) add or remove data or record changes.
fn changes_data(actions: &[Action]) -> bool {
    actions.iter().any(|a| match a {
        Action::Add(add) => add.data_change,
        Action::Remove(remove) => remove.data_change,
        Action::Cdc(_) => true,
        _ => false,
    })
}

/// The version a `_delta_log` file name holds: a commit (`<20 digits>.json`) or a checkpoint
/// (`<20 digits>.checkpoint.parquet`, a part of a multi-part one, a V2 one); `None`
/// for anything else (a writer's temporary file, `_last_checkpoint`, a log compaction).
fn log_file_version(name: &str) -> Option<u64> {
    let (digits, rest) = name.split_at_checked(20)?;
    let checkpoint =
        rest.starts_with(".checkpoint.") && (rest.ends_with(".parquet") || rest.ends_with(".json"));
    let known = rest == ".json" || checkpoint;
    match known && digits.bytes().all(|b| b.is_ascii_digit()) {
        true => digits.parse().ok(),
        false => None,
    }
}

#[cfg(test)]
mod tests {
    use super::log_file_version;

    #[test]
    fn log_files_name_their_versions_and_nothing_else_does() {
        assert_eq!(log_file_version("00000000000000000012.json"), Some(12));
        assert_eq!(
            log_file_version("00000000000000000010.checkpoint.parquet"),
            Some(10)
        );
        let part = "00000000000000000010.checkpoint.0000000001.0000000002.parquet";
        assert_eq!(log_file_version(part), Some(10));
        let v2 = "00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json";
        assert_eq!(log_file_version(v2), Some(10));
        for other in [
            "_last_checkpoint",
            "_commit_0c7f.json.tmp",
            ".00000000000000000012.json.crc",
            "00000000000000000012.crc",
            "00000000000000000001.00000000000000000009.compacted.json",
            "0000000000000000001x.json",
            "0000000000000000012.json",
        ] {
            assert_eq!(log_file_version(other), None, "{other}");
        }
    }
}

//! A maintained table returned to an earlier commit of its writer (`scdflow rewind`).
//!
//! The table is not rolled back in its log (readers may have read the versions after the
//! commit, and Delta's history only grows): a new version makes its rows those of the version
//! that holds the commit, written as a [`MaintainedTable`] commit of the differences — the rows
//! that came since as deletes, the rows that left as inserts, in its change data feed — logged
//! as a `RESTORE` of that version, with `txn` = the commit, so the writer's next commit is the
//! one after it. Versions other writers
//! made after the commit (DML edits) are undone with it.
//!
//! Cost: both versions are read whole (O(table)); a rewind is an operator's act, not a step.
//! Limits: the version holding the commit must still be in the log (log retention) and its
//! data files on disk (vacuum); [`Restore::check`] says which is missing before anything is
//! written.

use super::maintained::MaintainedTable;
use super::{Log, Table};
use crate::engine::changefeed::ChangeType;
use crate::value::Row;
use crate::{Error, ErrorKind, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A table's way back to one commit of its writer.
#[derive(Debug)]
pub struct Restore {
    dir: PathBuf,
    app_id: String,
    commit: u64,
    /// The version holding the commit.
    version: u64,
    /// Whether versions came after it.
    behind: bool,
}

/// What a restore wrote: the new version, rows deleted and inserted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// The version made.
    pub version: u64,
    /// Rows that came after the commit, now deleted.
    pub deleted: u64,
    /// Rows that left after the commit, now back.
    pub inserted: u64,
}

impl Restore {
    /// The way back to commit `commit` of application `app_id` in the table at `dir`; checks
    /// that the version holding it is still in the log and its data files on disk.
    pub fn check(dir: &Path, app_id: &str, commit: u64) -> Result<Restore> {
        let log = Log::open(dir)?;
        let cannot = |why: String| {
            let message = format!(
                "Delta table {} cannot return to commit {commit}: {why}",
                dir.display()
            );
            Err(Error::new(ErrorKind::State, message))
        };
        let version = match log.version_of_commit(app_id, commit) {
            Ok(Some(v)) => v,
            Ok(None) => return cannot("no version of its log records it".into()),
            Err(e) => return cannot(e.message().to_string()),
        };
        let table = Table::open_version(dir, Some(version))?;
        if let Some(missing) = table.missing_file()? {
            return cannot(format!(
                "version {version}'s data file {} was vacuumed",
                missing.display()
            ));
        }
        Ok(Restore {
            dir: dir.to_path_buf(),
            app_id: app_id.to_string(),
            commit,
            version,
            behind: log.latest_version()? > version,
        })
    }

    /// The version holding the commit.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Writes the version that returns the table to the commit, at `timestamp` (µs since the
    /// epoch); `None` when no version came after it.
    pub fn apply(&self, timestamp: i64) -> Result<Option<Restored>> {
        if !self.behind {
            return Ok(None);
        }
        let then = Table::open_version(&self.dir, Some(self.version))?;
        let schema = then.schema().clone();
        let mut count: HashMap<Row, i64> = HashMap::new();
        for row in then.rows()? {
            *count.entry(row).or_default() += 1;
        }
        drop(then);
        for row in Table::open(&self.dir)?.rows()? {
            *count.entry(row).or_default() -= 1;
        }
        let mut changes = Vec::new();
        let mut inserts = Vec::new();
        for (row, n) in count {
            let (kind, list) = match n > 0 {
                true => (ChangeType::Insert, &mut inserts),
                false => (ChangeType::Delete, &mut changes),
            };
            list.extend(std::iter::repeat_n((kind, row), n.unsigned_abs() as usize));
        }
        let deleted = changes.len() as u64;
        let inserted = inserts.len() as u64;
        changes.append(&mut inserts);
        let mut table = MaintainedTable::open(&self.dir, &schema, &self.app_id)?;
        let written = table.commit_restoring(self.commit, timestamp, &changes, self.version)?;
        Ok(Some(Restored {
            version: written.version,
            deleted,
            inserted,
        }))
    }
}

//! A durable step's Delta versions, prepared on a thread of their own: each commit's published
//! tables write their files there ([`crate::output::each_table`]) while the step goes on — the
//! engine applies the next commit, or, after the last, the workers save the state — and the
//! step takes the log entries back before its manifest names them.
//!
//! Invariant: one commit's versions are prepared at a time, in commit order; the tables are
//! either with the step or with the one thread preparing. A commit's log entries reach the
//! manifest in the order they were prepared, so the manifest still names every version of the
//! step and nothing is published before the state that holds it commits (the session's order).
//!
//! Limits: a step that fails before taking the versions back drops them with the tables (once
//! they are written); the files are unreferenced, and the next step opens the tables again.

use crate::delta::{MaintainedTable, Prepared};
use crate::engine::changefeed::ChangeType;
use crate::output;
use crate::value::Row;
use crate::Result;
use std::thread::JoinHandle;

/// One published table's part of a commit: its changes and its flow progress (see
/// [`MaintainedTable::prepare`]).
pub(super) type TableCommit = (Vec<(ChangeType, Row)>, Vec<serde_json::Value>);

/// The versions of one commit being prepared. Dropped unwaited (a step failed), it waits for
/// the thread rather than leave it writing into tables the next step opens again.
pub(super) struct Preparing(Option<JoinHandle<Result<(Vec<MaintainedTable>, Vec<Prepared>)>>>);

impl Preparing {
    /// Starts preparing commit `version` (at `timestamp`) of each of `tables`, table `i` from
    /// `commits[i]`.
    pub(super) fn start(
        mut tables: Vec<MaintainedTable>,
        commits: Vec<TableCommit>,
        version: u64,
        timestamp: i64,
    ) -> Preparing {
        Preparing(Some(std::thread::spawn(move || {
            let jobs = tables.iter_mut().zip(&commits).collect();
            let prepared = output::each_table(jobs, |(table, (changes, progress))| {
                let (prepared, _) = table.prepare(version, timestamp, changes, progress)?;
                Ok(prepared)
            })?;
            Ok((tables, prepared))
        })))
    }

    /// Waits for the versions: the tables back, and each one's prepared log entry.
    pub(super) fn wait(mut self) -> Result<(Vec<MaintainedTable>, Vec<Prepared>)> {
        let thread = self.0.take().expect("waited for once");
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl Drop for Preparing {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

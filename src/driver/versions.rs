//! The commits of `WITH VERSION` snapshot flows (SPEC 2.4, D12): each flow's version query is
//! asked for the next version until it returns none.
//!
//! Each answer newer than the last is a commit. An answer not newer than the last ends the
//! flow's turn with one skipped commit (counted, D12): a version query that does not compare
//! with `last_snapshot_version()` returns the same version again, and asking again would never
//! end. A long-lived caller ([`Skipped`], `--follow`) skips a given version once per process,
//! not once per poll.

use super::commit::CommitSource;
use crate::plan::{Pipeline, SnapshotSource, VersionedInput};
use crate::warehouse::snapshot_versions::Queries;
use crate::{Error, Result};
use std::collections::HashMap;

/// The versions a long-lived caller already skipped, by flow.
#[derive(Debug, Default)]
pub struct Skipped(HashMap<usize, i64>);

/// The commits of every `WITH VERSION` flow, in flow order, after the versions `last(flow
/// name)` says were committed.
pub(crate) fn commits(
    pipeline: &Pipeline,
    last: impl Fn(&str) -> Option<i64>,
    skipped: &mut Skipped,
) -> Result<Vec<CommitSource>> {
    let mut commits = Vec::new();
    for (flow, sf) in pipeline.snapshot_flows.iter().enumerate() {
        let SnapshotSource::Versioned(v) = &sf.source else {
            continue;
        };
        let what = format!("flow `{}`", sf.name);
        let located = |e: Error| located(e, &what, pipeline, sf.line);
        let queries = Queries::new(v).map_err(located)?;
        let file = match &v.input {
            VersionedInput::Files { path, .. } => path.clone(),
            VersionedInput::Delta { dir, .. } => dir.clone(),
        };
        let commit = |version: i64, skipped: bool| CommitSource::Snapshot {
            flow,
            version,
            file: file.clone(),
            skipped,
        };
        let mut last = last(&sf.name);
        while let Some(version) = queries.next_version(last).map_err(located)? {
            if last.is_some_and(|l| version <= l) {
                if skipped.0.insert(flow, version) != Some(version) {
                    commits.push(commit(version, true));
                }
                break;
            }
            commits.push(commit(version, false));
            last = Some(version);
        }
    }
    Ok(commits)
}

/// `e` said of `what`; an error with no file of its own is placed at the flow's `line` in the
/// pipeline file (a data file's error keeps its file and line).
pub(crate) fn located(e: Error, what: &str, pipeline: &Pipeline, line: u64) -> Error {
    let has_file = e.location().file.is_some();
    let e = e.prefixed(what);
    match has_file {
        true => e,
        false => e.at_line(line).in_file(&pipeline.file),
    }
}

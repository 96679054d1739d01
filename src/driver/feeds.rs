//! A target's change data feed read in its own pipeline (`STREAM(t) WITH (readChangeFeed =
//! true)`): the runtime's [`Feeder`], which turns one stage's changes of a commit into the input
//! of the later stages' flows in the same commit ([`crate::runtime::StageChanges`]).
//!
//! On each worker, every table reading the feed of a target of the stage gets that worker's
//! changes of it as rows — the target's columns, then `_change_type`, `_commit_version` (the
//! scdflow commit, which is also the Delta version of a published target no other writer
//! edited) and `_commit_timestamp` (the commit's time) — derived through the tables reading it
//! and prepared for their flows as a file's rows are ([`commit::prepare_read`]): projections,
//! expectations, invalid rows and metrics alike. What preparing learns travels as a
//! [`CommitReport`] with the commit's outcome. A failure (a `FAIL UPDATE` expectation, an
//! invalid row under [`super::OnInvalid::Fail`]) fails the commit when its outcome arrives,
//! after every worker finished it, so that no worker waits for one that stopped.
//!
//! Limits: a row's number in messages counts the feed's rows on the worker that read it.

use super::commit;
use super::flows::FlowRef;
use super::metrics::FlowCommitMetrics;
use super::report::{self, CommitReport};
use crate::ingest;
use crate::plan::{Pipeline, SourceInput};
use crate::runtime::{CommitEvents, Feeder, StageChanges};
use crate::value::{Row, Value};
use crate::Result;
use std::path::PathBuf;
use std::sync::Arc;

/// The feeder of `pipeline`'s later stages; `None` when no target reads another's feed.
pub(super) fn feeder(pipeline: &Pipeline, flows: &[FlowRef], skip_once: bool) -> Option<Feeder> {
    let stages = pipeline.stages();
    if stages.iter().all(|&s| s == 0) {
        return None;
    }
    let pipeline = Arc::new(pipeline.clone());
    let flows = flows.to_vec();
    let feed = move |made: &StageChanges<'_>| -> (CommitEvents, Option<String>) {
        let mut input = CommitEvents {
            events: vec![Vec::new(); pipeline.targets.len()],
            rows: vec![Vec::new(); pipeline.targets.len()],
            ..CommitEvents::default()
        };
        if made.is_empty() {
            return (input, None);
        }
        let mut report: Option<CommitReport> = None;
        for (t, table) in pipeline.tables.iter().enumerate() {
            let SourceInput::TargetFeed(target) = table.input else {
                continue;
            };
            if stages[target] != made.stage || made.of(target).next().is_none() {
                continue;
            }
            let read = read(&pipeline, &flows, (t, target), made, skip_once);
            let (events, read) = read.unwrap_or_else(|e| {
                let failed = CommitReport {
                    version: made.version,
                    failed: Some(e.to_string()),
                    ..CommitReport::default()
                };
                (CommitEvents::default(), failed)
            });
            for (mine, theirs) in input.events.iter_mut().zip(events.events) {
                mine.extend(theirs);
            }
            for (mine, theirs) in input.rows.iter_mut().zip(events.rows) {
                mine.extend(theirs);
            }
            match &mut report {
                Some(report) => report.absorb(read),
                None => report = Some(read),
            }
        }
        let text = report.map(|r| serde_json::to_string(&r).expect("reports serialize"));
        (input, text)
    };
    Some(Feeder(Arc::new(feed)))
}

/// Table `t`'s rows of the commit: this worker's changes of `target`, prepared for the flows
/// reading them.
fn read(
    pipeline: &Pipeline,
    flows: &[FlowRef],
    (t, target): (usize, usize),
    made: &StageChanges<'_>,
    skip_once: bool,
) -> Result<(CommitEvents, CommitReport)> {
    let rows: Vec<Row> = (made.of(target))
        .map(|(kind, row)| {
            let mut row = row.clone();
            row.push(Value::Str(kind.as_str().to_string()));
            row.push(Value::Int(made.version as i64));
            row.push(Value::Timestamp(made.timestamp));
            row
        })
        .collect();
    let name = &pipeline.targets[target].name;
    let label = PathBuf::from(format!("the change data feed of `{name}`"));
    let commit = ingest::feed_commit(pipeline, t, label, rows)?;
    let mut metrics: Vec<Vec<FlowCommitMetrics>> = vec![Vec::new(); flows.len()];
    let version = made.version;
    let prepared = commit::prepare_read(
        pipeline,
        flows,
        t,
        &commit,
        version,
        skip_once,
        &mut metrics,
    )?;
    Ok(report::reported(
        flows,
        version,
        prepared,
        metrics,
        Vec::new(),
    ))
}

//! Writes a run's results in the CLI's layout: `DIR/<target>.<ext>` (the final table),
//! `DIR/<target>.changes.<ext>` (the change feed), `DIR/metrics.json` and, for invalid rows set
//! aside, `DIR/_quarantine/<flow>.jsonl`. Target files are replaced atomically. A process of a
//! cluster with partitioned outputs writes its partition of each table and change feed as
//! `DIR/<target>.part-<p>.<ext>` and `DIR/<target>.changes.part-<p>.<ext>` ([`write_part`]).

use crate::changefeed;
use crate::driver::Evaluation;
use crate::io::{self, OutputFormat};
use crate::plan::Pipeline;
use crate::value::Row;
use crate::{Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Writes every output of `evaluation` under `dir` (created if missing); returns the files.
pub fn write_all(
    pipeline: &Pipeline,
    evaluation: &Evaluation,
    dir: &Path,
    format: OutputFormat,
) -> Result<Vec<PathBuf>> {
    let mut written = write_tables(pipeline, evaluation, dir, format, "")?;
    written.extend(write_run_files(pipeline, evaluation, dir)?);
    Ok(written)
}

/// Writes process `process`'s partition of every table and change feed (the rows of the keys
/// its workers own), and, from process 0, the metrics and set-aside rows of the whole run.
pub fn write_part(
    pipeline: &Pipeline,
    evaluation: &Evaluation,
    dir: &Path,
    format: OutputFormat,
    process: usize,
) -> Result<Vec<PathBuf>> {
    let mut written = write_tables(
        pipeline,
        evaluation,
        dir,
        format,
        &format!(".part-{process}"),
    )?;
    if process == 0 {
        written.extend(write_run_files(pipeline, evaluation, dir)?);
    }
    Ok(written)
}

/// Every target's table and change feed, their file names ending in `suffix` before the
/// extension.
fn write_tables(
    pipeline: &Pipeline,
    evaluation: &Evaluation,
    dir: &Path,
    format: OutputFormat,
    suffix: &str,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, &e))?;
    let mut written = Vec::new();
    let ext = format.extension();
    for (t, target) in pipeline.targets.iter().enumerate() {
        let path = dir.join(format!("{}{suffix}.{ext}", target.name));
        io::write_rows(&path, format, &target.schema, &evaluation.targets[t].rows)?;
        written.push(path);
        let path = dir.join(format!("{}.changes{suffix}.{ext}", target.name));
        io::write_rows(
            &path,
            format,
            &changefeed::schema(target),
            &feed(evaluation, t),
        )?;
        written.push(path);
    }
    Ok(written)
}

/// `metrics.json` and the quarantine files.
fn write_run_files(
    pipeline: &Pipeline,
    evaluation: &Evaluation,
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    written.push(write_metrics(
        pipeline,
        &evaluation.metrics,
        &evaluation.table_metrics,
        dir,
    )?);
    written.extend(write_quarantine(evaluation, dir)?);
    Ok(written)
}

/// Writes target `t`'s table to `DIR/<target>.<ext>` (atomically); returns the file.
pub fn write_target(
    pipeline: &Pipeline,
    evaluation: &Evaluation,
    t: usize,
    dir: &Path,
    format: OutputFormat,
) -> Result<PathBuf> {
    let target = &pipeline.targets[t];
    let path = dir.join(format!("{}.{}", target.name, format.extension()));
    io::write_rows(&path, format, &target.schema, &evaluation.targets[t].rows)?;
    Ok(path)
}

/// Target `t`'s change-feed rows of this run.
pub fn feed(evaluation: &Evaluation, t: usize) -> Vec<Row> {
    evaluation.targets[t]
        .changes
        .iter()
        .map(|c| changefeed::to_row(c, evaluation.commit_timestamp(c.version)))
        .collect()
}

/// `metrics.json`: structs rather than JSON maps, so keys keep this order.
#[derive(Serialize)]
struct Metrics<'a> {
    flows: Vec<FlowMetrics<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tables: Vec<TableMetrics<'a>>,
}

#[derive(Serialize)]
struct FlowMetrics<'a> {
    flow: &'a str,
    target: &'a str,
    commits: &'a [crate::driver::FlowCommitMetrics],
}

#[derive(Serialize)]
struct TableMetrics<'a> {
    table: &'a str,
    commits: &'a [crate::driver::TableCommitMetrics],
}

/// Writes `DIR/metrics.json` from per-flow (indexed like [`crate::driver::flows::all`]) and
/// per-table metrics.
pub fn write_metrics(
    pipeline: &Pipeline,
    metrics: &[Vec<crate::driver::FlowCommitMetrics>],
    table_metrics: &[Vec<crate::driver::TableCommitMetrics>],
    dir: &Path,
) -> Result<PathBuf> {
    let all = crate::driver::flows::all(pipeline);
    let flows = all
        .iter()
        .zip(metrics)
        .map(|(flow, commits)| FlowMetrics {
            flow: &flow.name,
            target: &pipeline.targets[flow.target].name,
            commits,
        })
        .collect();
    let tables = pipeline
        .tables
        .iter()
        .zip(table_metrics)
        .filter(|(table, _)| !table.expectations.is_empty())
        .map(|(table, commits)| TableMetrics {
            table: &table.name,
            commits,
        })
        .collect();
    let text = serde_json::to_string_pretty(&Metrics { flows, tables })
        .map_err(|e| Error::new(crate::ErrorKind::Internal, e.to_string()))?;
    let path = dir.join("metrics.json");
    io::replace_file(&path, (text + "\n").as_bytes())?;
    Ok(path)
}

fn write_quarantine(evaluation: &Evaluation, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut by_owner: BTreeMap<&str, Vec<(PathBuf, io::RowError)>> = BTreeMap::new();
    for q in &evaluation.quarantined {
        by_owner
            .entry(&q.owner)
            .or_default()
            .push((q.file.clone(), q.error.clone()));
    }
    if by_owner.is_empty() {
        return Ok(Vec::new());
    }
    let qdir = dir.join("_quarantine");
    std::fs::create_dir_all(&qdir).map_err(|e| Error::write(&qdir, &e))?;
    let mut written = Vec::new();
    for (owner, records) in by_owner {
        let path = qdir.join(format!("{owner}.jsonl"));
        if path.exists() {
            std::fs::remove_file(&path).map_err(|e| Error::write(&path, &e))?;
        }
        io::append_quarantine(&path, &records)?;
        written.push(path);
    }
    Ok(written)
}

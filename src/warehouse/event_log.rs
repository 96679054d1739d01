//! `event_log(TABLE(t))` (or `event_log('t')`): the event log of the pipeline that publishes
//! target `t`, as Databricks's table function returns it for a pipeline's table — here its
//! `flow_progress` events, one row per flow into `t` per scdflow commit.
//!
//! The events are not kept apart: each version a pipeline writes records its flows' metrics in
//! its `commitInfo` ([`crate::delta::FLOW_PROGRESS`]), in the same atomic log entry as the
//! rows, so the log and the table never disagree, and a crash never loses or repeats an event.
//! Columns: `timestamp` (the commit's), `event_type` (`flow_progress`), `level`, `message`,
//! `flow_name`, `dataset_name` (the target), `commit_version` (scdflow's commit),
//! `delta_version`, the metrics as columns (`num_input_rows`, `num_upserted_rows`,
//! `num_deleted_rows`, `num_stale_events`, `num_sequence_ties`, `num_quarantined_rows`,
//! `num_skipped_snapshots`, `num_collected_tombstones`, `num_live_tombstones`), and `details`,
//! the event as Databricks nests it (`{"flow_progress": {"status": "COMPLETED", "metrics":
//! {...}}}`, expectations included) in JSON text. Versions other writers made (DML) carry no
//! progress and give no row.
//!
//! Limits: the log goes back as far as the Delta log does (`delta.logRetentionDuration`; older
//! entries are cleaned up after checkpoints); Databricks's JSON path syntax
//! (`details:flow_progress.metrics.num_upserted_rows`) is not read — the metrics are columns.

use super::scope::Scope;
use super::select::{table_name, Relation};
use crate::delta::{Log, FLOW_PROGRESS};
use crate::output::TARGET_PROPERTY;
use crate::value::{DataType, Row, Schema, Value};
use crate::{Error, ErrorKind, Result};
use sqlparser::ast;
use sqlparser::dialect::DatabricksDialect;
use sqlparser::parser::Parser;
use std::path::Path;

const USAGE: &str = "event_log(TABLE(catalog.schema.table))";

/// The metrics shown as columns, in order.
const METRICS: [&str; 9] = [
    "num_input_rows",
    "num_upserted_rows",
    "num_deleted_rows",
    "num_stale_events",
    "num_sequence_ties",
    "num_quarantined_rows",
    "num_skipped_snapshots",
    "num_collected_tombstones",
    "num_live_tombstones",
];

/// Evaluates `event_log(args)` in `scope`.
pub(super) fn event_log(scope: &Scope, args: &[ast::FunctionArg]) -> Result<Relation> {
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] = args else {
        return Err(invalid(format!("takes one table ({USAGE})")));
    };
    let warehouse = scope.warehouse("event_log")?;
    let object = match arg {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(text) => Parser::new(&DatabricksDialect {})
                .try_with_sql(text)
                .and_then(|mut p| p.parse_object_name(false))
                .map_err(|e| invalid(format!("`{text}` is not a table name: {e}")))?,
            other => return Err(invalid(format!("`{other}` names no table ({USAGE})"))),
        },
        ast::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("TABLE") => {
            let ast::FunctionArguments::List(list) = &f.args else {
                return Err(invalid(format!("TABLE() names one table ({USAGE})")));
            };
            let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(table))] =
                list.args.as_slice()
            else {
                return Err(invalid(format!("TABLE() names one table ({USAGE})")));
            };
            let parts = match table {
                ast::Expr::Identifier(id) => vec![id.clone()],
                ast::Expr::CompoundIdentifier(ids) => ids.clone(),
                other => return Err(invalid(format!("`{other}` names no table ({USAGE})"))),
            };
            ast::ObjectName::from(parts)
        }
        other => return Err(invalid(format!("`{other}` names no table ({USAGE})"))),
    };
    let name = table_name(warehouse, &object)?;
    let dir = warehouse.table_dir(&name);
    let table = super::select::open(warehouse, &name)?;
    let Some(target) = table.properties()?.get(TARGET_PROPERTY).cloned() else {
        let message = format!(
            "event_log: {name} is not a pipeline's target (only tables a pipeline publishes \
             have an event log)"
        );
        return Err(Error::new(ErrorKind::Validation, message));
    };
    let mut relation = Relation {
        schema: schema(),
        rows: Vec::new(),
    };
    if scope.is_dry() {
        return Ok(relation);
    }
    let log = Log::open(&dir)?;
    let latest = log.latest_version()?;
    for version in 0..=latest {
        let Some(progress) = log.commit_field(version, FLOW_PROGRESS)? else {
            continue;
        };
        let timestamp = log.timestamp(version)?;
        for flow in progress.as_array().into_iter().flatten() {
            relation
                .rows
                .push(event(flow, &target, version, timestamp, &dir)?);
        }
    }
    Ok(relation)
}

/// One `flow_progress` event of one version.
fn event(
    flow: &serde_json::Value,
    target: &str,
    version: u64,
    timestamp: i64,
    dir: &Path,
) -> Result<Row> {
    let damaged = || {
        let message = format!(
            "Delta table {}: version {version}'s {FLOW_PROGRESS} is not scdflow's",
            dir.display()
        );
        Error::new(ErrorKind::Format, message)
    };
    let name = flow["flow"].as_str().ok_or_else(damaged)?;
    let metrics = &flow["metrics"];
    let commit = metrics["commit_version"].as_u64().ok_or_else(damaged)?;
    let mut row = Row::new();
    row.push(Value::Timestamp(timestamp));
    row.push(Value::Str("flow_progress".into()));
    row.push(Value::Str("INFO".into()));
    row.push(Value::Str(format!(
        "Flow '{name}' has completed commit {commit}."
    )));
    row.push(Value::Str(name.to_string()));
    row.push(Value::Str(target.to_string()));
    row.push(Value::Int(commit as i64));
    row.push(Value::Int(version as i64));
    for metric in METRICS {
        row.push(metrics[metric].as_i64().map_or(Value::Null, Value::Int));
    }
    let details = serde_json::json!({
        "flow_progress": { "status": "COMPLETED", "metrics": metrics }
    });
    row.push(Value::Str(details.to_string()));
    Ok(row)
}

/// The columns of `event_log`.
fn schema() -> Schema {
    let text = |name: &str| (name.to_string(), DataType::String);
    let int = |name: &str| (name.to_string(), DataType::BigInt);
    let mut columns = vec![
        ("timestamp".to_string(), DataType::Timestamp),
        text("event_type"),
        text("level"),
        text("message"),
        text("flow_name"),
        text("dataset_name"),
        int("commit_version"),
        int("delta_version"),
    ];
    columns.extend(METRICS.map(int));
    columns.push(text("details"));
    Schema::new(columns)
}

fn invalid(why: String) -> Error {
    Error::new(ErrorKind::Validation, format!("event_log: {why}"))
}

//! `table_changes('t', start [, end])`: the change data feed of warehouse table `t` between two
//! versions, inclusive, as Spark's function returns it — the table's columns, then
//! `_change_type`, `_commit_version` and `_commit_timestamp` ([`crate::delta::Log`] reads
//! each version's changes).
//!
//! `start` and `end` are versions (integers) or timestamps (a `TIMESTAMP` or text that casts to
//! one): a start timestamp means the first version committed at or after it, an end timestamp
//! the last committed at or before it. Without `end`, the latest version. A start after the
//! latest version, an end before the start, or a range in which the table did not record its
//! feed are errors; a dry scope (plan-time checks) reads only the table's columns.

use super::scope::Scope;
use super::select::{compiled, evaluation, open, table_name, Relation};
use crate::delta::Log;
use crate::engine::changefeed::with_feed_columns;
use crate::expr::cast_value;
use crate::io::format_value_text;
use crate::value::{DataType, Schema, Value};
use crate::{Error, ErrorKind, Result};
use sqlparser::ast;
use sqlparser::dialect::DatabricksDialect;
use sqlparser::parser::Parser;

const USAGE: &str = "table_changes('table', start [, end])";

/// Evaluates `table_changes(args)` in `scope`.
pub(super) fn table_changes(scope: &Scope, args: &[ast::FunctionArg]) -> Result<Relation> {
    let values = args
        .iter()
        .map(|arg| match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                compiled(e, &Schema::default(), "table_changes")?
                    .eval(&[])
                    .map_err(|why| evaluation("table_changes", &why))
            }
            other => Err(invalid(format!("unsupported argument `{other}` ({USAGE})"))),
        })
        .collect::<Result<Vec<Value>>>()?;
    let (name, start, end) = match values.as_slice() {
        [Value::Str(name), start] => (name, start, None),
        [Value::Str(name), start, end] => (name, start, Some(end)),
        _ => {
            return Err(invalid(format!(
                "takes a table name and one or two versions ({USAGE})"
            )))
        }
    };
    let warehouse = scope.warehouse("table_changes")?;
    let object = Parser::new(&DatabricksDialect {})
        .try_with_sql(name)
        .and_then(|mut p| p.parse_object_name(false))
        .map_err(|e| invalid(format!("`{name}` is not a table name: {e}")))?;
    let full = table_name(warehouse, &object)?;
    if warehouse.view(&full)?.is_some() {
        return Err(invalid(format!(
            "{full} is a view; a change data feed is a table's"
        )));
    }
    let table = open(warehouse, &full)?;
    let schema = with_feed_columns(table.schema());
    if scope.is_dry() {
        return Ok(Relation {
            schema,
            rows: Vec::new(),
        });
    }
    let log = Log::open(&warehouse.table_dir(&full))?;
    let latest = log.latest_version()?;
    let from = match bound(start, "start")? {
        Bound::Version(v) => v,
        Bound::Time(t) => first_at_or_after(&log, latest, t)?.ok_or_else(|| {
            invalid(format!(
                "no version of {full} was committed at or after the start {}",
                shown_time(t)
            ))
        })?,
    };
    let to = match end.map(|e| bound(e, "end")).transpose()? {
        None => latest,
        Some(Bound::Version(v)) => v,
        Some(Bound::Time(t)) => last_at_or_before(&log, latest, t)?.ok_or_else(|| {
            invalid(format!(
                "no version of {full} was committed at or before the end {}",
                shown_time(t)
            ))
        })?,
    };
    if from > latest || to > latest {
        let message = format!(
            "version {} is after the latest version of {full}, {latest}",
            from.max(to)
        );
        return Err(invalid(message));
    }
    if to < from {
        return Err(invalid(format!(
            "the end version {to} is before the start {from}"
        )));
    }
    log.check_feed_recorded(from, to)?;
    let mut rows = Vec::new();
    for version in from..=to {
        rows.extend(log.version_changes(version, table.schema())?);
    }
    Ok(Relation { schema, rows })
}

/// A range end as given: a version or a time (microseconds).
enum Bound {
    Version(u64),
    Time(i64),
}

fn bound(value: &Value, which: &str) -> Result<Bound> {
    match value {
        Value::Int(v) => u64::try_from(*v)
            .map(Bound::Version)
            .map_err(|_| invalid(format!("the {which} version {v} is negative"))),
        Value::Timestamp(t) => Ok(Bound::Time(*t)),
        Value::Str(text) => match cast_value(value.clone(), &DataType::Timestamp) {
            Ok(Value::Timestamp(t)) => Ok(Bound::Time(t)),
            _ => Err(invalid(format!(
                "the {which} `{text}` is neither a version nor a timestamp"
            ))),
        },
        _ => Err(invalid(format!(
            "the {which} is neither a version (an integer) nor a timestamp"
        ))),
    }
}

fn shown_time(micros: i64) -> String {
    format_value_text(&Value::Timestamp(micros), &DataType::Timestamp)
}

fn first_at_or_after(log: &Log, latest: u64, time: i64) -> Result<Option<u64>> {
    for version in 0..=latest {
        if log.timestamp(version)? >= time {
            return Ok(Some(version));
        }
    }
    Ok(None)
}

fn last_at_or_before(log: &Log, latest: u64, time: i64) -> Result<Option<u64>> {
    for version in (0..=latest).rev() {
        if log.timestamp(version)? <= time {
            return Ok(Some(version));
        }
    }
    Ok(None)
}

fn invalid(why: String) -> Error {
    Error::new(ErrorKind::Validation, format!("table_changes: {why}"))
}

//! `AutoCdcFlow`: the options of one flow, named after Python's keyword arguments. `lower`
//! turns them into SQL statements and validates those.

use super::built::BuiltFlow;
use crate::plan::ScdType;
use crate::value::Schema;
use crate::{Error, Result};

/// The source's name in messages unless [`AutoCdcFlow::source_name`] sets one.
const DEFAULT_SOURCE: &str = "source";

/// `sequence_by`: expression text, or `struct(cols)` (SQL `SEQUENCE BY STRUCT(cols)`).
#[derive(Clone, Debug)]
pub(super) enum Sequence {
    Expr(String),
    Struct(Vec<String>),
}

/// The options of one AUTO CDC flow, named after the keyword arguments of Python's
/// `create_auto_cdc_flow` (SPEC 2.1); [`AutoCdcFlow::build`] validates them exactly as the SQL
/// front end validates the equivalent `CREATE FLOW ... AS AUTO CDC` (SPEC 2.2).
///
/// Expressions (`sequence_by`, `apply_as_deletes`, `apply_as_truncates`) are SQL text in the
/// pipeline dialect (`'...'` and `"..."` are strings, `` `...` `` quotes names); column names
/// are taken as given, so they never need quoting. Calling a setter twice keeps the last value.
///
/// SPEC 4, T3: the users change feed (T0 rows 1–8, the late batch in a second commit) as an SCD
/// type 2 table.
///
/// ```
/// use differential_dataflow::input::Input;
/// use scdflow::flow_builder::{AutoCdc, AutoCdcFlow};
/// use scdflow::plan::ScdType;
/// use scdflow::value::{DataType, Row, Schema, Value};
/// use std::collections::BTreeMap;
/// use std::sync::{Arc, Mutex};
///
/// let schema = Schema::new(
///     [
///         ("userId", DataType::Int),
///         ("name", DataType::String),
///         ("city", DataType::String),
///         ("operation", DataType::String),
///         ("sequenceNum", DataType::Int),
///     ]
///     .map(|(name, ty)| (name.to_string(), ty)),
/// );
/// let flow = AutoCdcFlow::new("users_history", schema, ["userId"], "sequenceNum")
///     .source_name("users_cdf")
///     .apply_as_deletes("operation = 'DELETE'")
///     .except_column_list(["operation", "sequenceNum"])
///     .stored_as_scd_type(ScdType::Type2)
///     .build()?;
///
/// let text = |s: &str| if s.is_empty() { Value::Null } else { Value::Str(s.into()) };
/// let user = |id: i64, name: &str, city: &str, op: &str, seq: i64| {
///     Row::from([Value::Int(id), text(name), text(city), text(op), Value::Int(seq)])
/// };
/// let first = vec![
///     user(124, "Raul", "Oaxaca", "INSERT", 1),
///     user(123, "Isabel", "Monterrey", "INSERT", 1),
///     user(125, "Mercedes", "Tijuana", "INSERT", 2),
///     user(126, "Lily", "Cancun", "INSERT", 2),
///     user(123, "", "", "DELETE", 6),
///     user(125, "Mercedes", "Guadalajara", "UPDATE", 6),
/// ];
/// let late = vec![
///     user(125, "Mercedes", "Mexicali", "UPDATE", 5),
///     user(123, "Isabel", "Chihuahua", "UPDATE", 5),
/// ];
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// timely::execute_directly(move |worker| {
///     let mut input = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, rows) = scope.new_collection();
///         let (table, invalid) = rows.auto_cdc(&flow);
///         let sink = Arc::clone(&sink);
///         table.inspect(move |u| sink.lock().unwrap().push(u.clone()));
///         invalid.inspect(|u| panic!("every T0 row is a valid event: {u:?}"));
///         input
///     });
///     first.into_iter().for_each(|row| input.insert(row));
///     input.advance_to(1);
///     late.into_iter().for_each(|row| input.insert(row));
///     input.advance_to(2);
/// });
///
/// // The table is the accumulation of its updates (its change feed).
/// let mut table = BTreeMap::new();
/// for (row, _time, diff) in seen.lock().unwrap().drain(..) {
///     *table.entry(row).or_insert(0) += diff;
/// }
/// table.retain(|_, count| *count != 0);
/// let version = |id: i64, name: &str, city: &str, start: i64, end: Option<i64>| {
///     let end = end.map_or(Value::Null, Value::Int);
///     Row::from([Value::Int(id), text(name), text(city), Value::Int(start), end])
/// };
/// let expected: BTreeMap<_, _> = [
///     version(123, "Isabel", "Monterrey", 1, Some(5)),
///     version(123, "Isabel", "Chihuahua", 5, Some(6)),
///     version(124, "Raul", "Oaxaca", 1, None),
///     version(125, "Mercedes", "Tijuana", 2, Some(5)),
///     version(125, "Mercedes", "Mexicali", 5, Some(6)),
///     version(125, "Mercedes", "Guadalajara", 6, None),
///     version(126, "Lily", "Cancun", 2, None),
/// ]
/// .into_iter()
/// .map(|row| (row, 1))
/// .collect();
/// assert_eq!(table, expected);
/// # Ok::<(), scdflow::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct AutoCdcFlow {
    pub(super) target: String,
    pub(super) source_name: String,
    pub(super) source_schema: Schema,
    pub(super) keys: Vec<String>,
    pub(super) sequence_by: Sequence,
    pub(super) system_sequence_by: Option<String>,
    pub(super) apply_as_deletes: Option<String>,
    pub(super) apply_as_truncates: Option<String>,
    pub(super) column_list: Option<Vec<String>>,
    pub(super) except_column_list: Option<Vec<String>>,
    pub(super) stored_as_scd_type: ScdType,
    pub(super) track_history_column_list: Option<Vec<String>>,
    pub(super) track_history_except_column_list: Option<Vec<String>>,
    pub(super) ignore_null_updates: bool,
    pub(super) ignore_null_updates_column_list: Option<Vec<String>>,
    pub(super) ignore_null_updates_except_column_list: Option<Vec<String>>,
    pub(super) columns_to_update: Option<String>,
    pub(super) name: Option<String>,
    pub(super) once: bool,
    pub(super) table_properties: Vec<(String, String)>,
}

fn strings<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Vec<String> {
    items.into_iter().map(Into::into).collect()
}

impl AutoCdcFlow {
    /// A flow into the table `target` from rows of `source_schema`, keyed by `keys` and ordered
    /// per key by the SQL expression `sequence_by` (usually a column name). Every other option
    /// starts at Python's default: SCD type 1, all columns, no deletes, no partial updates.
    pub fn new<K: Into<String>>(
        target: impl Into<String>,
        source_schema: Schema,
        keys: impl IntoIterator<Item = K>,
        sequence_by: impl Into<String>,
    ) -> Self {
        AutoCdcFlow {
            target: target.into(),
            source_name: DEFAULT_SOURCE.to_string(),
            source_schema,
            keys: strings(keys),
            sequence_by: Sequence::Expr(sequence_by.into()),
            system_sequence_by: None,
            apply_as_deletes: None,
            apply_as_truncates: None,
            column_list: None,
            except_column_list: None,
            stored_as_scd_type: ScdType::Type1,
            track_history_column_list: None,
            track_history_except_column_list: None,
            ignore_null_updates: false,
            ignore_null_updates_column_list: None,
            ignore_null_updates_except_column_list: None,
            columns_to_update: None,
            name: None,
            once: false,
            table_properties: Vec::new(),
        }
    }

    /// Names the source in error messages (Python's `source`; default `source`). It must differ
    /// from the target's name, as two tables of a pipeline must.
    pub fn source_name(mut self, name: impl Into<String>) -> Self {
        self.source_name = name.into();
        self
    }

    /// Orders events by `struct(columns)`: by the first column, ties broken by the next, ...
    /// Replaces the `sequence_by` given to [`AutoCdcFlow::new`].
    pub fn sequence_by_struct<S: Into<String>>(
        mut self,
        columns: impl IntoIterator<Item = S>,
    ) -> Self {
        self.sequence_by = Sequence::Struct(strings(columns));
        self
    }

    /// Bitemporal targets: the system time of each event, as SQL expression text (Python's
    /// `system_sequence_by`, SQL `SYSTEM SEQUENCE BY`); required by and only valid with
    /// [`ScdType::Bitemporal`].
    pub fn system_sequence_by(mut self, expression: impl Into<String>) -> Self {
        self.system_sequence_by = Some(expression.into());
        self
    }

    /// Rows where this BOOLEAN SQL expression is TRUE are deletes (`APPLY AS DELETE WHEN`).
    pub fn apply_as_deletes(mut self, condition: impl Into<String>) -> Self {
        self.apply_as_deletes = Some(condition.into());
        self
    }

    /// Rows where this BOOLEAN SQL expression is TRUE truncate the table (`APPLY AS TRUNCATE
    /// WHEN`); SCD type 1 only.
    pub fn apply_as_truncates(mut self, condition: impl Into<String>) -> Self {
        self.apply_as_truncates = Some(condition.into());
        self
    }

    /// Writes only these source columns (`COLUMNS (...)`); conflicts with
    /// [`AutoCdcFlow::except_column_list`].
    pub fn column_list<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.column_list = Some(strings(columns));
        self
    }

    /// Writes every source column but these (`COLUMNS * EXCEPT (...)`).
    pub fn except_column_list<S: Into<String>>(
        mut self,
        columns: impl IntoIterator<Item = S>,
    ) -> Self {
        self.except_column_list = Some(strings(columns));
        self
    }

    /// SCD type of the target (`STORED AS`); default [`ScdType::Type1`].
    pub fn stored_as_scd_type(mut self, scd: ScdType) -> Self {
        self.stored_as_scd_type = scd;
        self
    }

    /// SCD type 2: only changes to these columns open a new version (`TRACK HISTORY ON (...)`);
    /// conflicts with [`AutoCdcFlow::track_history_except_column_list`].
    pub fn track_history_column_list<S: Into<String>>(
        mut self,
        columns: impl IntoIterator<Item = S>,
    ) -> Self {
        self.track_history_column_list = Some(strings(columns));
        self
    }

    /// SCD type 2: changes to any column but these open a new version (`TRACK HISTORY ON *
    /// EXCEPT (...)`).
    pub fn track_history_except_column_list<S: Into<String>>(
        mut self,
        columns: impl IntoIterator<Item = S>,
    ) -> Self {
        self.track_history_except_column_list = Some(strings(columns));
        self
    }

    /// Whether a NULL in an upsert leaves every stored value unchanged (`IGNORE NULL UPDATES`);
    /// conflicts with the two column-list forms and with `columns_to_update`.
    pub fn ignore_null_updates(mut self, ignore: bool) -> Self {
        self.ignore_null_updates = ignore;
        self
    }

    /// Only these columns ignore NULLs in upserts (`IGNORE NULL UPDATES ON (...)`).
    pub fn ignore_null_updates_column_list<S: Into<String>>(
        mut self,
        columns: impl IntoIterator<Item = S>,
    ) -> Self {
        self.ignore_null_updates_column_list = Some(strings(columns));
        self
    }

    /// Every column but these ignores NULLs in upserts (`IGNORE NULL UPDATES ON * EXCEPT
    /// (...)`).
    pub fn ignore_null_updates_except_column_list<S: Into<String>>(
        mut self,
        columns: impl IntoIterator<Item = S>,
    ) -> Self {
        self.ignore_null_updates_except_column_list = Some(strings(columns));
        self
    }

    /// The source column (`STRING` or `ARRAY<STRING>`) listing, per event, the target columns it
    /// sets (`COLUMNS TO UPDATE`).
    pub fn columns_to_update(mut self, column: impl Into<String>) -> Self {
        self.columns_to_update = Some(column.into());
        self
    }

    /// The flow's name; default the target's name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// A one-shot backfill flow (`AUTO CDC ONCE`); recorded in [`crate::plan::CdcFlow::once`].
    pub fn once(mut self, once: bool) -> Self {
        self.once = once;
        self
    }

    /// A property of the target table, as in `TBLPROPERTIES` (Python's `table_properties`), e.g.
    /// `pipelines.cdc.tombstoneGCThresholdInSeconds`; validated like the SQL property.
    pub fn table_property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.table_properties.push((key.into(), value.into()));
        self
    }

    /// Validates the options into a flow and its target, or fails with the error the equivalent
    /// SQL flow gets (same kind and message, without a location).
    ///
    /// ```
    /// use scdflow::flow_builder::AutoCdcFlow;
    /// use scdflow::value::{DataType, Schema};
    ///
    /// let schema = Schema::new([
    ///     ("userId".to_string(), DataType::Int),
    ///     ("sequenceNum".to_string(), DataType::Int),
    /// ]);
    /// let error = AutoCdcFlow::new("users_current", schema, ["usrId"], "sequenceNum")
    ///     .source_name("users_cdf")
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(error.kind(), scdflow::ErrorKind::Validation);
    /// assert_eq!(
    ///     error.to_string(),
    ///     "KEYS: unknown column `usrId` in source `users_cdf` (did you mean `userId`?)"
    /// );
    /// ```
    pub fn build(&self) -> Result<BuiltFlow> {
        // Drop the location: lines of the synthesised statements mean nothing to the caller.
        self.lower().map_err(|e| Error::new(e.kind(), e.message()))
    }
}

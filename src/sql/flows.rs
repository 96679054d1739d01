//! One AUTO CDC flow: its clauses resolved against its source table into a [`CdcFlow`], plus the
//! [`Shape`] it gives its target (which `targets` checks is the same for every flow into it).
//! Every clause rule of SPEC 2.11 that applies to SCD type 1/2 change-feed flows lives here.

use super::cursor::{in_clause, invalid, Name};
use super::sources::predicate;
use super::syntax::{CdcClauses, FlowStmt, Located, Selection};
use crate::expr::compile;
use crate::plan::{CdcFlow, PartialUpdates, ScdType, SourceTable};
use crate::value::{closest, Column, DataType, Schema};
use crate::Result;

/// What a flow says about its target.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Shape {
    /// Key column names, in KEYS order.
    pub(crate) keys: Vec<String>,
    /// Image columns (selected source columns, in source order).
    pub(crate) image: Schema,
    /// Key positions within the image.
    pub(crate) key_positions: Vec<usize>,
    pub(crate) sequence_type: DataType,
    /// Bitemporal targets: the type of `SYSTEM SEQUENCE BY`.
    pub(crate) system_sequence_type: Option<DataType>,
    pub(crate) scd: ScdType,
    /// Per image column, whether a change opens a new SCD2 version.
    pub(crate) tracked: Vec<bool>,
    pub(crate) partial: bool,
}

/// Names reserved for the interval columns of AUTO CDC targets (SPEC 2.7).
const RESERVED: [&str; 4] = [
    "__START_AT",
    "__END_AT",
    "__SYSTEM_START_AT",
    "__SYSTEM_END_AT",
];

/// Resolves `flow` (whose clauses are `clauses`) against `source` (index `source_index` into
/// `Pipeline::tables`) for target `target_index`. TRACK HISTORY names that are not target
/// columns become `warnings` (`(line, message)`, D9). The flow's expectations are left empty
/// for the caller, which knows the target's constraints.
pub(crate) fn build_flow(
    flow: &FlowStmt,
    clauses: &CdcClauses,
    source: &SourceTable,
    (source_index, target_index): (usize, usize),
    warnings: &mut Vec<(u64, String)>,
) -> Result<(CdcFlow, Shape)> {
    let schema = &source.schema;
    if let Some(version) = &clauses.version {
        let message = "WITH VERSION: only AUTO CDC FROM SNAPSHOT flows have snapshot versions; a change feed is sequenced with SEQUENCE BY";
        return Err(invalid(version.line, message));
    }
    // A materialized view over an SCD2 target selects its interval columns as its own.
    let reserved = reserved_column(schema).filter(|_| clauses.view_of.is_none());
    if let Some(column) = reserved {
        let line = clauses.source.as_ref().map_or(flow.line, |s| s.line);
        let message = format!(
            "FROM: source `{}` has a column named `{}`, which is reserved for AUTO CDC targets; rename it in the source's query",
            source.name, column.name
        );
        return Err(invalid(line, message));
    }
    let keys = required(&clauses.keys, "KEYS", flow.line)?;
    let what = format!("source `{}`", source.name);
    let key_indices = key_columns("KEYS", keys, schema, &what)?;
    let sequence_by = required(&clauses.sequence_by, "SEQUENCE BY", flow.line)?;
    let sequence = compile(&sequence_by.value, schema)
        .map_err(|e| in_clause("SEQUENCE BY", e, sequence_by.line))?;
    check_sequence_type(sequence.ty(), "SEQUENCE BY", sequence_by.line)?;
    let delete_when = optional_predicate("APPLY AS DELETE WHEN", &clauses.delete_when, schema)?;
    let truncate_when =
        optional_predicate("APPLY AS TRUNCATE WHEN", &clauses.truncate_when, schema)?;
    let scd = clauses
        .stored_as
        .as_ref()
        .map_or(ScdType::Type1, |s| s.value);
    check_combinations(clauses, scd)?;
    let system_sequence = system_sequence(clauses, scd, schema, flow.line)?;
    let columns = match &clauses.columns {
        None => (0..schema.len()).collect(),
        Some(sel) => select(sel, source)?,
    };
    check_keys_selected(clauses, keys, &key_indices, &columns, schema)?;
    let image = Schema {
        columns: columns.iter().map(|&i| schema.columns[i].clone()).collect(),
    };
    let key_positions: Vec<usize> = key_indices
        .iter()
        .filter_map(|k| columns.iter().position(|c| c == k))
        .collect();
    let tracked = tracked(clauses, &image, &source.name, warnings);
    let partial = partial_updates(clauses, &columns, &key_positions, source)?;
    let shape = Shape {
        keys: key_indices
            .iter()
            .map(|&k| schema.columns[k].name.clone())
            .collect(),
        image,
        key_positions,
        sequence_type: sequence.ty().clone(),
        system_sequence_type: system_sequence.as_ref().map(|e| e.ty().clone()),
        scd,
        tracked,
        partial: partial != PartialUpdates::Off,
    };
    let flow = CdcFlow {
        expectations: Vec::new(),
        name: flow.name.text.clone(),
        target: target_index,
        source: source_index,
        keys: key_indices,
        sequence,
        system_sequence,
        delete_when,
        truncate_when,
        columns,
        partial,
        once: clauses.once,
        line: flow.line,
    };
    Ok((flow, shape))
}

/// `SYSTEM SEQUENCE BY`, compiled: required by `STORED AS BITEMPORAL` and valid only with it
/// (SPEC 2.11).
fn system_sequence(
    clauses: &CdcClauses,
    scd: ScdType,
    schema: &Schema,
    line: u64,
) -> Result<Option<crate::expr::Expr>> {
    let clause = "SYSTEM SEQUENCE BY";
    match (&clauses.system_sequence_by, scd) {
        (None, ScdType::Bitemporal) => {
            let line = clauses.stored_as.as_ref().map_or(line, |s| s.line);
            let message = "STORED AS BITEMPORAL: requires SYSTEM SEQUENCE BY (the time at which the system learned each event)";
            Err(invalid(line, message))
        }
        (Some(system), ScdType::Bitemporal) => {
            let e =
                compile(&system.value, schema).map_err(|e| in_clause(clause, e, system.line))?;
            check_sequence_type(e.ty(), clause, system.line)?;
            Ok(Some(e))
        }
        (Some(system), _) => {
            let message = "SYSTEM SEQUENCE BY: only valid with STORED AS BITEMPORAL";
            Err(invalid(system.line, message))
        }
        (None, _) => Ok(None),
    }
}

/// A column of `schema` named like an SCD2 interval column (SPEC 2.7, 2.11).
pub(crate) fn reserved_column(schema: &Schema) -> Option<&Column> {
    schema
        .columns
        .iter()
        .find(|c| RESERVED.iter().any(|r| r.eq_ignore_ascii_case(&c.name)))
}

/// The clause, or "AUTO CDC: the `name` clause is required" at `line`.
pub(crate) fn required<'a, T>(
    clause: &'a Option<Located<T>>,
    name: &str,
    line: u64,
) -> Result<&'a Located<T>> {
    clause
        .as_ref()
        .ok_or_else(|| invalid(line, format!("AUTO CDC: the {name} clause is required")))
}

fn optional_predicate(
    clause: &str,
    e: &Option<Located<sqlparser::ast::Expr>>,
    schema: &Schema,
) -> Result<Option<crate::expr::Expr>> {
    e.as_ref().map(|e| predicate(clause, e, schema)).transpose()
}

/// Index of a source column, or "`clause`: unknown column `x` in source `s` (did you mean ...)".
fn resolve(clause: &str, name: &Name, source: &SourceTable) -> Result<usize> {
    let what = format!("source `{}`", source.name);
    resolve_in(clause, name, &source.schema, &what)
}

/// Index of a column of `schema`, or "`clause`: unknown column `x` in `what` (did you mean
/// ...)".
pub(crate) fn resolve_in(clause: &str, name: &Name, schema: &Schema, what: &str) -> Result<usize> {
    schema.index_of(&name.text).ok_or_else(|| {
        let hint = closest(&name.text, schema.names())
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default();
        let message = format!("{clause}: unknown column `{}` in {what}{hint}", name.text);
        invalid(name.line, message)
    })
}

fn resolve_all(clause: &str, names: &[Name], source: &SourceTable) -> Result<Vec<usize>> {
    names.iter().map(|n| resolve(clause, n, source)).collect()
}

/// The key list of `clause` (`KEYS`, `REPLACE USING`) as indices into `schema` (described as
/// `what` in messages): at least one, all known, none twice.
pub(crate) fn key_columns(
    clause: &str,
    keys: &Located<Vec<Name>>,
    schema: &Schema,
    what: &str,
) -> Result<Vec<usize>> {
    if keys.value.is_empty() {
        let message = format!("{clause}: at least one key column is required");
        return Err(invalid(keys.line, message));
    }
    let indices = keys
        .value
        .iter()
        .map(|n| resolve_in(clause, n, schema, what))
        .collect::<Result<Vec<_>>>()?;
    for (n, i) in indices.iter().enumerate() {
        if indices[..n].contains(i) {
            let name = &keys.value[n];
            let message = format!("{clause}: duplicate key column `{}`", name.text);
            return Err(invalid(name.line, message));
        }
    }
    Ok(indices)
}

fn check_sequence_type(ty: &DataType, clause: &str, line: u64) -> Result<()> {
    if *ty == DataType::Null {
        return Err(invalid(
            line,
            format!("{clause}: the sequence has no type (a bare NULL)"),
        ));
    }
    if !ty.is_orderable() {
        return Err(invalid(
            line,
            format!("{clause}: type {ty} is not orderable"),
        ));
    }
    Ok(())
}

/// Clause combinations SPEC 2.11 rejects.
fn check_combinations(clauses: &CdcClauses, scd: ScdType) -> Result<()> {
    if let (Some(truncate), true) = (&clauses.truncate_when, scd.has_history()) {
        let message =
            "APPLY AS TRUNCATE WHEN: truncates are only supported with STORED AS SCD TYPE 1";
        return Err(invalid(truncate.line, message));
    }
    check_track_history(clauses, scd)?;
    if let (Some(column), ScdType::Bitemporal) = (&clauses.columns_to_update, scd) {
        let message = "COLUMNS TO UPDATE: not supported with STORED AS BITEMPORAL";
        return Err(invalid(column.line, message));
    }
    if let (Some(column), Some(_)) = (&clauses.columns_to_update, &clauses.ignore_null_updates) {
        let message = "COLUMNS TO UPDATE: cannot be combined with IGNORE NULL UPDATES";
        return Err(invalid(column.line, message));
    }
    Ok(())
}

/// TRACK HISTORY needs SCD type 2.
pub(crate) fn check_track_history(clauses: &CdcClauses, scd: ScdType) -> Result<()> {
    match (&clauses.track_history, scd) {
        (Some(track), ScdType::Type1) => {
            let message =
                "TRACK HISTORY: only valid with STORED AS SCD TYPE 2 (SCD type 1 keeps no history)";
            Err(invalid(track.line, message))
        }
        _ => Ok(()),
    }
}

/// Source indices selected by `sel`, in source order.
fn select(sel: &Located<Selection>, source: &SourceTable) -> Result<Vec<usize>> {
    let width = source.schema.len();
    let columns_of = |clause: &str, names: &[Name]| resolve_all(clause, names, source);
    let chosen: Vec<usize> = match &sel.value {
        Selection::All => (0..width).collect(),
        Selection::Only(names) => {
            let named = columns_of("COLUMNS", names)?;
            (0..width).filter(|i| named.contains(i)).collect()
        }
        Selection::Except(names) => {
            let named = columns_of("COLUMNS", names)?;
            (0..width).filter(|i| !named.contains(i)).collect()
        }
    };
    if chosen.is_empty() {
        return Err(invalid(sel.line, "COLUMNS: no column is selected"));
    }
    Ok(chosen)
}

fn check_keys_selected(
    clauses: &CdcClauses,
    keys: &Located<Vec<Name>>,
    key_indices: &[usize],
    columns: &[usize],
    schema: &Schema,
) -> Result<()> {
    match key_indices.iter().find(|k| !columns.contains(k)) {
        None => Ok(()),
        Some(&k) => {
            let line = clauses.columns.as_ref().map_or(keys.line, |c| c.line);
            let message = format!(
                "COLUMNS: key column `{}` must be selected",
                schema.columns[k].name
            );
            Err(invalid(line, message))
        }
    }
}

/// Per image column, whether SCD2 tracks it; names outside the image are warned about (D9).
pub(crate) fn tracked(
    clauses: &CdcClauses,
    image: &Schema,
    source: &str,
    warnings: &mut Vec<(u64, String)>,
) -> Vec<bool> {
    let Some(track) = &clauses.track_history else {
        return vec![true; image.len()];
    };
    let (names, listed) = match &track.value {
        Selection::All => return vec![true; image.len()],
        Selection::Only(names) => (names, true),
        Selection::Except(names) => (names, false),
    };
    let mut flags = vec![!listed; image.len()];
    for name in names {
        match image.index_of(&name.text) {
            Some(i) => flags[i] = listed,
            None => warnings.push((
                name.line,
                format!(
                    "TRACK HISTORY: `{}` is not a column of the target (selected from `{source}`); ignored",
                    name.text
                ),
            )),
        }
    }
    flags
}

/// `IGNORE NULL UPDATES [ON ...]` as a mask over image columns (keys never ignore NULLs: they
/// are never NULL in an upsert), or `COLUMNS TO UPDATE` as a source column.
fn partial_updates(
    clauses: &CdcClauses,
    columns: &[usize],
    key_positions: &[usize],
    source: &SourceTable,
) -> Result<PartialUpdates> {
    if let Some(column) = &clauses.columns_to_update {
        let i = resolve("COLUMNS TO UPDATE", column, source)?;
        let ty = &source.schema.columns[i].ty;
        let array_of_strings = DataType::Array(Box::new(DataType::String));
        if *ty != DataType::String && *ty != array_of_strings {
            let message = format!(
                "COLUMNS TO UPDATE: column `{}` must be STRING or ARRAY<STRING>, found {ty}",
                column.text
            );
            return Err(invalid(column.line, message));
        }
        return Ok(PartialUpdates::ColumnsToUpdate(i));
    }
    let Some(ignore) = &clauses.ignore_null_updates else {
        return Ok(PartialUpdates::Off);
    };
    let image_positions = |names: &[Name]| -> Result<Vec<usize>> {
        names
            .iter()
            .map(|n| image_position(n, columns, source))
            .collect()
    };
    let mut mask = match &ignore.value {
        Selection::All => vec![true; columns.len()],
        Selection::Only(names) => {
            let listed = image_positions(names)?;
            (0..columns.len()).map(|p| listed.contains(&p)).collect()
        }
        Selection::Except(names) => {
            let listed = image_positions(names)?;
            (0..columns.len()).map(|p| !listed.contains(&p)).collect()
        }
    };
    key_positions.iter().for_each(|&p| mask[p] = false);
    Ok(PartialUpdates::IgnoreNull(mask))
}

/// Position of a source column within the image, for `IGNORE NULL UPDATES ON`.
fn image_position(name: &Name, columns: &[usize], source: &SourceTable) -> Result<usize> {
    let i = resolve("IGNORE NULL UPDATES", name, source)?;
    columns.iter().position(|&c| c == i).ok_or_else(|| {
        let message = format!(
            "IGNORE NULL UPDATES: column `{}` is not selected by COLUMNS",
            name.text
        );
        invalid(name.line, message)
    })
}

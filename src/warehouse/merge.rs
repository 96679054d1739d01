//! `MERGE INTO target [AS t] USING source [AS s] ON condition WHEN ...` in `scdflow sql`, as
//! Databricks runs it: one Delta version that updates and deletes the target rows its `WHEN
//! MATCHED` and `WHEN NOT MATCHED BY SOURCE` clauses pick and inserts the source rows its `WHEN
//! NOT MATCHED [BY TARGET]` clauses pick ([`Table::rewrite_and_insert`]).
//!
//! Semantics: a target row and a source row match when `ON` is true. For each target row with
//! matches, the first `WHEN MATCHED [AND c]` clause whose condition holds acts (`UPDATE SET
//! ...`, `UPDATE SET *`, `DELETE`); a target row that several source rows match is an error
//! when a clause would act on it (Spark's rule: the row would be changed more than once). A
//! target row without matches takes the first `WHEN NOT MATCHED BY SOURCE [AND c]` clause that
//! holds; a source row without matches the first `WHEN NOT MATCHED [AND c]` one (`INSERT (cols)
//! VALUES (...)`, `INSERT *`; columns not named are NULL). Conditions and values read both
//! rows in `WHEN MATCHED`, the source in `WHEN NOT MATCHED`, the target in `BY SOURCE`, each
//! column by its name (when only one side has it) or qualified by its side's alias (the table's
//! name when none is given). `*` means every column of the target, by name from the source.
//! Values go in by the store-assignment rule `UPDATE` and `INSERT` use.
//!
//! Matching is a hash join on the `ON` condition's equalities between a target expression and
//! a source expression of the same exact type (integers, strings, dates, timestamps, booleans),
//! with the whole condition checked on each candidate; without such an equality every pair is
//! tried. On a pipeline's published target the statement is checked as other DML is
//! (`super::target_edits`). Limits: the source is evaluated whole in memory; Oracle's `UPDATE
//! ... WHERE`/`DELETE WHERE` and `INSERT ... WHERE`, and `OUTPUT`, are refused.

use super::parse::STAR;
use super::select::{compiled, evaluation, from_item, open, packed, table_name, unsupported};
use super::statements::{scope, Outcome};
use super::target_edits::EditCheck;
use super::Warehouse;
use crate::delta::{Fate, Rewrite, Table};
use crate::expr::{store_assignable, Expr};
use crate::value::{Column, DataType, Datum, Row, Schema, Value};
use crate::{Error, ErrorKind, Result};
use sqlparser::ast::{self, BinaryOperator, MergeAction, MergeClauseKind, TableFactor};
use std::cell::RefCell;
use std::collections::HashMap;

/// Which rows a clause reads; also its layout's place in a statement's three.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reads {
    Both = 0,
    Target = 1,
    Source = 2,
}

/// A statement's layouts, by [`Reads`].
type Layouts = [Layout; 3];

/// A column of a clause's layout: the target's or the source's `i`-th.
#[derive(Clone, Copy)]
enum Slot {
    Target(usize),
    Source(usize),
}

/// The columns a clause's expressions see, and where each comes from.
struct Layout {
    schema: Schema,
    slots: Vec<Slot>,
}

impl Layout {
    /// Qualified names for every column of the sides read, bare names for those only one side
    /// has.
    fn new(sides: &Sides, reads: Reads) -> Layout {
        let (t, s) = (reads != Reads::Source, reads != Reads::Target);
        let mut layout = Layout {
            schema: Schema::default(),
            slots: Vec::new(),
        };
        let mut push = |name: String, ty: &DataType, slot| {
            layout.schema.columns.push(Column {
                name,
                ty: ty.clone(),
            });
            layout.slots.push(slot);
        };
        let both = [
            (t, &sides.target, &sides.target_alias, true),
            (s, &sides.source, &sides.source_alias, false),
        ];
        for (read, schema, alias, is_target) in both {
            for (i, c) in schema.columns.iter().enumerate().filter(|_| read) {
                let slot = if is_target {
                    Slot::Target(i)
                } else {
                    Slot::Source(i)
                };
                push(format!("{alias}.{}", c.name), &c.ty, slot);
            }
        }
        for (read, schema, other, is_target) in [
            (t, &sides.target, &sides.source, true),
            (s, &sides.source, &sides.target, false),
        ] {
            for (i, c) in schema.columns.iter().enumerate().filter(|_| read) {
                let shared = other.index_of(&c.name).is_some() && t && s;
                if !shared {
                    let slot = if is_target {
                        Slot::Target(i)
                    } else {
                        Slot::Source(i)
                    };
                    push(c.name.clone(), &c.ty, slot);
                }
            }
        }
        layout
    }

    fn datums<'a>(&self, target: &[Datum<'a>], source: &[Datum<'a>]) -> Vec<Datum<'a>> {
        (self.slots.iter())
            .map(|slot| match slot {
                Slot::Target(i) => target[*i],
                Slot::Source(i) => source[*i],
            })
            .collect()
    }
}

/// The two tables and their aliases.
struct Sides {
    target: Schema,
    target_alias: String,
    source: Schema,
    source_alias: String,
}

/// What a clause does.
enum Action {
    /// Per target column, its new value (`None`: kept).
    Update(Vec<Option<Expr>>),
    Delete,
    /// Per target column, its value (`None`: NULL).
    Insert(Vec<Option<Expr>>),
}

struct Clause {
    condition: Option<Expr>,
    action: Action,
    reads: Reads,
}

/// `MERGE INTO ...`; see the module docs.
pub(super) fn merge(warehouse: &Warehouse, merge: &ast::Merge) -> Result<Outcome> {
    if merge.output.is_some() {
        return Err(unsupported("MERGE ... OUTPUT"));
    }
    let TableFactor::Table {
        name, alias, args, ..
    } = &merge.table
    else {
        return Err(unsupported(&format!("MERGE INTO {}", merge.table)));
    };
    if args.is_some() || alias.as_ref().is_some_and(|a| !a.columns.is_empty()) {
        return Err(unsupported(
            "MERGE INTO a table function or with column aliases",
        ));
    }
    let full = table_name(warehouse, name)?;
    let mut table = open(warehouse, &full)?;
    let edits = EditCheck::of(warehouse, &full, &table)?;
    let source = from_item(&scope(warehouse), &merge.source)?;
    let sides = Sides {
        target: table.schema().clone(),
        target_alias: alias_of(alias.as_ref(), Some(name)),
        source_alias: match &merge.source {
            TableFactor::Table { name, alias, .. } => alias_of(alias.as_ref(), Some(name)),
            TableFactor::Derived { alias, .. } => alias_of(alias.as_ref(), None),
            _ => String::new(),
        },
        source: source.schema.clone(),
    };
    let layouts: Layouts =
        [Reads::Both, Reads::Target, Reads::Source].map(|r| Layout::new(&sides, r));
    let layout = |reads| &layouts[reads as usize];
    let both = layout(Reads::Both);
    let on = boolean(compiled(&merge.on, &both.schema, "ON")?, "ON")?;
    let keys = equalities(&merge.on, &layouts);
    let mut clauses: [Vec<Clause>; 3] = Default::default();
    for clause in &merge.clauses {
        let (at, reads) = match clause.clause_kind {
            MergeClauseKind::Matched => (0, Reads::Both),
            MergeClauseKind::NotMatched | MergeClauseKind::NotMatchedByTarget => (1, Reads::Source),
            MergeClauseKind::NotMatchedBySource => (2, Reads::Target),
        };
        clauses[at].push(compile_clause(clause, &sides, reads)?);
    }
    let [matched, not_matched, by_source] = &clauses;

    let source_datums: Vec<Vec<Datum>> = source.rows.iter().map(|r| r.iter().collect()).collect();
    let mut index: HashMap<Vec<Value>, Vec<usize>> = HashMap::new();
    if !keys.is_empty() {
        for (i, datums) in source_datums.iter().enumerate() {
            let datums = layout(Reads::Source).datums(&[], datums);
            if let Some(key) = key_values(keys.iter().map(|(_, s)| s), &datums)? {
                index.entry(key).or_default().push(i);
            }
        }
    }
    let hit = RefCell::new(vec![false; source.rows.len()]);
    let target_schema = sides.target.clone();
    let all: Vec<usize> = (0..source.rows.len()).collect();
    let fate = &mut |row: &Row| -> Result<Fate> {
        let target: Vec<Datum> = row.iter().collect();
        let candidates = match keys.is_empty() {
            true => &all[..],
            false => {
                let datums = layout(Reads::Target).datums(&target, &[]);
                match key_values(keys.iter().map(|(t, _)| t), &datums)? {
                    Some(key) => index.get(&key).map_or(&[][..], Vec::as_slice),
                    None => &[][..],
                }
            }
        };
        let mut matches = Vec::new();
        for &i in candidates {
            let datums = both.datums(&target, &source_datums[i]);
            if on
                .eval_predicate(&datums)
                .map_err(|e| evaluation("ON", &e))?
            {
                matches.push(i);
            }
        }
        let Some(&first) = matches.first() else {
            let acting = pick(by_source, &target, &[], &layouts)?;
            return act(acting, row, &target, &[], &layouts, &target_schema);
        };
        let mut hit = hit.borrow_mut();
        matches.iter().for_each(|&i| hit[i] = true);
        let acting = pick(matched, &target, &source_datums[first], &layouts)?;
        let mut others = matches[1..].iter();
        let another = others.try_fold(false, |acts, &i| {
            Ok::<_, Error>(acts || pick(matched, &target, &source_datums[i], &layouts)?.is_some())
        })?;
        if matches.len() > 1 && (acting.is_some() || another) {
            let message = format!(
                "MERGE: {} rows of the source match one row of {full}, which may be updated or \
                 deleted by one source row only (make ON match at most one source row)",
                matches.len()
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
        act(
            acting,
            row,
            &target,
            &source_datums[first],
            &layouts,
            &target_schema,
        )
    };
    let inserts = &mut || -> Result<Vec<Row>> {
        let hit = hit.borrow();
        let mut rows = Vec::new();
        for (datums, _) in source_datums
            .iter()
            .zip(hit.iter())
            .filter(|(_, hit)| !**hit)
        {
            let acting = pick(not_matched, &[], datums, &layouts)?;
            if let Some(Clause {
                action: Action::Insert(values),
                reads,
                ..
            }) = acting
            {
                let datums = layout(*reads).datums(&[], datums);
                let mut row = Vec::with_capacity(values.len());
                for value in values {
                    row.push(match value {
                        Some(e) => e.eval(&datums).map_err(|e| evaluation("INSERT", &e))?,
                        None => Value::Null,
                    });
                }
                rows.push(packed(row, &target_schema)?);
            }
        }
        Ok(rows)
    };
    let statement = Rewrite::Merge {
        on: merge.on.to_string(),
        matched: described(&merge.clauses, &[MergeClauseKind::Matched]),
        not_matched: described(
            &merge.clauses,
            &[
                MergeClauseKind::NotMatched,
                MergeClauseKind::NotMatchedByTarget,
            ],
        ),
        by_source: described(&merge.clauses, &[MergeClauseKind::NotMatchedBySource]),
    };
    let done = table.rewrite_and_insert(statement, fate, inserts, &|c| edits.check(c))?;
    Ok(Outcome::Done(summary(&table, &full, done)))
}

fn summary(table: &Table, name: &super::TableName, done: crate::delta::Rewritten) -> String {
    match done.version {
        Some(version) => format!(
            "merged into {name}: {} rows updated, {} deleted, {} inserted (version {version})",
            done.updated, done.deleted, done.inserted
        ),
        None => format!(
            "merged no row into {name}; the table is unchanged (version {})",
            table.version()
        ),
    }
}

/// The alias a side is named by: its alias, else the last part of its table's name.
fn alias_of(alias: Option<&ast::TableAlias>, name: Option<&ast::ObjectName>) -> String {
    match (alias, name) {
        (Some(alias), _) => alias.name.value.clone(),
        (None, Some(name)) => (name.0.last())
            .and_then(|p| p.as_ident())
            .map_or(String::new(), |id| id.value.clone()),
        (None, None) => String::new(),
    }
}

fn boolean(expr: Expr, clause: &str) -> Result<Expr> {
    if !matches!(expr.ty(), DataType::Boolean | DataType::Null) {
        let message = format!("{clause}: `{expr}` is {}, not BOOLEAN", expr.ty());
        return Err(Error::new(ErrorKind::Validation, message));
    }
    Ok(expr)
}

/// The first clause whose condition holds on the `target` and `source` rows (either empty
/// when the clause reads only the other).
fn pick<'c>(
    clauses: &'c [Clause],
    target: &[Datum],
    source: &[Datum],
    layouts: &Layouts,
) -> Result<Option<&'c Clause>> {
    for clause in clauses {
        let holds = match &clause.condition {
            None => true,
            Some(c) => {
                let datums = layouts[clause.reads as usize].datums(target, source);
                c.eval_predicate(&datums)
                    .map_err(|e| evaluation("WHEN", &e))?
            }
        };
        if holds {
            return Ok(Some(clause));
        }
    }
    Ok(None)
}

/// What `clause` (if any) does to the target `row`.
fn act(
    clause: Option<&Clause>,
    row: &Row,
    target: &[Datum],
    source: &[Datum],
    layouts: &Layouts,
    schema: &Schema,
) -> Result<Fate> {
    let Some(clause) = clause else {
        return Ok(Fate::Keep);
    };
    match &clause.action {
        Action::Delete => Ok(Fate::Delete),
        Action::Update(set) => {
            let datums = layouts[clause.reads as usize].datums(target, source);
            let mut values = Vec::with_capacity(set.len());
            for (i, expr) in set.iter().enumerate() {
                values.push(match expr {
                    Some(e) => e.eval(&datums).map_err(|e| evaluation("SET", &e))?,
                    None => row.value(i),
                });
            }
            Ok(Fate::Update(packed(values, schema)?))
        }
        Action::Insert(_) => Err(Error::new(
            ErrorKind::Internal,
            "an INSERT clause acted on a target row",
        )),
    }
}

fn compile_clause(clause: &ast::MergeClause, sides: &Sides, reads: Reads) -> Result<Clause> {
    let layout = Layout::new(sides, reads);
    let condition = match &clause.predicate {
        Some(p) => Some(boolean(compiled(p, &layout.schema, "WHEN")?, "WHEN")?),
        None => None,
    };
    let target = &sides.target;
    let action = match &clause.action {
        MergeAction::Delete { .. } => Action::Delete,
        MergeAction::Update(update) => {
            if update.update_predicate.is_some() || update.delete_predicate.is_some() {
                return Err(unsupported("UPDATE ... WHERE and DELETE WHERE in MERGE"));
            }
            let mut set: Vec<Option<Expr>> = vec![None; target.columns.len()];
            for assignment in &update.assignments {
                let ast::AssignmentTarget::ColumnName(column) = &assignment.target else {
                    return Err(unsupported("tuple assignments in SET"));
                };
                let column = last_part(column);
                if column == STAR {
                    for (i, c) in target.columns.iter().enumerate() {
                        set[i] = Some(from_source(sides, &c.name, "UPDATE SET *", &layout)?);
                    }
                    continue;
                }
                let Some(at) = target.index_of(&column) else {
                    let message = format!("SET: the target has no column `{column}`");
                    return Err(Error::new(ErrorKind::Validation, message));
                };
                let expr = compiled(&assignment.value, &layout.schema, "SET")?;
                assignable(&expr, &target.columns[at], "SET")?;
                if set[at].replace(expr).is_some() {
                    let message = format!("SET: column `{column}` is assigned twice");
                    return Err(Error::new(ErrorKind::Validation, message));
                }
            }
            Action::Update(set)
        }
        MergeAction::Insert(insert) => {
            if insert.insert_predicate.is_some() {
                return Err(unsupported("INSERT ... WHERE in MERGE"));
            }
            let ast::MergeInsertKind::Values(values) = &insert.kind else {
                return Err(unsupported("INSERT ROW in MERGE"));
            };
            let [row] = values.rows.as_slice() else {
                return Err(unsupported("INSERT of several rows in MERGE"));
            };
            let columns: Vec<String> = insert.columns.iter().map(last_part).collect();
            let mut values: Vec<Option<Expr>> = vec![None; target.columns.len()];
            if columns == [STAR] {
                for (i, c) in target.columns.iter().enumerate() {
                    values[i] = Some(from_source(sides, &c.name, "INSERT *", &layout)?);
                }
            } else {
                let named: Vec<String> = match columns.is_empty() {
                    true => target.columns.iter().map(|c| c.name.clone()).collect(),
                    false => columns,
                };
                if named.len() != row.len() {
                    let message = format!(
                        "INSERT names {} columns and gives {} values",
                        named.len(),
                        row.len()
                    );
                    return Err(Error::new(ErrorKind::Validation, message));
                }
                for (column, value) in named.iter().zip(row) {
                    let Some(at) = target.index_of(column) else {
                        let message = format!("INSERT: the target has no column `{column}`");
                        return Err(Error::new(ErrorKind::Validation, message));
                    };
                    let expr = compiled(value, &layout.schema, "INSERT")?;
                    assignable(&expr, &target.columns[at], "INSERT")?;
                    if values[at].replace(expr).is_some() {
                        let message = format!("INSERT: column `{column}` is listed twice");
                        return Err(Error::new(ErrorKind::Validation, message));
                    }
                }
            }
            Action::Insert(values)
        }
    };
    Ok(Clause {
        condition,
        action,
        reads,
    })
}

/// The source's column named `name`, for `*`.
fn from_source(sides: &Sides, name: &str, clause: &str, layout: &Layout) -> Result<Expr> {
    if layout.slots.iter().all(|s| matches!(s, Slot::Target(_))) {
        let message = format!("{clause} takes the source row's columns: only in WHEN MATCHED");
        return Err(Error::new(ErrorKind::Validation, message));
    }
    let Some(at) = sides.source.index_of(name) else {
        let message = format!("{clause}: the source has no column `{name}`");
        return Err(Error::new(ErrorKind::Validation, message));
    };
    let qualified = format!("{}.{}", sides.source_alias, sides.source.columns[at].name);
    let ident = ast::Expr::CompoundIdentifier(vec![
        ast::Ident::new(&sides.source_alias),
        ast::Ident::new(&sides.source.columns[at].name),
    ]);
    let expr = compiled(&ident, &layout.schema, clause).map_err(|e| e.prefixed(&qualified))?;
    let column = (sides.target.columns.iter()).find(|c| c.name.eq_ignore_ascii_case(name));
    if let Some(column) = column {
        assignable(&expr, column, clause)?;
    }
    Ok(expr)
}

fn assignable(expr: &Expr, into: &Column, clause: &str) -> Result<()> {
    if store_assignable(expr.ty(), &into.ty) {
        return Ok(());
    }
    let message = format!(
        "{clause}: column `{}` is {}, `{expr}` is {}; CAST it",
        into.name,
        into.ty,
        expr.ty()
    );
    Err(Error::new(ErrorKind::Validation, message))
}

fn last_part(name: &ast::ObjectName) -> String {
    (name.0.last())
        .and_then(|p| p.as_ident())
        .map_or_else(|| name.to_string(), |id| id.value.clone())
}

/// `ON`'s conjuncts `a = b` with `a` over the target and `b` over the source (or the other way
/// round), of one exact type that equality hashes faithfully.
fn equalities(on: &ast::Expr, layouts: &Layouts) -> Vec<(Expr, Expr)> {
    let target = &layouts[Reads::Target as usize];
    let source = &layouts[Reads::Source as usize];
    let mut pairs = Vec::new();
    let mut conjuncts = vec![on];
    while let Some(expr) = conjuncts.pop() {
        match expr {
            ast::Expr::Nested(inner) => conjuncts.push(inner),
            ast::Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => conjuncts.extend([&**left, &**right]),
            ast::Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } => {
                let over = |e: &ast::Expr, l: &Layout| compiled(e, &l.schema, "ON").ok();
                let pair = match (over(left, target), over(right, source)) {
                    (Some(t), Some(s)) => Some((t, s)),
                    _ => over(right, target).zip(over(left, source)),
                };
                if let Some((t, s)) = pair.filter(|(t, s)| t.ty() == s.ty() && hashes(t.ty())) {
                    pairs.push((t, s));
                }
            }
            _ => {}
        }
    }
    pairs
}

/// Whether equal values of `ty` are equal as [`Value`]s (not so for doubles: `0.0 = -0.0`).
fn hashes(ty: &DataType) -> bool {
    matches!(
        ty,
        DataType::Int
            | DataType::BigInt
            | DataType::String
            | DataType::Date
            | DataType::Timestamp
            | DataType::Boolean
    )
}

/// The key of a row (`None` when a part is NULL: it matches nothing).
fn key_values<'e>(
    exprs: impl Iterator<Item = &'e Expr>,
    datums: &[Datum],
) -> Result<Option<Vec<Value>>> {
    let mut key = Vec::new();
    for expr in exprs {
        match expr.eval(datums).map_err(|e| evaluation("ON", &e))? {
            Value::Null => return Ok(None),
            value => key.push(value),
        }
    }
    Ok(Some(key))
}

/// Each clause of `kinds`: its action and condition, as the log records them.
fn described(
    clauses: &[ast::MergeClause],
    kinds: &[MergeClauseKind],
) -> Vec<(String, Option<String>)> {
    (clauses.iter())
        .filter(|c| kinds.contains(&c.clause_kind))
        .map(|c| {
            let action = match c.action {
                MergeAction::Update(_) => "update",
                MergeAction::Delete { .. } => "delete",
                MergeAction::Insert(_) => "insert",
            };
            (
                action.to_string(),
                c.predicate.as_ref().map(ToString::to_string),
            )
        })
        .collect()
}

//! Evaluation of compiled expressions with SQL three-valued logic: NULL operands give NULL,
//! except where SQL says otherwise (`AND`/`OR` short-circuits, `IS NULL`, `COALESCE`, `IN`).
//!
//! Rows are read as borrowed [`Datum`]s of a packed row, and a column or literal operand stays
//! borrowed ([`Val`]) through comparisons, `LIKE`, `IN` and `IS NULL`: a filter such as
//! `op <> 'TRUNCATE'` allocates nothing per row. Only operators that compute a new value
//! (arithmetic, casts, string functions) make an owned [`Value`].

use super::cast::{cast_value, to_string};
use super::like::like;
use super::{ArithOp, CmpOp, Node};
use crate::value::{DataType, Datum, Packer, Value, F64};
use std::cmp::Ordering;

/// An expression's result: borrowed from the row or the expression where it can be.
pub(super) enum Val<'a> {
    /// A column of the row.
    Datum(Datum<'a>),
    /// A literal of the expression.
    Ref(&'a Value),
    /// A computed value.
    Owned(Value),
}

impl<'a> Val<'a> {
    /// The result as an owned value (copies a borrowed string).
    pub(super) fn into_value(self) -> Value {
        match self {
            Val::Datum(d) => d.to_value(),
            Val::Ref(v) => v.clone(),
            Val::Owned(v) => v,
        }
    }

    /// Appends the result to a packed row.
    pub(super) fn push_to(&self, out: &mut Packer) {
        match self {
            Val::Datum(d) => out.push_datum(*d),
            Val::Ref(v) => out.push(v),
            Val::Owned(v) => out.push(v),
        };
    }

    fn is_null(&self) -> bool {
        match self {
            Val::Datum(d) => d.is_null(),
            Val::Ref(v) => v.is_null(),
            Val::Owned(v) => v.is_null(),
        }
    }

    /// The result as a datum, unless it is an owned STRUCT or ARRAY (which has no packed form).
    fn datum(&self) -> Option<Datum<'_>> {
        match self {
            Val::Datum(d) => Some(*d),
            Val::Ref(v) => scalar_datum(v),
            Val::Owned(v) => scalar_datum(v),
        }
    }

    fn bool(&self) -> Option<bool> {
        match self.datum() {
            Some(Datum::Bool(b)) => Some(b),
            _ => None,
        }
    }
}

fn scalar_datum(v: &Value) -> Option<Datum<'_>> {
    Some(match v {
        Value::Null => Datum::Null,
        Value::Bool(b) => Datum::Bool(*b),
        Value::Int(i) => Datum::Int(*i),
        Value::Double(d) => Datum::Double(*d),
        Value::Str(s) => Datum::Str(s),
        Value::Date(d) => Datum::Date(*d),
        Value::Timestamp(t) => Datum::Timestamp(*t),
        Value::Struct(_) | Value::Array(_) => return None,
    })
}

fn boolean(b: Option<bool>) -> Val<'static> {
    Val::Owned(b.map_or(Value::Null, Value::Bool))
}

pub(super) fn eval<'a>(node: &'a Node, row: &[Datum<'a>]) -> Result<Val<'a>, String> {
    let owned = |node: &'a Node| eval(node, row).map(Val::into_value);
    Ok(match node {
        Node::Literal(v) => Val::Ref(v),
        Node::Column(i) => Val::Datum(row.get(*i).copied().ok_or_else(|| {
            format!("row has {} columns, column {} is missing", row.len(), i + 1)
        })?),
        Node::Not(x) => boolean(eval(x, row)?.bool().map(|b| !b)),
        Node::Neg { operand, int32 } => Val::Owned(negate(owned(operand)?, *int32)?),
        Node::And(l, r) => boolean(and(eval(l, row)?.bool(), || Ok(eval(r, row)?.bool()))?),
        Node::Or(l, r) => boolean(or(eval(l, row)?.bool(), || Ok(eval(r, row)?.bool()))?),
        Node::Cmp(op, l, r) => compare(*op, &operand(l, row)?, &operand(r, row)?),
        Node::Arith {
            op,
            ty,
            left,
            right,
        } => Val::Owned(arith(*op, ty, owned(left)?, owned(right)?)?),
        Node::IsNull {
            operand: x,
            negated,
        } => boolean(Some(operand(x, row)?.is_null() != *negated)),
        Node::InList {
            operand,
            list,
            negated,
        } => {
            let found = in_list(&eval(operand, row)?, list, row)?;
            boolean(found.map(|b| b != *negated))
        }
        Node::Like {
            operand,
            pattern,
            escape,
            negated,
        } => {
            let (operand, pattern) = (eval(operand, row)?, eval(pattern, row)?);
            boolean(match (operand.datum(), pattern.datum()) {
                (Some(Datum::Str(s)), Some(Datum::Str(p))) => Some(like(s, p, *escape) != *negated),
                _ => None,
            })
        }
        Node::Cast { operand, to, .. } => Val::Owned(cast_value(owned(operand)?, to)?),
        Node::Coalesce(args) => {
            for arg in args {
                let v = eval(arg, row)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            Val::Owned(Value::Null)
        }
        Node::Concat(args) => Val::Owned(concat(args, row)?),
        Node::RLike {
            operand,
            pattern,
            negated,
        } => boolean(match eval(operand, row)?.datum() {
            Some(Datum::Str(s)) => Some(pattern.is_match(s) != *negated),
            _ => None,
        }),
        Node::RegexpExtract {
            operand,
            pattern,
            group,
        } => match eval(operand, row)?.datum() {
            Some(Datum::Str(s)) => {
                let found = (pattern.captures(s)).and_then(|c| c.get(*group));
                Val::Owned(Value::Str(found.map_or("", |m| m.as_str()).to_string()))
            }
            _ => Val::Owned(Value::Null),
        },
        Node::Lower(x) => Val::Owned(map_str(owned(x)?, |s| s.to_lowercase())),
        Node::Upper(x) => Val::Owned(map_str(owned(x)?, |s| s.to_uppercase())),
        Node::Struct(fields) => Val::Owned(Value::Struct(
            fields.iter().map(owned).collect::<Result<_, _>>()?,
        )),
        Node::Array(items) => Val::Owned(Value::Array(
            items.iter().map(owned).collect::<Result<_, _>>()?,
        )),
        Node::DateAdd { date, days } => Val::Owned(date_add(owned(date)?, owned(days)?)?),
    })
}

/// A column or literal read in place, any other node evaluated: most operands of a
/// comparison are one or the other, and a recursive call returned each through memory, which
/// the comparison then waited to read back (the stall `Datums::next` is inlined against). The
/// plain 1M-event SCD1 run, whose rows each meet two such predicates: 1.11-1.15 -> 1.07-1.10 s
/// of CPU (four alternating runs each).
#[inline(always)]
fn operand<'a>(node: &'a Node, row: &[Datum<'a>]) -> Result<Val<'a>, String> {
    match node {
        Node::Literal(v) => Ok(Val::Ref(v)),
        Node::Column(i) if *i < row.len() => Ok(Val::Datum(row[*i])),
        _ => eval(node, row),
    }
}

/// The truth of a BOOLEAN expression: `None` for NULL. A comparison of columns and scalar
/// literals (`op = 'DELETE'`: nearly every CDC predicate) and the connectives over such are
/// decided on the row's datums; anything else is evaluated. Through [`eval`] alone such a
/// comparison made its BOOLEAN as an owned value, matched it back and dropped it, behind a
/// call returning through memory. `scdflow run` over 200,000 SCD1 events (`generate --events
/// 200000 --keys 20000 --commits 20 --seed 7`, two predicates an event) under callgrind:
/// making an event from its row took 1,590 instructions before, 1,133 after.
pub(super) fn truth(node: &Node, row: &[Datum<'_>]) -> Result<Option<bool>, String> {
    match node {
        Node::Cmp(op, l, r) => {
            if let (Some(a), Some(b)) = (scalar(l, row), scalar(r, row)) {
                if a.is_null() || b.is_null() {
                    return Ok(None);
                }
                return Ok(Some(op.holds(datum_cmp(a, b))));
            }
        }
        Node::And(l, r) => return and(truth(l, row)?, || truth(r, row)),
        Node::Or(l, r) => return or(truth(l, row)?, || truth(r, row)),
        Node::Not(x) => return Ok(truth(x, row)?.map(|b| !b)),
        _ => {}
    }
    Ok(eval(node, row)?.bool())
}

/// A column of the row or a scalar literal as a datum; `None` for anything to evaluate (and a
/// column the row lacks, which evaluating reports).
#[inline(always)]
fn scalar<'a>(node: &'a Node, row: &[Datum<'a>]) -> Option<Datum<'a>> {
    match node {
        Node::Column(i) => row.get(*i).copied(),
        Node::Literal(v) => scalar_datum(v),
        _ => None,
    }
}

fn and(
    left: Option<bool>,
    right: impl FnOnce() -> Result<Option<bool>, String>,
) -> Result<Option<bool>, String> {
    if left == Some(false) {
        return Ok(left);
    }
    Ok(match (left, right()?) {
        (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    })
}

fn or(
    left: Option<bool>,
    right: impl FnOnce() -> Result<Option<bool>, String>,
) -> Result<Option<bool>, String> {
    if left == Some(true) {
        return Ok(left);
    }
    Ok(match (left, right()?) {
        (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    })
}

/// SQL order of two non-NULL values of one type. DOUBLEs compare numerically (so `0.0 = -0.0`),
/// falling back to the total order only for NaN. Operands without a datum form (computed
/// STRUCTs and ARRAYs) compare as values, which order as their datums do.
fn sql_cmp(a: &Val<'_>, b: &Val<'_>) -> Ordering {
    match (a.datum(), b.datum()) {
        (Some(x), Some(y)) => datum_cmp(x, y),
        _ => owned_ref(a).cmp(&owned_ref(b)),
    }
}

/// [`sql_cmp`] of two datums.
fn datum_cmp(a: Datum<'_>, b: Datum<'_>) -> Ordering {
    match (a, b) {
        (Datum::Double(F64(x)), Datum::Double(F64(y))) => {
            x.partial_cmp(&y).unwrap_or(x.total_cmp(&y))
        }
        (x, y) => x.cmp(&y),
    }
}

fn owned_ref<'v>(v: &'v Val<'_>) -> std::borrow::Cow<'v, Value> {
    match v {
        Val::Datum(d) => std::borrow::Cow::Owned(d.to_value()),
        Val::Ref(v) => std::borrow::Cow::Borrowed(v),
        Val::Owned(v) => std::borrow::Cow::Borrowed(v),
    }
}

fn compare(op: CmpOp, a: &Val<'_>, b: &Val<'_>) -> Val<'static> {
    if a.is_null() || b.is_null() {
        return boolean(None);
    }
    boolean(Some(op.holds(sql_cmp(a, b))))
}

impl CmpOp {
    /// Whether operands that compare as `ord` satisfy the operator.
    fn holds(self, ord: Ordering) -> bool {
        match self {
            CmpOp::Eq => ord.is_eq(),
            CmpOp::NotEq => ord.is_ne(),
            CmpOp::Lt => ord.is_lt(),
            CmpOp::LtEq => ord.is_le(),
            CmpOp::Gt => ord.is_gt(),
            CmpOp::GtEq => ord.is_ge(),
        }
    }
}

/// `x IN (list)`: TRUE on a match; otherwise NULL if `x` or any item is NULL, else FALSE.
fn in_list<'a>(x: &Val<'_>, list: &'a [Node], row: &[Datum<'a>]) -> Result<Option<bool>, String> {
    if x.is_null() {
        return Ok(None);
    }
    let mut saw_null = false;
    for item in list {
        let v = eval(item, row)?;
        if v.is_null() {
            saw_null = true;
        } else if sql_cmp(x, &v).is_eq() {
            return Ok(Some(true));
        }
    }
    Ok((!saw_null).then_some(false))
}
fn negate(v: Value, int32: bool) -> Result<Value, String> {
    match v {
        Value::Int(i) => i
            .checked_neg()
            .filter(|n| !int32 || i32::try_from(*n).is_ok())
            .map(Value::Int)
            .ok_or_else(|| format!("integer overflow in -({i})")),
        Value::Double(F64(f)) => Ok(Value::Double(F64(-f))),
        _ => Ok(Value::Null),
    }
}

fn arith(op: ArithOp, ty: &DataType, a: Value, b: Value) -> Result<Value, String> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => {
            let result = match op {
                ArithOp::Add => x.checked_add(y),
                ArithOp::Sub => x.checked_sub(y),
                ArithOp::Mul => x.checked_mul(y),
                // Division is compiled on DOUBLEs; reaching here would be a compiler bug, and
                // the overflow message is still the honest description of "no INT result".
                ArithOp::Div => None,
            };
            let fits = |r: &i64| *ty != DataType::Int || i32::try_from(*r).is_ok();
            result
                .filter(fits)
                .map(Value::Int)
                .ok_or_else(|| format!("{ty} overflow in {x} {} {y}", symbol(op)))
        }
        (Value::Double(F64(x)), Value::Double(F64(y))) => Ok(match op {
            ArithOp::Add => Value::Double(F64(x + y)),
            ArithOp::Sub => Value::Double(F64(x - y)),
            ArithOp::Mul => Value::Double(F64(x * y)),
            // Spark's non-ANSI rule: division by zero is NULL rather than an error.
            ArithOp::Div if y == 0.0 => Value::Null,
            ArithOp::Div => Value::Double(F64(x / y)),
        }),
        _ => Ok(Value::Null),
    }
}

/// `DATE_ADD`: NULL if either operand is NULL; a date outside DATE's range is an error.
fn date_add(date: Value, days: Value) -> Result<Value, String> {
    match (date, days) {
        (Value::Date(d), Value::Int(n)) => (i64::from(d).checked_add(n))
            .and_then(|sum| i32::try_from(sum).ok())
            .map(Value::Date)
            .ok_or_else(|| format!("DATE overflow in DATE_ADD of {n} days")),
        _ => Ok(Value::Null),
    }
}

fn symbol(op: ArithOp) -> &'static str {
    match op {
        ArithOp::Add => "+",
        ArithOp::Sub => "-",
        ArithOp::Mul => "*",
        ArithOp::Div => "/",
    }
}

/// `CONCAT`: NULL if any argument is NULL (Spark); arguments are cast to STRING when compiled.
fn concat<'a>(args: &'a [Node], row: &[Datum<'a>]) -> Result<Value, String> {
    let mut out = String::new();
    for arg in args {
        match to_string(&eval(arg, row)?.into_value()) {
            Some(s) => out.push_str(&s),
            None => return Ok(Value::Null),
        }
    }
    Ok(Value::Str(out))
}

fn map_str(v: Value, f: impl FnOnce(&str) -> String) -> Value {
    match v {
        Value::Str(s) => Value::Str(f(&s)),
        _ => Value::Null,
    }
}

//! Evaluation of compiled expressions with SQL three-valued logic: NULL operands give NULL,
//! except where SQL says otherwise (`AND`/`OR` short-circuits, `IS NULL`, `COALESCE`, `IN`).

use super::cast::{cast_value, to_string};
use super::like::like;
use super::{ArithOp, CmpOp, Node};
use crate::value::{DataType, Value, F64};
use std::cmp::Ordering;

pub(super) fn eval(node: &Node, row: &[Value]) -> Result<Value, String> {
    match node {
        Node::Literal(v) => Ok(v.clone()),
        Node::Column(i) => row
            .get(*i)
            .cloned()
            .ok_or_else(|| format!("row has {} columns, column {} is missing", row.len(), i + 1)),
        Node::Not(x) => Ok(match eval(x, row)? {
            Value::Bool(b) => Value::Bool(!b),
            _ => Value::Null,
        }),
        Node::Neg { operand, int32 } => negate(eval(operand, row)?, *int32),
        Node::And(l, r) => and(eval(l, row)?, || eval(r, row)),
        Node::Or(l, r) => or(eval(l, row)?, || eval(r, row)),
        Node::Cmp(op, l, r) => Ok(compare(*op, &eval(l, row)?, &eval(r, row)?)),
        Node::Arith {
            op,
            ty,
            left,
            right,
        } => arith(*op, ty, eval(left, row)?, eval(right, row)?),
        Node::IsNull { operand, negated } => {
            Ok(Value::Bool(eval(operand, row)?.is_null() != *negated))
        }
        Node::InList {
            operand,
            list,
            negated,
        } => in_list(eval(operand, row)?, list, row).map(|v| not_if(v, *negated)),
        Node::Like {
            operand,
            pattern,
            escape,
            negated,
        } => Ok(match (eval(operand, row)?, eval(pattern, row)?) {
            (Value::Str(s), Value::Str(p)) => Value::Bool(like(&s, &p, *escape) != *negated),
            _ => Value::Null,
        }),
        Node::Cast { operand, to, .. } => cast_value(eval(operand, row)?, to),
        Node::Coalesce(args) => {
            for arg in args {
                let v = eval(arg, row)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            Ok(Value::Null)
        }
        Node::Concat(args) => concat(args, row),
        Node::Lower(x) => Ok(map_str(eval(x, row)?, |s| s.to_lowercase())),
        Node::Upper(x) => Ok(map_str(eval(x, row)?, |s| s.to_uppercase())),
        Node::Struct(fields) => fields
            .iter()
            .map(|f| eval(f, row))
            .collect::<Result<_, _>>()
            .map(Value::Struct),
    }
}

fn not_if(v: Value, negate: bool) -> Value {
    match v {
        Value::Bool(b) => Value::Bool(b != negate),
        other => other,
    }
}

fn and(left: Value, right: impl FnOnce() -> Result<Value, String>) -> Result<Value, String> {
    if left == Value::Bool(false) {
        return Ok(left);
    }
    Ok(match (left, right()?) {
        (_, Value::Bool(false)) => Value::Bool(false),
        (Value::Bool(true), Value::Bool(true)) => Value::Bool(true),
        _ => Value::Null,
    })
}

fn or(left: Value, right: impl FnOnce() -> Result<Value, String>) -> Result<Value, String> {
    if left == Value::Bool(true) {
        return Ok(left);
    }
    Ok(match (left, right()?) {
        (_, Value::Bool(true)) => Value::Bool(true),
        (Value::Bool(false), Value::Bool(false)) => Value::Bool(false),
        _ => Value::Null,
    })
}

/// SQL order of two non-NULL values of one type. DOUBLEs compare numerically (so `0.0 = -0.0`),
/// falling back to the total order only for NaN.
fn sql_cmp(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Double(F64(x)), Value::Double(F64(y))) => {
            x.partial_cmp(y).unwrap_or(x.total_cmp(y))
        }
        _ => a.cmp(b),
    }
}

fn compare(op: CmpOp, a: &Value, b: &Value) -> Value {
    if a.is_null() || b.is_null() {
        return Value::Null;
    }
    let ord = sql_cmp(a, b);
    Value::Bool(match op {
        CmpOp::Eq => ord.is_eq(),
        CmpOp::NotEq => ord.is_ne(),
        CmpOp::Lt => ord.is_lt(),
        CmpOp::LtEq => ord.is_le(),
        CmpOp::Gt => ord.is_gt(),
        CmpOp::GtEq => ord.is_ge(),
    })
}

/// `x IN (list)`: TRUE on a match; otherwise NULL if `x` or any item is NULL, else FALSE.
fn in_list(x: Value, list: &[Node], row: &[Value]) -> Result<Value, String> {
    if x.is_null() {
        return Ok(Value::Null);
    }
    let mut saw_null = false;
    for item in list {
        let v = eval(item, row)?;
        if v.is_null() {
            saw_null = true;
        } else if sql_cmp(&x, &v).is_eq() {
            return Ok(Value::Bool(true));
        }
    }
    Ok(if saw_null {
        Value::Null
    } else {
        Value::Bool(false)
    })
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

fn symbol(op: ArithOp) -> &'static str {
    match op {
        ArithOp::Add => "+",
        ArithOp::Sub => "-",
        ArithOp::Mul => "*",
        ArithOp::Div => "/",
    }
}

/// `CONCAT`: NULL if any argument is NULL (Spark); arguments are cast to STRING when compiled.
fn concat(args: &[Node], row: &[Value]) -> Result<Value, String> {
    let mut out = String::new();
    for arg in args {
        match to_string(&eval(arg, row)?) {
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

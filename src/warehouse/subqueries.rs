//! Subqueries inside expressions — `(SELECT ...)`, `[NOT] EXISTS (SELECT ...)`,
//! `x [NOT] IN (SELECT ...)` — evaluated once and replaced by their values before the
//! expression is compiled.
//!
//! Invariant: only uncorrelated subqueries exist here: a subquery is evaluated in the scope of
//! the query around it (its tables, its common table expressions), never per outer row, so a
//! reference to an outer column is an unknown column inside the subquery. A scalar subquery
//! becomes `CAST('<value>' AS <its column's type>)` (or a typed NULL when it returns no row),
//! so the expression around it types exactly as if the value had been written there; more than
//! one row is an error, as in SQL.
//!
//! The rewrite walks the expression forms the compiler knows ([`crate::expr::compile`]); any
//! other form is left alone for the compiler to refuse by name. sqlparser's visitor would walk
//! every form, but it needs the `visitor` feature's derive over the whole AST for this one use.

use super::select::{query_in, Env, Relation};
use crate::expr::cast_value;
use crate::value::{DataType, Value};
use crate::{Error, ErrorKind, Result};
use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, FunctionArguments};

/// `expr` with its subqueries replaced by their values in `env`.
pub(crate) fn bind(expr: &ast::Expr, env: &Env) -> Result<ast::Expr> {
    let mut bound = expr.clone();
    rewrite(&mut bound, env)?;
    Ok(bound)
}

fn rewrite(expr: &mut ast::Expr, env: &Env) -> Result<()> {
    use ast::Expr as E;
    match expr {
        E::Subquery(q) => {
            let relation = one_column(query_in(env, q)?, q)?;
            *expr = scalar(&relation, q)?;
        }
        E::Exists { subquery, negated } => {
            let found = !query_in(env, subquery)?.rows.is_empty();
            *expr = ast::Expr::value(ast::Value::Boolean(found != *negated));
        }
        E::InSubquery {
            expr: operand,
            subquery,
            negated,
        } => {
            let relation = one_column(query_in(env, subquery)?, subquery)?;
            rewrite(operand, env)?;
            *expr = match relation.rows.is_empty() {
                // Nothing is IN an empty set, not even NULL.
                true => ast::Expr::value(ast::Value::Boolean(*negated)),
                false => E::InList {
                    expr: operand.clone(),
                    list: values(&relation)?,
                    negated: *negated,
                },
            };
        }
        E::Nested(x)
        | E::UnaryOp { expr: x, .. }
        | E::IsNull(x)
        | E::IsNotNull(x)
        | E::Cast { expr: x, .. } => rewrite(x, env)?,
        E::BinaryOp { left, right, .. } => {
            rewrite(left, env)?;
            rewrite(right, env)?;
        }
        E::InList { expr: x, list, .. } => {
            rewrite(x, env)?;
            for item in list {
                rewrite(item, env)?;
            }
        }
        E::Between {
            expr: x, low, high, ..
        } => {
            for e in [x, low, high] {
                rewrite(e, env)?;
            }
        }
        E::Like {
            expr: x, pattern, ..
        }
        | E::RLike {
            expr: x, pattern, ..
        } => {
            rewrite(x, env)?;
            rewrite(pattern, env)?;
        }
        E::Function(f) => {
            if let FunctionArguments::List(list) = &mut f.args {
                for arg in &mut list.args {
                    if let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = arg {
                        rewrite(e, env)?;
                    }
                }
            }
        }
        E::Struct { values, .. } => {
            for v in values {
                rewrite(v, env)?;
            }
        }
        E::Named { expr: x, .. } => rewrite(x, env)?,
        _ => {}
    }
    Ok(())
}

fn one_column(relation: Relation, q: &ast::Query) -> Result<Relation> {
    match relation.schema.columns.len() {
        1 => Ok(relation),
        n => {
            let message = format!(
                "the subquery `({q})` returns {n} columns; a subquery in an expression returns one"
            );
            Err(Error::new(ErrorKind::Validation, message))
        }
    }
}

/// The one value of a scalar subquery, typed.
fn scalar(relation: &Relation, q: &ast::Query) -> Result<ast::Expr> {
    let ty = &relation.schema.columns[0].ty;
    match relation.rows.as_slice() {
        [] => typed(Value::Null, ty),
        [row] => typed(row.value(0), ty),
        rows => {
            let message = format!(
                "the scalar subquery `({q})` returned {} rows; it must return at most one",
                rows.len()
            );
            Err(Error::new(ErrorKind::InvalidRow, message))
        }
    }
}

/// Every value of a one-column relation, typed.
fn values(relation: &Relation) -> Result<Vec<ast::Expr>> {
    let ty = &relation.schema.columns[0].ty;
    relation
        .rows
        .iter()
        .map(|r| typed(r.value(0), ty))
        .collect()
}

/// `value` as an expression of type `ty`: `CAST('text' AS ty)`, or `CAST(NULL AS ty)`.
fn typed(value: Value, ty: &DataType) -> Result<ast::Expr> {
    if matches!(ty, DataType::Struct(_) | DataType::Array(_)) {
        let message = format!("a subquery in an expression cannot return {ty} values yet");
        return Err(Error::new(ErrorKind::Validation, message));
    }
    let literal = match cast_value(value, &DataType::String) {
        Ok(Value::Str(text)) => ast::Value::SingleQuotedString(text),
        _ => ast::Value::Null,
    };
    if *ty == DataType::Null {
        return Ok(ast::Expr::value(literal));
    }
    let name = ast::ObjectName::from(vec![ast::Ident::new(ty.to_string())]);
    Ok(ast::Expr::Cast {
        kind: ast::CastKind::Cast,
        expr: Box::new(ast::Expr::value(literal)),
        data_type: ast::DataType::Custom(name, Vec::new()),
        array: false,
        format: None,
    })
}

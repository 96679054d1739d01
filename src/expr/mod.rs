//! Scalar SQL expressions: compiled against a schema, statically typed, evaluated on rows with
//! SQL three-valued logic.
//!
//! Invariants:
//! - Compilation resolves every column to an index and every operand to the type its operator
//!   evaluates on; implicit coercions become explicit cast nodes, and casts of literals are
//!   folded (so a malformed literal is a compile error, not a per-row one).
//! - Hence evaluation never checks types. It returns `Err` only for problems of the data itself
//!   (integer overflow, a value that does not cast); the caller turns that into an invalid row.
//! - Evaluating on a row of the schema the expression was compiled against never panics.

mod cast;
mod compile;
pub mod depth;
mod eval;
mod like;
mod types;

#[cfg(test)]
mod tests;

pub(crate) use cast::describe;
pub use cast::{cast_value, store_assignable};
pub(crate) use compile::regex_reason;
pub use compile::{compile, compile_at, unify};
pub use types::parse_type;

use crate::value::{Column, DataType, Datum, Packer, Value};
use std::fmt;

/// A compiled, typed expression together with its source text.
#[derive(Clone, Debug)]
pub struct Expr {
    node: Node,
    ty: DataType,
    text: String,
}

/// Binary comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

/// Arithmetic operators; `/` is always evaluated on DOUBLEs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
}

/// The evaluation tree. Operands already have the types their operator works on.
#[derive(Clone, Debug)]
enum Node {
    Literal(Value),
    Column(usize),
    Not(Box<Node>),
    /// Numeric negation; `int32` asks for an INT range check.
    Neg {
        operand: Box<Node>,
        int32: bool,
    },
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Cmp(CmpOp, Box<Node>, Box<Node>),
    /// Arithmetic on operands of type `ty` (the result type).
    Arith {
        op: ArithOp,
        ty: DataType,
        left: Box<Node>,
        right: Box<Node>,
    },
    IsNull {
        operand: Box<Node>,
        negated: bool,
    },
    InList {
        operand: Box<Node>,
        list: Vec<Node>,
        negated: bool,
    },
    Like {
        operand: Box<Node>,
        pattern: Box<Node>,
        escape: char,
        negated: bool,
    },
    Cast {
        operand: Box<Node>,
        to: DataType,
    },
    Coalesce(Vec<Node>),
    Concat(Vec<Node>),
    Lower(Box<Node>),
    Upper(Box<Node>),
    /// `x RLIKE 'pattern'`: whether the pattern matches anywhere in `x` (Spark's `find`).
    RLike {
        operand: Box<Node>,
        pattern: regex::Regex,
        negated: bool,
    },
    /// `REGEXP_EXTRACT(x, 'pattern', group)`: the group's text in the first match, or `''`
    /// when the pattern or the group does not match (as Spark).
    RegexpExtract {
        operand: Box<Node>,
        pattern: regex::Regex,
        group: usize,
    },
    Struct(Vec<Node>),
    /// `ARRAY(x, ...)`: the elements, already of the array's element type.
    Array(Vec<Node>),
    /// `DATE_ADD(d, n)` (`DATE_SUB` negates `n` when compiled): the date `n` days after `d`.
    DateAdd {
        date: Box<Node>,
        days: Box<Node>,
    },
}

impl Node {
    fn reads_only(&self, columns: &std::ops::Range<usize>) -> bool {
        let all = |nodes: &[Node]| nodes.iter().all(|n| n.reads_only(columns));
        match self {
            Node::Literal(_) => true,
            Node::Column(i) => columns.contains(i),
            Node::Not(x)
            | Node::Neg { operand: x, .. }
            | Node::IsNull { operand: x, .. }
            | Node::Cast { operand: x, .. }
            | Node::Lower(x)
            | Node::Upper(x)
            | Node::RLike { operand: x, .. }
            | Node::RegexpExtract { operand: x, .. } => x.reads_only(columns),
            Node::DateAdd { date: l, days: r } => l.reads_only(columns) && r.reads_only(columns),
            Node::And(l, r)
            | Node::Or(l, r)
            | Node::Cmp(_, l, r)
            | Node::Arith {
                left: l, right: r, ..
            }
            | Node::Like {
                operand: l,
                pattern: r,
                ..
            } => l.reads_only(columns) && r.reads_only(columns),
            Node::InList { operand, list, .. } => operand.reads_only(columns) && all(list),
            Node::Coalesce(nodes)
            | Node::Concat(nodes)
            | Node::Struct(nodes)
            | Node::Array(nodes) => all(nodes),
        }
    }
}

impl Expr {
    /// A bare reference to column `index`, named and typed by `column`.
    pub fn column(index: usize, column: &Column) -> Expr {
        Expr {
            node: Node::Column(index),
            ty: column.ty.clone(),
            text: column.name.clone(),
        }
    }

    /// The static type of the expression.
    pub fn ty(&self) -> &DataType {
        &self.ty
    }

    /// Evaluates the expression on a row of the schema it was compiled against, given as the
    /// datums of a packed row ([`crate::value::Row::unpack`]).
    pub fn eval(&self, row: &[Datum<'_>]) -> Result<Value, String> {
        eval::eval(&self.node, row).map(eval::Val::into_value)
    }

    /// Evaluates the expression and appends the result to `out`, without making an owned copy
    /// of a column or literal it returns as it is.
    pub fn eval_into(&self, row: &[Datum<'_>], out: &mut Packer) -> Result<(), String> {
        eval::eval(&self.node, row)?.push_to(out);
        Ok(())
    }

    /// Evaluates a BOOLEAN expression as a predicate: only TRUE counts, FALSE and NULL do not.
    pub fn eval_predicate(&self, row: &[Datum<'_>]) -> Result<bool, String> {
        Ok(eval::truth(&self.node, row)? == Some(true))
    }

    /// [`Expr::eval`] of a row given as values (tests write rows so).
    #[cfg(test)]
    pub(crate) fn eval_values(&self, row: &[Value]) -> Result<Value, String> {
        self.eval(&crate::value::Row::from(row).unpack())
    }

    /// [`Expr::eval_predicate`] of a row given as values.
    #[cfg(test)]
    pub(crate) fn eval_predicate_values(&self, row: &[Value]) -> Result<bool, String> {
        self.eval_predicate(&crate::value::Row::from(row).unpack())
    }

    /// The expression stored into a column of type `to` (Spark's ANSI store assignment,
    /// [`store_assignable`]): itself, or cast; `None` when its type does not fit.
    pub fn stored_as(self, to: &DataType) -> Option<Expr> {
        if &self.ty == to {
            return Some(self);
        }
        if !store_assignable(&self.ty, to) {
            return None;
        }
        Some(Expr {
            text: format!("CAST({} AS {to})", self.text),
            node: Node::Cast {
                operand: Box::new(self.node),
                to: to.clone(),
            },
            ty: to.clone(),
        })
    }

    /// Whether every column the expression reads is in `columns` (a constant reads none).
    pub fn reads_only(&self, columns: std::ops::Range<usize>) -> bool {
        self.node.reads_only(&columns)
    }

    /// The column index when the expression is a bare column reference.
    pub fn column_index(&self) -> Option<usize> {
        match self.node {
            Node::Column(i) => Some(i),
            _ => None,
        }
    }

    /// The expression as written (normalised by the SQL parser's printer).
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

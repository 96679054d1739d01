//! sqlparser AST + schema → typed [`Node`] tree.
//!
//! Typing rules: numeric operands widen INT → BIGINT → DOUBLE; a STRING meets a DATE/TIMESTAMP
//! as that temporal type and a DATE meets a TIMESTAMP as a TIMESTAMP; a NULL literal fits
//! everything. Anything else that does not match is a compile error, never a run-time one.

use super::cast::{can_cast, cast_value};
use super::types::parse_type;
use super::{ArithOp, CmpOp, Expr, Node};
use crate::value::{closest, DataType, Schema, Value, F64};
use crate::{Error, ErrorKind};
use sqlparser::ast::{
    self, BinaryOperator, CastKind, FunctionArg, FunctionArgExpr, FunctionArguments, Spanned,
    UnaryOperator,
};

/// Compiles `ast` against `schema`. Errors are validation errors carrying the line of the
/// offending sub-expression when the parser recorded one; callers add the clause.
/// `CURRENT_DATE()` and `CURRENT_TIMESTAMP()` are refused: they need [`compile_at`].
pub fn compile(ast: &ast::Expr, schema: &Schema) -> Result<Expr, Error> {
    Compiler { schema, now: None }.compile(ast)
}

/// [`compile`] for an expression evaluated at one instant, `now` (microseconds since the
/// epoch): `CURRENT_TIMESTAMP()` / `NOW()` become that instant and `CURRENT_DATE()` its date in
/// UTC, as literals, so evaluation stays a pure function of the row. Spark fixes them per query
/// the same way; a caller evaluating at several instants compiles once per instant.
pub fn compile_at(ast: &ast::Expr, schema: &Schema, now: i64) -> Result<Expr, Error> {
    Compiler {
        schema,
        now: Some(now),
    }
    .compile(ast)
}

/// Microseconds in a day: `CURRENT_DATE()` is the instant's day in UTC.
const DAY_MICROS: i64 = 86_400_000_000;

struct Typed {
    node: Node,
    ty: DataType,
}

type Compiled = Result<Typed, Error>;

fn typed(node: Node, ty: DataType) -> Compiled {
    Ok(Typed { node, ty })
}

fn fail(at: &ast::Expr, message: impl Into<String>) -> Error {
    let error = Error::new(ErrorKind::Validation, message);
    match at.span().start.line {
        0 => error,
        line => error.at_line(line),
    }
}

/// The type two operands meet at (comparison, IN, COALESCE), if any.
pub fn unify(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType::*;
    match (a, b) {
        (a, b) if a == b => Some(a.clone()),
        (Null, x) | (x, Null) => Some(x.clone()),
        (Double, x) | (x, Double) if x.is_numeric() => Some(Double),
        (BigInt, x) | (x, BigInt) if x.is_numeric() => Some(BigInt),
        (String, t @ (Date | Timestamp)) | (t @ (Date | Timestamp), String) => Some(t.clone()),
        (Date, Timestamp) | (Timestamp, Date) => Some(Timestamp),
        _ => None,
    }
}

/// Converts an operand to `to`: INT to BIGINT is free (one representation), literals are cast
/// now, anything else gets a cast node.
fn coerce(t: Typed, to: &DataType, at: &ast::Expr) -> Result<Node, Error> {
    let free =
        t.ty == *to || t.ty == DataType::Null || (t.ty == DataType::Int && *to == DataType::BigInt);
    match t.node {
        node if free => Ok(node),
        Node::Literal(v) => cast_value(v, to)
            .map(Node::Literal)
            .map_err(|e| fail(at, e)),
        node => Ok(Node::Cast {
            operand: Box::new(node),
            to: to.clone(),
        }),
    }
}

fn boxed(node: Node) -> Box<Node> {
    Box::new(node)
}

struct Compiler<'a> {
    schema: &'a Schema,
    /// The instant the clock functions stand for; `None` refuses them.
    now: Option<i64>,
}

impl Compiler<'_> {
    fn compile(&self, ast: &ast::Expr) -> Result<Expr, Error> {
        let typed = self.expr(ast)?;
        Ok(Expr {
            node: typed.node,
            ty: typed.ty,
            text: ast.to_string(),
        })
    }

    fn expr(&self, e: &ast::Expr) -> Compiled {
        use ast::Expr as E;
        match e {
            E::Identifier(id) => self.column(id, e),
            // A column whose name has a dot, such as the `_metadata.file_name` of a file
            // read, is written as a qualified name.
            E::CompoundIdentifier(parts) => match self.schema.index_of(&dotted(parts)) {
                Some(i) => typed(Node::Column(i), self.schema.columns[i].ty.clone()),
                None => Err(fail(
                    e,
                    format!(
                        "qualified name `{e}` is not supported; use the bare column name `{}`",
                        parts.last().map_or("", |p| p.value.as_str())
                    ),
                )),
            },
            E::Nested(inner) => self.expr(inner),
            E::Value(v) => literal(&v.value, e),
            E::TypedString(ts) => self.typed_string(ts, e),
            E::UnaryOp { op, expr } => self.unary(*op, expr, e),
            E::BinaryOp { left, op, right } => self.binary(left, op, right, e),
            E::IsNull(x) | E::IsNotNull(x) => typed(
                Node::IsNull {
                    operand: boxed(self.expr(x)?.node),
                    negated: matches!(e, E::IsNotNull(_)),
                },
                DataType::Boolean,
            ),
            E::InList {
                expr,
                list,
                negated,
            } => self.in_list(expr, list, *negated, e),
            E::Between {
                expr,
                negated,
                low,
                high,
            } => self.between(expr, low, high, *negated),
            E::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            } => self.like(expr, pattern, escape_char.as_ref(), *negated, e),
            E::RLike {
                negated,
                expr,
                pattern,
                ..
            } => self.rlike(expr, pattern, *negated),
            E::Cast {
                kind: CastKind::Cast | CastKind::DoubleColon,
                expr,
                data_type,
                array: false,
                format: None,
            } => self.cast(expr, data_type, e),
            E::Function(f) => self.function(f, e),
            E::Struct { values, fields } if fields.is_empty() => self.structure(values),
            _ => Err(fail(e, format!("unsupported expression `{e}`"))),
        }
    }

    fn column(&self, id: &ast::Ident, at: &ast::Expr) -> Compiled {
        match self.schema.index_of(&id.value) {
            Some(i) => typed(Node::Column(i), self.schema.columns[i].ty.clone()),
            None => {
                let hint = closest(&id.value, self.schema.names())
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                Err(fail(at, format!("unknown column `{}`{hint}", id.value)))
            }
        }
    }

    fn typed_string(&self, ts: &ast::TypedString, at: &ast::Expr) -> Compiled {
        let ty = parse_type(&ts.data_type.to_string()).map_err(|m| fail(at, m))?;
        let text = match &ts.value.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            other => {
                return Err(fail(
                    at,
                    format!("expected a quoted string after {ty}, found {other}"),
                ))
            }
        };
        let value = cast_value(Value::Str(text), &ty).map_err(|m| fail(at, m))?;
        typed(Node::Literal(value), ty)
    }

    fn boolean(&self, e: &ast::Expr, op: &str) -> Result<Node, Error> {
        let t = self.expr(e)?;
        match t.ty {
            DataType::Boolean | DataType::Null => Ok(t.node),
            ty => Err(fail(
                e,
                format!("{op} needs BOOLEAN operands, `{e}` is {ty}"),
            )),
        }
    }

    fn numeric(&self, e: &ast::Expr, op: &str) -> Compiled {
        let t = self.expr(e)?;
        if t.ty.is_numeric() || t.ty == DataType::Null {
            Ok(t)
        } else {
            Err(fail(
                e,
                format!("`{op}` needs numeric operands, `{e}` is {}", t.ty),
            ))
        }
    }

    fn unary(&self, op: UnaryOperator, operand: &ast::Expr, at: &ast::Expr) -> Compiled {
        match op {
            UnaryOperator::Not => typed(
                Node::Not(boxed(self.boolean(operand, "NOT")?)),
                DataType::Boolean,
            ),
            UnaryOperator::Plus => self.numeric(operand, "+"),
            UnaryOperator::Minus => {
                let t = self.numeric(operand, "-")?;
                let literal = matches!(t.node, Node::Literal(_));
                let node = Node::Neg {
                    operand: boxed(t.node),
                    int32: t.ty == DataType::Int,
                };
                // Fold literals so `-5` stays a literal (and an overflow is reported now).
                let node = if literal {
                    Node::Literal(
                        super::eval::eval(&node, &[])
                            .map(super::eval::Val::into_value)
                            .map_err(|m| fail(at, m))?,
                    )
                } else {
                    node
                };
                typed(node, t.ty)
            }
            _ => Err(fail(at, format!("unsupported operator in `{at}`"))),
        }
    }

    fn binary(
        &self,
        l: &ast::Expr,
        op: &BinaryOperator,
        r: &ast::Expr,
        at: &ast::Expr,
    ) -> Compiled {
        let cmp = |c| self.compare(c, l, r, at);
        let arith = |a| self.arith(a, l, r);
        match op {
            BinaryOperator::And => typed(
                Node::And(
                    boxed(self.boolean(l, "AND")?),
                    boxed(self.boolean(r, "AND")?),
                ),
                DataType::Boolean,
            ),
            BinaryOperator::Or => typed(
                Node::Or(boxed(self.boolean(l, "OR")?), boxed(self.boolean(r, "OR")?)),
                DataType::Boolean,
            ),
            BinaryOperator::Eq => cmp(CmpOp::Eq),
            BinaryOperator::NotEq => cmp(CmpOp::NotEq),
            BinaryOperator::Lt => cmp(CmpOp::Lt),
            BinaryOperator::LtEq => cmp(CmpOp::LtEq),
            BinaryOperator::Gt => cmp(CmpOp::Gt),
            BinaryOperator::GtEq => cmp(CmpOp::GtEq),
            BinaryOperator::Plus => arith(ArithOp::Add),
            BinaryOperator::Minus => arith(ArithOp::Sub),
            BinaryOperator::Multiply => arith(ArithOp::Mul),
            BinaryOperator::Divide => arith(ArithOp::Div),
            BinaryOperator::StringConcat => self.concat(&[l, r]),
            _ => Err(fail(at, format!("unsupported operator `{op}`"))),
        }
    }

    fn compare(&self, op: CmpOp, l: &ast::Expr, r: &ast::Expr, at: &ast::Expr) -> Compiled {
        let (lt, rt) = (self.expr(l)?, self.expr(r)?);
        let ty = unify(&lt.ty, &rt.ty).ok_or_else(|| {
            fail(
                at,
                format!("cannot compare {} with {} in `{at}`", lt.ty, rt.ty),
            )
        })?;
        let node = Node::Cmp(op, boxed(coerce(lt, &ty, l)?), boxed(coerce(rt, &ty, r)?));
        typed(node, DataType::Boolean)
    }

    fn arith(&self, op: ArithOp, l: &ast::Expr, r: &ast::Expr) -> Compiled {
        let symbol = match op {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
        };
        let (lt, rt) = (self.numeric(l, symbol)?, self.numeric(r, symbol)?);
        let ty = match (op, unify(&lt.ty, &rt.ty)) {
            (ArithOp::Div, _) => DataType::Double,
            (_, Some(DataType::Null) | None) => DataType::Int,
            (_, Some(ty)) => ty,
        };
        let (left, right) = (boxed(coerce(lt, &ty, l)?), boxed(coerce(rt, &ty, r)?));
        typed(
            Node::Arith {
                op,
                ty: ty.clone(),
                left,
                right,
            },
            ty,
        )
    }

    fn in_list(
        &self,
        x: &ast::Expr,
        list: &[ast::Expr],
        negated: bool,
        at: &ast::Expr,
    ) -> Compiled {
        let operand = self.expr(x)?;
        let items = list
            .iter()
            .map(|e| self.expr(e))
            .collect::<Result<Vec<_>, _>>()?;
        let mut ty = operand.ty.clone();
        for item in &items {
            ty = unify(&ty, &item.ty).ok_or_else(|| {
                fail(
                    at,
                    format!("IN: cannot compare {} with {}", operand.ty, item.ty),
                )
            })?;
        }
        let list = items
            .into_iter()
            .zip(list)
            .map(|(t, e)| coerce(t, &ty, e))
            .collect::<Result<_, _>>()?;
        let operand = boxed(coerce(operand, &ty, x)?);
        typed(
            Node::InList {
                operand,
                list,
                negated,
            },
            DataType::Boolean,
        )
    }

    /// `x BETWEEN a AND b` is `x >= a AND x <= b` (x is evaluated twice; it has no effects).
    fn between(&self, x: &ast::Expr, low: &ast::Expr, high: &ast::Expr, negated: bool) -> Compiled {
        let range = Node::And(
            boxed(self.compare(CmpOp::GtEq, x, low, low)?.node),
            boxed(self.compare(CmpOp::LtEq, x, high, high)?.node),
        );
        let node = if negated {
            Node::Not(boxed(range))
        } else {
            range
        };
        typed(node, DataType::Boolean)
    }

    fn like(
        &self,
        x: &ast::Expr,
        pattern: &ast::Expr,
        escape: Option<&ast::Value>,
        negated: bool,
        at: &ast::Expr,
    ) -> Compiled {
        let string = |e: &ast::Expr| -> Result<Node, Error> {
            let t = self.expr(e)?;
            match t.ty {
                DataType::String | DataType::Null => Ok(t.node),
                ty => Err(fail(
                    e,
                    format!("LIKE needs STRING operands, `{e}` is {ty}"),
                )),
            }
        };
        let escape = match escape {
            None => '\\',
            Some(ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s))
                if s.chars().count() == 1 =>
            {
                s.chars().next().unwrap_or('\\')
            }
            Some(other) => {
                return Err(fail(
                    at,
                    format!("ESCAPE needs one character, found {other}"),
                ))
            }
        };
        let node = Node::Like {
            operand: boxed(string(x)?),
            pattern: boxed(string(pattern)?),
            escape,
            negated,
        };
        typed(node, DataType::Boolean)
    }

    fn cast(&self, x: &ast::Expr, data_type: &ast::DataType, at: &ast::Expr) -> Compiled {
        let to = parse_type(&data_type.to_string()).map_err(|m| fail(at, m))?;
        let t = self.expr(x)?;
        if !can_cast(&t.ty, &to) {
            return Err(fail(at, format!("cannot cast {} to {to}", t.ty)));
        }
        let node = match t.node {
            Node::Literal(v) => Node::Literal(cast_value(v, &to).map_err(|m| fail(at, m))?),
            node => Node::Cast {
                operand: boxed(node),
                to: to.clone(),
            },
        };
        typed(node, to)
    }

    fn function(&self, f: &ast::Function, at: &ast::Expr) -> Compiled {
        let name = match f.name.0.as_slice() {
            [part] => part.as_ident().map(|id| id.value.to_ascii_lowercase()),
            _ => None,
        };
        if let Some(clock @ ("current_date" | "current_timestamp" | "now")) = name.as_deref() {
            return self.clock(clock, f, at);
        }
        let args = plain_args(f).ok_or_else(|| fail(at, format!("unsupported call `{at}`")))?;
        match (name.as_deref(), args.as_slice()) {
            (Some("date_add"), [date, days]) => self.date_add(date, days, false, at),
            (Some("date_sub"), [date, days]) => self.date_add(date, days, true, at),
            (Some("coalesce"), [_, ..]) => self.coalesce(&args, at),
            (Some("concat"), _) => self.concat(&args),
            (Some("array"), _) => self.array(&args, at),
            (Some("lower"), [x]) => self.string_fn(x, Node::Lower, "LOWER"),
            (Some("upper"), [x]) => self.string_fn(x, Node::Upper, "UPPER"),
            (Some("regexp_extract"), [x, pattern]) => self.regexp_extract(x, pattern, None),
            (Some("regexp_extract"), [x, pattern, group]) => {
                self.regexp_extract(x, pattern, Some(group))
            }
            (Some("coalesce" | "lower" | "upper" | "regexp_extract" | "date_add" | "date_sub"), _) => {
                Err(fail(at, format!("wrong number of arguments in `{at}`")))
            }
            _ => Err(fail(
                at,
                format!(
                    "unknown function `{}` (supported: COALESCE, CONCAT, LOWER, UPPER, REGEXP_EXTRACT, DATE_ADD, DATE_SUB, CURRENT_DATE, CURRENT_TIMESTAMP, ARRAY, STRUCT, CAST)",
                    f.name
                ),
            )),
        }
    }

    /// `CURRENT_DATE()`, `CURRENT_TIMESTAMP()`, `NOW()` (parentheses optional for the first
    /// two, as in Spark) at the compiler's instant.
    fn clock(&self, name: &str, f: &ast::Function, at: &ast::Expr) -> Compiled {
        let no_args = match &f.args {
            FunctionArguments::None => true,
            FunctionArguments::List(list) => list.args.is_empty(),
            FunctionArguments::Subquery(_) => false,
        };
        if !no_args {
            return Err(fail(at, format!("`{at}` takes no arguments")));
        }
        let Some(now) = self.now else {
            let message = format!(
                "`{at}` is supported only in a REPLACE WHERE condition, which is evaluated at each update's time"
            );
            return Err(fail(at, message));
        };
        match name {
            "current_date" => {
                let day = i32::try_from(now.div_euclid(DAY_MICROS))
                    .map_err(|_| fail(at, "the clock is outside DATE's range"))?;
                typed(Node::Literal(Value::Date(day)), DataType::Date)
            }
            _ => typed(Node::Literal(Value::Timestamp(now)), DataType::Timestamp),
        }
    }

    /// `DATE_ADD(d, n)` / `DATE_SUB(d, n)`: `d` a DATE (a TIMESTAMP or STRING is cast to one, as
    /// Spark does), `n` an integer number of days.
    fn date_add(&self, date: &ast::Expr, days: &ast::Expr, sub: bool, at: &ast::Expr) -> Compiled {
        let what = if sub { "DATE_SUB" } else { "DATE_ADD" };
        let d = self.expr(date)?;
        if !matches!(
            d.ty,
            DataType::Date | DataType::Timestamp | DataType::String | DataType::Null
        ) {
            return Err(fail(
                date,
                format!("{what} needs a DATE, `{date}` is {}", d.ty),
            ));
        }
        let n = self.expr(days)?;
        if !matches!(n.ty, DataType::Int | DataType::BigInt | DataType::Null) {
            return Err(fail(
                days,
                format!("{what} needs a whole number of days, `{days}` is {}", n.ty),
            ));
        }
        let date = coerce(d, &DataType::Date, date)?;
        let days = match n.node {
            Node::Literal(Value::Int(k)) if sub => Node::Literal(Value::Int(
                k.checked_neg()
                    .ok_or_else(|| fail(at, "integer overflow"))?,
            )),
            node if sub => Node::Neg {
                operand: boxed(node),
                int32: false,
            },
            node => node,
        };
        let node = Node::DateAdd {
            date: boxed(date),
            days: boxed(days),
        };
        typed(node, DataType::Date)
    }

    fn coalesce(&self, args: &[&ast::Expr], at: &ast::Expr) -> Compiled {
        let (nodes, ty) = self.unified(args, at, "COALESCE")?;
        typed(Node::Coalesce(nodes), ty)
    }

    /// `ARRAY(x, ...)`: the elements meet at one type, as `COALESCE`'s operands do.
    fn array(&self, args: &[&ast::Expr], at: &ast::Expr) -> Compiled {
        let (nodes, ty) = self.unified(args, at, "ARRAY")?;
        typed(Node::Array(nodes), DataType::Array(Box::new(ty)))
    }

    /// `args` compiled and coerced to the one type they meet at ([`unify`]), and that type.
    fn unified(
        &self,
        args: &[&ast::Expr],
        at: &ast::Expr,
        what: &str,
    ) -> Result<(Vec<Node>, DataType), Error> {
        let items = args
            .iter()
            .map(|e| self.expr(e))
            .collect::<Result<Vec<_>, _>>()?;
        let mut ty = DataType::Null;
        for item in &items {
            ty = unify(&ty, &item.ty)
                .ok_or_else(|| fail(at, format!("{what}: cannot mix {ty} and {}", item.ty)))?;
        }
        let nodes = items
            .into_iter()
            .zip(args)
            .map(|(t, e)| coerce(t, &ty, e))
            .collect::<Result<_, _>>()?;
        Ok((nodes, ty))
    }

    fn concat(&self, args: &[&ast::Expr]) -> Compiled {
        let mut nodes = Vec::with_capacity(args.len());
        for e in args {
            let t = self.expr(e)?;
            if !can_cast(&t.ty, &DataType::String) {
                return Err(fail(e, format!("CONCAT cannot use {} value `{e}`", t.ty)));
            }
            nodes.push(coerce(t, &DataType::String, e)?);
        }
        typed(Node::Concat(nodes), DataType::String)
    }

    /// `x RLIKE 'p'` / `x REGEXP 'p'`.
    fn rlike(&self, x: &ast::Expr, pattern: &ast::Expr, negated: bool) -> Compiled {
        let operand = self.string_operand(x, "RLIKE")?;
        let pattern = pattern_literal(pattern, "RLIKE")?;
        let node = Node::RLike {
            operand: boxed(operand),
            pattern,
            negated,
        };
        typed(node, DataType::Boolean)
    }

    /// `REGEXP_EXTRACT(x, 'p' [, group])`; the group defaults to 1, as in Spark.
    fn regexp_extract(
        &self,
        x: &ast::Expr,
        pattern: &ast::Expr,
        group: Option<&ast::Expr>,
    ) -> Compiled {
        let operand = self.string_operand(x, "REGEXP_EXTRACT")?;
        let regex = pattern_literal(pattern, "REGEXP_EXTRACT")?;
        let group = match group {
            None => 1,
            Some(g) => match self.expr(g)?.node {
                Node::Literal(Value::Int(n)) => usize::try_from(n).unwrap_or(usize::MAX),
                _ => {
                    return Err(fail(
                        g,
                        format!("REGEXP_EXTRACT: the group `{g}` must be a number"),
                    ))
                }
            },
        };
        if group >= regex.captures_len() {
            let message = format!(
                "REGEXP_EXTRACT: `{pattern}` has {} group(s), so there is no group {group}",
                regex.captures_len() - 1
            );
            return Err(fail(pattern, message));
        }
        let node = Node::RegexpExtract {
            operand: boxed(operand),
            pattern: regex,
            group,
        };
        typed(node, DataType::String)
    }

    fn string_operand(&self, x: &ast::Expr, name: &str) -> Result<Node, Error> {
        let t = self.expr(x)?;
        match t.ty {
            DataType::String | DataType::Null => Ok(t.node),
            ty => Err(fail(x, format!("{name} needs a STRING, `{x}` is {ty}"))),
        }
    }

    fn string_fn(&self, x: &ast::Expr, make: fn(Box<Node>) -> Node, name: &str) -> Compiled {
        let t = self.expr(x)?;
        match t.ty {
            DataType::String | DataType::Null => typed(make(boxed(t.node)), DataType::String),
            ty => Err(fail(x, format!("{name} needs a STRING, `{x}` is {ty}"))),
        }
    }

    /// `STRUCT(a, b AS c, 1)`: fields named after columns or aliases, else `col1`, `col2`, ...
    fn structure(&self, values: &[ast::Expr]) -> Compiled {
        let mut nodes = Vec::with_capacity(values.len());
        let mut fields = Vec::with_capacity(values.len());
        for (i, v) in values.iter().enumerate() {
            let (e, name) = match v {
                ast::Expr::Named { expr, name } => (&**expr, name.value.clone()),
                ast::Expr::Identifier(id) => (v, id.value.clone()),
                _ => (v, format!("col{}", i + 1)),
            };
            let t = self.expr(e)?;
            // Name the field as the schema does, so STRUCT(userid) reads `userId`.
            let name = match t.node {
                Node::Column(c) if matches!(v, ast::Expr::Identifier(_)) => {
                    self.schema.columns[c].name.clone()
                }
                _ => name,
            };
            fields.push((name, t.ty));
            nodes.push(t.node);
        }
        typed(Node::Struct(nodes), DataType::Struct(fields))
    }
}

fn dotted(parts: &[ast::Ident]) -> String {
    let names: Vec<&str> = parts.iter().map(|p| p.value.as_str()).collect();
    names.join(".")
}

/// The positional argument expressions of a plain call, or `None` for anything fancier
/// (DISTINCT, named arguments, `*`, FILTER, OVER, ...).
fn plain_args(f: &ast::Function) -> Option<Vec<&ast::Expr>> {
    let plain = f.filter.is_none()
        && f.over.is_none()
        && f.null_treatment.is_none()
        && f.within_group.is_empty()
        && matches!(f.parameters, FunctionArguments::None);
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    if !plain || list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return None;
    }
    list.args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect()
}

/// A regular expression given as a string literal. Patterns are compiled once, here, so they
/// must be literals: a bad one is a compile error, never a per-row one. Rust's `regex` syntax
/// is Java's for what pipelines write (classes, groups, anchors, repetition); it has no
/// backreferences or lookaround, which are refused here with the crate's reason.
fn pattern_literal(e: &ast::Expr, name: &str) -> Result<regex::Regex, Error> {
    let text = match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s,
            _ => {
                return Err(fail(
                    e,
                    format!("{name}: the pattern `{e}` must be a string literal"),
                ))
            }
        },
        _ => {
            return Err(fail(
                e,
                format!("{name}: the pattern `{e}` must be a string literal"),
            ))
        }
    };
    regex::Regex::new(text).map_err(|why| {
        let reason = regex_reason(&why.to_string()).to_string();
        fail(
            e,
            format!("{name}: `{text}` is not a valid regular expression: {reason}"),
        )
    })
}

/// The regex crate's syntax errors span several lines (the pattern, a caret, the reason); the
/// reason alone fits our one-line messages.
pub(crate) fn regex_reason(text: &str) -> &str {
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or(text.trim())
}

fn literal(v: &ast::Value, at: &ast::Expr) -> Compiled {
    match v {
        ast::Value::Number(text, _) => {
            number(text).ok_or_else(|| fail(at, format!("number `{text}` is out of range")))
        }
        ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
            typed(Node::Literal(Value::Str(s.clone())), DataType::String)
        }
        ast::Value::Boolean(b) => typed(Node::Literal(Value::Bool(*b)), DataType::Boolean),
        ast::Value::Null => typed(Node::Literal(Value::Null), DataType::Null),
        other => Err(fail(at, format!("unsupported literal `{other}`"))),
    }
}

/// Integers are INT when they fit 32 bits, else BIGINT; anything with a point or exponent is
/// a DOUBLE.
fn number(text: &str) -> Option<Typed> {
    if text.contains(['.', 'e', 'E']) {
        let f: f64 = text.parse().ok()?;
        return Some(Typed {
            node: Node::Literal(Value::Double(F64(f))),
            ty: DataType::Double,
        });
    }
    let i: i64 = text.parse().ok()?;
    let ty = if i32::try_from(i).is_ok() {
        DataType::Int
    } else {
        DataType::BigInt
    };
    Some(Typed {
        node: Node::Literal(Value::Int(i)),
        ty,
    })
}

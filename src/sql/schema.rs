//! Schemas written by the user: `read_files(..., schema => 'col TYPE, ...')` strings, and
//! column lists declared on `CREATE STREAMING TABLE`, which must agree with the schema the
//! pipeline computes for the table.

use super::cursor::{invalid, syntax};
use super::syntax::ColumnDecl;
use crate::expr::{parse_type, Expr};
use crate::value::{Column, Schema};
use crate::Result;

/// Parses `'col TYPE, col TYPE, ...'`; errors are reported at `line` (the string's line).
pub(crate) fn parse_schema_text(text: &str, line: u64) -> Result<Schema> {
    let mut columns: Vec<Column> = Vec::new();
    for piece in split_top_level(text) {
        let piece = piece.trim();
        let (name, ty_text) = split_name(piece).ok_or_else(|| {
            syntax(
                line,
                format!("read_files schema: expected `name TYPE`, found `{piece}`"),
            )
        })?;
        if columns.iter().any(|c| c.name.eq_ignore_ascii_case(&name)) {
            return Err(syntax(
                line,
                format!("read_files schema: duplicate column `{name}`"),
            ));
        }
        let ty = parse_type(ty_text)
            .map_err(|m| syntax(line, format!("read_files schema: column `{name}`: {m}")))?;
        columns.push(Column { name, ty });
    }
    Ok(Schema { columns })
}

/// Splits at commas outside `<...>` and `(...)`.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, ch) in text.char_indices() {
        match ch {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                pieces.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    pieces.push(&text[start..]);
    pieces
}

/// `name rest` or `` `quoted name` rest ``.
fn split_name(piece: &str) -> Option<(String, &str)> {
    if let Some(quoted) = piece.strip_prefix('`') {
        let end = quoted.find('`')?;
        return Some((quoted[..end].to_string(), &quoted[end + 1..]));
    }
    let end = piece.find(char::is_whitespace)?;
    Some((piece[..end].to_string(), &piece[end..]))
}

/// Checks a declared column list against the computed schema: same names (case-insensitive),
/// same types, same order. `table` names the table and `writer` what computes it (for
/// messages); `table_line` locates errors about missing columns.
pub(crate) fn check_declared(
    declared: &[ColumnDecl],
    computed: &Schema,
    table: &str,
    writer: &str,
    table_line: u64,
) -> Result<()> {
    check_declared_by_name(declared, computed, table, writer, table_line)?;
    let in_order = declared
        .iter()
        .zip(&computed.columns)
        .all(|(d, c)| d.name.text.eq_ignore_ascii_case(&c.name));
    if !in_order {
        let names: Vec<&str> = computed.names().collect();
        let message = format!(
            "CREATE STREAMING TABLE {table}: declare the columns in the order {writer} produces them: {}",
            names.join(", ")
        );
        return Err(invalid(table_line, message));
    }
    Ok(())
}

/// Where `computed` has declared column `n`, which must be declared once; `context` and
/// `writer` say where and what computes it, for messages at the column's line.
fn produced_index(
    declared: &[ColumnDecl],
    n: usize,
    computed: &Schema,
    context: &str,
    writer: &str,
) -> Result<usize> {
    let decl = &declared[n];
    if declared[..n]
        .iter()
        .any(|d| d.name.text.eq_ignore_ascii_case(&decl.name.text))
    {
        let message = format!("{context}: column `{}` is declared twice", decl.name.text);
        return Err(invalid(decl.name.line, message));
    }
    computed.index_of(&decl.name.text).ok_or_else(|| {
        let message = format!(
            "{context}: declared column `{}` is not produced by {writer} (it produces {computed})",
            decl.name.text
        );
        invalid(decl.name.line, message)
    })
}

/// [`check_declared`] without the order: the same columns, by name, with the same types.
pub(crate) fn check_declared_by_name(
    declared: &[ColumnDecl],
    computed: &Schema,
    table: &str,
    writer: &str,
    table_line: u64,
) -> Result<()> {
    let context = format!("CREATE STREAMING TABLE {table}");
    for (n, decl) in declared.iter().enumerate() {
        let i = produced_index(declared, n, computed, &context, writer)?;
        let column = &computed.columns[i];
        if column.ty != decl.ty {
            let message = format!(
                "{context}: column `{}` is declared {} but {writer} produces {}",
                decl.name.text, decl.ty, column.ty
            );
            return Err(invalid(decl.name.line, message));
        }
    }
    if let Some(missing) = computed.columns.iter().find(|c| {
        !declared
            .iter()
            .any(|d| d.name.text.eq_ignore_ascii_case(&c.name))
    }) {
        let interval = ["__START_AT", "__END_AT"]
            .iter()
            .any(|r| r.eq_ignore_ascii_case(&missing.name));
        let message = if interval {
            format!(
                "{context}: an SCD TYPE 2 target must declare `__START_AT {ty}` and `__END_AT {ty}` (the sequence type)",
                ty = missing.ty
            )
        } else {
            format!(
                "{context}: declared columns lack `{} {}`, which {writer} produces",
                missing.name, missing.ty
            )
        };
        return Err(invalid(table_line, message));
    }
    Ok(())
}

/// The projection and schema in the declared order (names as declared; the types agree, as
/// `check_declared_by_name` made sure). `SELECT *` stays `None` when the order is the input's.
pub(crate) fn declared_order(
    declared: &[ColumnDecl],
    projection: Option<Vec<Expr>>,
    produced: &Schema,
    input: &Schema,
) -> (Option<Vec<Expr>>, Schema) {
    let order: Vec<usize> = declared
        .iter()
        .filter_map(|d| produced.index_of(&d.name.text))
        .collect();
    let columns = declared
        .iter()
        .zip(&order)
        .map(|(d, &j)| Column {
            name: d.name.text.clone(),
            ty: produced.columns[j].ty.clone(),
        })
        .collect();
    let schema = Schema { columns };
    let identity = order.iter().enumerate().all(|(n, &j)| n == j);
    let exprs = match projection {
        None if identity => return (None, schema),
        None => input
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| Expr::column(i, c))
            .collect(),
        Some(exprs) => exprs,
    };
    let reordered = order.iter().map(|&j| exprs[j].clone()).collect();
    (Some(reordered), schema)
}

/// An append flow's rows stored `BY NAME` into the declared columns: each declared column takes
/// the produced column of its name, cast by Spark's ANSI store assignment where the types
/// differ ([`Expr::stored_as`]); a declared column nothing produces, a produced one nothing
/// declares, or a type that does not fit is an error (at the column's line, or the flow's).
/// `flow` names the flow in messages. Returns the projection (`None` when the input passes
/// unchanged) and the declared schema.
pub(crate) fn stored_by_name(
    declared: &[ColumnDecl],
    projection: Option<Vec<Expr>>,
    produced: &Schema,
    input: &Schema,
    (flow, line): (&str, u64),
) -> Result<(Option<Vec<Expr>>, Schema)> {
    let context = format!("INSERT INTO: {flow}");
    let writer = "its query";
    let mut exprs = Vec::with_capacity(declared.len());
    for (n, decl) in declared.iter().enumerate() {
        let j = produced_index(declared, n, produced, &context, writer)?;
        let expr = match &projection {
            Some(exprs) => exprs[j].clone(),
            None => Expr::column(j, &input.columns[j]),
        };
        let from = expr.ty().clone();
        let stored = expr.stored_as(&decl.ty).ok_or_else(|| {
            let message = format!(
                "{context}: column `{}` is declared {} but {writer} produces {from}, which does not fit; CAST it",
                decl.name.text, decl.ty
            );
            invalid(decl.name.line, message)
        })?;
        exprs.push(stored);
    }
    if let Some(extra) = (produced.columns.iter()).find(|c| {
        !declared
            .iter()
            .any(|d| d.name.text.eq_ignore_ascii_case(&c.name))
    }) {
        let message = format!(
            "{context}: {writer} produces `{}`, which the table does not declare",
            extra.name
        );
        return Err(invalid(line, message));
    }
    let schema = Schema::new(declared.iter().map(|d| (d.name.text.clone(), d.ty.clone())));
    let unchanged = projection.is_none()
        && exprs
            .iter()
            .enumerate()
            .all(|(i, e)| e.column_index() == Some(i))
        && schema == *input;
    Ok((if unchanged { None } else { Some(exprs) }, schema))
}

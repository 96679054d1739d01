//! Schemas written by the user: `read_files(..., schema => 'col TYPE, ...')` strings, and
//! column lists declared on `CREATE STREAMING TABLE`, which must agree with the schema the
//! pipeline computes for the table.

use super::cursor::{invalid, syntax};
use super::syntax::ColumnDecl;
use crate::expr::parse_type;
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
        if declared[..n]
            .iter()
            .any(|d| d.name.text.eq_ignore_ascii_case(&decl.name.text))
        {
            let message = format!("{context}: column `{}` is declared twice", decl.name.text);
            return Err(invalid(decl.name.line, message));
        }
        let Some(i) = computed.index_of(&decl.name.text) else {
            let message = format!(
                "{context}: declared column `{}` is not produced by {writer} (it produces {computed})",
                decl.name.text
            );
            return Err(invalid(decl.name.line, message));
        };
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

//! The table-level pieces of `CREATE STREAMING TABLE`: the column list, `TBLPROPERTIES`, and
//! the `AS SELECT ... FROM STREAM ... [WHERE ...]` query of a source table.

use super::cursor::{invalid, syntax, Cursor, Name};
use super::syntax::{
    ColumnDecl, ConstraintDecl, From, Located, Query, ReadFiles, ReadOptions, SelectItem,
};
use crate::expr::parse_type;
use crate::plan::OnViolation;
use crate::Result;
use sqlparser::tokenizer::Token;

/// `( item, ... )` where an item is `name TYPE [NOT NULL] [COMMENT '...']` or
/// `CONSTRAINT name EXPECT (expr) [ON VIOLATION ...]`, in any mix. Types are read as text by
/// [`parse_type`], so they share one grammar with `read_files` schema strings. The columns are
/// `None` when only constraints are listed (the table then has no declared column list).
pub(crate) fn column_decls(
    c: &mut Cursor,
) -> Result<(Option<Vec<ColumnDecl>>, Vec<ConstraintDecl>)> {
    c.expect(&Token::LParen, "column list")?;
    let mut columns = Vec::new();
    let mut constraints: Vec<ConstraintDecl> = Vec::new();
    loop {
        if c.is_word_at(0, "CONSTRAINT") {
            let constraint = constraint(c)?;
            let name = &constraint.name;
            if let Some(other) = constraints
                .iter()
                .find(|o| o.name.text.eq_ignore_ascii_case(&name.text))
            {
                let message = format!(
                    "CONSTRAINT {}: the name is already used by the constraint at line {}",
                    name.text, other.condition.line
                );
                return Err(invalid(name.line, message));
            }
            constraints.push(constraint);
        } else {
            columns.push(column_decl(c)?);
        }
        if c.eat(&Token::RParen) {
            let columns = (!columns.is_empty()).then_some(columns);
            return Ok((columns, constraints));
        }
        c.expect(&Token::Comma, "column list")?;
    }
}

fn column_decl(c: &mut Cursor) -> Result<ColumnDecl> {
    let name = c.name("column list")?;
    let ty_line = c.line();
    let text = type_text(c);
    let ty =
        parse_type(&text).map_err(|m| syntax(ty_line, format!("column `{}`: {m}", name.text)))?;
    // Accepted for compatibility; NULL keys and sequences are rejected at run time anyway.
    c.eat_words(&["NOT", "NULL"]);
    if c.eat_words(&["COMMENT"]) {
        c.string("COMMENT")?;
    }
    Ok(ColumnDecl { name, ty })
}

/// `CONSTRAINT name EXPECT (expr) [ON VIOLATION DROP ROW | ON VIOLATION FAIL UPDATE]`; the
/// action defaults to warning.
fn constraint(c: &mut Cursor) -> Result<ConstraintDecl> {
    let line = c.line();
    c.expect_words(&["CONSTRAINT"], "column list")?;
    let name = c.name("CONSTRAINT")?;
    let context = format!("CONSTRAINT {}", name.text);
    c.expect_words(&["EXPECT"], &context)?;
    c.expect(&Token::LParen, &format!("{context} EXPECT"))?;
    let condition = c.expr(&format!("{context} EXPECT"))?;
    c.expect(&Token::RParen, &format!("{context} EXPECT"))?;
    let action = if c.eat_words(&["ON", "VIOLATION"]) {
        if c.eat_words(&["DROP", "ROW"]) {
            OnViolation::DropRow
        } else if c.eat_words(&["FAIL", "UPDATE"]) {
            OnViolation::FailUpdate
        } else {
            return Err(c.unexpected(
                &format!("{context} ON VIOLATION"),
                "`DROP ROW` or `FAIL UPDATE`",
            ));
        }
    } else {
        OnViolation::Warn
    };
    Ok(ConstraintDecl {
        name,
        condition: Located {
            value: condition,
            line,
        },
        action,
    })
}

/// The tokens of a type, up to the `,` or `)` ending the column (or NOT NULL / COMMENT),
/// printed back as text.
fn type_text(c: &mut Cursor) -> String {
    let mut depth = 0i32;
    let mut parts = Vec::new();
    loop {
        let stop = depth == 0
            && (matches!(c.peek(), Token::Comma | Token::RParen)
                || c.is_words(&["NOT", "NULL"])
                || c.is_word_at(0, "COMMENT"));
        if stop || c.at_end() {
            return parts.join(" ");
        }
        depth += match c.peek() {
            Token::Lt | Token::LParen => 1,
            Token::Gt | Token::RParen => -1,
            Token::ShiftRight => -2,
            _ => 0,
        };
        parts.push(c.next().to_string());
    }
}

/// `( 'key' = value, ... )` as `(key, value, line)`; keys may also be dotted names and values
/// numbers or TRUE/FALSE, which are kept as their text.
pub(crate) fn table_properties(c: &mut Cursor) -> Result<Vec<(String, String, u64)>> {
    c.expect(&Token::LParen, "TBLPROPERTIES")?;
    let mut out = Vec::new();
    loop {
        let line = c.line();
        let key = match c.peek() {
            Token::SingleQuotedString(_) | Token::DoubleQuotedString(_) => {
                c.string("TBLPROPERTIES")?
            }
            _ => dotted_name(c)?,
        };
        c.expect(&Token::Eq, "TBLPROPERTIES")?;
        let value = match c.next() {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) | Token::Number(s, _) => s,
            Token::Word(w) if w.quote_style.is_none() => w.value,
            _ => {
                return Err(syntax(
                    line,
                    format!("TBLPROPERTIES: `{key}` needs a value"),
                ))
            }
        };
        out.push((key, value, line));
        if c.eat(&Token::RParen) {
            return Ok(out);
        }
        c.expect(&Token::Comma, "TBLPROPERTIES")?;
    }
}

fn dotted_name(c: &mut Cursor) -> Result<String> {
    let mut key = c.name("TBLPROPERTIES")?.text;
    while c.eat(&Token::Period) {
        key.push('.');
        key.push_str(&c.name("TBLPROPERTIES")?.text);
    }
    Ok(key)
}

/// `SELECT <projection> FROM <source> [WHERE <predicate>]`; `context` names what precedes it.
pub(crate) fn query(c: &mut Cursor, context: &str) -> Result<Query> {
    c.expect_words(&["SELECT"], context)?;
    let projection = select_list(c)?;
    c.expect_words(&["FROM"], "SELECT")?;
    let streamed = c.is_word_at(0, "STREAM");
    let from = from(c)?;
    let options = match streamed {
        true => read_options(c)?,
        false => ReadOptions::default(),
    };
    let filter = if c.is_word_at(0, "WHERE") {
        let line = c.line();
        c.next();
        Some(Located {
            value: c.expr("WHERE")?,
            line,
        })
    } else {
        None
    };
    Ok(Query {
        projection,
        from,
        streamed,
        options,
        filter,
    })
}

/// `WITH (readChangeFeed = true, startingVersion = 3, skipChangeCommits = true)` after a
/// stream; nothing when the next word is not `WITH` or is `WITH VERSION` (a snapshot flow's).
pub(crate) fn read_options(c: &mut Cursor) -> Result<ReadOptions> {
    let mut options = ReadOptions::default();
    if !c.is_word_at(0, "WITH") || c.is_word_at(1, "VERSION") {
        return Ok(options);
    }
    options.line = c.line();
    c.next();
    c.expect(&Token::LParen, "STREAM ... WITH")?;
    loop {
        let key = c.name("STREAM ... WITH (option = value)")?;
        c.expect(&Token::Eq, "STREAM ... WITH (option = value)")?;
        let line = key.line;
        match key.text.to_ascii_lowercase().as_str() {
            "readchangefeed" => options.change_feed = boolean(c, "readChangeFeed")?,
            "skipchangecommits" => options.skip_change_commits = boolean(c, "skipChangeCommits")?,
            "startingversion" => {
                let text = match c.next() {
                    Token::Number(n, _) => n,
                    Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => s,
                    other => {
                        return Err(syntax(
                            line,
                            format!("startingVersion: expected a version number, found `{other}`"),
                        ))
                    }
                };
                let version = text.parse::<u64>().map_err(|_| {
                    invalid(
                        line,
                        format!("startingVersion: `{text}` is not a version number"),
                    )
                })?;
                options.starting_version = Some(version);
            }
            _ => {
                let message = format!(
                    "STREAM ... WITH: unknown option `{}` (scdflow reads readChangeFeed, \
                     startingVersion and skipChangeCommits)",
                    key.text
                );
                return Err(invalid(line, message));
            }
        }
        if c.eat(&Token::RParen) {
            return Ok(options);
        }
        c.expect(&Token::Comma, "STREAM ... WITH (...)")?;
    }
}

/// `*` alone gives `None`; otherwise the items, where `*` may appear among expressions.
fn select_list(c: &mut Cursor) -> Result<Option<Vec<SelectItem>>> {
    if c.peek() == &Token::Mul && c.is_word_at(1, "FROM") {
        c.next();
        return Ok(None);
    }
    let mut items = Vec::new();
    loop {
        let line = c.line();
        if c.eat(&Token::Mul) {
            items.push(SelectItem::Wildcard { line });
        } else {
            let expr = Box::new(c.expr("SELECT")?);
            items.push(SelectItem::Expr {
                expr,
                alias: alias(c)?,
                line,
            });
        }
        if !c.eat(&Token::Comma) {
            return Ok(Some(items));
        }
    }
}

/// `AS name`, or a bare name that is not the `FROM` ending the list.
fn alias(c: &mut Cursor) -> Result<Option<Name>> {
    if c.eat_words(&["AS"]) {
        return c.name("SELECT ... AS").map(Some);
    }
    match c.peek() {
        Token::Word(_) if !c.is_word_at(0, "FROM") => c.name("SELECT").map(Some),
        _ => Ok(None),
    }
}

/// `[STREAM] read_files(...)`, `[STREAM] name`, or either inside `STREAM( ... )`.
fn from(c: &mut Cursor) -> Result<From> {
    let streamed = c.eat_words(&["STREAM"]);
    if streamed && c.eat(&Token::LParen) {
        let inner = from_target(c)?;
        c.expect(&Token::RParen, "FROM STREAM")?;
        return Ok(inner);
    }
    from_target(c)
}

fn from_target(c: &mut Cursor) -> Result<From> {
    if c.is_word_at(0, "read_files") {
        return read_files(c).map(From::ReadFiles);
    }
    if c.is_word_at(0, "VALUES") {
        return values(c);
    }
    c.source_name("FROM").map(From::Table)
}

/// `VALUES (e, ...), ... [AS] t(a, ...)`, starting at the `VALUES` word; without an alias the
/// columns are `col1`, `col2`, ... (as in Spark).
fn values(c: &mut Cursor) -> Result<From> {
    let line = c.line();
    c.expect_words(&["VALUES"], "FROM")?;
    let mut rows = Vec::new();
    loop {
        let mut row = Vec::new();
        match c.eat(&Token::LParen) {
            true => loop {
                row.push(c.expr("VALUES")?);
                if c.eat(&Token::RParen) {
                    break;
                }
                c.expect(&Token::Comma, "VALUES (...)")?;
            },
            false => row.push(c.expr("VALUES")?),
        }
        rows.push(row);
        if !c.eat(&Token::Comma) {
            break;
        }
    }
    let width = rows[0].len();
    if let Some((i, row)) = rows.iter().enumerate().find(|(_, r)| r.len() != width) {
        let message = format!(
            "VALUES: row {} has {} values, the first row has {width}",
            i + 1,
            row.len()
        );
        return Err(invalid(line, message));
    }
    let mut columns: Vec<Name> = (1..=width)
        .map(|i| Name {
            text: format!("col{i}"),
            line,
            qualifier: Vec::new(),
        })
        .collect();
    let aliased = c.eat_words(&["AS"]);
    if aliased || (matches!(c.peek(), Token::Word(_)) && !c.is_word_at(0, "WHERE")) {
        c.name("VALUES ... AS")?;
        if c.peek() == &Token::LParen {
            let named = c.column_list("VALUES ... AS t")?;
            if named.len() != width {
                let message = format!(
                    "VALUES: the alias names {} columns, the rows have {width}",
                    named.len()
                );
                return Err(invalid(line, message));
            }
            columns = named;
        }
    }
    Ok(From::Values {
        rows,
        columns,
        line,
    })
}

/// `read_files( 'path' [, option => value ...] )`, starting at the `read_files` word.
pub(crate) fn read_files(c: &mut Cursor) -> Result<ReadFiles> {
    let line = c.line();
    c.expect_words(&["read_files"], "FROM")?;
    c.expect(&Token::LParen, "read_files")?;
    let mut spec = ReadFiles {
        path: c.string("read_files path")?,
        format: None,
        header: None,
        schema: None,
        version: None,
        line,
    };
    while c.eat(&Token::Comma) {
        let option = c.name("read_files option")?;
        c.expect(&Token::RArrow, "read_files option")?;
        let context = format!("read_files {}", option.text);
        let duplicate = match option.text.to_ascii_lowercase().as_str() {
            "format" => spec.format.replace(c.string(&context)?).is_some(),
            "schema" => spec.schema.replace(c.string(&context)?).is_some(),
            "header" => spec.header.replace(boolean(c, &context)?).is_some(),
            "version" => spec.version.replace(c.string(&context)?).is_some(),
            _ => {
                return Err(syntax(
                    option.line,
                    format!(
                    "read_files: unknown option `{}` (supported: format, header, schema, version)",
                    option.text
                ),
                ))
            }
        };
        if duplicate {
            return Err(syntax(
                option.line,
                format!("read_files: option `{}` given twice", option.text),
            ));
        }
    }
    c.expect(&Token::RParen, "read_files")?;
    Ok(spec)
}

/// TRUE / FALSE, bare or quoted.
fn boolean(c: &mut Cursor, context: &str) -> Result<bool> {
    let text = match c.peek().clone() {
        Token::Word(w) if w.quote_style.is_none() => w.value,
        Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => s,
        _ => return Err(c.unexpected(context, "true or false")),
    };
    let value = match text.to_ascii_lowercase().as_str() {
        "true" => true,
        "false" => false,
        _ => return Err(c.unexpected(context, "true or false")),
    };
    c.next();
    Ok(value)
}

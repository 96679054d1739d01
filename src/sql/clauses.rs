//! The clauses of an AUTO CDC flow (`FROM`, `KEYS`, `SEQUENCE BY`, ...), accepted in any order,
//! each at most once, up to the end of the statement. Shared by `CREATE FLOW ... AS AUTO CDC
//! INTO t` and the inline `CREATE STREAMING TABLE t FLOW AUTO CDC` form.

use super::cursor::{invalid, syntax, Cursor, Name};
use super::syntax::{CdcClauses, Located, Selection};
use crate::plan::ScdType;
use crate::Result;
use sqlparser::tokenizer::Token;

const CLAUSES: &str = "FROM, KEYS, IGNORE NULL UPDATES, APPLY AS DELETE WHEN, \
APPLY AS TRUNCATE WHEN, SEQUENCE BY, COLUMNS, STORED AS, TRACK HISTORY ON, COLUMNS TO UPDATE, \
`;` or end of file";

/// Parses clauses until the end of the statement.
pub(crate) fn parse_clauses(c: &mut Cursor, out: &mut CdcClauses) -> Result<()> {
    while !c.at_end() {
        clause(c, out)?;
    }
    Ok(())
}

/// Stores a clause, rejecting a second occurrence.
pub(crate) fn once<T>(slot: &mut Option<T>, value: T, clause: &str, line: u64) -> Result<()> {
    if slot.is_some() {
        return Err(syntax(line, format!("{clause}: clause given twice")));
    }
    *slot = Some(value);
    Ok(())
}

fn located<T>(value: T, line: u64) -> Located<T> {
    Located { value, line }
}

fn clause(c: &mut Cursor, out: &mut CdcClauses) -> Result<()> {
    let line = c.line();
    if c.eat_words(&["FROM"]) {
        let source = source(c)?;
        once(&mut out.source, source, "FROM", line)
    } else if c.eat_words(&["KEYS"]) {
        let keys = c.column_list("KEYS")?;
        once(&mut out.keys, located(keys, line), "KEYS", line)
    } else if c.eat_words(&["IGNORE", "NULL", "UPDATES"]) {
        let selection = if c.eat_words(&["ON"]) {
            selection(c, "IGNORE NULL UPDATES ON")?
        } else {
            Selection::All
        };
        once(
            &mut out.ignore_null_updates,
            located(selection, line),
            "IGNORE NULL UPDATES",
            line,
        )
    } else if c.eat_words(&["APPLY", "AS", "DELETE", "WHEN"]) {
        let e = c.expr("APPLY AS DELETE WHEN")?;
        once(
            &mut out.delete_when,
            located(e, line),
            "APPLY AS DELETE WHEN",
            line,
        )
    } else if c.eat_words(&["APPLY", "AS", "TRUNCATE", "WHEN"]) {
        let e = c.expr("APPLY AS TRUNCATE WHEN")?;
        once(
            &mut out.truncate_when,
            located(e, line),
            "APPLY AS TRUNCATE WHEN",
            line,
        )
    } else if c.eat_words(&["SEQUENCE", "BY"]) {
        let e = c.expr("SEQUENCE BY")?;
        once(&mut out.sequence_by, located(e, line), "SEQUENCE BY", line)
    } else if c.is_words(&["SYSTEM", "SEQUENCE", "BY"]) {
        Err(invalid(
            line,
            "SYSTEM SEQUENCE BY (bitemporal flows) is not supported yet",
        ))
    } else if c.eat_words(&["COLUMNS", "TO", "UPDATE"]) {
        let column = c.column_name("COLUMNS TO UPDATE")?;
        once(
            &mut out.columns_to_update,
            column,
            "COLUMNS TO UPDATE",
            line,
        )
    } else if c.eat_words(&["COLUMNS"]) {
        let selection = selection(c, "COLUMNS")?;
        once(&mut out.columns, located(selection, line), "COLUMNS", line)
    } else if c.eat_words(&["STORED", "AS"]) {
        let scd = stored_as(c)?;
        once(&mut out.stored_as, located(scd, line), "STORED AS", line)
    } else if c.eat_words(&["TRACK", "HISTORY", "ON"]) {
        let selection = selection(c, "TRACK HISTORY ON")?;
        once(
            &mut out.track_history,
            located(selection, line),
            "TRACK HISTORY",
            line,
        )
    } else {
        Err(c.unexpected("AUTO CDC", &format!("one of {CLAUSES}")))
    }
}

/// `STREAM(name)`, `STREAM name` or `name`; `SNAPSHOT` sources are recognised and rejected.
fn source(c: &mut Cursor) -> Result<Name> {
    if c.is_word_at(0, "SNAPSHOT") {
        return Err(invalid(
            c.line(),
            "AUTO CDC FROM SNAPSHOT is not supported yet",
        ));
    }
    if c.eat_words(&["STREAM"]) && c.eat(&Token::LParen) {
        let name = c.table_name("FROM STREAM")?;
        c.expect(&Token::RParen, "FROM STREAM")?;
        return Ok(name);
    }
    c.table_name("FROM")
}

/// `*`, `* EXCEPT (cols)` or `(cols)`.
fn selection(c: &mut Cursor, context: &str) -> Result<Selection> {
    if c.eat(&Token::Mul) {
        if c.eat_words(&["EXCEPT"]) {
            return Ok(Selection::Except(c.column_list(context)?));
        }
        return Ok(Selection::All);
    }
    if c.peek() != &Token::LParen {
        return Err(c.unexpected(context, "`(columns)`, `*` or `* EXCEPT (columns)`"));
    }
    Ok(Selection::Only(c.column_list(context)?))
}

/// `SCD TYPE 1 | SCD TYPE 2`; `BITEMPORAL` is recognised and rejected.
fn stored_as(c: &mut Cursor) -> Result<ScdType> {
    if c.is_word_at(0, "BITEMPORAL") {
        return Err(invalid(
            c.line(),
            "STORED AS BITEMPORAL is not supported yet",
        ));
    }
    c.expect_words(&["SCD", "TYPE"], "STORED AS")?;
    let scd = match c.peek() {
        Token::Number(n, _) if n == "1" => ScdType::Type1,
        Token::Number(n, _) if n == "2" => ScdType::Type2,
        _ => return Err(c.unexpected("STORED AS SCD TYPE", "1 or 2")),
    };
    c.next();
    Ok(scd)
}

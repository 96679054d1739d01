//! The clauses of an AUTO CDC flow (`FROM`, `KEYS`, `SEQUENCE BY`, ...), accepted in any order,
//! each at most once, up to the end of the statement. Shared by `CREATE FLOW ... AS AUTO CDC
//! INTO t` and the inline `CREATE STREAMING TABLE t FLOW AUTO CDC` form, for change-feed and
//! snapshot flows alike: which clauses a kind of flow allows is checked when the flow is
//! resolved, so the message can say why (and does not depend on clause order).

use super::cursor::{syntax, Cursor, Name};
use super::query::{query, read_files, read_options};
use super::syntax::{CdcClauses, From, Located, Query, ReadOptions, Selection};
use crate::plan::ScdType;
use crate::Result;
use sqlparser::tokenizer::Token;

const CLAUSES: &str = "FROM, FROM SNAPSHOT, KEYS, IGNORE NULL UPDATES, APPLY AS DELETE WHEN, \
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
    if c.eat_words(&["FROM", "SNAPSHOT"]) {
        let snapshot = snapshot(c)?;
        no_source_yet(out, line)?;
        out.snapshot = Some(located(snapshot, line));
        Ok(())
    } else if c.eat_words(&["FROM"]) {
        let streamed = c.is_word_at(0, "STREAM");
        let source = source(c)?;
        no_source_yet(out, line)?;
        out.source = Some(source);
        if streamed {
            out.source_options = read_options(c)?;
        }
        Ok(())
    } else if c.eat_words(&["WITH", "VERSION"]) {
        c.expect(&Token::LParen, "WITH VERSION")?;
        let query = c.query("WITH VERSION")?;
        c.expect(&Token::RParen, "WITH VERSION (SELECT ...")?;
        once(&mut out.version, located(query, line), "WITH VERSION", line)
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
    } else if c.eat_words(&["SYSTEM", "SEQUENCE", "BY"]) {
        let e = c.expr("SYSTEM SEQUENCE BY")?;
        once(
            &mut out.system_sequence_by,
            located(e, line),
            "SYSTEM SEQUENCE BY",
            line,
        )
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

/// `FROM` and `FROM SNAPSHOT` exclude each other and may appear once.
fn no_source_yet(out: &CdcClauses, line: u64) -> Result<()> {
    if out.source.is_some() || out.snapshot.is_some() {
        return Err(syntax(line, "FROM: clause given twice"));
    }
    Ok(())
}

/// After `FROM SNAPSHOT`: `(SELECT ...)`, `read_files(...)` or a table name, each as a query.
fn snapshot(c: &mut Cursor) -> Result<Query> {
    if c.eat(&Token::LParen) {
        let q = query(c, "FROM SNAPSHOT (")?;
        c.expect(&Token::RParen, "FROM SNAPSHOT (SELECT ...")?;
        return Ok(q);
    }
    let from = if c.is_word_at(0, "read_files") {
        From::ReadFiles(read_files(c)?)
    } else {
        From::Table(c.source_name("FROM SNAPSHOT")?)
    };
    Ok(Query {
        projection: None,
        from,
        streamed: false,
        options: ReadOptions::default(),
        filter: None,
    })
}

/// `STREAM(name)`, `STREAM name` or `name`.
fn source(c: &mut Cursor) -> Result<Name> {
    if c.eat_words(&["STREAM"]) && c.eat(&Token::LParen) {
        let name = c.source_name("FROM STREAM")?;
        c.expect(&Token::RParen, "FROM STREAM")?;
        return Ok(name);
    }
    c.source_name("FROM")
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

/// `SCD TYPE 1 | SCD TYPE 2 | BITEMPORAL`.
fn stored_as(c: &mut Cursor) -> Result<ScdType> {
    if c.eat_words(&["BITEMPORAL"]) {
        return Ok(ScdType::Bitemporal);
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

//! Query text → [`Query`]: the SQL:2011-style point-in-time read
//!
//! ```text
//! SELECT * FROM table
//!   [FOR SYSTEM_TIME AS OF literal] [FOR BUSINESS_TIME AS OF literal]   -- either, both, any order
//!   [WHERE column = literal [AND column = literal ...]] [;]
//! SELECT * FROM table_changes('table', start [, end]) [WHERE ...] [;]   -- versions, inclusive
//! ```
//!
//! Keywords are case-insensitive; names may be `backquoted`. A literal is a quoted string
//! (`'...'` or `"..."`, optionally prefixed by `TIMESTAMP` or `DATE`), a number (optionally
//! negative) or `TRUE` / `FALSE`; it stays text here and is typed against the column it is
//! compared with when the query is resolved. Tokens come from sqlparser's tokenizer (the
//! pipeline dialect), through the same cursor as pipeline files.

use crate::sql::cursor::{syntax, Cursor};
use crate::{Error, Result};
use sqlparser::tokenizer::Token;

/// A literal as written, before it is typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Literal {
    /// The text: a string's contents, or a number / boolean as written.
    pub text: String,
}

/// A parsed, unresolved query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// The table after `FROM`.
    pub table: String,
    /// `FOR SYSTEM_TIME AS OF`.
    pub system: Option<Literal>,
    /// `FOR BUSINESS_TIME AS OF`.
    pub business: Option<Literal>,
    /// `WHERE column = literal AND ...`, in order.
    pub filters: Vec<(String, Literal)>,
    /// `FROM table_changes('table', start [, end])`: the commit versions whose changes are
    /// read, the end inclusive (the last commit without one).
    pub changes: Option<(u64, Option<u64>)>,
}

/// Parses a query; errors are syntax errors whose message starts with `query: `.
pub fn parse(text: &str) -> Result<Query> {
    parse_query(text).map_err(|e| {
        let message = e
            .message()
            .replace("found end of file", "found end of query");
        Error::new(e.kind(), format!("query: {message}"))
    })
}

fn parse_query(text: &str) -> Result<Query> {
    let mut c = Cursor::new(text)?;
    c.expect_words(&["SELECT"], "query")?;
    if !c.eat(&Token::Mul) {
        return Err(c.unexpected("SELECT", "`*` (only SELECT * is supported)"));
    }
    c.expect_words(&["FROM"], "SELECT *")?;
    let mut query = Query {
        table: String::new(),
        system: None,
        business: None,
        filters: Vec::new(),
        changes: None,
    };
    if c.is_word_at(0, "table_changes") {
        c.next();
        table_changes(&mut c, &mut query)?;
    } else {
        query.table = c.table_name("FROM")?.text;
        while c.is_word_at(0, "FOR") {
            period(&mut c, &mut query)?;
        }
    }
    if c.eat_words(&["WHERE"]) {
        loop {
            let column = c.column_name("WHERE")?.text;
            c.expect(&Token::Eq, "WHERE")?;
            query.filters.push((column, literal(&mut c, "WHERE")?));
            if !c.eat_words(&["AND"]) {
                break;
            }
        }
        return end(&mut c, "WHERE", "`AND` or the end of the query").map(|()| query);
    }
    let expected = match query.changes {
        Some(_) => "`WHERE` or the end of the query",
        None => "`FOR`, `WHERE` or the end of the query",
    };
    end(&mut c, "FROM", expected).map(|()| query)
}

/// `('table', start [, end])` after `table_changes`.
fn table_changes(c: &mut Cursor, query: &mut Query) -> Result<()> {
    const CONTEXT: &str = "table_changes('table', start [, end])";
    c.expect(&Token::LParen, CONTEXT)?;
    query.table = c.string(CONTEXT)?;
    c.expect(&Token::Comma, CONTEXT)?;
    let start = version(c, CONTEXT)?;
    let end = match c.eat(&Token::Comma) {
        true => Some(version(c, CONTEXT)?),
        false => None,
    };
    c.expect(&Token::RParen, CONTEXT)?;
    if end.is_some_and(|end| end < start) {
        return Err(syntax(
            c.line(),
            format!("{CONTEXT}: the end version is before the start"),
        ));
    }
    query.changes = Some((start, end));
    Ok(())
}

/// A commit version: a whole number.
fn version(c: &mut Cursor, context: &str) -> Result<u64> {
    match c.peek().clone() {
        Token::Number(n, _) => match n.parse::<u64>() {
            Ok(v) => {
                c.next();
                Ok(v)
            }
            Err(_) => Err(c.unexpected(context, "a commit version")),
        },
        _ => Err(c.unexpected(context, "a commit version")),
    }
}

/// `FOR SYSTEM_TIME AS OF literal` or `FOR BUSINESS_TIME AS OF literal`.
fn period(c: &mut Cursor, query: &mut Query) -> Result<()> {
    let line = c.line();
    c.next();
    let (clause, slot) = if c.eat_words(&["SYSTEM_TIME"]) {
        ("FOR SYSTEM_TIME AS OF", &mut query.system)
    } else if c.eat_words(&["BUSINESS_TIME"]) {
        ("FOR BUSINESS_TIME AS OF", &mut query.business)
    } else {
        return Err(c.unexpected("FOR", "`SYSTEM_TIME` or `BUSINESS_TIME`"));
    };
    c.expect_words(&["AS", "OF"], clause)?;
    let value = literal(c, clause)?;
    if slot.is_some() {
        return Err(syntax(line, format!("{clause} is given twice")));
    }
    *slot = Some(value);
    Ok(())
}

/// A literal: `'text'`, `"text"`, `TIMESTAMP '...'`, `DATE '...'`, `[-]number`, `TRUE`, `FALSE`.
fn literal(c: &mut Cursor, context: &str) -> Result<Literal> {
    // The type word is decoration: the value is typed by the column it is compared with.
    if c.eat_words(&["TIMESTAMP"]) || c.eat_words(&["DATE"]) {
        return c.string(context).map(|text| Literal { text });
    }
    let negative = c.eat(&Token::Minus);
    let text = match c.peek().clone() {
        Token::Number(n, _) => format!("{}{n}", if negative { "-" } else { "" }),
        Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) if !negative => s,
        Token::Word(w)
            if !negative
                && w.quote_style.is_none()
                && (w.value.eq_ignore_ascii_case("true")
                    || w.value.eq_ignore_ascii_case("false")) =>
        {
            w.value
        }
        _ if negative => return Err(c.unexpected(context, "a number after `-`")),
        _ => return Err(c.unexpected(context, "a literal")),
    };
    c.next();
    Ok(Literal { text })
}

/// An optional `;`, then the end of the text.
fn end(c: &mut Cursor, context: &str, expected: &str) -> Result<()> {
    c.eat(&Token::SemiColon);
    match c.peek() {
        Token::EOF => Ok(()),
        _ => Err(c.unexpected(context, expected)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(text: &str) -> Literal {
        Literal { text: text.into() }
    }

    #[test]
    fn parses_both_clauses_in_any_order_and_filters() {
        let q = parse(
            "select * from LIVE.`company` for business_time as of TIMESTAMP '2025-07-18 12:10:00' \
             FOR SYSTEM_TIME AS OF \"2025-07-18 12:26:00\" WHERE id = 'A' AND n = -5 and ok = TRUE;",
        )
        .unwrap();
        assert_eq!(
            q,
            Query {
                table: "company".into(),
                system: Some(lit("2025-07-18 12:26:00")),
                business: Some(lit("2025-07-18 12:10:00")),
                filters: vec![
                    ("id".into(), lit("A")),
                    ("n".into(), lit("-5")),
                    ("ok".into(), lit("TRUE")),
                ],
                changes: None,
            }
        );
        let plain = parse("SELECT * FROM t").unwrap();
        assert_eq!((plain.system, plain.business), (None, None));
        assert!(plain.filters.is_empty());
    }

    #[test]
    fn parses_table_changes_with_one_or_two_versions() {
        let q = parse("SELECT * FROM table_changes('users', 2, 5) WHERE _change_type = 'insert'")
            .unwrap();
        assert_eq!((q.table.as_str(), q.changes), ("users", Some((2, Some(5)))));
        assert_eq!(q.filters, vec![("_change_type".into(), lit("insert"))]);
        let open = parse("select * from TABLE_CHANGES('t', 0);").unwrap();
        assert_eq!(open.changes, Some((0, None)));
        for (text, why) in [
            (
                "SELECT * FROM table_changes('t', 5, 3)",
                "the end version is before the start",
            ),
            (
                "SELECT * FROM table_changes('t', -1)",
                "expected a commit version",
            ),
            ("SELECT * FROM table_changes('t')", "expected `,`"),
            (
                "SELECT * FROM table_changes('t', 1) FOR SYSTEM_TIME AS OF 1",
                "expected `WHERE` or the end of the query",
            ),
        ] {
            let message = parse(text).unwrap_err().message().to_string();
            assert!(message.contains(why), "{text}: {message}");
        }
    }

    #[test]
    fn errors_name_the_clause_and_the_token() {
        let cases = [
            ("", "query: query: expected `SELECT`, found end of query"),
            (
                "SELECT id FROM t",
                "query: SELECT: expected `*` (only SELECT * is supported), found `id`",
            ),
            ("SELECT * t", "query: SELECT *: expected `FROM`, found `t`"),
            (
                "SELECT * FROM",
                "query: FROM: expected a name, found end of query",
            ),
            (
                "SELECT * FROM t FOR VALID_TIME AS OF 1",
                "query: FOR: expected `SYSTEM_TIME` or `BUSINESS_TIME`, found `VALID_TIME`",
            ),
            (
                "SELECT * FROM t FOR SYSTEM_TIME OF 1",
                "query: FOR SYSTEM_TIME AS OF: expected `AS OF`, found `OF`",
            ),
            (
                "SELECT * FROM t FOR SYSTEM_TIME AS OF x",
                "query: FOR SYSTEM_TIME AS OF: expected a literal, found `x`",
            ),
            (
                "SELECT * FROM t FOR BUSINESS_TIME AS OF - 'a'",
                "query: FOR BUSINESS_TIME AS OF: expected a number after `-`, found `'a'`",
            ),
            (
                "SELECT * FROM t FOR SYSTEM_TIME AS OF 1 FOR SYSTEM_TIME AS OF 2",
                "query: FOR SYSTEM_TIME AS OF is given twice",
            ),
            (
                "SELECT * FROM t WHERE id = 1 OR id = 2",
                "query: WHERE: expected `AND` or the end of the query, found `OR`",
            ),
            (
                "SELECT * FROM t WHERE id < 1",
                "query: WHERE: expected `=`, found `<`",
            ),
            (
                "SELECT * FROM t ORDER BY id",
                "query: FROM: expected `FOR`, `WHERE` or the end of the query, found `ORDER`",
            ),
            (
                "SELECT * FROM t WHERE id = 'unterminated",
                "query: Unterminated string literal",
            ),
        ];
        for (text, message) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.to_string(), message, "{text}");
            assert_eq!(e.kind(), crate::ErrorKind::Syntax, "{text}");
        }
    }
}

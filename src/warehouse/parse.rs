//! The text of `scdflow sql` → statements: sqlparser's (Databricks dialect), plus the
//! Databricks statements it does not read as Databricks means them — `SHOW TBLPROPERTIES t
//! [(key)]` (sqlparser takes it for a `SHOW` of a variable and drops the name's dots) and
//! `REPAIR TABLE t ...` (unknown to it). Ours are recognised by their leading words at the
//! start of a statement and parsed on sqlparser's tokens, so statement boundaries and line
//! numbers stay sqlparser's.
//!
//! `MERGE`'s `THEN UPDATE SET *` and `THEN INSERT *` (Databricks's "every column from the
//! source"), which sqlparser does not read, become `UPDATE SET `*` = `*`` and
//! `INSERT (`*`) VALUES (`*`)` on the tokens, at the star's place: the column named [`STAR`]
//! stands for every column (`super::merge`).

use crate::{Error, ErrorKind, Result};
use sqlparser::ast::{ObjectName, Spanned, Statement};
use sqlparser::dialect::DatabricksDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// One statement of the text, with its first line.
pub(crate) struct Parsed {
    pub(crate) statement: Stmt,
    pub(crate) line: u64,
}

/// What a statement is.
pub(crate) enum Stmt {
    /// A statement sqlparser parsed.
    Sql(Box<Statement>),
    /// `SHOW TBLPROPERTIES table [(key)]`.
    ShowProperties {
        table: ObjectName,
        key: Option<String>,
    },
    /// `REPAIR TABLE table <rest>`: `rest` as written (`SYNC METADATA`, `SYNC PARTITIONS`, ...).
    Repair { table: ObjectName, rest: String },
}

/// Parses every statement of `text`, or fails at the first syntax error (nothing runs then).
pub(crate) fn parse(text: &str) -> Result<Vec<Parsed>> {
    let dialect = DatabricksDialect {};
    let tokens = Tokenizer::new(&dialect, text)
        .tokenize_with_location()
        .map_err(|e| syntax_error(ParserError::TokenizerError(e.to_string())))?;
    let mut parser = Parser::new(&dialect).with_tokens_with_locations(merge_stars(tokens));
    let mut statements = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        let next = parser.peek_token();
        if next.token == Token::EOF {
            return Ok(statements);
        }
        let line = next.span.start.line;
        let statement = if words_ahead(&parser, &["SHOW", "TBLPROPERTIES"]) {
            show_properties(&mut parser)?
        } else if words_ahead(&parser, &["REPAIR", "TABLE"]) {
            repair(&mut parser)?
        } else {
            let statement = parser.parse_statement().map_err(syntax_error)?;
            let line = match statement.span().start.line {
                0 => line,
                first => first,
            };
            statements.push(Parsed {
                statement: Stmt::Sql(Box::new(statement)),
                line,
            });
            end_of_statement(&mut parser)?;
            continue;
        };
        statements.push(Parsed { statement, line });
        end_of_statement(&mut parser)?;
    }
}

fn show_properties(parser: &mut Parser) -> Result<Stmt> {
    skip(parser, 2);
    let table = parser.parse_object_name(false).map_err(syntax_error)?;
    let key = match parser.consume_token(&Token::LParen) {
        false => None,
        true => {
            let key = match parser.peek_token().token {
                Token::SingleQuotedString(_) | Token::DoubleQuotedString(_) => {
                    parser.parse_literal_string().map_err(syntax_error)?
                }
                _ => parser
                    .parse_object_name(false)
                    .map_err(syntax_error)?
                    .to_string(),
            };
            parser.expect_token(&Token::RParen).map_err(syntax_error)?;
            Some(key)
        }
    };
    Ok(Stmt::ShowProperties { table, key })
}

fn repair(parser: &mut Parser) -> Result<Stmt> {
    skip(parser, 2);
    let table = parser.parse_object_name(false).map_err(syntax_error)?;
    let mut rest = Vec::new();
    while !matches!(parser.peek_token().token, Token::SemiColon | Token::EOF) {
        rest.push(parser.next_token().token.to_string());
    }
    Ok(Stmt::Repair {
        table,
        rest: rest.join(" "),
    })
}

/// The column name that stands for every column in `MERGE`'s `UPDATE SET *` and `INSERT *`.
pub(crate) const STAR: &str = "*";

/// `THEN UPDATE SET *` → `THEN UPDATE SET `*` = `*``, `THEN INSERT *` → `THEN INSERT (`*`)
/// VALUES (`*`)` (see the module docs).
fn merge_stars(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let word = |t: &TokenWithSpan, word: &str| matches!(&t.token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    for token in tokens {
        if token.token != Token::Mul {
            out.push(token);
            continue;
        }
        let before: Vec<&TokenWithSpan> = (out.iter().rev())
            .filter(|t| !matches!(t.token, Token::Whitespace(_)))
            .take(3)
            .collect();
        let star = || Token::make_word(STAR, Some('`'));
        let replaced = match before.as_slice() {
            [set, update, then, ..]
                if word(set, "SET") && word(update, "UPDATE") && word(then, "THEN") =>
            {
                vec![star(), Token::Eq, star()]
            }
            [insert, then, ..] if word(insert, "INSERT") && word(then, "THEN") => vec![
                Token::LParen,
                star(),
                Token::RParen,
                Token::make_keyword("VALUES"),
                Token::LParen,
                star(),
                Token::RParen,
            ],
            _ => vec![token.token.clone()],
        };
        let span = token.span;
        out.extend(replaced.into_iter().map(|t| TokenWithSpan::new(t, span)));
    }
    out
}

/// Whether the next tokens are the words `words` (case-insensitive).
fn words_ahead(parser: &Parser, words: &[&str]) -> bool {
    words.iter().enumerate().all(|(i, word)| {
        matches!(parser.peek_nth_token(i).token, Token::Word(w) if w.value.eq_ignore_ascii_case(word))
    })
}

fn skip(parser: &mut Parser, tokens: usize) {
    for _ in 0..tokens {
        parser.next_token();
    }
}

/// A statement ends at a `;` or at the end of the text.
fn end_of_statement(parser: &mut Parser) -> Result<()> {
    let next = parser.peek_token();
    match next.token {
        Token::SemiColon | Token::EOF => Ok(()),
        found => {
            let message = format!("Expected: end of statement, found: {found}");
            Err(Error::new(ErrorKind::Syntax, message).at_line(next.span.start.line))
        }
    }
}

/// A parser error as ours, at the line its message names.
pub(crate) fn syntax_error(e: ParserError) -> Error {
    let message = e.to_string();
    let line = message
        .rsplit_once("Line: ")
        .and_then(|(_, rest)| rest.split(',').next()?.trim().parse::<u64>().ok());
    let error = Error::new(ErrorKind::Syntax, message);
    match line {
        Some(line) => error.at_line(line),
        None => error,
    }
}

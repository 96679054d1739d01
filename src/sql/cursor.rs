//! A token cursor over a whole pipeline file: sqlparser's `Parser` (which skips whitespace and
//! comments and parses embedded expressions) plus the word-level helpers our statement grammar
//! needs, with every error located at the line of the token it is about.
//!
//! Our clause words (STREAMING, FLOW, CDC, KEYS, ...) are not all sqlparser keywords, so words
//! are matched by their text, case-insensitively, and only when unquoted: a backquoted
//! `keys` is a name, never a keyword.

use crate::expr::depth::{is_operator, MAX_EXPR_OPERATORS};
use crate::{Error, ErrorKind, Result};
use sqlparser::ast;
use sqlparser::dialect::DatabricksDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// Double quotes delimit strings in Databricks SQL (the seeds write `operation = "DELETE"`).
static DIALECT: DatabricksDialect = DatabricksDialect;

/// A name as written, with the line it is on.
#[derive(Clone, Debug)]
pub(crate) struct Name {
    pub(crate) text: String,
    pub(crate) line: u64,
    /// The catalog and schema written before a table's name (`main.cdc_tutorial.` of
    /// `main.cdc_tutorial.users_cdf`): a table of the warehouse, not of the pipeline.
    pub(crate) qualifier: Vec<String>,
}

pub(crate) struct Cursor {
    parser: Parser<'static>,
    /// Line of the last consumed token, for errors at end of input (EOF has no position).
    last_line: u64,
    /// Per token index: the operators ([`is_operator`]) from it to the end of its statement.
    operators_ahead: Vec<u32>,
}

/// A syntax error at `line`.
pub(crate) fn syntax(line: u64, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Syntax, message).at_line(line)
}

/// A validation error at `line`.
pub(crate) fn invalid(line: u64, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Validation, message).at_line(line)
}

/// Prefixes an error from a lower layer (expression compiler, ...) with the clause it is in,
/// keeping its line or else using `line`.
pub(crate) fn in_clause(clause: &str, error: Error, line: u64) -> Error {
    let located = Error::new(error.kind(), format!("{clause}: {}", error.message()));
    located.at_line(error.location().line.unwrap_or(line))
}

impl Cursor {
    /// Tokenizes `text` (with positions, so errors carry lines).
    pub(crate) fn new(text: &str) -> Result<Self> {
        let tokens = Tokenizer::new(&DIALECT, text)
            .tokenize_with_location()
            .map_err(|e| syntax(e.location.line, e.message))?;
        let mut operators_ahead = vec![0u32; tokens.len() + 1];
        for (i, t) in tokens.iter().enumerate().rev() {
            operators_ahead[i] = match t.token {
                Token::SemiColon => 0,
                ref token => operators_ahead[i + 1].saturating_add(u32::from(is_operator(token))),
            };
        }
        Ok(Cursor {
            parser: Parser::new(&DIALECT).with_tokens_with_locations(tokens),
            last_line: 1,
            operators_ahead,
        })
    }

    fn peek_nth(&self, n: usize) -> &TokenWithSpan {
        self.parser.peek_nth_token_ref(n)
    }

    /// The next token (not consumed).
    pub(crate) fn peek(&self) -> &Token {
        &self.peek_nth(0).token
    }

    /// Line of the next token (or of the last one, at end of input).
    pub(crate) fn line(&self) -> u64 {
        match self.peek_nth(0).span.start.line {
            0 => self.last_line,
            line => line,
        }
    }

    /// Consumes and returns the next token.
    pub(crate) fn next(&mut self) -> Token {
        let t = self.parser.next_token();
        if t.span.start.line > 0 {
            self.last_line = t.span.start.line;
        }
        t.token
    }

    /// Whether the statement ends here (`;` or end of input).
    pub(crate) fn at_end(&self) -> bool {
        matches!(self.peek(), Token::SemiColon | Token::EOF)
    }

    /// Whether the `n`-th next token is the unquoted word `word`.
    pub(crate) fn is_word_at(&self, n: usize, word: &str) -> bool {
        matches!(&self.peek_nth(n).token, Token::Word(w)
            if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
    }

    /// Whether the next tokens are exactly `words`.
    pub(crate) fn is_words(&self, words: &[&str]) -> bool {
        words.iter().enumerate().all(|(i, w)| self.is_word_at(i, w))
    }

    /// Consumes `words` if the next tokens are exactly them.
    pub(crate) fn eat_words(&mut self, words: &[&str]) -> bool {
        let hit = self.is_words(words);
        if hit {
            words.iter().for_each(|_| {
                self.next();
            });
        }
        hit
    }

    /// Consumes `words` or fails with "`context`: expected ...".
    pub(crate) fn expect_words(&mut self, words: &[&str], context: &str) -> Result<()> {
        if self.eat_words(words) {
            Ok(())
        } else {
            Err(self.unexpected(context, &format!("`{}`", words.join(" "))))
        }
    }

    /// Consumes `token` if it is next.
    pub(crate) fn eat(&mut self, token: &Token) -> bool {
        let hit = self.peek() == token;
        if hit {
            self.next();
        }
        hit
    }

    /// Consumes `token` or fails.
    pub(crate) fn expect(&mut self, token: &Token, context: &str) -> Result<()> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.unexpected(context, &format!("`{token}`")))
        }
    }

    /// "`context`: expected `what`, found `...`" at the next token.
    pub(crate) fn unexpected(&self, context: &str, what: &str) -> Error {
        let found = match self.peek() {
            Token::EOF => "end of file".to_string(),
            t => format!("`{t}`"),
        };
        syntax(
            self.line(),
            format!("{context}: expected {what}, found {found}"),
        )
    }

    /// A name: a bare word or a `backquoted` one.
    pub(crate) fn name(&mut self, context: &str) -> Result<Name> {
        let line = self.line();
        match self.peek().clone() {
            Token::Word(w) if w.quote_style.is_none() || w.quote_style == Some('`') => {
                self.next();
                Ok(Name {
                    text: w.value,
                    line,
                    qualifier: Vec::new(),
                })
            }
            _ => Err(self.unexpected(context, "a name")),
        }
    }

    /// The name of a table the pipeline declares: `name`, or qualified, to be published in
    /// a warehouse ([`super::declared_names`]); the legacy `LIVE.` schema prefix is accepted
    /// and dropped.
    pub(crate) fn table_name(&mut self, context: &str) -> Result<Name> {
        self.source_name(context)
    }

    /// The name of a table read from: `name`, `schema.name` or `catalog.schema.name` (a
    /// warehouse table), or `LIVE.name` (the pipeline's own table, the legacy prefix dropped).
    pub(crate) fn source_name(&mut self, context: &str) -> Result<Name> {
        let mut parts = vec![self.name(context)?];
        while self.peek() == &Token::Period && parts.len() < 3 {
            self.next();
            parts.push(self.name(context)?);
        }
        if self.peek() == &Token::Period {
            let message =
                format!("{context}: a table name has at most three parts (catalog.schema.table)");
            return Err(syntax(parts[0].line, message));
        }
        let mut last = parts.pop().expect("one part at least");
        if let [live] = parts.as_slice() {
            if live.text.eq_ignore_ascii_case("live") {
                return Ok(last);
            }
        }
        last.qualifier = parts.into_iter().map(|p| p.text).collect();
        Ok(last)
    }

    /// A column name that must not be qualified (E-K1).
    pub(crate) fn column_name(&mut self, context: &str) -> Result<Name> {
        let name = self.name(context)?;
        if self.peek() == &Token::Period {
            return Err(syntax(
                name.line,
                format!(
                    "{context}: `{}.…` must be an unqualified column name",
                    name.text
                ),
            ));
        }
        Ok(name)
    }

    /// `( name [, ...] )`, possibly empty (callers decide whether that is allowed).
    pub(crate) fn column_list(&mut self, context: &str) -> Result<Vec<Name>> {
        self.expect(&Token::LParen, context)?;
        let mut names = Vec::new();
        if self.eat(&Token::RParen) {
            return Ok(names);
        }
        loop {
            names.push(self.column_name(context)?);
            if self.eat(&Token::RParen) {
                return Ok(names);
            }
            if !self.eat(&Token::Comma) {
                return Err(self.unexpected(context, "`,` or `)`"));
            }
        }
    }

    /// A quoted string ('...' or "...").
    pub(crate) fn string(&mut self, context: &str) -> Result<String> {
        match self.peek().clone() {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => {
                self.next();
                Ok(s)
            }
            _ => Err(self.unexpected(context, "a quoted string")),
        }
    }

    /// An embedded SQL expression, parsed by sqlparser.
    pub(crate) fn expr(&mut self, context: &str) -> Result<ast::Expr> {
        self.embedded(context, "an expression", Parser::parse_expr)
    }

    /// An embedded SQL query (`SELECT ...`, `WITH ... SELECT ...`), parsed by sqlparser.
    pub(crate) fn query(&mut self, context: &str) -> Result<ast::Query> {
        self.embedded(context, "a query", |p| p.parse_query().map(|q| *q))
    }

    fn embedded<T>(
        &mut self,
        context: &str,
        what: &str,
        parse: impl FnOnce(&mut Parser<'static>) -> std::result::Result<T, ParserError>,
    ) -> Result<T> {
        if self.at_end() {
            return Err(self.unexpected(context, what));
        }
        let fallback = self.line();
        let ahead = self.operators_ahead[self.parser.index().min(self.operators_ahead.len() - 1)];
        if ahead > MAX_EXPR_OPERATORS {
            return Err(invalid(
                fallback,
                format!(
                    "{context}: the expression is too long: {ahead} operators (chained or \
                     nested) before the end of the statement, where at most \
                     {MAX_EXPR_OPERATORS} are allowed; split it"
                ),
            ));
        }
        let parsed = parse(&mut self.parser).map_err(|e| parser_error(e, context, fallback))?;
        // Keep `last_line` right for errors at the end of input.
        self.last_line = self
            .last_line
            .max(self.parser.get_current_token().span.end.line);
        Ok(parsed)
    }
}

/// sqlparser puts the position at the end of its messages ("... at Line: 3, Column: 7"); move
/// it into the error's location so the CLI prints `file:3: ...` like every other error.
fn parser_error(e: ParserError, context: &str, fallback: u64) -> Error {
    let message = match e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m,
        ParserError::RecursionLimitExceeded => "expression nested too deeply".to_string(),
    };
    // sqlparser names its token types ("No infix parser for token ShiftLeft"): say what it means.
    let message = match message.strip_prefix("No infix parser for token ") {
        Some(_) => "an operator that scdflow's SQL does not support".to_string(),
        None => message,
    };
    let (text, line) = match message.rfind(" at Line: ") {
        Some(at) => {
            let digits: String = message[at + 10..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            (
                message[..at].to_string(),
                digits.parse().unwrap_or(fallback),
            )
        }
        None => (message, fallback),
    };
    syntax(line, format!("{context}: {text}"))
}

//! How deep an expression can be before it exists: every level of an expression tree takes at
//! least one operator token, so counting those bounds the depth of what a parser will build.
//! Both SQL front ends (pipelines, `scdflow sql`) refuse text past the bound, because
//! compiling, evaluating, printing and dropping a tree recurse once per level.

use sqlparser::tokenizer::Token;

/// The most operators an expression may have, counted before it is parsed: from its start to
/// the end of its statement (pipelines), or between two commas (`scdflow sql`). Parsing, compiling, evaluating, printing and dropping an
/// expression recurse once per level of its tree, and a flat chain (`a + a + ...`, thousands of
/// `AND`s) is as deep as it is long: 4,000 terms overflowed the stack. Every level takes at
/// least one operator token, so this bounds the depth, before any tree exists; 256 is far
/// beyond hand-written SQL and fits a 2 MiB thread stack with room to spare.
pub const MAX_EXPR_OPERATORS: u32 = 256;

/// Tokens that can open a level of an expression tree: punctuation but commas and closing
/// parentheses, and the keywords of operators.
pub fn is_operator(token: &Token) -> bool {
    use sqlparser::keywords::Keyword;
    match token {
        Token::Word(w) => matches!(
            w.keyword,
            Keyword::AND
                | Keyword::OR
                | Keyword::NOT
                | Keyword::IS
                | Keyword::IN
                | Keyword::LIKE
                | Keyword::ILIKE
                | Keyword::RLIKE
                | Keyword::BETWEEN
                | Keyword::CASE
                | Keyword::WHEN
                | Keyword::CAST
        ),
        Token::Comma | Token::RParen | Token::Whitespace(_) | Token::EOF => false,
        Token::Number(..)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::Char(_) => false,
        _ => true,
    }
}

//! The `INSERT` flows: `CREATE FLOW f AS INSERT [ONCE] INTO t BY NAME REPLACE USING (k, ...)
//! SEQUENCE BY s SELECT ...` and the inline `CREATE STREAMING TABLE t FLOW REPLACE USING (k, ...)
//! SEQUENCE BY s BY NAME SELECT ...` (SPEC 2.6). `BY NAME` may stand before `REPLACE USING` or
//! before the query in either form, and is required. Append flows (`INSERT [ONCE] INTO t BY
//! NAME SELECT ...`) are read here and folded into their tables ([`super::append_flows`]);
//! `REPLACE WHERE` is recognised and rejected as not supported yet.

use super::cursor::{invalid, Cursor, Name};
use super::query::query;
use super::syntax::{Append, FlowBody, Located, ReplaceUsing, ReplaceWhere};
use crate::Result;
use sqlparser::tokenizer::Token;

/// After `CREATE FLOW f AS`: `INSERT [ONCE] INTO [ONCE] target ...` (Spark's grammar puts
/// `ONCE` after `INTO`; both places are read); returns the target and the flow.
pub(crate) fn insert_flow(c: &mut Cursor) -> Result<(Name, FlowBody)> {
    let line = c.line();
    c.expect_words(&["INSERT"], "CREATE FLOW ... AS")?;
    let once = c.eat_words(&["ONCE"]);
    c.expect_words(&["INTO"], "INSERT")?;
    let once = c.eat_words(&["ONCE"]) || once;
    let target = c.table_name("INSERT INTO")?;
    let by_name = by_name(c)?;
    if c.is_words(&["REPLACE", "WHERE"]) {
        let replace = replace_where(c, once, by_name)?;
        return Ok((target, FlowBody::ReplaceWhere(Box::new(replace))));
    }
    if c.is_word_at(0, "SELECT") {
        if by_name.is_none() {
            let message = "INSERT INTO: an append flow matches columns BY NAME; write INSERT INTO t BY NAME SELECT ...";
            return Err(invalid(line, message));
        }
        let query = query(c, "INSERT INTO ... BY NAME")?;
        return Ok((target, FlowBody::Append(Box::new(Append { once, query }))));
    }
    if !c.is_words(&["REPLACE", "USING"]) {
        let expected = "`BY NAME`, `REPLACE USING`, `REPLACE WHERE` or `SELECT`";
        return Err(c.unexpected("INSERT INTO", expected));
    }
    let replace = replace_using(c, once, by_name)?;
    Ok((target, FlowBody::Replace(Box::new(replace))))
}

/// `REPLACE USING (k, ...) SEQUENCE BY s [BY NAME] SELECT ...`; `by_name` is the line of a
/// `BY NAME` written before it.
pub(crate) fn replace_using(
    c: &mut Cursor,
    once: bool,
    by_name_before: Option<u64>,
) -> Result<ReplaceUsing> {
    let line = c.line();
    c.expect_words(&["REPLACE", "USING"], "INSERT INTO")?;
    let keys = Located {
        value: c.column_list("REPLACE USING")?,
        line,
    };
    let sequence_line = c.line();
    c.expect_words(&["SEQUENCE", "BY"], "REPLACE USING (...)")?;
    let sequence = Located {
        value: c.expr("SEQUENCE BY")?,
        line: sequence_line,
    };
    if c.peek() == &Token::Comma {
        let message = "SEQUENCE BY: REPLACE USING takes exactly one sequence column";
        return Err(invalid(c.line(), message));
    }
    let by_name_after = by_name(c)?;
    if by_name_before.is_none() && by_name_after.is_none() {
        return Err(invalid(line, "REPLACE USING: BY NAME is required"));
    }
    let query = query(c, "REPLACE USING ... SEQUENCE BY col BY NAME")?;
    Ok(ReplaceUsing {
        once,
        keys,
        sequence,
        query,
    })
}

/// `REPLACE WHERE condition [BY NAME] SELECT ...`; `by_name` is the line of a `BY NAME`
/// written before it.
pub(crate) fn replace_where(
    c: &mut Cursor,
    once: bool,
    by_name_before: Option<u64>,
) -> Result<ReplaceWhere> {
    let line = c.line();
    c.expect_words(&["REPLACE", "WHERE"], "INSERT INTO")?;
    let condition = Located {
        value: c.expr("REPLACE WHERE")?,
        line,
    };
    let by_name_after = by_name(c)?;
    if by_name_before.is_none() && by_name_after.is_none() {
        return Err(invalid(line, "REPLACE WHERE: BY NAME is required"));
    }
    let query = query(c, "REPLACE WHERE condition BY NAME")?;
    Ok(ReplaceWhere {
        once,
        view: false,
        condition,
        query,
    })
}

/// An optional `BY NAME`, as its line.
fn by_name(c: &mut Cursor) -> Result<Option<u64>> {
    let line = c.line();
    if !c.eat_words(&["BY"]) {
        return Ok(None);
    }
    c.expect_words(&["NAME"], "BY")?;
    Ok(Some(line))
}

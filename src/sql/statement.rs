//! Statement grammar: the file is a `;`-separated list of
//! `CREATE [OR REFRESH] STREAMING TABLE ...`, `CREATE [OR REFRESH] MATERIALIZED VIEW ... AS
//! SELECT ...`, `CREATE [TEMPORARY] VIEW ... AS SELECT ...`, `CREATE FLOW ... AS AUTO CDC INTO
//! ...` and `CREATE FLOW ... AS INSERT INTO ...` (REPLACE USING and REPLACE WHERE, in
//! `insert`).
//! Syntax we recognise but do not implement yet is rejected here with a validation error
//! saying so, rather than a confusing syntax error further on.

use super::clauses::parse_clauses;
use super::cursor::{invalid, Cursor};
use super::insert::{insert_flow, replace_using, replace_where};
use super::query::{column_decls, query, table_properties};
use super::syntax::{
    CdcClauses, FlowBody, FlowStmt, Located, ReplaceWhere, Statement, TableKind, TableStmt,
};
use crate::Result;
use sqlparser::tokenizer::Token;

/// Parses every statement of `text`.
pub(crate) fn parse_statements(text: &str) -> Result<Vec<Statement>> {
    let mut c = Cursor::new(text)?;
    let mut out = Vec::new();
    loop {
        while c.eat(&Token::SemiColon) {}
        if c.peek() == &Token::EOF {
            return Ok(out);
        }
        out.push(statement(&mut c)?);
        if !c.at_end() {
            return Err(c.unexpected("end of statement", "`;`"));
        }
    }
}

fn statement(c: &mut Cursor) -> Result<Statement> {
    let line = c.line();
    if c.is_word_at(0, "INSERT") {
        let message = "INSERT: declare a flow with CREATE FLOW name AS INSERT INTO ..., or inline with CREATE STREAMING TABLE t FLOW REPLACE USING | REPLACE WHERE ...";
        return Err(invalid(line, message));
    }
    c.expect_words(&["CREATE"], "statement")?;
    let _ = c.eat_words(&["OR", "REFRESH"]) || c.eat_words(&["OR", "REPLACE"]);
    if c.eat_words(&["STREAMING", "TABLE"]) || c.eat_words(&["STREAMING", "LIVE", "TABLE"]) {
        Ok(Statement::Table(Box::new(table(c, line)?)))
    } else if c.eat_words(&["FLOW"]) {
        Ok(Statement::Flow(Box::new(flow(c, line)?)))
    } else if c.eat_words(&["MATERIALIZED", "VIEW"]) || c.eat_words(&["LIVE", "TABLE"]) {
        Ok(Statement::Table(Box::new(materialized_view(c, line)?)))
    } else {
        let temporary = c.eat_words(&["TEMPORARY"]);
        c.eat_words(&["LIVE"]);
        if c.eat_words(&["VIEW"]) {
            return Ok(Statement::Table(Box::new(view(c, line, temporary)?)));
        }
        Err(c.unexpected("CREATE", "`STREAMING TABLE`, `FLOW` or `[TEMPORARY] VIEW`"))
    }
}

/// `[TEMPORARY] VIEW v [(CONSTRAINT ...)] [COMMENT '...'] AS SELECT ...`, after `VIEW`: a
/// query the pipeline's flows read, with expectations as a streaming table's.
fn view(c: &mut Cursor, line: u64, temporary: bool) -> Result<TableStmt> {
    let name = c.table_name("CREATE VIEW")?;
    let (columns, constraints) = match c.peek() {
        Token::LParen => column_decls(c)?,
        _ => (None, Vec::new()),
    };
    if columns.is_some() {
        let message = "CREATE VIEW: a view's column list is not supported; name the columns in \
                       its query (expr AS name)";
        return Err(invalid(line, message));
    }
    if c.eat_words(&["COMMENT"]) {
        c.string("COMMENT")?;
    }
    if c.is_word_at(0, "TBLPROPERTIES") {
        return Err(invalid(
            c.line(),
            "CREATE VIEW: a view has no TBLPROPERTIES",
        ));
    }
    c.expect_words(&["AS"], "CREATE VIEW")?;
    let query = query(c, "AS")?;
    Ok(TableStmt {
        line,
        kind: TableKind::View { temporary },
        constraints,
        ..TableStmt::implicit(name, query)
    })
}

/// `MATERIALIZED VIEW v [(columns, CONSTRAINT ...)] [COMMENT '...'] [TBLPROPERTIES (...)] AS
/// SELECT ...` (and the older `LIVE TABLE`), after `VIEW`: a published table whose implicit
/// flow replaces all of its rows by the query's at each update (a REPLACE WHERE flow whose
/// condition holds for every row).
fn materialized_view(c: &mut Cursor, line: u64) -> Result<TableStmt> {
    let mut stmt = table_head(c, line, "CREATE MATERIALIZED VIEW")?;
    let as_line = c.line();
    c.expect_words(&["AS"], "CREATE MATERIALIZED VIEW")?;
    let query = query(c, "AS")?;
    let condition = Located {
        value: sqlparser::ast::Expr::value(sqlparser::ast::Value::Boolean(true)),
        line: as_line,
    };
    stmt.flow = Some(FlowBody::ReplaceWhere(Box::new(ReplaceWhere {
        once: false,
        view: true,
        condition,
        query,
    })));
    Ok(stmt)
}

fn table(c: &mut Cursor, line: u64) -> Result<TableStmt> {
    let mut stmt = table_head(c, line, "CREATE STREAMING TABLE")?;
    if c.eat_words(&["AS"]) {
        stmt.query = Some(query(c, "AS")?);
    } else if c.eat_words(&["FLOW"]) {
        if c.is_words(&["REPLACE", "USING"]) {
            let replace = replace_using(c, false, None)?;
            stmt.flow = Some(FlowBody::Replace(Box::new(replace)));
            return Ok(stmt);
        }
        if c.is_words(&["REPLACE", "WHERE"]) {
            let replace = replace_where(c, false, None)?;
            stmt.flow = Some(FlowBody::ReplaceWhere(Box::new(replace)));
            return Ok(stmt);
        }
        auto_cdc(c, "FLOW")?;
        let mut clauses = CdcClauses {
            once: c.eat_words(&["ONCE"]),
            ..CdcClauses::default()
        };
        parse_clauses(c, &mut clauses)?;
        stmt.flow = Some(FlowBody::AutoCdc(Box::new(clauses)));
    }
    Ok(stmt)
}

/// A table's name, columns and constraints, `COMMENT` and `TBLPROPERTIES`, up to its `AS` or
/// `FLOW`.
fn table_head(c: &mut Cursor, line: u64, context: &str) -> Result<TableStmt> {
    let name = c.table_name(context)?;
    let (columns, constraints) = match c.peek() {
        Token::LParen => column_decls(c)?,
        _ => (None, Vec::new()),
    };
    let mut properties = Vec::new();
    loop {
        if c.eat_words(&["COMMENT"]) {
            c.string("COMMENT")?;
        } else if c.eat_words(&["TBLPROPERTIES"]) {
            properties.extend(table_properties(c)?);
        } else {
            break;
        }
    }
    Ok(TableStmt {
        name,
        line,
        kind: TableKind::StreamingTable,
        columns,
        constraints,
        properties,
        query: None,
        once: false,
        append_flow: None,
        appended: Vec::new(),
        flow: None,
    })
}

/// `AUTO CDC` or its legacy spelling `APPLY CHANGES`.
fn auto_cdc(c: &mut Cursor, context: &str) -> Result<()> {
    if c.eat_words(&["AUTO", "CDC"]) || c.eat_words(&["APPLY", "CHANGES"]) {
        Ok(())
    } else {
        Err(c.unexpected(context, "`AUTO CDC`"))
    }
}

fn flow(c: &mut Cursor, line: u64) -> Result<FlowStmt> {
    let name = c.name("CREATE FLOW")?;
    if c.eat_words(&["COMMENT"]) {
        c.string("COMMENT")?;
    }
    c.expect_words(&["AS"], "CREATE FLOW")?;
    if c.is_word_at(0, "INSERT") {
        let (target, body) = insert_flow(c)?;
        return Ok(FlowStmt {
            name,
            line,
            target,
            body,
        });
    }
    auto_cdc(c, "CREATE FLOW ... AS")?;
    let once = c.eat_words(&["ONCE"]);
    c.expect_words(&["INTO"], "AUTO CDC")?;
    let target = c.table_name("AUTO CDC INTO")?;
    let mut clauses = CdcClauses {
        once,
        ..CdcClauses::default()
    };
    parse_clauses(c, &mut clauses)?;
    Ok(FlowStmt {
        name,
        line,
        target,
        body: FlowBody::AutoCdc(Box::new(clauses)),
    })
}

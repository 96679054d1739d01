//! Lowering: an [`AutoCdcFlow`]'s options as the SQL front end's statements (`sql::syntax`), a
//! source table, the target and one `CREATE FLOW ... AS AUTO CDC`, validated by the functions
//! that validate a pipeline file.

use super::builder::{AutoCdcFlow, Sequence};
use super::built::BuiltFlow;
use crate::plan::{Format, SourceInput, SourceTable};
use crate::sql::catalog::Catalog;
use crate::sql::clauses::once;
use crate::sql::cursor::{Cursor, Name};
use crate::sql::syntax::{
    CdcClauses, FlowBody, FlowStmt, From, Located, Query, ReadFiles, ReadOptions, Selection,
    Statement, TableKind, TableStmt,
};
use crate::sql::targets::build_targets;
use crate::value::Schema;
use crate::{Error, ErrorKind, Result};
use sqlparser::ast;
use sqlparser::tokenizer::Token;
use std::path::{Path, PathBuf};

/// The line of every synthesised statement and clause; `build` drops it (there is no file).
const NO_LINE: u64 = 0;

impl AutoCdcFlow {
    /// The SQL front end's view of this flow: a source table, the target and the flow, resolved
    /// by `build_targets` as a pipeline file would be.
    pub(super) fn lower(&self) -> Result<BuiltFlow> {
        check_unique_columns(&self.source_schema)?;
        if self.source_name.eq_ignore_ascii_case(&self.target) {
            // The catalog would reject the second table "declared at line 0".
            let message = format!(
                "AUTO CDC: the source and the target are both called `{}`; name the source with source_name",
                self.target
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
        let flow = FlowStmt {
            name: name(self.name.as_deref().unwrap_or(&self.target)),
            line: NO_LINE,
            target: name(&self.target),
            body: FlowBody::AutoCdc(Box::new(self.clauses()?)),
        };
        let catalog = Catalog::new(vec![
            Statement::Table(Box::new(source_stmt(&self.source_name))),
            Statement::Table(Box::new(self.target_stmt())),
            Statement::Flow(Box::new(flow)),
        ])?;
        // Only the name and schema of the source are read; its rows come from the caller.
        let source = SourceTable {
            expectations: Vec::new(),
            published: None,
            name: self.source_name.clone(),
            schema: self.source_schema.clone(),
            input: SourceInput::Files {
                path: PathBuf::new(),
                format: Format::Csv,
                header: true,
                file_schema: self.source_schema.clone(),
                declared: true,
            },
            projection: None,
            filter: None,
            once: false,
            line: NO_LINE,
        };
        let mut warnings = Vec::new();
        // The source is catalog table 0, the only table with a query; no path is read.
        let tables = std::slice::from_ref(&source);
        let paths = crate::sql::paths::Paths {
            base: Path::new(""),
            warehouse: None,
        };
        let built = build_targets(&catalog, tables, &[0], paths, &mut warnings)?;
        let (mut targets, mut flows) = (built.targets, built.flows);
        match (targets.pop(), flows.pop()) {
            (Some(target), Some(flow)) => Ok(BuiltFlow::new(
                target,
                flow,
                self.source_schema.clone(),
                warnings.into_iter().map(|(_, message)| message).collect(),
            )),
            _ => Err(Error::new(
                ErrorKind::Internal,
                "a one-flow pipeline did not yield one target and one flow",
            )),
        }
    }

    /// The SQL clauses these options stand for. Options that share a clause go through the
    /// parser's `once`, so giving two of them fails as a clause given twice does.
    fn clauses(&self) -> Result<CdcClauses> {
        let mut clauses = CdcClauses {
            once: self.once,
            source: Some(name(&self.source_name)),
            keys: Some(located(names(&self.keys))),
            sequence_by: Some(located(self.sequence()?)),
            stored_as: Some(located(self.stored_as_scd_type)),
            columns_to_update: self.columns_to_update.as_deref().map(name),
            ..CdcClauses::default()
        };
        if let Some(text) = &self.system_sequence_by {
            let e = expression(text, "SYSTEM SEQUENCE BY")?;
            clauses.system_sequence_by = Some(located(e));
        }
        if let Some(text) = &self.apply_as_deletes {
            let e = expression(text, "APPLY AS DELETE WHEN")?;
            clauses.delete_when = Some(located(e));
        }
        if let Some(text) = &self.apply_as_truncates {
            let e = expression(text, "APPLY AS TRUNCATE WHEN")?;
            clauses.truncate_when = Some(located(e));
        }
        let columns = [
            only(&self.column_list, Selection::Only),
            only(&self.except_column_list, Selection::Except),
        ];
        for selection in columns.into_iter().flatten() {
            once(&mut clauses.columns, located(selection), "COLUMNS", NO_LINE)?;
        }
        let track = [
            only(&self.track_history_column_list, Selection::Only),
            only(&self.track_history_except_column_list, Selection::Except),
        ];
        for selection in track.into_iter().flatten() {
            once(
                &mut clauses.track_history,
                located(selection),
                "TRACK HISTORY",
                NO_LINE,
            )?;
        }
        let ignore = [
            self.ignore_null_updates.then_some(Selection::All),
            only(&self.ignore_null_updates_column_list, Selection::Only),
            only(
                &self.ignore_null_updates_except_column_list,
                Selection::Except,
            ),
        ];
        for selection in ignore.into_iter().flatten() {
            let slot = &mut clauses.ignore_null_updates;
            once(slot, located(selection), "IGNORE NULL UPDATES", NO_LINE)?;
        }
        Ok(clauses)
    }

    fn sequence(&self) -> Result<ast::Expr> {
        match &self.sequence_by {
            Sequence::Expr(text) => expression(text, "SEQUENCE BY"),
            // What the parser makes of `STRUCT(`a`, `b`)`, built directly so that no name
            // needs escaping.
            Sequence::Struct(columns) => Ok(ast::Expr::Struct {
                values: columns
                    .iter()
                    .map(|c| ast::Expr::Identifier(ast::Ident::with_quote('`', c)))
                    .collect(),
                fields: Vec::new(),
            }),
        }
    }
}

fn name(text: &str) -> Name {
    Name {
        text: text.to_string(),
        line: NO_LINE,
        qualifier: Vec::new(),
    }
}

fn names(texts: &[String]) -> Vec<Name> {
    texts.iter().map(|t| name(t)).collect()
}

fn located<T>(value: T) -> Located<T> {
    Located {
        value,
        line: NO_LINE,
    }
}

fn only(list: &Option<Vec<String>>, make: fn(Vec<Name>) -> Selection) -> Option<Selection> {
    list.as_deref().map(|l| make(names(l)))
}

/// Parses `text` as one whole SQL expression of `clause`, exactly as the clause parser would.
fn expression(text: &str, clause: &str) -> Result<ast::Expr> {
    let mut cursor = Cursor::new(text)?;
    let e = cursor.expr(clause)?;
    if cursor.peek() != &Token::EOF {
        return Err(cursor.unexpected(clause, "the end of the expression"));
    }
    Ok(e)
}

/// A table declaration with no columns, properties or flow; `query` makes it a source.
impl AutoCdcFlow {
    /// The target's declaration, with its table properties.
    fn target_stmt(&self) -> TableStmt {
        let mut stmt = table_stmt(&self.target, None);
        stmt.properties = self
            .table_properties
            .iter()
            .map(|(k, v)| (k.clone(), v.clone(), NO_LINE))
            .collect();
        stmt
    }
}

fn table_stmt(table: &str, query: Option<Query>) -> TableStmt {
    TableStmt {
        name: name(table),
        line: NO_LINE,
        kind: TableKind::StreamingTable,
        columns: None,
        constraints: Vec::new(),
        properties: Vec::new(),
        query,
        once: false,
        append_flow: None,
        appended: Vec::new(),
        flow: None,
    }
}

/// The source's declaration. `build_targets` tells sources from targets by whether they have a
/// query and never reads it, so the query is a stand-in: `read_files` of nothing.
fn source_stmt(source: &str) -> TableStmt {
    let from = From::ReadFiles(ReadFiles {
        path: String::new(),
        format: None,
        header: None,
        schema: None,
        version: None,
        line: NO_LINE,
    });
    let query = Query {
        projection: None,
        from,
        streamed: false,
        options: ReadOptions::default(),
        filter: None,
    };
    table_stmt(source, Some(query))
}

/// Column names resolve case-insensitively, so a schema must not repeat one in any case (a
/// pipeline file's `read_files` schema is held to the same rule when it is parsed).
fn check_unique_columns(schema: &Schema) -> Result<()> {
    for (n, column) in schema.columns.iter().enumerate() {
        if schema.index_of(&column.name) != Some(n) {
            let message = format!("source schema: duplicate column `{}`", column.name);
            return Err(Error::new(ErrorKind::Validation, message));
        }
    }
    Ok(())
}

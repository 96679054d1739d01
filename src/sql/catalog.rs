//! The declarations of a file, indexed by name: every `CREATE STREAMING TABLE` and every flow
//! (inline `FLOW AUTO CDC` / `FLOW REPLACE USING` flows become flows named after their table).
//! Names are unique, case-insensitively, within tables and within flows.
//!
//! Table and flow names become file names (`<table>.csv`, `<table>.changes.csv`,
//! `_quarantine/<flow>.jsonl`), so a name must be one safe file name component
//! ([`crate::io::names`]). And no two tables' files may be the same file: `x` writes
//! `x.changes.csv`, so a table named `x.changes` beside `x` is refused (compared
//! case-insensitively, as some file systems do).

use super::cursor::{invalid, Name};
use super::syntax::{FlowStmt, Statement, TableStmt};
use crate::io::names::{component_problem, shown};
use crate::value::closest;
use crate::Result;

pub(crate) struct Catalog {
    /// Tables in declaration order.
    pub(crate) tables: Vec<TableStmt>,
    /// Flows in declaration order.
    pub(crate) flows: Vec<FlowStmt>,
}

impl Catalog {
    pub(crate) fn new(statements: Vec<Statement>) -> Result<Self> {
        let mut catalog = Catalog {
            tables: Vec::new(),
            flows: Vec::new(),
        };
        for statement in statements {
            match statement {
                Statement::Table(mut table) => {
                    if let Some(body) = table.flow.take() {
                        catalog.add_flow(FlowStmt {
                            name: table.name.clone(),
                            line: table.line,
                            target: table.name.clone(),
                            body,
                        })?;
                    }
                    catalog.add_table(*table)?;
                }
                Statement::Flow(flow) => catalog.add_flow(*flow)?,
            }
        }
        Ok(catalog)
    }

    pub(crate) fn add_table(&mut self, table: TableStmt) -> Result<()> {
        file_name(&table.name, "CREATE STREAMING TABLE: table")?;
        if let Some(i) = self.table(&table.name.text) {
            let message = format!(
                "CREATE STREAMING TABLE: table `{}` is already declared at line {}",
                table.name.text, self.tables[i].line
            );
            return Err(invalid(table.name.line, message));
        }
        let changes = |t: &TableStmt, other: &TableStmt| {
            let (name, other) = (&t.name.text, &other.name.text);
            name.len() == other.len() + CHANGES.len()
                && name.is_char_boundary(other.len())
                && name[..other.len()].eq_ignore_ascii_case(other)
                && name[other.len()..].eq_ignore_ascii_case(CHANGES)
        };
        let clash = self.tables.iter().find_map(|other| {
            if changes(&table, other) {
                Some((&table, other))
            } else if changes(other, &table) {
                Some((other, &table))
            } else {
                None
            }
        });
        if let Some((feed_named, owner)) = clash {
            let message = format!(
                "CREATE STREAMING TABLE: table `{}` would write the same file as the change feed \
                 of table `{}` (line {}), `{}{CHANGES}.<ext>`; rename one of them",
                feed_named.name.text, owner.name.text, owner.line, owner.name.text
            );
            return Err(invalid(table.name.line, message));
        }
        self.tables.push(table);
        Ok(())
    }

    fn add_flow(&mut self, flow: FlowStmt) -> Result<()> {
        file_name(&flow.name, "CREATE FLOW: flow")?;
        let same = |f: &&FlowStmt| f.name.text.eq_ignore_ascii_case(&flow.name.text);
        if let Some(other) = self.flows.iter().find(same) {
            let message = format!(
                "CREATE FLOW: flow `{}` is already declared at line {}",
                flow.name.text, other.line
            );
            return Err(invalid(flow.name.line, message));
        }
        self.flows.push(flow);
        Ok(())
    }

    /// Index of the table called `name` (case-insensitive).
    pub(crate) fn table(&self, name: &str) -> Option<usize> {
        self.tables
            .iter()
            .position(|t| t.name.text.eq_ignore_ascii_case(name))
    }

    /// Like [`Catalog::table`], failing with "`clause`: unknown table `x` (did you mean ...)".
    pub(crate) fn resolve(&self, name: &Name, clause: &str) -> Result<usize> {
        self.table(&name.text).ok_or_else(|| {
            let names = self.tables.iter().map(|t| t.name.text.as_str());
            let hint = closest(&name.text, names)
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            let message = format!(
                "{clause}: unknown table `{}`{hint}; declare it with CREATE STREAMING TABLE",
                name.text
            );
            invalid(name.line, message)
        })
    }
}

/// The suffix of a change-feed file's name after its table's name.
const CHANGES: &str = ".changes";

/// Fails unless `name` is safe as one file name component (see the module docs); `what` says
/// what it names.
fn file_name(name: &Name, what: &str) -> Result<()> {
    match component_problem(&name.text) {
        None => Ok(()),
        Some(why) => Err(invalid(
            name.line,
            format!("{what} `{}` {why}", shown(&name.text)),
        )),
    }
}

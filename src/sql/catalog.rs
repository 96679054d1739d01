//! The declarations of a file, indexed by name: every `CREATE STREAMING TABLE` and every flow
//! (inline `FLOW AUTO CDC` / `FLOW REPLACE USING` flows become flows named after their table). Names are unique,
//! case-insensitively, within tables and within flows.

use super::cursor::{invalid, Name};
use super::syntax::{FlowStmt, Statement, TableStmt};
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

    fn add_table(&mut self, table: TableStmt) -> Result<()> {
        if let Some(i) = self.table(&table.name.text) {
            let message = format!(
                "CREATE STREAMING TABLE: table `{}` is already declared at line {}",
                table.name.text, self.tables[i].line
            );
            return Err(invalid(table.name.line, message));
        }
        self.tables.push(table);
        Ok(())
    }

    fn add_flow(&mut self, flow: FlowStmt) -> Result<()> {
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

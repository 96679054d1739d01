//! Append flows (`CREATE FLOW f AS INSERT [ONCE] INTO t BY NAME SELECT ...`): the flow's query
//! becomes its streaming table's query, as if the table had been declared `AS SELECT ...`, so
//! the table is a source like any other (its declared columns checked against the query by
//! name, its rows read by the flows reading it).
//!
//! Invariant: after [`fold`], no append flow is left in the catalog, and a table written by one
//! is written by nothing else. Limits: one append flow per table (several flows into one table,
//! a union, are refused by name); a table declared `AS SELECT ...` takes no append flow.

use super::catalog::Catalog;
use super::cursor::invalid;
use super::syntax::FlowBody;
use crate::Result;

/// Folds every append flow of `catalog` into the table it writes.
pub(crate) fn fold(catalog: &mut Catalog) -> Result<()> {
    let mut kept = Vec::new();
    let mut folded: Vec<(usize, String, u64)> = Vec::new();
    for flow in std::mem::take(&mut catalog.flows) {
        let FlowBody::Append(append) = flow.body else {
            kept.push(flow);
            continue;
        };
        let t = catalog.resolve(&flow.target, "INSERT INTO")?;
        let table = &mut catalog.tables[t];
        if let Some((_, first, line)) = folded.iter().find(|(f, _, _)| *f == t) {
            let message = format!(
                "INSERT INTO: flows `{first}` (line {line}) and `{}` both append to `{}`; several append flows into one table are not supported yet",
                flow.name.text, table.name.text
            );
            return Err(invalid(flow.line, message));
        }
        if table.query.is_some() {
            let message = format!(
                "INSERT INTO: `{}` is defined by its AS SELECT query (line {}); an append flow cannot also write it",
                table.name.text, table.line
            );
            return Err(invalid(flow.line, message));
        }
        table.query = Some(append.query);
        table.once = append.once;
        table.by_name = true;
        folded.push((t, flow.name.text.clone(), flow.line));
    }
    for flow in &kept {
        let t = catalog.table(&flow.target.text);
        if let Some((_, appender, line)) = folded.iter().find(|(f, _, _)| Some(*f) == t) {
            let message = format!(
                "INTO: `{}` is a streaming table the append flow `{appender}` (line {line}) writes; an AUTO CDC or REPLACE USING flow writes a table of its own",
                flow.target.text
            );
            return Err(invalid(flow.line, message));
        }
    }
    catalog.flows = kept;
    Ok(())
}

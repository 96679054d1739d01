//! Append flows (`CREATE FLOW f AS INSERT [ONCE] INTO t BY NAME SELECT ...`). A table one
//! append flow writes takes the flow's query as its own, as if declared `AS SELECT ...`. A
//! table several write is their union: each flow becomes an implicit table `t+f` with the
//! flow's query (stored by name into `t`'s declared columns), and `t` reads them all. Either
//! way the table is a source like any other: its constraints checked on its rows, its rows
//! read by the flows reading it.
//!
//! Invariant: after [`fold`], no append flow is left in the catalog, and a table written by
//! append flows is written by nothing else. A table declared `AS SELECT ...` takes no append
//! flow. An implicit table's name holds a `+`, so it cannot be a name the pipeline declares
//! without backquotes; one it does declare is refused as declared twice.

use super::catalog::Catalog;
use super::cursor::{invalid, Name};
use super::syntax::{Append, FlowBody, TableKind, TableStmt};
use crate::Result;

/// Folds every append flow of `catalog` into the table it writes.
pub(crate) fn fold(catalog: &mut Catalog) -> Result<()> {
    let mut kept = Vec::new();
    // Per written table (catalog index): its append flows, with their names and lines.
    let mut appends: Vec<(usize, Vec<(Name, u64, Append)>)> = Vec::new();
    for flow in std::mem::take(&mut catalog.flows) {
        let FlowBody::Append(append) = flow.body else {
            kept.push(flow);
            continue;
        };
        let t = catalog.resolve(&flow.target, "INSERT INTO")?;
        let table = &catalog.tables[t];
        if table.query.is_some() {
            let message = format!(
                "INSERT INTO: `{}` is {} (line {}); an append flow cannot also write it",
                table.name.text,
                table.kind.defined_by(),
                table.line
            );
            return Err(invalid(flow.line, message));
        }
        let entry = (flow.name, flow.line, *append);
        match appends.iter_mut().find(|(i, _)| *i == t) {
            Some((_, flows)) => flows.push(entry),
            None => appends.push((t, vec![entry])),
        }
    }
    for flow in &kept {
        let t = catalog.table(&flow.target.text);
        if let Some((_, flows)) = appends.iter().find(|(i, _)| Some(*i) == t) {
            let (appender, line, _) = &flows[0];
            let message = format!(
                "INTO: `{}` is a streaming table the append flow `{}` (line {line}) writes; an AUTO CDC or REPLACE USING flow writes a table of its own",
                flow.target.text, appender.text
            );
            return Err(invalid(flow.line, message));
        }
    }
    catalog.flows = kept;
    for (t, mut flows) in appends {
        if let [_] = flows.as_slice() {
            if let Some((name, _, append)) = flows.pop() {
                let table = &mut catalog.tables[t];
                table.query = Some(append.query);
                table.once = append.once;
                table.append_flow =
                    Some(format!("flow `{}` into `{}`", name.text, table.name.text));
            }
            continue;
        }
        let mut implicit = Vec::with_capacity(flows.len());
        for (name, line, append) in flows {
            let table = &catalog.tables[t];
            let text = format!("{}+{}", table.name.text, name.text);
            implicit.push(TableStmt {
                name: Name {
                    text,
                    line,
                    qualifier: Vec::new(),
                },
                line,
                kind: TableKind::Implicit,
                columns: table.columns.clone(),
                constraints: Vec::new(),
                properties: Vec::new(),
                query: Some(append.query),
                once: append.once,
                append_flow: Some(format!("flow `{}` into `{}`", name.text, table.name.text)),
                appended: Vec::new(),
                flow: None,
            });
        }
        catalog.tables[t].appended = implicit.iter().map(|s| s.name.clone()).collect();
        for stmt in implicit {
            catalog.add_table(stmt)?;
        }
    }
    Ok(())
}

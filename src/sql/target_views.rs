//! A materialized view over a target of its own pipeline: `CREATE MATERIALIZED VIEW v AS
//! SELECT ... FROM t [WHERE ...]` where `t` is an AUTO CDC target (SCD1, SCD2, bitemporal,
//! or from snapshots) of the pipeline — the gold table over a silver one.
//!
//! Kept from `t`'s change data feed in the same commit, never by rereading `t`: the view is
//! rewritten, before anything is resolved, into an implicit table `v+rows` over the feed
//! (`STREAM(t) WITH (readChangeFeed = true)`, the view's own SELECT list and WHERE) and an
//! AUTO CDC flow from it into `v`, stored as SCD TYPE 1, keyed by `t`'s row identity (its keys;
//! with `__START_AT` for SCD2, and `__SYSTEM_START_AT` for bitemporal targets), which the
//! view must select. A feed row the WHERE holds for is an upsert when it is an insert or a
//! post-image, a delete when it is a delete or a pre-image; rows it does not hold for are
//! dropped. A pre-image is sequenced before its post-image within the commit
//! (`2 * _commit_version`, then `+ 1`), so a row that leaves the view is deleted, one that
//! enters it inserted, and one that stays updated — with its own change data feed. A row that
//! never entered the view leaves nothing in its state. The cost per commit is the feed's size.
//!
//! Invariant: after every commit, `v`'s rows are the view query over `t`'s rows, because `t`'s
//! feed has at most one row per identity and commit once pre-images are set aside, and an
//! identity is one row of `t`.
//!
//! Limits, each refused saying why: a view that does not select the identity (a projection
//! that drops it would make `v` a multiset), a view over a REPLACE USING or REPLACE WHERE
//! target or over a materialized view of a warehouse table (their rows repeat), and
//! expectations on the view (put them on `t`'s flows). DML on the view is refused, and so is
//! DML on `t`, which, like every target's feed read in the pipeline, would not reach it.

use super::catalog::Catalog;
use super::cursor::{invalid, Cursor, Name};
use super::flows::required;
use super::syntax::{
    CdcClauses, FlowBody, From, Located, Query, ReadOptions, SelectItem, Selection, TableStmt,
};
use crate::engine::changefeed::FEED_COLUMN_NAMES;
use crate::plan::ScdType;
use crate::Result;
use sqlparser::ast;

/// The suffix of a view's implicit table's name (a `+` cannot be declared without backquotes).
const ROWS: &str = "+rows";

/// The implicit table's columns that make a feed row an event of the view's flow.
const SEQUENCE: &str = "__scdflow_sequence";
const GONE: &str = "__scdflow_gone";

/// Rewrites every materialized view over a target of the pipeline into its implicit table and
/// flow (see the module docs). A view over another such view waits for that one's rewrite.
pub(crate) fn declare(catalog: &mut Catalog) -> Result<()> {
    loop {
        let mut progress = false;
        for f in 0..catalog.flows.len() {
            let Some(over) = view_over_target(catalog, f) else {
                continue;
            };
            if let Some(identity) = identity(catalog, over, f)? {
                rewrite(catalog, f, over, identity)?;
                progress = true;
            }
        }
        if !progress {
            break;
        }
    }
    match (0..catalog.flows.len()).find_map(|f| Some((f, view_over_target(catalog, f)?))) {
        None => Ok(()),
        Some((f, over)) => {
            let view = &catalog.flows[f];
            let message = format!(
                "FROM: materialized view `{}` reads `{}`, a materialized view that waits, \
                 directly or through others, for `{}` itself (a cycle)",
                view.name.text, catalog.tables[over].name.text, view.name.text
            );
            Err(invalid(view.line, message))
        }
    }
}

/// The catalog index of the target flow `f` reads, when `f` is a materialized view's flow over
/// a target of the pipeline (read as a table, not as its feed).
fn view_over_target(catalog: &Catalog, f: usize) -> Option<usize> {
    let FlowBody::ReplaceWhere(replace) = &catalog.flows[f].body else {
        return None;
    };
    let From::Table(name) = &replace.query.from else {
        return None;
    };
    if !replace.view || replace.query.options.change_feed || !name.qualifier.is_empty() {
        return None;
    }
    let t = catalog.table(&name.text)?;
    // Append flows are folded into their tables later: such a table is a source, not a target.
    let appended =
        writers(catalog, t).any(|w| matches!(catalog.flows[w].body, FlowBody::Append(_)));
    (!catalog.tables[t].is_source() && !appended).then_some(t)
}

/// The flows into table `t`, by index.
fn writers(catalog: &Catalog, t: usize) -> impl Iterator<Item = usize> + '_ {
    let name = &catalog.tables[t].name.text;
    (0..catalog.flows.len())
        .filter(move |&w| catalog.flows[w].target.text.eq_ignore_ascii_case(name))
}

/// The identity columns of target `t`'s rows, by name, as flow `f` (a view over it) needs
/// them: `None` while `t` is a view over a target not rewritten yet. A target without flows
/// or keys fails as planning it would.
fn identity(catalog: &Catalog, t: usize, f: usize) -> Result<Option<Vec<String>>> {
    let target = &catalog.tables[t].name.text;
    let view = &catalog.flows[f];
    let refuse = |why: String| {
        let message = format!(
            "FROM: materialized view `{}` over `{target}`, a target of this pipeline, keeps \
             each of its rows by the row's identity; {why}, so its rows have none (read its \
             change data feed instead: STREAM({target}) WITH (readChangeFeed = true))",
            view.name.text
        );
        Err(invalid(view.line, message))
    };
    let Some(writer) = writers(catalog, t).next() else {
        let message = format!(
            "CREATE STREAMING TABLE {target}: the table has no query (AS SELECT) and no flow \
             writes into it"
        );
        return Err(invalid(catalog.tables[t].line, message));
    };
    match &catalog.flows[writer].body {
        FlowBody::AutoCdc(clauses) => {
            let keys = required(&clauses.keys, "KEYS", catalog.flows[writer].line)?;
            let mut identity: Vec<String> = keys.value.iter().map(|k| k.text.clone()).collect();
            let intervals: &[&str] = match clauses.stored_as.as_ref().map(|s| s.value) {
                Some(ScdType::Type2) => &["__START_AT"],
                Some(ScdType::Bitemporal) => &["__START_AT", "__SYSTEM_START_AT"],
                Some(ScdType::Type1) | None => &[],
            };
            identity.extend(intervals.iter().map(|c| c.to_string()));
            Ok(Some(identity))
        }
        FlowBody::ReplaceWhere(_) if view_over_target(catalog, writer).is_some() => Ok(None),
        FlowBody::ReplaceWhere(r) if r.view => refuse(format!(
            "`{target}` is a materialized view of a warehouse table, whose rows may repeat"
        )),
        FlowBody::ReplaceWhere(_) => refuse(format!(
            "`{target}` is kept by a REPLACE WHERE flow, whose rows may repeat"
        )),
        FlowBody::Replace(_) => refuse(format!(
            "`{target}` is kept by a REPLACE USING flow, whose keys hold several rows"
        )),
        FlowBody::Append(_) => Err(crate::Error::new(
            crate::ErrorKind::Internal,
            "a table written by append flows was taken for a target",
        )),
    }
}

/// Rewrites view flow `f` over target `t` into an implicit table over `t`'s feed and an AUTO
/// CDC flow keyed by `identity`.
fn rewrite(catalog: &mut Catalog, f: usize, t: usize, identity: Vec<String>) -> Result<()> {
    let target = catalog.tables[t].name.text.clone();
    let (view, line) = (catalog.flows[f].name.text.clone(), catalog.flows[f].line);
    let named = |text: &str| Name {
        text: text.to_string(),
        line,
        qualifier: Vec::new(),
    };
    if let Some(c) = (catalog.table(&view)).and_then(|v| catalog.tables[v].constraints.first()) {
        let message = format!(
            "CONSTRAINT {}: materialized view `{view}` over `{target}`, a target of this \
             pipeline, takes no expectations yet; put them on the flows into `{target}`",
            c.name.text
        );
        return Err(invalid(c.name.line, message));
    }
    let placeholder = FlowBody::AutoCdc(Box::default());
    let FlowBody::ReplaceWhere(replace) =
        std::mem::replace(&mut catalog.flows[f].body, placeholder)
    else {
        let message = "a materialized view's flow is not a REPLACE WHERE flow";
        return Err(crate::Error::new(crate::ErrorKind::Internal, message));
    };
    let query = replace.query;
    let keys = selected(&query, &identity, &view, &target, line)?;
    let (mut projection, wildcard) = match query.projection {
        None => (vec![SelectItem::Wildcard { line }], true),
        Some(items) => {
            let wildcard = (items.iter()).any(|i| matches!(i, SelectItem::Wildcard { .. }));
            (items, wildcard)
        }
    };
    let sequence =
        "_commit_version * 2 + CAST(_change_type IN ('insert', 'update_postimage') AS BIGINT)";
    let gone = "_change_type IN ('delete', 'update_preimage')";
    for (text, alias) in [(sequence, SEQUENCE), (gone, GONE)] {
        projection.push(SelectItem::Expr {
            expr: Box::new(expression(text)?),
            alias: Some(named(alias)),
            line,
        });
    }
    let rows = format!("{view}{ROWS}");
    let feed = Query {
        projection: Some(projection),
        from: From::Table(named(&target)),
        streamed: true,
        options: ReadOptions {
            change_feed: true,
            line,
            ..ReadOptions::default()
        },
        filter: query.filter,
    };
    let source = TableStmt::implicit(named(&rows), feed);
    let mut excluded: Vec<Name> = Vec::new();
    if wildcard {
        excluded.extend(FEED_COLUMN_NAMES.iter().map(|c| named(c)));
    }
    excluded.extend([named(SEQUENCE), named(GONE)]);
    let clauses = CdcClauses {
        source: Some(named(&rows)),
        keys: Some(Located {
            value: keys.iter().map(|k| named(k)).collect(),
            line,
        }),
        sequence_by: Some(Located {
            value: expression(SEQUENCE)?,
            line,
        }),
        delete_when: Some(Located {
            value: expression(GONE)?,
            line,
        }),
        columns: Some(Located {
            value: Selection::Except(excluded),
            line,
        }),
        view_of: Some(target),
        ..CdcClauses::default()
    };
    catalog.flows[f].body = FlowBody::AutoCdc(Box::new(clauses));
    catalog.add_table(source)
}

/// The view's names of the `identity` columns of `target`: every one must be selected, as a
/// column (renamed or not), or through `*`.
fn selected(
    query: &Query,
    identity: &[String],
    view: &str,
    target: &str,
    line: u64,
) -> Result<Vec<String>> {
    let Some(items) = &query.projection else {
        return Ok(identity.to_vec());
    };
    let wildcard = items
        .iter()
        .any(|i| matches!(i, SelectItem::Wildcard { .. }));
    let column = |name: &str| {
        items.iter().find_map(|item| match item {
            SelectItem::Expr { expr, alias, .. } => {
                let read = match expr.as_ref() {
                    ast::Expr::Identifier(id) => &id.value,
                    ast::Expr::CompoundIdentifier(parts) => &parts.last()?.value,
                    _ => return None,
                };
                read.eq_ignore_ascii_case(name)
                    .then(|| alias.as_ref().map_or(read.clone(), |a| a.text.clone()))
            }
            SelectItem::Wildcard { .. } => None,
        })
    };
    let mut names = Vec::new();
    for name in identity {
        match column(name) {
            Some(selected) => names.push(selected),
            None if wildcard => names.push(name.clone()),
            None => {
                let message = format!(
                    "SELECT: materialized view `{view}` over `{target}`, a target of this \
                     pipeline, keeps each of its rows by the row's identity ({}), so it must \
                     select `{name}` (the view would otherwise hold repeated rows)",
                    identity.join(", ")
                );
                return Err(invalid(line, message));
            }
        }
    }
    Ok(names)
}

/// One of this module's own expressions, parsed as a user's would be.
fn expression(text: &str) -> Result<ast::Expr> {
    Cursor::new(text)?.expr("materialized view")
}

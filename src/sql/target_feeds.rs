//! A target's change data feed read in its own pipeline: `STREAM(t) WITH (readChangeFeed =
//! true)` where `t` is a target the pipeline maintains, as a source table's query or a flow's
//! source.
//!
//! Each target read so gets one implicit source table, `t+feed`, whose input is the target's
//! changes of each commit in the same commit
//! ([`SourceInput::TargetFeed`](crate::plan::SourceInput)), and every such reference is renamed
//! to it; from there on it is a source table like any other.
//! Its columns are the target's, which come from the target's flows: so a pipeline is planned in
//! rounds ([`schemas`]), each planning the statements that do not wait for a feed not planned
//! yet, until every feed read has its columns. A feed that waits, directly or through other
//! tables and targets, for itself is a cycle, refused naming its targets.
//!
//! Refused, saying why: reader options besides `readChangeFeed` (the feed is read from the
//! pipeline's first commit), periodic snapshots of a table fed by a feed (each worker holds a
//! share of a commit's changes, not the whole), and `ONCE` flows reading one (the feed goes on
//! with every commit).

use super::catalog::Catalog;
use super::cursor::{invalid, Name};
use super::paths::Paths;
use super::syntax::{FlowBody, From, Query, ReadOptions, TableStmt};
use super::{sources, targets};
use crate::plan::{Pipeline, SnapshotSource};
use crate::value::Schema;
use crate::Result;
use std::collections::BTreeMap;

/// Per target whose feed the pipeline reads (by its declared name): the target's columns.
pub(crate) type Feeds = BTreeMap<String, Schema>;

/// The suffix of a feed's implicit table's name (a `+` cannot be declared without backquotes).
const FEED: &str = "+feed";

/// Renames every stream of a target's change data feed to the target's implicit feed table,
/// declaring the table.
pub(crate) fn declare(catalog: &mut Catalog) -> Result<()> {
    let mut found: Vec<TableStmt> = Vec::new();
    let targets: Vec<String> = (catalog.tables.iter())
        .filter(|t| !t.is_source())
        .map(|t| t.name.text.clone())
        .collect();
    let mut rename = |name: &mut Name, options: &mut ReadOptions| -> Result<()> {
        let target = targets.iter().find(|t| t.eq_ignore_ascii_case(&name.text));
        let (Some(target), true, true) = (target, name.qualifier.is_empty(), options.change_feed)
        else {
            return Ok(());
        };
        if options.starting_version.is_some() || options.skip_change_commits {
            let message = format!(
                "STREAM({}) WITH (...): `{target}` is a target of this pipeline, whose change \
                 data feed is read from the pipeline's first commit, in the same commit; \
                 startingVersion and skipChangeCommits read published tables (from another \
                 pipeline)",
                name.text
            );
            return Err(invalid(options.line, message));
        }
        let implicit = format!("{target}{FEED}");
        if found.iter().all(|t| t.name.text != implicit) {
            found.push(feed_table(target, &implicit, name.line));
        }
        name.text = implicit;
        *options = ReadOptions::default();
        Ok(())
    };
    for table in &mut catalog.tables {
        if let Some(Query {
            from: From::Table(name),
            options,
            ..
        }) = &mut table.query
        {
            rename(name, options)?;
        }
    }
    for flow in &mut catalog.flows {
        match &mut flow.body {
            FlowBody::AutoCdc(clauses) => {
                if let Some(name) = &mut clauses.source {
                    rename(name, &mut clauses.source_options)?;
                }
            }
            FlowBody::Replace(replace) => {
                if let From::Table(name) = &mut replace.query.from {
                    rename(name, &mut replace.query.options)?;
                }
            }
            FlowBody::Append(append) => {
                if let From::Table(name) = &mut append.query.from {
                    rename(name, &mut append.query.options)?;
                }
            }
            FlowBody::ReplaceWhere(_) => {}
        }
    }
    for table in found {
        catalog.add_table(table)?;
    }
    Ok(())
}

/// The implicit table reading target `target`'s feed.
fn feed_table(target: &str, name: &str, line: u64) -> TableStmt {
    let named = |text: &str| Name {
        text: text.to_string(),
        line,
        qualifier: Vec::new(),
    };
    let query = Query {
        projection: None,
        from: From::Feed(named(target)),
        streamed: true,
        options: ReadOptions::default(),
        filter: None,
    };
    TableStmt::implicit(named(name), query)
}

/// The columns of every target whose feed the pipeline reads, planning the pipeline in rounds
/// (see the module docs).
pub(crate) fn schemas(catalog: &mut Catalog, paths: Paths) -> Result<Feeds> {
    let mut feeds = Feeds::new();
    if !catalog.tables.iter().any(|t| feed_of(t).is_some()) {
        return Ok(feeds);
    }
    loop {
        let waiting = waiting(catalog, &feeds)?;
        if !waiting.tables.contains(&true) {
            return Ok(feeds);
        }
        let held = hold(catalog, &waiting);
        let planned = plan_round(catalog, paths, &feeds);
        let targets: Vec<String> = (catalog.tables.iter())
            .filter(|t| !t.is_source())
            .map(|t| t.name.text.clone())
            .collect();
        release(catalog, held);
        let mut progress = false;
        for (name, schema) in targets.into_iter().zip(planned?) {
            if read_feed(catalog, &name) && !feeds.contains_key(&name) {
                feeds.insert(name, schema);
                progress = true;
            }
        }
        if !progress {
            return Err(cycle(catalog, &feeds));
        }
    }
}

/// Plans the statements in `catalog` and returns its targets' columns.
fn plan_round(catalog: &Catalog, paths: Paths, feeds: &Feeds) -> Result<Vec<Schema>> {
    let (tables, order) = sources::build_sources(catalog, paths, feeds)?;
    let built = targets::build_targets(catalog, &tables, &order, paths, &mut Vec::new())?;
    Ok(built.targets.into_iter().map(|t| t.schema).collect())
}

/// Whether some table reads target `name`'s feed.
fn read_feed(catalog: &Catalog, name: &str) -> bool {
    let reads = |t: &TableStmt| feed_of(t).is_some_and(|n| n.text.eq_ignore_ascii_case(name));
    catalog.tables.iter().any(reads)
}

fn feed_of(table: &TableStmt) -> Option<&Name> {
    match &table.query {
        Some(Query {
            from: From::Feed(name),
            ..
        }) => Some(name),
        _ => None,
    }
}

/// The statements that wait for a feed not planned yet.
struct Waiting {
    tables: Vec<bool>,
    flows: Vec<bool>,
}

fn waiting(catalog: &Catalog, feeds: &Feeds) -> Result<Waiting> {
    let n = catalog.tables.len();
    let mut tables = vec![false; n];
    let mut flows = vec![false; catalog.flows.len()];
    // A name that resolves to nothing waits for nothing: planning reports it, in its clause.
    let reads = |names: Vec<&Name>, tables: &[bool]| {
        (names.iter()).any(|name| catalog.table(&name.text).is_some_and(|t| tables[t]))
    };
    loop {
        let mut changed = false;
        for t in 0..n {
            let table = &catalog.tables[t];
            let waits = match feed_of(table) {
                Some(target) => {
                    let j = catalog.resolve(target, "FROM")?;
                    tables[j] || !feeds.contains_key(&catalog.tables[j].name.text)
                }
                None if table.is_source() => reads(upstream(table), &tables),
                // A target waits when one of its flows does.
                None => flows.iter().zip(&catalog.flows).any(|(&waits, flow)| {
                    waits && flow.target.text.eq_ignore_ascii_case(&table.name.text)
                }),
            };
            changed |= waits && !tables[t];
            tables[t] |= waits;
        }
        for (f, flow) in catalog.flows.iter().enumerate() {
            let target = catalog.table(&flow.target.text).is_some_and(|t| tables[t]);
            let waits = target || reads(flow_sources(&flow.body), &tables);
            changed |= waits && !flows[f];
            flows[f] |= waits;
        }
        if !changed {
            return Ok(Waiting { tables, flows });
        }
    }
}

/// The tables a source table's query or append flows read.
fn upstream(table: &TableStmt) -> Vec<&Name> {
    match table.query.as_ref().map(|q| &q.from) {
        Some(From::Table(name)) => vec![name],
        Some(_) => Vec::new(),
        None => table.appended.iter().collect(),
    }
}

/// The tables a flow reads.
fn flow_sources(body: &FlowBody) -> Vec<&Name> {
    fn from(query: &Query) -> Option<&Name> {
        match &query.from {
            From::Table(name) => Some(name),
            _ => None,
        }
    }
    match body {
        FlowBody::AutoCdc(clauses) => {
            let snapshot = clauses.snapshot.as_ref().and_then(|s| from(&s.value));
            clauses.source.iter().chain(snapshot).collect()
        }
        FlowBody::Replace(replace) => from(&replace.query).into_iter().collect(),
        FlowBody::Append(append) => from(&append.query).into_iter().collect(),
        FlowBody::ReplaceWhere(replace) => from(&replace.query).into_iter().collect(),
    }
}

/// The statements taken out of a catalog for a round, with their places.
struct Held {
    tables: Vec<(usize, TableStmt)>,
    flows: Vec<(usize, super::syntax::FlowStmt)>,
}

/// Takes the waiting statements out of `catalog`.
fn hold(catalog: &mut Catalog, waiting: &Waiting) -> Held {
    let mut held = Held {
        tables: Vec::new(),
        flows: Vec::new(),
    };
    for (i, table) in std::mem::take(&mut catalog.tables).into_iter().enumerate() {
        match waiting.tables[i] {
            true => held.tables.push((i, table)),
            false => catalog.tables.push(table),
        }
    }
    for (i, flow) in std::mem::take(&mut catalog.flows).into_iter().enumerate() {
        match waiting.flows[i] {
            true => held.flows.push((i, flow)),
            false => catalog.flows.push(flow),
        }
    }
    held
}

/// Puts the statements [`hold`] took back in their places.
fn release(catalog: &mut Catalog, held: Held) {
    for (i, table) in held.tables {
        catalog.tables.insert(i, table);
    }
    for (i, flow) in held.flows {
        catalog.flows.insert(i, flow);
    }
}

/// The error for feeds that wait for themselves.
fn cycle(catalog: &Catalog, feeds: &Feeds) -> crate::Error {
    let waiting: Vec<&Name> = (catalog.tables.iter())
        .filter_map(feed_of)
        .filter(|name| !feeds.keys().any(|k| k.eq_ignore_ascii_case(&name.text)))
        .collect();
    let names: Vec<String> = waiting.iter().map(|n| format!("`{}`", n.text)).collect();
    let line = waiting.first().map_or(1, |n| n.line);
    let message = format!(
        "FROM STREAM(...) WITH (readChangeFeed = true): the change data feeds of {} feed their \
         own targets' flows, directly or through other tables (a cycle)",
        names.join(", ")
    );
    invalid(line, message)
}

/// Refuses what a table fed by a target's feed cannot do (see the module docs).
pub(crate) fn check(pipeline: &Pipeline) -> Result<()> {
    for (t, table) in pipeline.tables.iter().enumerate() {
        if table.once && !pipeline.feeding_targets(t).is_empty() {
            let message = format!(
                "INSERT INTO ONCE: `{}` reads a target's change data feed, which goes on with \
                 every commit; drop ONCE",
                table.name
            );
            return Err(invalid(table.line, message));
        }
    }
    for flow in &pipeline.snapshot_flows {
        let SnapshotSource::Table { table } = flow.source else {
            continue;
        };
        if !pipeline.feeding_targets(table).is_empty() {
            let message = format!(
                "FROM SNAPSHOT: flow `{}` takes snapshots of `{}`, which reads a target's \
                 change data feed; read the feed as a stream (AUTO CDC ... FROM STREAM(...))",
                flow.name, pipeline.tables[table].name
            );
            return Err(invalid(flow.line, message));
        }
    }
    Ok(())
}

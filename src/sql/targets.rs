//! Targets (tables declared without a query) and the flows into them. A target's shape comes
//! from its flows; D16 decides which flows may share a target: several change-feed AUTO CDC
//! flows that agree on the shape, or exactly one snapshot flow, or exactly one REPLACE USING
//! flow. A declared column list must match the shape. The target's constraints are compiled
//! into every flow into it, against the rows that flow checks.

use super::catalog::Catalog;
use super::cursor::{invalid, Name};
use super::expectations::compile_expectations;
use super::flows::{build_flow, Shape};
use super::paths::Paths;
use super::replace::build_replace_flow;
use super::replace_where::build_replace_where_flow;
use super::schema::check_declared;
use super::snapshots::build_snapshot_flow;
use super::syntax::{FlowBody, FlowStmt};
use crate::delta::TargetProperty;
use crate::plan::{
    CdcFlow, ReplaceFlow, ReplaceWhere, ScdType, SnapshotFlow, SourceTable, Target, TargetKind,
    DEFAULT_TOMBSTONE_GC_SECONDS,
};
use crate::value::Column;
use crate::Result;
use std::collections::BTreeMap;

const TOMBSTONE_PROPERTY: &str = "pipelines.cdc.tombstoneGCThresholdInSeconds";

/// What flows are resolved against.
pub(crate) struct Context<'a> {
    pub(crate) catalog: &'a Catalog,
    /// The built source tables (`Pipeline::tables`).
    pub(crate) tables: &'a [SourceTable],
    /// `sources[i]` is the catalog index of `tables[i]`.
    pub(crate) sources: &'a [usize],
    /// What `read_files` paths resolve against.
    pub(crate) paths: Paths<'a>,
}

impl Context<'_> {
    /// The `Pipeline::tables` index of the source table `name`; `clause` prefixes errors.
    pub(crate) fn source_table(&self, name: &Name, clause: &str) -> Result<usize> {
        let s = self.catalog.resolve(name, clause)?;
        self.sources.iter().position(|&i| i == s).ok_or_else(|| {
            let message = format!(
                "{clause}: `{}` is an AUTO CDC target, not an append-only source table",
                name.text
            );
            invalid(name.line, message)
        })
    }
}

/// Every target and flow of a pipeline, as `Pipeline` holds them.
pub(crate) struct Built {
    pub(crate) targets: Vec<Target>,
    pub(crate) flows: Vec<CdcFlow>,
    pub(crate) snapshot_flows: Vec<SnapshotFlow>,
    pub(crate) replace_flows: Vec<ReplaceFlow>,
    /// REPLACE WHERE conditions, by index into `targets`.
    replace_wheres: Vec<(usize, ReplaceWhere)>,
}

/// The first flow into a target: the shape every other flow must match.
struct First {
    kind: TargetKind,
    /// Why no other flow may join (snapshot and REPLACE USING flows).
    exclusive: Option<&'static str>,
    shape: Shape,
    flow: String,
    line: u64,
    partial: bool,
}

/// Builds every flow (declaration order) and every target (declaration order of the tables).
/// `sources[i]` is the catalog index of `tables[i]`; `read_files` paths resolve by `paths`.
pub(crate) fn build_targets(
    catalog: &Catalog,
    tables: &[SourceTable],
    sources: &[usize],
    paths: Paths,
    warnings: &mut Vec<(u64, String)>,
) -> Result<Built> {
    let cx = Context {
        catalog,
        tables,
        sources,
        paths,
    };
    let target_tables: Vec<usize> = (0..catalog.tables.len())
        .filter(|&i| !catalog.tables[i].is_source())
        .collect();
    let mut firsts: Vec<Option<First>> = target_tables.iter().map(|_| None).collect();
    let mut views: Vec<(usize, String)> = Vec::new();
    let mut built = Built {
        targets: Vec::new(),
        flows: Vec::new(),
        snapshot_flows: Vec::new(),
        replace_flows: Vec::new(),
        replace_wheres: Vec::new(),
    };
    for stmt in &catalog.flows {
        let t = catalog.resolve(&stmt.target, "INTO")?;
        let Some(target) = target_tables.iter().position(|&i| i == t) else {
            let message = format!(
                "INTO: `{}` is {}; a flow's target is a streaming table declared without one",
                stmt.target.text,
                catalog.tables[t].kind.defined_by()
            );
            return Err(invalid(stmt.target.line, message));
        };
        let exclusive = exclusive(stmt);
        if let Some(first) = &firsts[target] {
            check_exclusive(first, exclusive, stmt)?;
        }
        let (kind, shape) = build_one(&cx, stmt, (t, target), &mut built, warnings)?;
        if let FlowBody::AutoCdc(clauses) = &stmt.body {
            if let Some(over) = &clauses.view_of {
                views.push((target, over.clone()));
            }
        }
        match &mut firsts[target] {
            slot @ None => {
                let partial = shape.partial;
                *slot = Some(First {
                    kind,
                    exclusive,
                    shape,
                    flow: stmt.name.text.clone(),
                    line: stmt.line,
                    partial,
                })
            }
            Some(first) => {
                check_same_shape(first, &shape, stmt)?;
                first.partial |= shape.partial;
            }
        }
    }
    built.targets = target_tables
        .iter()
        .zip(firsts)
        .map(|(&t, first)| target(catalog, t, first))
        .collect::<Result<_>>()?;
    for (target, condition) in std::mem::take(&mut built.replace_wheres) {
        built.targets[target].replace_where = Some(condition);
    }
    for (target, over) in views {
        built.targets[target].view_of = Some(over);
    }
    Ok(built)
}

/// D16, SPEC 2.11: snapshot and REPLACE USING flows are the only flow into their target.
fn exclusive(stmt: &FlowStmt) -> Option<&'static str> {
    match &stmt.body {
        FlowBody::AutoCdc(clauses) if clauses.snapshot.is_some() => {
            Some("an AUTO CDC FROM SNAPSHOT flow must be the only flow into its target")
        }
        FlowBody::AutoCdc(_) => None,
        FlowBody::Replace(_) => Some("a REPLACE USING flow must be the only flow into its target"),
        FlowBody::ReplaceWhere(_) => {
            Some("a REPLACE WHERE flow must be the only flow into its target")
        }
        FlowBody::Append(_) => None,
    }
}

/// Resolves one flow into `target` (catalog index, index into the targets), with the
/// target's constraints compiled into it, adds it to `built` and returns the kind and shape it
/// gives the target.
fn build_one(
    cx: &Context,
    stmt: &FlowStmt,
    (t, target): (usize, usize),
    built: &mut Built,
    warnings: &mut Vec<(u64, String)>,
) -> Result<(TargetKind, Shape)> {
    let table = &cx.catalog.tables[t];
    let constraints = &table.constraints;
    let flow_is = format!("flow `{}`", stmt.name.text);
    match &stmt.body {
        FlowBody::AutoCdc(clauses) if clauses.snapshot.is_some() => {
            let (mut flow, shape) = build_snapshot_flow(cx, stmt, clauses, target, warnings)?;
            let rows = format!("the snapshot rows of {flow_is}");
            flow.expectations = compile_expectations(constraints, &flow.schema, &rows)?;
            built.snapshot_flows.push(flow);
            Ok((TargetKind::Snapshot, shape))
        }
        FlowBody::AutoCdc(clauses) => {
            let name = clauses
                .source
                .as_ref()
                .ok_or_else(|| invalid(stmt.line, "AUTO CDC: the FROM clause is required"))?;
            let s = cx.source_table(name, "FROM")?;
            let source = &cx.tables[s];
            let (mut flow, shape) = build_flow(stmt, clauses, source, (s, target), warnings)?;
            let rows = format!("the rows of source `{}` in {flow_is}", source.name);
            flow.expectations = compile_expectations(constraints, &source.schema, &rows)?;
            built.flows.push(flow);
            Ok((TargetKind::AutoCdc, shape))
        }
        FlowBody::Replace(replace) => {
            let (mut flow, shape) = build_replace_flow(cx, stmt, replace, table, target)?;
            let rows = format!("the rows {flow_is} writes");
            flow.expectations = compile_expectations(constraints, &shape.image, &rows)?;
            let kind = TargetKind::ReplaceUsing {
                sequence: flow.sequence,
            };
            built.replace_flows.push(flow);
            Ok((kind, shape))
        }
        FlowBody::ReplaceWhere(replace) => {
            let (mut flow, shape, condition) =
                build_replace_where_flow(cx, stmt, replace, table, target)?;
            let rows = format!("the rows {flow_is} writes");
            flow.expectations = compile_expectations(constraints, &flow.schema, &rows)?;
            built.snapshot_flows.push(flow);
            built.replace_wheres.push((target, condition));
            Ok((TargetKind::Snapshot, shape))
        }
        FlowBody::Append(_) => Err(crate::Error::new(
            crate::ErrorKind::Internal,
            "an append flow was not folded into its table",
        )),
    }
}

/// Rejects `stmt` as a second flow into a target when either flow must be the only one.
fn check_exclusive(first: &First, exclusive: Option<&str>, stmt: &FlowStmt) -> Result<()> {
    let Some(why) = first.exclusive.or(exclusive) else {
        return Ok(());
    };
    let message = format!(
        "INTO: flows `{}` (line {}) and `{}` both write `{}`: {why}",
        first.flow, first.line, stmt.name.text, stmt.target.text
    );
    Err(invalid(stmt.line, message))
}

/// D16: flows into one target must agree on everything that shapes it except partial updates.
fn check_same_shape(first: &First, shape: &Shape, flow: &FlowStmt) -> Result<()> {
    let a = &first.shape;
    let same_keys = a.keys.len() == shape.keys.len()
        && a.keys
            .iter()
            .zip(&shape.keys)
            .all(|(x, y)| x.eq_ignore_ascii_case(y));
    let difference = if !same_keys {
        Some(format!(
            "KEYS ({}) vs ({})",
            a.keys.join(", "),
            shape.keys.join(", ")
        ))
    } else if a.sequence_type != shape.sequence_type {
        Some(format!(
            "the SEQUENCE BY type ({} vs {})",
            a.sequence_type, shape.sequence_type
        ))
    } else if a.system_sequence_type != shape.system_sequence_type {
        let name = |t: &Option<crate::value::DataType>| {
            t.as_ref().map_or("none".to_string(), |t| t.to_string())
        };
        Some(format!(
            "the SYSTEM SEQUENCE BY type ({} vs {})",
            name(&a.system_sequence_type),
            name(&shape.system_sequence_type)
        ))
    } else if a.scd != shape.scd {
        Some(format!(
            "the SCD type ({} vs {})",
            scd_name(a.scd),
            scd_name(shape.scd)
        ))
    } else if a.image != shape.image {
        Some(format!("the columns ({} vs {})", a.image, shape.image))
    } else if a.tracked != shape.tracked {
        Some("the TRACK HISTORY columns".to_string())
    } else {
        None
    };
    match difference {
        None => Ok(()),
        Some(what) => Err(invalid(
            flow.line,
            format!(
                "INTO: flows `{}` (line {}) and `{}` into `{}` disagree on {what}; flows into one target need the same keys, sequence type, SCD type, columns and tracked columns",
                first.flow, first.line, flow.name.text, flow.target.text
            ),
        )),
    }
}

pub(crate) fn scd_name(scd: ScdType) -> &'static str {
    match scd {
        ScdType::Type1 => "SCD TYPE 1",
        ScdType::Type2 => "SCD TYPE 2",
        ScdType::Bitemporal => "BITEMPORAL",
    }
}

fn target(catalog: &Catalog, t: usize, first: Option<First>) -> Result<Target> {
    let stmt = &catalog.tables[t];
    let Some(first) = first else {
        let message = format!(
            "CREATE STREAMING TABLE {}: the table has no query (AS SELECT) and no flow writes into it",
            stmt.name.text
        );
        return Err(invalid(stmt.line, message));
    };
    let shape = first.shape;
    let mut schema = shape.image.clone();
    if shape.scd.has_history() {
        for name in ["__START_AT", "__END_AT"] {
            schema.columns.push(Column {
                name: name.to_string(),
                ty: shape.sequence_type.clone(),
            });
        }
    }
    if let Some(ty) = &shape.system_sequence_type {
        for name in ["__SYSTEM_START_AT", "__SYSTEM_END_AT"] {
            schema.columns.push(Column {
                name: name.to_string(),
                ty: ty.clone(),
            });
        }
    }
    if let Some(declared) = &stmt.columns {
        let writer = format!("flow `{}`", first.flow);
        check_declared(declared, &schema, &stmt.name.text, &writer, stmt.line)?;
    }
    Ok(Target {
        kind: first.kind,
        name: stmt.name.text.clone(),
        schema,
        image_len: shape.image.len(),
        keys: shape.key_positions,
        scd: shape.scd,
        sequence_type: shape.sequence_type,
        system_sequence_type: shape.system_sequence_type,
        tracked: shape.tracked,
        partial: first.partial,
        tombstone_gc_seconds: tombstone_gc(&stmt.properties)?,
        replace_where: None,
        view_of: None,
        properties: published_properties(&stmt.properties)?,
        line: stmt.line,
    })
}

/// Warns of each `TBLPROPERTIES` key of `table` that scdflow does not act on: a Lakeflow
/// pipeline's settings (`pipelines.channel`, ...) parse, but only [`TOMBSTONE_PROPERTY`] and,
/// on streaming tables, the Delta table properties their published tables take change what
/// scdflow does, and a silently ignored key reads as one that took effect.
pub(crate) fn unknown_properties(
    table: &super::syntax::TableStmt,
    warnings: &mut Vec<(u64, String)>,
) {
    let published = table.kind == super::syntax::TableKind::StreamingTable;
    for (key, value, line) in &table.properties {
        if key.eq_ignore_ascii_case(TOMBSTONE_PROPERTY) {
            continue;
        }
        let name = &table.name.text;
        let warning = match crate::delta::target_property(key, value) {
            Ok(TargetProperty::Published) | Err(_) if published => continue,
            Ok(TargetProperty::AlwaysOn(what)) if published => format!(
                "TBLPROPERTIES `{key}` of `{name}` changes nothing: a published table always \
                 has {what}"
            ),
            _ => format!(
                "TBLPROPERTIES `{key}` of `{name}` has no effect in scdflow (it reads \
                 {TOMBSTONE_PROPERTY}, and streaming tables pass Delta's table properties to \
                 their published tables); ignored"
            ),
        };
        warnings.push((*line, warning));
    }
}

/// The properties a streaming table's published Delta table takes; a bad value or an unknown
/// `delta.` key is an error naming its line.
pub(crate) fn published_properties(
    properties: &[(String, String, u64)],
) -> Result<BTreeMap<String, String>> {
    let mut published = BTreeMap::new();
    for (key, value, line) in properties {
        match crate::delta::target_property(key, value) {
            Ok(TargetProperty::Published) => {
                published.insert(key.clone(), value.clone());
            }
            Ok(_) => {}
            Err(why) => return Err(invalid(*line, format!("TBLPROPERTIES: {why}"))),
        }
    }
    Ok(published)
}

/// `pipelines.cdc.tombstoneGCThresholdInSeconds`: a non-negative whole number of seconds.
fn tombstone_gc(properties: &[(String, String, u64)]) -> Result<u64> {
    let Some((_, value, line)) = properties
        .iter()
        .rfind(|(key, _, _)| key.eq_ignore_ascii_case(TOMBSTONE_PROPERTY))
    else {
        return Ok(DEFAULT_TOMBSTONE_GC_SECONDS);
    };
    value.trim().parse().map_err(|_| {
        let message = format!(
            "TBLPROPERTIES: {TOMBSTONE_PROPERTY} must be a non-negative whole number of seconds, found `{value}`"
        );
        invalid(*line, message)
    })
}

//! Targets (tables declared without a query) and the flows into them. A target's shape comes
//! from its flows, which must all agree on it (D16); a declared column list must match it.

use super::catalog::Catalog;
use super::cursor::invalid;
use super::flows::{build_flow, Shape};
use super::schema::check_declared;
use crate::plan::{
    CdcFlow, ScdType, SourceTable, Target, TargetKind, DEFAULT_TOMBSTONE_GC_SECONDS,
};
use crate::value::Column;
use crate::Result;

const TOMBSTONE_PROPERTY: &str = "pipelines.cdc.tombstoneGCThresholdInSeconds";

/// The first flow into a target: the shape every other flow must match.
struct First {
    shape: Shape,
    flow: String,
    line: u64,
    partial: bool,
}

/// Builds every flow (declaration order) and every target (declaration order of the tables).
/// `sources[i]` is the catalog index of `tables[i]`.
pub(crate) fn build_targets(
    catalog: &Catalog,
    tables: &[SourceTable],
    sources: &[usize],
    warnings: &mut Vec<(u64, String)>,
) -> Result<(Vec<Target>, Vec<CdcFlow>)> {
    let target_tables: Vec<usize> = (0..catalog.tables.len())
        .filter(|&i| catalog.tables[i].query.is_none())
        .collect();
    let mut firsts: Vec<Option<First>> = target_tables.iter().map(|_| None).collect();
    let mut flows = Vec::with_capacity(catalog.flows.len());
    for stmt in &catalog.flows {
        let t = catalog.resolve(&stmt.target, "INTO")?;
        let Some(target) = target_tables.iter().position(|&i| i == t) else {
            let message = format!(
                "INTO: `{}` is defined by a query (AS SELECT); an AUTO CDC target must be declared without one",
                stmt.target.text
            );
            return Err(invalid(stmt.target.line, message));
        };
        let source_name = stmt
            .clauses
            .source
            .as_ref()
            .ok_or_else(|| invalid(stmt.line, "AUTO CDC: the FROM clause is required"))?;
        let s = catalog.resolve(source_name, "FROM")?;
        let Some(source) = sources.iter().position(|&i| i == s) else {
            let message = format!(
                "FROM: `{}` is an AUTO CDC target, not an append-only source table",
                source_name.text
            );
            return Err(invalid(source_name.line, message));
        };
        let (flow, shape) = build_flow(stmt, &tables[source], source, target, warnings)?;
        match &mut firsts[target] {
            slot @ None => {
                let partial = shape.partial;
                *slot = Some(First {
                    shape,
                    flow: flow.name.clone(),
                    line: flow.line,
                    partial,
                })
            }
            Some(first) => {
                check_same_shape(first, &shape, &flow, &stmt.target.text)?;
                first.partial |= shape.partial;
            }
        }
        flows.push(flow);
    }
    let targets = target_tables
        .iter()
        .zip(firsts)
        .map(|(&t, first)| target(catalog, t, first))
        .collect::<Result<_>>()?;
    Ok((targets, flows))
}

/// D16: flows into one target must agree on everything that shapes it except partial updates.
fn check_same_shape(first: &First, shape: &Shape, flow: &CdcFlow, target: &str) -> Result<()> {
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
                "INTO: flows `{}` (line {}) and `{}` into `{target}` disagree on {what}; flows into one target need the same keys, sequence type, SCD type, columns and tracked columns",
                first.flow, first.line, flow.name
            ),
        )),
    }
}

pub(crate) fn scd_name(scd: ScdType) -> &'static str {
    match scd {
        ScdType::Type1 => "SCD TYPE 1",
        ScdType::Type2 => "SCD TYPE 2",
    }
}

fn target(catalog: &Catalog, t: usize, first: Option<First>) -> Result<Target> {
    let stmt = &catalog.tables[t];
    let Some(first) = first else {
        let message = format!(
            "CREATE STREAMING TABLE {}: the table has no query (AS SELECT) and no AUTO CDC flow writes into it",
            stmt.name.text
        );
        return Err(invalid(stmt.line, message));
    };
    let shape = first.shape;
    let mut schema = shape.image.clone();
    if shape.scd == ScdType::Type2 {
        for name in ["__START_AT", "__END_AT"] {
            schema.columns.push(Column {
                name: name.to_string(),
                ty: shape.sequence_type.clone(),
            });
        }
    }
    if let Some(declared) = &stmt.columns {
        let writer = format!("flow `{}`", first.flow);
        check_declared(declared, &schema, &stmt.name.text, &writer, stmt.line)?;
    }
    Ok(Target {
        kind: TargetKind::AutoCdc,
        name: stmt.name.text.clone(),
        schema,
        image_len: shape.image.len(),
        keys: shape.key_positions,
        scd: shape.scd,
        sequence_type: shape.sequence_type,
        tracked: shape.tracked,
        partial: first.partial,
        tombstone_gc_seconds: tombstone_gc(&stmt.properties)?,
        line: stmt.line,
    })
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

//! The human-readable plan printed by `scdflow check`: sources, targets, flows and warnings.
//!
//! The text depends only on the pipeline (no clocks, no hash order); input paths under the
//! pipeline file's directory are shown relative to it, so the output is the same wherever the
//! project is checked out.

use super::describe_flows::{replace_flow_text, snapshot_flow_text};
use super::targets::scd_name;
use crate::expr::Expr;
use crate::plan::{
    CdcFlow, DeltaRead, Expectation, Format, OnViolation, PartialUpdates, Pipeline, SourceInput,
    SourceTable, Target, TargetKind,
};
use crate::value::Schema;
use std::fmt::Write;
use std::path::Path;

/// Renders `p` as indented text, one line per fact.
pub fn describe(p: &Pipeline) -> String {
    let mut out = format!("pipeline {}\n", p.file.display());
    let base = p.file.parent().unwrap_or(Path::new(""));
    for table in &p.tables {
        source(&mut out, table, p, base);
    }
    for target in &p.targets {
        target_text(&mut out, target);
    }
    for flow in &p.flows {
        flow_text(&mut out, flow, p);
    }
    for flow in &p.snapshot_flows {
        snapshot_flow_text(&mut out, flow, p, base);
    }
    for flow in &p.replace_flows {
        replace_flow_text(&mut out, flow, p);
    }
    if !p.warnings.is_empty() {
        out.push_str("\nwarnings\n");
        for w in &p.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    out
}

fn source(out: &mut String, t: &SourceTable, p: &Pipeline, base: &Path) {
    let _ = writeln!(out, "\nsource {} (line {})", t.name, t.line);
    match &t.input {
        SourceInput::Files {
            path,
            format,
            header,
            file_schema,
            declared,
        } => {
            let shown = shown_path(path, base);
            let format = format_text(*format, *header);
            let _ = writeln!(out, "  input: read_files {shown} ({format})");
            let how = if *declared { "declared" } else { "inferred" };
            let _ = writeln!(out, "  file schema ({how}): {file_schema}");
        }
        SourceInput::Table(i) => {
            let name = p.tables.get(*i).map_or("?", |u| u.name.as_str());
            let _ = writeln!(out, "  input: stream of {name}");
        }
        SourceInput::TargetFeed(target) => {
            let name = p.targets.get(*target).map_or("?", |u| u.name.as_str());
            let stage = p.stages().get(*target).map_or(0, |s| s + 1);
            let _ = writeln!(
                out,
                "  input: the change data feed of target {name}, in the same commit (stage {stage})"
            );
        }
        SourceInput::Union(parents) => {
            let names: Vec<&str> = (parents.iter())
                .map(|&i| p.tables.get(i).map_or("?", |u| u.name.as_str()))
                .collect();
            let _ = writeln!(out, "  input: the append flows {}", names.join(", "));
        }
        SourceInput::Values { rows, schema } => {
            let once = if t.once { ", once" } else { "" };
            let _ = writeln!(out, "  input: VALUES, {} rows ({schema}){once}", rows.len());
        }
        SourceInput::Delta { dir, table, read } => {
            let shown = shown_path(dir, base);
            let how = match read {
                DeltaRead::Appends { .. } => "stream",
                DeltaRead::Snapshots => "snapshots",
                DeltaRead::ChangeFeed { .. } => "change data feed",
            };
            let from = match read.starting_version() {
                Some(v) => format!(", from version {v}"),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "  input: {how} of the Delta table {table} ({shown}){from}"
            );
        }
    }
    if let Some(items) = &t.projection {
        let _ = writeln!(out, "  select: {}", select_list(items, &t.schema));
    }
    if let Some(filter) = &t.filter {
        let _ = writeln!(out, "  where: {filter}");
    }
    let _ = writeln!(out, "  schema: {}", t.schema);
    expectations_text(out, &t.expectations);
}

/// `path` relative to the pipeline file's directory when under it.
pub(super) fn shown_path(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

pub(super) fn format_text(format: Format, header: bool) -> &'static str {
    match (format, header) {
        (Format::Csv, true) => "csv with header",
        (Format::Csv, false) => "csv without header",
        (Format::Json, _) => "json lines",
        (Format::Parquet, _) => "parquet",
    }
}

/// One line per expectation: name, condition and action.
pub(super) fn expectations_text(out: &mut String, expectations: &[Expectation]) {
    for e in expectations {
        let action = match e.action {
            OnViolation::Warn => "warn",
            OnViolation::DropRow => "drop row",
            OnViolation::FailUpdate => "fail update",
        };
        let _ = writeln!(
            out,
            "  expect {}: {} (on violation: {action})",
            e.name, e.condition
        );
    }
}

pub(super) fn select_list(items: &[Expr], schema: &Schema) -> String {
    let items = items.iter().zip(&schema.columns).map(|(e, c)| {
        if e.text() == c.name {
            c.name.clone()
        } else {
            format!("{e} AS {}", c.name)
        }
    });
    items.collect::<Vec<_>>().join(", ")
}

pub(super) fn names(schema: &Schema, indices: impl IntoIterator<Item = usize>) -> String {
    let names: Vec<&str> = indices
        .into_iter()
        .filter_map(|i| schema.columns.get(i).map(|c| c.name.as_str()))
        .collect();
    names.join(", ")
}

fn target_text(out: &mut String, t: &Target) {
    let _ = writeln!(out, "\ntarget {} (line {})", t.name, t.line);
    let over = t.view_of.as_ref().map(|over| {
        format!("MATERIALIZED VIEW over `{over}` (its query's rows, kept from `{over}`'s change data feed)")
    });
    let kind = match t.kind {
        TargetKind::AutoCdc if over.is_some() => over.as_deref().unwrap_or_default(),
        TargetKind::AutoCdc => "AUTO CDC",
        TargetKind::Snapshot
            if t.replace_where
                .as_ref()
                .is_some_and(|r| r.materialized_view) =>
        {
            "MATERIALIZED VIEW (its query's rows, replaced at each update)"
        }
        TargetKind::Snapshot if t.replace_where.is_some() => {
            "REPLACE WHERE (the rows its condition holds for replaced at each update)"
        }
        TargetKind::Snapshot => "AUTO CDC FROM SNAPSHOT",
        TargetKind::ReplaceUsing { .. } => "REPLACE USING (rows replaced per key)",
    };
    let _ = writeln!(out, "  maintained by: {kind}");
    if let Some(r) = t.replace_where.as_ref().filter(|r| !r.materialized_view) {
        let _ = writeln!(out, "  replace where: {}", r.condition);
    }
    let replace = matches!(t.kind, TargetKind::ReplaceUsing { .. })
        || t.replace_where.is_some()
        || t.view_of.is_some();
    if !replace {
        let _ = writeln!(out, "  stored as: {}", scd_name(t.scd));
    }
    let _ = writeln!(out, "  schema: {}", t.schema);
    let _ = writeln!(out, "  keys: {}", names(&t.schema, t.keys.iter().copied()));
    let _ = writeln!(out, "  sequence type: {}", t.sequence_type);
    if let Some(ty) = &t.system_sequence_type {
        let _ = writeln!(out, "  system sequence type: {ty}");
    }
    if t.scd.has_history() {
        let _ = writeln!(out, "  tracked columns: {}", tracked_columns(t));
    }
    if t.kind == TargetKind::AutoCdc && t.view_of.is_none() {
        let partial = if t.partial { "yes" } else { "no" };
        let _ = writeln!(out, "  partial updates: {partial}");
    }
    if !replace {
        let _ = writeln!(out, "  tombstone GC: {} s", t.tombstone_gc_seconds);
    }
}

/// The non-key image columns whose changes open a new SCD2 version.
pub(super) fn tracked_columns(t: &Target) -> String {
    let tracked = (0..t.image_len).filter(|i| t.tracked[*i] && !t.keys.contains(i));
    match names(&t.schema, tracked) {
        none if none.is_empty() => "(none)".to_string(),
        some => some,
    }
}

fn flow_text(out: &mut String, f: &CdcFlow, p: &Pipeline) {
    let source = p.tables.get(f.source);
    let target = p.targets.get(f.target).map_or("?", |t| t.name.as_str());
    let once = if f.once { " (once)" } else { "" };
    let _ = writeln!(
        out,
        "\nflow {} (line {}){once}: {} -> {target}",
        f.name,
        f.line,
        source.map_or("?", |s| s.name.as_str())
    );
    let empty = Schema::default();
    let schema = source.map_or(&empty, |s| &s.schema);
    let _ = writeln!(out, "  keys: {}", names(schema, f.keys.iter().copied()));
    let _ = writeln!(out, "  sequence by: {} ({})", f.sequence, f.sequence.ty());
    if let Some(e) = &f.system_sequence {
        let _ = writeln!(out, "  system sequence by: {e} ({})", e.ty());
    }
    if let Some(e) = &f.delete_when {
        let _ = writeln!(out, "  delete when: {e}");
    }
    if let Some(e) = &f.truncate_when {
        let _ = writeln!(out, "  truncate when: {e}");
    }
    let _ = writeln!(
        out,
        "  columns: {}",
        names(schema, f.columns.iter().copied())
    );
    let partial = match &f.partial {
        PartialUpdates::Off => "off".to_string(),
        PartialUpdates::IgnoreNull(mask) => {
            let on = f
                .columns
                .iter()
                .zip(mask)
                .filter(|(_, m)| **m)
                .map(|(c, _)| *c);
            format!("IGNORE NULL UPDATES ON ({})", names(schema, on))
        }
        PartialUpdates::ColumnsToUpdate(c) => format!("COLUMNS TO UPDATE {}", names(schema, [*c])),
    };
    let _ = writeln!(out, "  partial updates: {partial}");
    expectations_text(out, &f.expectations);
}

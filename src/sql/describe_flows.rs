//! The `scdflow check` text of AUTO CDC FROM SNAPSHOT, REPLACE WHERE and REPLACE USING flows (the rest of the
//! description, and its determinism rules, are in `describe`).

use super::describe::{
    expectations_text, format_text, names, select_list, shown_path, tracked_columns,
};
use super::targets::scd_name;
use crate::plan::{Pipeline, ReplaceFlow, SnapshotFlow, SnapshotSource, VersionedInput};
use std::fmt::Write;
use std::path::Path;

pub(super) fn snapshot_flow_text(out: &mut String, f: &SnapshotFlow, p: &Pipeline, base: &Path) {
    let target = p.targets.get(f.target);
    let once = if f.once { " (once)" } else { "" };
    let source = match &f.source {
        SnapshotSource::Files { path, .. } => shown_path(path, base),
        SnapshotSource::Table { table } => p.tables.get(*table).map_or("?", |t| &t.name).into(),
        SnapshotSource::Versioned(v) => match &v.input {
            VersionedInput::Files { path, .. } => shown_path(path, base),
            VersionedInput::Delta { table, .. } => table.clone(),
        },
    };
    let kind = match target.and_then(|t| t.replace_where.as_ref()) {
        Some(r) if r.materialized_view => "materialized view flow",
        Some(_) => "replace where flow",
        None => "snapshot flow",
    };
    let _ = writeln!(
        out,
        "\n{kind} {} (line {}){once}: {source} -> {}",
        f.name,
        f.line,
        target.map_or("?", |t| t.name.as_str())
    );
    match &f.source {
        SnapshotSource::Files {
            version_pattern,
            format,
            header,
            file_schema,
            ..
        } => {
            let format = format_text(*format, *header);
            let _ = writeln!(
                out,
                "  snapshots: files named '{version_pattern}' ({format}), versioned by the first capture group"
            );
            let _ = writeln!(out, "  file schema: {file_schema}");
        }
        SnapshotSource::Table { .. } if target.is_some_and(|t| t.replace_where.is_some()) => {
            let _ = writeln!(out, "  reads: {source} whole, at each new version");
        }
        SnapshotSource::Table { .. } => {
            let _ = writeln!(
                out,
                "  snapshots: every commit of {source} (periodic, versioned by commit number)"
            );
        }
        SnapshotSource::Versioned(v) => {
            let _ = writeln!(
                out,
                "  snapshots: the version WITH VERSION ({}) returns",
                v.version_query
            );
            if let VersionedInput::Files {
                format,
                header,
                file_schema,
                ..
            } = &v.input
            {
                let format = format_text(*format, *header);
                let _ = writeln!(out, "  files: {format}, schema {file_schema}");
            }
            let select: Vec<String> = v.select.iter().map(ToString::to_string).collect();
            let _ = writeln!(out, "  select: {}", select.join(", "));
            if let Some(filter) = &v.filter {
                let _ = writeln!(out, "  where: {filter}");
            }
        }
    }
    if let Some(items) = &f.projection {
        let _ = writeln!(out, "  select: {}", select_list(items, &f.schema));
    }
    if let Some(filter) = &f.filter {
        let _ = writeln!(out, "  where: {filter}");
    }
    let _ = writeln!(out, "  schema: {}", f.schema);
    let _ = writeln!(out, "  keys: {}", names(&f.schema, f.keys.iter().copied()));
    if let Some(t) = target {
        let _ = writeln!(out, "  stored as: {}", scd_name(t.scd));
        if t.scd.has_history() {
            let _ = writeln!(out, "  tracked columns: {}", tracked_columns(t));
        }
    }
    expectations_text(out, &f.expectations);
}

pub(super) fn replace_flow_text(out: &mut String, f: &ReplaceFlow, p: &Pipeline) {
    let target = p.targets.get(f.target);
    let once = if f.once { " (once)" } else { "" };
    let _ = writeln!(
        out,
        "\nreplace flow {} (line {}){once}: {} -> {}",
        f.name,
        f.line,
        p.tables.get(f.source).map_or("?", |s| s.name.as_str()),
        target.map_or("?", |t| t.name.as_str())
    );
    let Some(t) = target else { return };
    let _ = writeln!(
        out,
        "  replace using: {}",
        names(&t.schema, f.keys.iter().copied())
    );
    let sequence = t.schema.columns.get(f.sequence);
    let _ = writeln!(
        out,
        "  sequence by: {} ({})",
        sequence.map_or("?", |c| c.name.as_str()),
        t.sequence_type
    );
    if let Some(items) = &f.projection {
        let _ = writeln!(out, "  select: {}", select_list(items, &t.schema));
    }
    if let Some(filter) = &f.filter {
        let _ = writeln!(out, "  where: {filter}");
    }
    expectations_text(out, &f.expectations);
}

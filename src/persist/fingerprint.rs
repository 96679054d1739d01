//! What a persisted state depends on in the pipeline, so that a changed pipeline is refused
//! rather than silently misread (SPEC 3.9 E-K3, 3.10, 7.1).
//!
//! Per target: its kind, SCD type, keys (names and types), sequence and system sequence types,
//! image columns (names and types), tracked columns and partial folding. Per flow: its target,
//! its source and whether it runs once. Everything else (tombstone retention, expectations,
//! filters) may change between runs: it governs new input only. Names compare as written.

use crate::plan::{Pipeline, ScdType, SnapshotSource, Target, TargetKind, VersionedInput};
use crate::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};

/// The shape of a pipeline that its persisted state depends on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    targets: Vec<TargetPrint>,
    flows: Vec<FlowPrint>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct TargetPrint {
    name: String,
    kind: String,
    scd: String,
    keys: Vec<String>,
    sequence: String,
    system_sequence: Option<String>,
    columns: Vec<String>,
    tracked: Vec<String>,
    partial: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct FlowPrint {
    name: String,
    target: String,
    source: String,
    once: bool,
}

impl Fingerprint {
    /// The fingerprint of `pipeline`.
    pub fn of(pipeline: &Pipeline) -> Self {
        let targets = pipeline.targets.iter().map(target_print).collect();
        let target = |t: usize| pipeline.targets[t].name.clone();
        let table = |t: usize| format!("table `{}`", pipeline.tables[t].name);
        let mut flows: Vec<FlowPrint> = Vec::new();
        for f in &pipeline.flows {
            flows.push(FlowPrint {
                name: f.name.clone(),
                target: target(f.target),
                source: table(f.source),
                once: f.once,
            });
        }
        for f in &pipeline.snapshot_flows {
            let source = match &f.source {
                SnapshotSource::Files { path, .. } => format!("snapshots `{}`", path.display()),
                SnapshotSource::Table { table: t } => table(*t),
                // Its queries, like filters, govern new input only: they may change.
                SnapshotSource::Versioned(v) => match &v.input {
                    VersionedInput::Files { path, .. } => {
                        format!("versioned snapshots `{}`", path.display())
                    }
                    VersionedInput::Delta { table, .. } => {
                        format!("versioned snapshots of {table}")
                    }
                },
            };
            flows.push(FlowPrint {
                name: f.name.clone(),
                target: target(f.target),
                source,
                once: f.once,
            });
        }
        for f in &pipeline.replace_flows {
            flows.push(FlowPrint {
                name: f.name.clone(),
                target: target(f.target),
                source: table(f.source),
                once: f.once,
            });
        }
        Fingerprint { targets, flows }
    }

    /// Checks that a state written for `self` can serve a pipeline whose fingerprint is
    /// `now`; the error names the first change and suggests `--full-refresh`.
    pub fn check(&self, now: &Fingerprint) -> Result<()> {
        let refuse = |what: String| {
            Err(Error::new(
                ErrorKind::State,
                format!(
                    "{what} since the state was written; the state cannot serve the changed \
                     pipeline: run with --full-refresh to rebuild it from all input"
                ),
            ))
        };
        for old in &self.targets {
            let Some(new) = now.targets.iter().find(|t| t.name == old.name) else {
                return refuse(format!("target `{}` was removed", old.name));
            };
            if let Some(change) = target_change(old, new) {
                return refuse(format!("target `{}`: {change}", old.name));
            }
        }
        if let Some(new) = now
            .targets
            .iter()
            .find(|t| !self.targets.iter().any(|o| o.name == t.name))
        {
            return refuse(format!("target `{}` is new", new.name));
        }
        for old in &self.flows {
            let Some(new) = now.flows.iter().find(|f| f.name == old.name) else {
                return refuse(format!("flow `{}` was removed", old.name));
            };
            if old != new {
                let change = if old.target != new.target {
                    format!("writes `{}` instead of `{}`", new.target, old.target)
                } else if old.source != new.source {
                    format!("reads {} instead of {}", new.source, old.source)
                } else {
                    format!("is {} ONCE", if new.once { "now" } else { "no longer" })
                };
                return refuse(format!("flow `{}` {change}", old.name));
            }
        }
        if let Some(new) = now
            .flows
            .iter()
            .find(|f| !self.flows.iter().any(|o| o.name == f.name))
        {
            return refuse(format!("flow `{}` is new", new.name));
        }
        Ok(())
    }
}

fn target_print(t: &Target) -> TargetPrint {
    let column = |i: usize| {
        let c = &t.schema.columns[i];
        format!("{} {}", c.name, c.ty)
    };
    TargetPrint {
        name: t.name.clone(),
        kind: match t.kind {
            TargetKind::AutoCdc => "AUTO CDC".into(),
            // The condition is not part of the state's shape: changing it (a backfill of an
            // older range, say) goes on from the same rows.
            TargetKind::Snapshot if t.replace_where.is_some() => "REPLACE WHERE".into(),
            TargetKind::Snapshot => "AUTO CDC FROM SNAPSHOT".into(),
            TargetKind::ReplaceUsing { sequence } => {
                format!(
                    "REPLACE USING, SEQUENCE BY {}",
                    t.schema.columns[sequence].name
                )
            }
        },
        scd: match t.scd {
            ScdType::Type1 => "SCD TYPE 1",
            ScdType::Type2 => "SCD TYPE 2",
            ScdType::Bitemporal => "BITEMPORAL",
        }
        .into(),
        keys: t.keys.iter().map(|&k| column(k)).collect(),
        sequence: t.sequence_type.to_string(),
        system_sequence: t.system_sequence_type.as_ref().map(ToString::to_string),
        columns: (0..t.image_len).map(column).collect(),
        tracked: (0..t.image_len)
            .filter(|&i| t.tracked.get(i).copied().unwrap_or(false))
            .map(|i| t.schema.columns[i].name.clone())
            .collect(),
        partial: t.partial,
    }
}

/// The first difference between two prints of one target, in words.
fn target_change(old: &TargetPrint, new: &TargetPrint) -> Option<String> {
    let list = |v: &[String]| format!("({})", v.join(", "));
    if old.kind != new.kind {
        return Some(format!(
            "its flow kind changed from {} to {}",
            old.kind, new.kind
        ));
    }
    if old.scd != new.scd {
        return Some(format!("STORED AS changed from {} to {}", old.scd, new.scd));
    }
    if old.keys != new.keys {
        return Some(format!(
            "KEYS changed from {} to {}",
            list(&old.keys),
            list(&new.keys)
        ));
    }
    if old.sequence != new.sequence {
        return Some(format!(
            "the SEQUENCE BY type changed from {} to {}",
            old.sequence, new.sequence
        ));
    }
    if old.system_sequence != new.system_sequence {
        let show = |s: &Option<String>| s.clone().unwrap_or_else(|| "none".into());
        return Some(format!(
            "the SYSTEM SEQUENCE BY type changed from {} to {}",
            show(&old.system_sequence),
            show(&new.system_sequence)
        ));
    }
    if old.columns != new.columns {
        return Some(format!(
            "its columns changed from {} to {}",
            list(&old.columns),
            list(&new.columns)
        ));
    }
    if old.tracked != new.tracked {
        return Some(format!(
            "TRACK HISTORY ON changed from {} to {}",
            list(&old.tracked),
            list(&new.tracked)
        ));
    }
    if old.partial != new.partial {
        return Some(format!(
            "partial updates (IGNORE NULL UPDATES / COLUMNS TO UPDATE) were turned {}",
            if new.partial { "on" } else { "off" }
        ));
    }
    None
}

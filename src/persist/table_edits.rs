//! Edits of a durable run's published targets made by other writers — DML through `scdflow
//! sql` (`INSERT`, `UPDATE`, `DELETE` on the table) — taken into the engine's state before its
//! next commit, so that later events apply on top of them ([`crate::engine::edit`]).
//!
//! Which versions are edits: the versions of a target's table after the last one this state
//! wrote (its `txn`) that change data and carry no `txn` of it. A step that commits writes a
//! version of every target after them, with a state that holds their edits; a session that
//! commits nothing leaves them to be taken again by the next one. Within a session the edits
//! taken are remembered ([`Absorbed`]), so `--follow` takes each once. A version's rows come
//! from its change data feed ([`crate::delta::Log::version_changes`]): removed rows (`delete`,
//! `update_preimage`) and added ones (`insert`, `update_postimage`), grouped by key.
//!
//! Limits: an edit of a target that takes none (bitemporal, REPLACE USING) is
//! an error naming the version, as is one whose rows the state does not hold (the table was
//! changed in a way the state cannot follow); both need `--full-refresh`.

use crate::delta::{Log, Prepared, Table};
use crate::engine::changefeed::ChangeType;
use crate::engine::{HistoryRules, KeyEdit};
use crate::plan::Pipeline;
use crate::runtime::Edits;
use crate::value::Value;
use crate::{Error, ErrorKind, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Per target, the newest table version whose edits the engine holds (`None`: not looked at
/// since the engine started, so from the state's last own version).
#[derive(Debug, Default)]
pub struct Absorbed(Vec<Option<u64>>);

impl Absorbed {
    /// Forgets what was taken (the engine restarts from its checkpoint).
    pub fn reset(&mut self) {
        self.0.clear();
    }

    /// Takes the versions this session just put in the tables' logs (`prepared`, per published
    /// table, the targets first) as looked at: they are its own, so they hold no edits, and the
    /// next step looks for versions past them with one file check per target (see [`pending`])
    /// instead of opening each log and reading its own last version back (0.6 ms of each
    /// followed step of a pipeline with two published tables).
    pub fn published(&mut self, prepared: &[Vec<Prepared>]) {
        for (absorbed, prepared) in self.0.iter_mut().zip(prepared) {
            let own = prepared.iter().map(|p| p.version).max();
            if let (Some(absorbed), Some(own)) = (absorbed.as_mut(), own) {
                *absorbed = own.max(*absorbed);
            }
        }
    }
}

/// The edits in the published targets' tables (`dirs`, written by state `id`) that the engine
/// does not hold yet, in version order per target; `now` is the latest commit time.
pub fn pending(
    pipeline: &Pipeline,
    dirs: &[PathBuf],
    id: &str,
    absorbed: &mut Absorbed,
    now: i64,
) -> Result<Vec<Edits>> {
    absorbed.0.resize(dirs.len(), None);
    let mut edits = Vec::new();
    for (t, (target, dir)) in pipeline.targets.iter().zip(dirs).enumerate() {
        if !Table::exists(dir) {
            // Created by this session's first step, after this.
            continue;
        }
        // Versions are contiguous: without the one after the newest looked at, none is new.
        if absorbed.0[t].is_some_and(|v| !Log::has_entry(dir, v + 1)) {
            continue;
        }
        let log = Log::open(dir)?;
        let app = super::published::app_id(&target.name, id);
        let after = match absorbed.0[t] {
            Some(v) => v,
            None => log.last_version_of(&app)?,
        };
        let (versions, latest) = log.others_versions(after, &app)?;
        for version in versions {
            let rules = HistoryRules::of(target).map_err(|why| {
                let message = format!(
                    "Delta table {}: version {version} was written by another writer, and {why}; \
                     start over with --full-refresh",
                    dir.display()
                );
                Error::new(ErrorKind::Validation, message)
            })?;
            let keys = key_edits(&log, version, &rules)?;
            edits.push(Edits {
                target: t,
                version,
                now,
                rules,
                keys,
            });
        }
        absorbed.0[t] = Some(latest);
    }
    Ok(edits)
}

/// A version's changes as edits of each key.
fn key_edits(log: &Log, version: u64, rules: &HistoryRules) -> Result<Vec<KeyEdit>> {
    let width = rules.schema.columns.len();
    let columns: Vec<usize> = (0..width).collect();
    let mut keys: BTreeMap<_, KeyEdit> = BTreeMap::new();
    for change in log.version_changes(version, &rules.schema)? {
        let row = change.project(&columns);
        let added = match change.value(width) {
            Value::Str(kind) if kind == ChangeType::Insert.as_str() => true,
            Value::Str(kind) if kind == ChangeType::UpdatePostimage.as_str() => true,
            Value::Str(kind) if kind == ChangeType::Delete.as_str() => false,
            Value::Str(kind) if kind == ChangeType::UpdatePreimage.as_str() => false,
            other => {
                return Err(Error::new(
                    ErrorKind::Format,
                    format!("Delta table version {version}: a change of type {other:?}"),
                ))
            }
        };
        let key = rules.key_of(&row);
        let edit = keys.entry(key.clone()).or_insert_with(|| KeyEdit {
            key,
            ..KeyEdit::default()
        });
        match added {
            true => edit.added.push(row),
            false => edit.removed.push(row),
        }
    }
    Ok(keys.into_values().collect())
}

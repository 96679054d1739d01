//! A durable run's published tables ([`Pipeline::published`]: its targets, then its streaming
//! tables) as Delta tables: opened at a session's start (rolling
//! forward what the last commit prepared), prepared commit by commit during a step, and
//! published once the step's manifest is committed.
//!
//! Exactly-once: a step's Delta versions are prepared (data, deletion-vector and change-data
//! files written, log entries held) while it runs; the manifest the step commits records the
//! entries ([`crate::persist::store::Publishing`]); only then are they put in the tables' logs,
//! each with `txn` = its scdflow commit. A crash before the manifest leaves orphan data files
//! and the previous versions (the next run prepares the commits again); a crash after it
//! leaves entries the next session puts in the log first, skipping any whose commit the
//! table's `txn` already holds — so no commit is published twice or lost, and the tables
//! never hold a commit the state does not.
//!
//! Scdflow commit `n` is Delta version `n` of a table the state created. A state binds its
//! tables: one that was published elsewhere, or as files, is refused (`--full-refresh` starts
//! over, publishing afresh, and only replaces a table scdflow published).

use crate::delta::{roll_forward, MaintainedTable, Table};
use crate::output::{kept, table_properties};
use crate::persist::Manifest;
use crate::plan::Pipeline;
use crate::{Error, ErrorKind, Result};
use std::path::PathBuf;

/// The application id a target's table records a state's commits under (`txn`).
pub fn app_id(target: &str, state: &str) -> String {
    format!("scdflow:{target}:{state}")
}

/// Checks `dirs` (per published table, empty: files) against a committed `manifest` and rolls forward
/// the versions it prepared. With `rewinding`, a table may hold commits after the manifest's
/// (a rewind that stopped before returning it; the rewind does).
pub fn resume(
    pipeline: &Pipeline,
    manifest: &Manifest,
    dirs: &[PathBuf],
    rewinding: bool,
) -> Result<()> {
    let bound = &manifest.publishing.tables;
    if !bound.is_empty() && bound.len() < dirs.len() && dirs.starts_with(bound) {
        let tables = pipeline.published();
        let name = tables.get(bound.len()).map_or("", |t| t.name);
        return Err(Error::new(
            ErrorKind::State,
            format!(
                "the state publishes the pipeline's targets but not its streaming tables (it \
                 was written before scdflow published them): `{name}` would miss the rows of \
                 its {} commits; start over with --full-refresh to publish every table",
                manifest.version
            ),
        ));
    }
    if bound != dirs {
        let shown = |dirs: &[PathBuf]| match dirs.first() {
            None => "as files in --out".to_string(),
            Some(first) => format!(
                "as Delta tables in {}",
                first.parent().unwrap_or(first).display()
            ),
        };
        return Err(Error::new(
            ErrorKind::State,
            format!(
                "the state's targets were published {}, this run's go {}: pass the same \
                 --warehouse, --catalog and --schema, or start over with --full-refresh",
                shown(bound),
                shown(dirs)
            ),
        ));
    }
    for (t, (table, dir)) in pipeline.published().iter().zip(dirs).enumerate() {
        let target = table.name;
        if !Table::exists(dir) {
            return Err(Error::new(
                ErrorKind::State,
                format!(
                    "`{target}` was published as {} by this state, and that table is \
                     gone; start over with --full-refresh to publish it afresh",
                    dir.display()
                ),
            ));
        }
        let prepared = manifest.publishing.prepared.get(t).map_or(&[][..], |p| p);
        let app = app_id(target, &manifest.publishing.id);
        // The table holds this state's commits up to the last one published: the manifest's
        // last, or one before the versions it prepared.
        let held = MaintainedTable::last_commit_in(dir, &app)?.unwrap_or(0);
        let from = prepared.first().map_or(manifest.version, |p| p.commit - 1);
        if held > manifest.version && rewinding {
            continue;
        }
        if held > manifest.version {
            return Err(Error::new(
                ErrorKind::State,
                format!(
                    "`{target}`'s table {} holds commit {held}, after the state's last \
                     ({}): a rewind stopped before returning the table (run `scdflow rewind \
                     ... --to {}` again), or the state is older than the table",
                    dir.display(),
                    manifest.version,
                    manifest.version
                ),
            ));
        }
        if held < from {
            return Err(Error::new(
                ErrorKind::State,
                format!(
                    "`{target}`'s table {} does not hold this state's {} commits (another \
                     run wrote it since); start over with --full-refresh to publish it afresh",
                    dir.display(),
                    manifest.version
                ),
            ));
        }
        roll_forward(dir, &app, prepared)?;
    }
    Ok(())
}

/// Makes `dirs` ready for a state that has no commit: a table scdflow published with no
/// commit yet (a first run that died) is kept; one with commits is refused, unless
/// `full_refresh`, when it is removed (never a table scdflow did not publish).
pub fn start(pipeline: &Pipeline, dirs: &[PathBuf], full_refresh: bool) -> Result<()> {
    for (table, dir) in pipeline.published().iter().zip(dirs) {
        if !dir.exists() {
            continue;
        }
        crate::output::refuse_foreign(table.name, dir)?;
        // A first run that died left the table as it created it: version 0.
        let empty = crate::delta::Log::open(dir)?.latest_version()? == 0;
        if empty {
            continue;
        }
        if !full_refresh {
            return Err(Error::new(
                ErrorKind::State,
                format!(
                    "`{}` is published as {} by another run already; this state has no \
                     commit: start over with --full-refresh to publish it afresh",
                    table.name,
                    dir.display()
                ),
            ));
        }
        std::fs::remove_dir_all(dir).map_err(|e| Error::write(dir, &e))?;
    }
    Ok(())
}

/// Opens (creating it when missing) each published table, written by state `id`.
pub fn open(pipeline: &Pipeline, dirs: &[PathBuf], id: &str) -> Result<Vec<MaintainedTable>> {
    let mut tables = Vec::new();
    for (published, dir) in pipeline.published().iter().zip(dirs) {
        let app = app_id(published.name, id);
        let (schema, kept) = (published.schema, kept(pipeline, published));
        let table = match Table::exists(dir) {
            true => MaintainedTable::open_as(dir, schema, &app, kept)?,
            false => {
                let properties = table_properties(pipeline, published);
                MaintainedTable::create_as(dir, schema, &properties, &app, kept)?
            }
        };
        tables.push(table);
    }
    Ok(tables)
}

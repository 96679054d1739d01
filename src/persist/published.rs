//! A durable run's published tables ([`Pipeline::published`]: its targets, then its streaming
//! tables) as Delta tables: opened at a session's start (rolling forward what the last commit
//! prepared, and finding the commits they hold that the state lost), prepared commit by
//! commit during a step, and published before or after the step's manifest.
//!
//! Exactly-once: a step's Delta versions are prepared (data, deletion-vector and change-data
//! files written, log entries held) while it runs, each with `txn` = its scdflow commit. A
//! step whose commits all read streams puts them in the tables' logs before its manifest;
//! a crash between the two is caught up with by the next run ([`super::catch_up`]). Any
//! other step commits a manifest that records the entries
//! ([`crate::persist::store::Publishing`]) and only then puts them in the logs: a crash before
//! the manifest leaves orphan data files and the previous versions (the next run prepares the
//! commits again); a crash after it leaves entries the next session puts in the log first,
//! skipping any whose commit the table's `txn` already holds. So no commit is published twice
//! or lost.
//!
//! Scdflow commit `n` is Delta version `n` of a table the state created. A state binds its
//! tables: one that was published elsewhere, or as files, is refused (`--full-refresh` starts
//! over, publishing afresh, and only replaces a table scdflow published).

use crate::delta::{roll_forward, Log, MaintainedTable, Table};
use crate::output::{kept, table_properties};
use crate::persist::Manifest;
use crate::plan::Pipeline;
use crate::{Error, ErrorKind, Result};
use std::path::{Path, PathBuf};

/// The application id a target's table records a state's commits under (`txn`).
pub fn app_id(target: &str, state: &str) -> String {
    format!("scdflow:{target}:{state}")
}

/// Checks `dirs` (per published table, empty: files) against a committed `manifest`, rolls
/// forward the versions it prepared and returns, per table, the last commit of the state it
/// holds: after the manifest's when a step published and its manifest was lost (see
/// [`super::catch_up`]). With `rewinding`, a table may also hold commits a rewind that stopped
/// did not take back (the rewind does); without, those are refused.
pub fn resume(
    pipeline: &Pipeline,
    manifest: &Manifest,
    dirs: &[PathBuf],
    rewinding: bool,
) -> Result<Vec<u64>> {
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
    let mut holds = Vec::new();
    for (t, (table, dir)) in pipeline.published().iter().zip(dirs).enumerate() {
        let target = table.name;
        if !Table::exists(dir) {
            // A state whose first step failed before creating its tables.
            if manifest.version == 0 {
                holds.push(0);
                continue;
            }
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
        // last, or one before the versions it prepared, or after it (see `catch_up`).
        let held = MaintainedTable::last_commit_in(dir, &app)?.unwrap_or(0);
        let from = prepared.first().map_or(manifest.version, |p| p.commit - 1);
        holds.push(held);
        if held > manifest.version && (rewinding || !rewind_stopped(manifest, t, dir, &app)?) {
            continue;
        }
        if held > manifest.version {
            return Err(Error::new(
                ErrorKind::State,
                format!(
                    "`{target}`'s table {} holds commit {held}, after the state's last \
                     ({}): a rewind stopped before returning the table (run `scdflow rewind \
                     ... --to {}` again)",
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
    Ok(holds)
}

/// Whether published table `t` (at `dir`, written as `app`) holds its last commit in a version
/// that a rewind not followed by a commit yet found there (see [`Manifest::rewound`]).
fn rewind_stopped(manifest: &Manifest, t: usize, dir: &Path, app: &str) -> Result<bool> {
    let Some(newest) = manifest.rewound.as_ref().and_then(|r| r.get(t)) else {
        return Ok(false);
    };
    Ok(Log::open(dir)?.last_version_of(app)? <= *newest)
}

/// Whether a table at `dirs` holds a commit of the state whose manifest, never committed
/// since it was made, is `manifest`: its first step published and then failed (see
/// [`super::catch_up`]).
pub fn holds_commits(pipeline: &Pipeline, manifest: &Manifest, dirs: &[PathBuf]) -> Result<bool> {
    if manifest.publishing.tables != dirs {
        return Ok(false);
    }
    for (table, dir) in pipeline.published().iter().zip(dirs) {
        let app = app_id(table.name, &manifest.publishing.id);
        if Table::exists(dir) && MaintainedTable::last_commit_in(dir, &app)?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
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
        let properties = table_properties(pipeline, published);
        let table = match Table::exists(dir) {
            true => {
                let mut table = MaintainedTable::open_as(dir, schema, &app, kept)?;
                table.set_properties(&properties)?;
                table
            }
            false => MaintainedTable::create_as(dir, schema, &properties, &app, kept)?,
        };
        tables.push(table);
    }
    Ok(tables)
}

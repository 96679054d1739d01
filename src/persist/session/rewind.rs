//! `scdflow rewind PIPELINE --state DIR --to VERSION`: the state, its change feeds, its tables
//! and its published targets returned to an earlier commit; the next run reprocesses the input
//! consumed after it.
//!
//! Order, so that a stop at any instant leaves a state a rerun completes:
//! 1. check everything before changing anything: the commit is retained (its base or delta
//!    keeps the manifest that committed it, [`StateDir::manifest_of`]), and each published
//!    table still holds the version of that commit, with its data files ([`Restore::check`]);
//! 2. commit that manifest (the commit point: the state is at the commit from now on);
//! 3. cut appended files (change feeds, set-aside rows, the metrics log) to its lengths, and
//!    remove the ones it does not know (first written after the commit);
//! 4. return each published table to the commit: one new Delta version whose change data feed
//!    undoes what came after (readers of the feed see the undo; Delta history only grows);
//! 5. rewrite the target files and `metrics.json` from the restored state.
//!
//! A stop after 2 leaves tables ahead of the state: a run refuses them, naming the rewind (the
//! manifest of 2 records the tables' newest versions, [`crate::persist::Manifest::rewound`],
//! so that commits a later step published before a crash are told apart and caught up with);
//! the rewind run again (the state already at the commit) completes 4 and 5.
//!
//! Limits: commits before the last compaction of the state's checkpoints are not retained
//! (compaction keeps one base); nor are commits of states written before their checkpoints kept
//! manifests. Edits of published targets (DML) made after the commit are undone with it.

use super::{absolute_paths, NewInput, Session};
use crate::delta::{Restore, Restored};
use crate::persist::{appended, published};
use crate::Result;
use std::path::PathBuf;
use std::time::Instant;

/// What a rewind did.
#[derive(Debug)]
pub struct Rewound {
    /// The state's last commit before.
    pub from: u64,
    /// Its last commit now.
    pub to: u64,
    /// Appended files cut back or removed.
    pub cut: Vec<PathBuf>,
    /// Per published table: the version that returned it (`None`: it held nothing after).
    pub restored: Vec<Option<Restored>>,
    /// Every target's table file and its rows, and `metrics.json`, rewritten.
    pub tables: Vec<(PathBuf, usize)>,
}

impl<'a> Session<'a> {
    /// Opens the state directory for [`Session::rewind`]: as [`Session::open`], but published
    /// tables may hold commits after the state's (an earlier rewind that stopped).
    pub fn open_for_rewind(
        pipeline: &'a crate::plan::Pipeline,
        options: &'a crate::driver::Options,
        durability: &super::Durability,
    ) -> Result<Self> {
        Self::open_for(pipeline, options, durability, true)
    }

    /// Returns the state, its outputs and its published tables to commit `to`; see the module
    /// docs.
    pub fn rewind(&mut self, to: u64) -> Result<Rewound> {
        let from = self.manifest.version;
        let mut rewound = self.dir.manifest_of(&self.manifest, to)?;
        absolute_paths(&mut rewound, self.dir.path())?;
        let id = &self.manifest.publishing.id;
        let restores = (self.pipeline.published().iter().zip(&self.published))
            .map(|(table, dir)| Restore::check(dir, &published::app_id(table.name, id), to))
            .collect::<Result<Vec<_>>>()?;
        // Until the next commit, the tables' commits up to their newest versions now are the
        // ones this rewind takes back, were it to stop before it does.
        let newest = (self.published.iter())
            .map(|dir| crate::delta::Log::open(dir)?.latest_version())
            .collect::<Result<Vec<_>>>()?;
        rewound.rewound = (!newest.is_empty()).then_some(newest);
        self.dir.rewind(&rewound)?;
        self.driver = None;
        self.publisher = None;
        self.absorbed.reset();
        appended::recover(&rewound.appended, &rewound.checks.appended)?;
        let mut cut: Vec<PathBuf> = (rewound.appended.iter())
            .filter(|a| {
                let was = self.manifest.appended.iter().find(|b| b.path == a.path);
                was.is_some_and(|b| b.len != a.len)
            })
            .map(|a| a.path.clone())
            .collect();
        for later in &self.manifest.appended {
            if rewound.appended.iter().all(|a| a.path != later.path) {
                match std::fs::remove_file(&later.path) {
                    Ok(()) => cut.push(later.path.clone()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(crate::Error::write(&later.path, &e)),
                }
            }
        }
        self.manifest = rewound;
        let now = crate::driver::now_micros().max(self.manifest.last_timestamp);
        let restored = (restores.iter())
            .map(|r| r.apply(now))
            .collect::<Result<Vec<_>>>()?;
        let run = self.step_on(NewInput(Vec::new()), Instant::now(), None, true)?;
        Ok(Rewound {
            from,
            to,
            cut,
            restored,
            tables: run.tables,
        })
    }
}

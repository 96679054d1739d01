//! Compaction keeps the files few: whenever `F` files hold live rows of the same order of
//! magnitude (a tier: live rows in `[F^k, F^(k+1))`), they are merged into one (their live rows
//! read back, deletion vectors applied) in the next version, so a row is rewritten about
//! `log_F(rows)` times over its life and a file's deleted rows fall to its live size's tier.
//! The merge's actions carry `dataChange = false`; data files are zstd, change-data files
//! snappy ([`crate::delta::files::Codec`]). Merges are made between versions
//! ([`MaintainedTable::merge_ahead`]) and go into the next one, before its commit's changes
//! (which then remove rows from the merged files): a durable step merges once its version is
//! prepared, while that version is published and the next commit is read, so a commit does
//! not wait for the merge its own version made due (ten followed 10,000-event commits 0.4 s
//! apart: the slowest took 222–243 ms, three of ten over 100, when merges were made inside
//! the version; 56–62 ms now). A commit that comes before the last one's merge is done still
//! waits for it (back to back, the slowest of ten still took 199–226 ms). A writer that does
//! not merge ahead (a plain [`MaintainedTable::commit`]) merges at the start of each version.
//! `F` is [`FANOUT`] (8) for rows later commits remove (a history's open rows, a target's
//! rows): a merge drops their removed rows, so the deletion vectors, which a commit rewrites
//! whole for every file it touches, stay small. It is [`COLD_FANOUT`] (32) for rows no commit
//! removes (appends) or few do (settled rows), whose merges only bound the file count: each is
//! rewritten about `log_32` rather than `log_8` times. Measured over 100 1,000-event commits
//! on a 900,000-row history: merges wrote 56 KB a commit, 86 KB with one fanout of 8 (which,
//! for open rows, is the best of 4, 8 and 16: 16 doubled the vectors' bytes, 4 merged more
//! than the vectors saved); the table kept 48 files (36) and its streaming table of 1M
//! appended rows 39 (13).
//!
//! A merge reads its files as Arrow and moves their rows in the index by the hashes each live
//! file keeps ([`super::merge`]): ten followed 10,000-event SCD2 commits back to back took at
//! most 113–127 ms so, 197–219 ms with merges through packed rows (the slowest waits for a
//! merge; p50 unchanged, 48–49 ms against 49–51, three alternating runs each).
//!
//! A table of appends ([`Kept::Appends`]: a published streaming table, whose commits only add
//! rows) keeps no index, and opening it reads no rows, only the log's file list and row counts.
//! Its files never change once written, so its merges run on a thread of their own beside as
//! many versions as they take, and go into the first version prepared once they are done: a
//! 32-file tier of a 1M-row streaming table took ~150–200 ms, longer than a 10,000-event
//! commit, which then waited for it.
//!
//! Invariant: a merge changes no version's rows (its actions carry no data change), and every
//! live row it moves is moved in the index to its place in the merged file.

use super::{merge, write_file, Kept, LiveFile, MaintainedTable, NewFile};
use crate::delta::files::remove;
use crate::delta::table::{self, failed};
use crate::Result;
use deltalake::kernel::{Action, Add};
use roaring::RoaringTreemap;
use std::collections::BTreeMap;
use std::panic::resume_unwind;
use std::thread::JoinHandle;

/// How many files of one tier are merged into one: open rows (or any a later commit may remove).
pub const FANOUT: u64 = 8;
/// How many files of one tier are merged into one: rows no commit removes (a table of appends)
/// or few do (a history's settled rows); see the module docs.
pub const COLD_FANOUT: u64 = 32;

/// A merge of a table of appends running on a thread of its own: the files it merges, and the
/// thread writing the merged file (its `add` and rows).
pub(super) struct Running {
    ids: Vec<u32>,
    pub(super) thread: JoinHandle<Result<(Add, u64)>>,
}

/// Merges made between two versions: their actions (the merged files' `add`s, the sources'
/// `remove`s), bytes written and rows moved.
#[derive(Default)]
pub(super) struct Ahead {
    pub(super) actions: Vec<Action>,
    pub(super) bytes: u64,
    pub(super) rows: u64,
}

impl MaintainedTable {
    /// Merges the tiers that are due now (see the module docs), ahead of the next version,
    /// which takes them in: a writer with time between two versions (a durable step, once it
    /// has prepared its version) spends it here instead of in the next commit's latency. The
    /// merged files are written now and referenced only by that version; a table dropped
    /// before it deletes them, a process that dies leaves them for the vacuum. Does nothing
    /// when merges are already ahead.
    pub fn merge_ahead(&mut self) -> Result<()> {
        if self.ahead.is_some() {
            return Ok(());
        }
        let mut ahead = Ahead::default();
        match self.kept {
            Kept::Appends => self.merge_beside(&mut ahead)?,
            _ => (ahead.bytes, ahead.rows) = self.compact(&mut ahead.actions)?,
        }
        self.ahead = Some(ahead);
        Ok(())
    }

    /// A table of appends merges a full tier on a thread of its own, beside as many versions as
    /// the merge takes, since no commit changes its files (none removes a row): a merge that
    /// is done goes into `ahead`; then, if none runs, a full tier starts merging.
    fn merge_beside(&mut self, ahead: &mut Ahead) -> Result<()> {
        self.take_merged(ahead)?;
        if self.running.is_some() {
            return Ok(());
        }
        let Some(ids) = self.full_tier() else {
            return Ok(());
        };
        let sources: Vec<(Add, u64, RoaringTreemap)> = (ids.iter())
            .map(|&id| self.files[id as usize].as_ref().expect("a live file"))
            .map(|file| (file.add.clone(), file.rows, file.deleted.clone()))
            .collect();
        let (store, dir, url) = (self.store.clone(), self.dir.clone(), self.url.clone());
        let (schema, arrow) = (self.schema.clone(), self.arrow.clone());
        let thread = std::thread::spawn(move || {
            let runtime = table::runtime(&dir)?;
            let (store, dir, schema, arrow) = (&store, &dir, &schema, &arrow);
            let reader = merge::Reader {
                runtime: &runtime,
                store,
                dir,
                schema,
                arrow,
            };
            let sources: Vec<merge::Source> = (sources.iter())
                .map(|(add, rows, deleted)| merge::Source {
                    add,
                    rows: *rows,
                    deleted,
                    hashes: &[],
                })
                .collect();
            let (batch, _) = reader.live(&sources)?;
            let rows = batch.num_rows() as u64;
            let add = write_file(&runtime, dir, &url, arrow.clone(), batch, false)?;
            Ok((add, rows))
        });
        self.running = Some(Running { ids, thread });
        Ok(())
    }

    /// Takes a table of appends' merge into `ahead` if it is done.
    pub(super) fn take_merged(&mut self, ahead: &mut Ahead) -> Result<()> {
        if !(self.running.as_ref()).is_some_and(|r| r.thread.is_finished()) {
            return Ok(());
        }
        let Running { ids, thread } = self.running.take().expect("a finished merge");
        let (add, rows) = thread.join().unwrap_or_else(|panic| resume_unwind(panic))?;
        for id in ids {
            let file = self.files[id as usize].take().expect("a file being merged");
            let gone = Action::Remove(remove(&file.add, 0, false));
            ahead.actions.push(gone);
        }
        ahead.bytes += add.size as u64;
        ahead.rows += rows;
        ahead.actions.push(Action::Add(add.clone()));
        self.files.push(Some(LiveFile {
            add,
            rows,
            deleted: RoaringTreemap::new(),
            settled: false,
            hashes: Vec::new(),
        }));
        Ok(())
    }

    /// The files of the first tier that has its fanout's count (see the module docs).
    fn full_tier(&self) -> Option<Vec<u32>> {
        // Open and settled files are merged apart: a tier is a class and a magnitude.
        let mut tiers: BTreeMap<(bool, u32), Vec<u32>> = BTreeMap::new();
        for (id, file) in self.files.iter().enumerate() {
            if let Some(file) = file {
                let magnitude = file.live().max(1).ilog(self.fanout(file.settled));
                tiers
                    .entry((file.settled, magnitude))
                    .or_default()
                    .push(id as u32);
            }
        }
        (tiers.into_iter())
            .find(|((settled, _), ids)| ids.len() as u64 >= self.fanout(*settled))
            .map(|(_, ids)| ids)
    }

    /// Merges each tier that has [`FANOUT`] files into one (see the module docs), adding the
    /// merges' actions to `actions` (the sources' `remove`s timed when a version takes them);
    /// returns the bytes written and rows moved.
    fn compact(&mut self, actions: &mut Vec<Action>) -> Result<(u64, u64)> {
        let (mut bytes, mut moved) = (0, 0);
        loop {
            // A file merged in this round leaves without a `remove`: no version held it.
            let fresh: Vec<String> = (actions.iter())
                .filter_map(|a| match a {
                    Action::Add(add) if add.deletion_vector.is_none() => Some(add.path.clone()),
                    _ => None,
                })
                .collect();
            let Some(ids) = self.full_tier() else {
                return Ok((bytes, moved));
            };
            let sources: Vec<merge::Source> = (ids.iter())
                .map(|&id| self.files[id as usize].as_ref().expect("a live file"))
                .map(|file| merge::Source {
                    add: &file.add,
                    rows: file.rows,
                    deleted: &file.deleted,
                    hashes: &file.hashes,
                })
                .collect();
            let (batch, hashes) = self.reader().live(&sources)?;
            if self.kept.indexed() && hashes.len() != batch.num_rows() {
                return Err(failed(&self.dir, "a merged file's rows have no hashes"));
            }
            for &id in &ids {
                let file = self.files[id as usize].take().expect("a live file");
                actions.retain(|a| !matches!(a, Action::Add(add) if add.path == file.add.path));
                let path = &file.add.path;
                if !fresh.contains(path)
                    && !(actions.iter()).any(|a| matches!(a, Action::Remove(r) if r.path == *path))
                {
                    actions.push(Action::Remove(remove(&file.add, 0, false)));
                }
            }
            moved += batch.num_rows() as u64;
            // A file written before open and settled rows were kept apart holds both: the
            // merge parts them.
            let parts = match self.kept {
                Kept::History(column) => {
                    merge::by_class(&batch, &hashes, column).map_err(|e| failed(&self.dir, e))?
                }
                Kept::Changes | Kept::Appends => {
                    let none = batch.slice(0, 0);
                    [(batch, hashes), (none, Vec::new())]
                }
            };
            for ((batch, hashes), settled) in parts.into_iter().zip([false, true]) {
                if batch.num_rows() == 0 {
                    continue;
                }
                let rows = batch.num_rows() as u64;
                let add = self.write_file(batch, false)?;
                let new = NewFile {
                    add,
                    rows,
                    hashes,
                    settled,
                };
                bytes += self.take_in(new, &ids, actions);
            }
        }
    }

    /// The fanout of a tier of settled files, or of open ones.
    fn fanout(&self, settled: bool) -> u64 {
        match (self.kept, settled) {
            (Kept::Appends, _) | (Kept::History(_), true) => COLD_FANOUT,
            _ => FANOUT,
        }
    }

    /// What a merge reads the table's files with.
    fn reader(&self) -> merge::Reader<'_> {
        merge::Reader {
            runtime: &self.runtime,
            store: &self.store,
            dir: &self.dir,
            schema: &self.schema,
            arrow: &self.arrow,
        }
    }
}

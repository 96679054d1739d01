//! Compaction keeps the files few: whenever `F` files hold live rows of the same order of
//! magnitude (a tier: live rows in `[F^k, F^(k+1))`), they are merged into one (their live rows
//! read back, deletion vectors applied) in the next version, so a row is rewritten about
//! `log_F(rows)` times over its life and a file's deleted rows fall to its live size's tier.
//! The merge's actions carry `dataChange = false`; data files are zstd, change-data files
//! snappy ([`crate::delta::files::Codec`]).
//!
//! A durable step merges beside its versions ([`MaintainedTable::merge_ahead`], once a version
//! is prepared): the first full tier is read and written on a thread of its own, one merge at a
//! time, while versions go on removing rows from its files; the first version prepared once
//! it is done takes it in, before its commit's changes. The merge read the files' rows live
//! when it began, in order, so a row removed since is found at its new place (its position
//! among them, within its class's file) and removed there by that version's deletion vector;
//! the live rows move in the index; a merge whose source a version emptied is dropped. When a
//! merge was made inside the next version, the slowest of ten followed 10,000-event commits
//! 0.4 s apart took 222–243 ms; made between versions but waited for by the next one, commits
//! fed back to back still took up to 199–226 ms (p99 of 20: 141–215 ms, three runs of `cargo
//! bench --bench delta_publish`); beside the versions, p99 55–77 ms in three runs alternating
//! with those, p50 unchanged (31.8–38.1 ms on 1 worker against 33.1–45.3). A writer that does
//! not merge ahead (a plain [`MaintainedTable::commit`]) merges at the start of each version,
//! one full tier after another.
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
//! rows) keeps no index, and opening it reads no rows, only the log's file list and row counts;
//! it merges beside its versions even without a merge ahead (a 32-file tier of a 1M-row
//! streaming table took ~150–200 ms, longer than a 10,000-event commit).
//!
//! Invariant: a merge changes no version's rows (its actions carry no data change), every
//! live row it moves is moved in the index to its place in the merged file, and every row
//! removed from its sources while it ran is removed from the merged file by the version that
//! takes it in. Limits: one merge runs at a time (tiers that fill meanwhile wait for it), and
//! taking a merge in (its rows moved in the index) is on the path of the version that finds
//! it done.

use super::{merge, write_file, Kept, MaintainedTable, NewFile};
use crate::delta::files::remove;
use crate::delta::row_index::Location;
use crate::delta::table::{self, failed};
use crate::Result;
use deltalake::arrow::buffer::BooleanBuffer;
use deltalake::arrow::datatypes::SchemaRef;
use deltalake::kernel::{Action, Add};
use deltalake::logstore::object_store::ObjectStoreExt;
use deltalake::logstore::ObjectStoreRef;
use deltalake::Path as StorePath;
use roaring::RoaringTreemap;
use std::collections::BTreeMap;
use std::panic::resume_unwind;
use std::path::PathBuf;
use std::thread::JoinHandle;

/// How many files of one tier are merged into one: open rows (or any a later commit may remove).
pub const FANOUT: u64 = 8;
/// How many files of one tier are merged into one: rows no commit removes (a table of appends)
/// or few do (a history's settled rows); see the module docs.
pub const COLD_FANOUT: u64 = 32;

/// A merge running on a thread of its own: the files it merges, each with the positions its
/// deletion vector held when the merge began, and the thread writing the merged files.
pub(super) struct Running {
    sources: Vec<(u32, RoaringTreemap)>,
    pub(super) thread: JoinHandle<Result<Merged>>,
    /// Its number among the table's unheld merges.
    pub(super) noted: u64,
}

/// What a merge wrote: its files (a history's open rows, then its settled rows; a class
/// without rows has none) and, for a history, which of the rows it read (the sources' live
/// rows when it began, in order) are settled.
pub(super) struct Merged {
    pub(super) files: Vec<NewFile>,
    settled: Option<BooleanBuffer>,
    /// Its number among the table's unheld merges.
    noted: u64,
}

/// Merges made between two versions: their actions (the merged files' `add`s, the sources'
/// `remove`s), bytes written and rows moved, and the rows removed from the merged files since
/// their merges began, by file id, which the next version's deletion vectors take.
#[derive(Default)]
pub(super) struct Ahead {
    pub(super) actions: Vec<Action>,
    pub(super) bytes: u64,
    pub(super) rows: u64,
    pub(super) deleted: BTreeMap<u32, RoaringTreemap>,
}

/// What a merge needs of the table, apart from it (the merge runs on a thread of its own).
struct Merging {
    kept: Kept,
    store: ObjectStoreRef,
    dir: PathBuf,
    url: url::Url,
    schema: crate::value::Schema,
    arrow: SchemaRef,
    /// The sources' `add`s, row counts, deletion vectors and hashes when the merge began.
    sources: Vec<(Add, u64, RoaringTreemap, Vec<u128>)>,
    /// Its number among the table's unheld merges.
    noted: u64,
}

impl Merging {
    /// Reads the sources' live rows and writes them as the merged files.
    fn run(self) -> Result<Merged> {
        let runtime = table::runtime(&self.dir)?;
        let reader = merge::Reader {
            runtime: &runtime,
            store: &self.store,
            dir: &self.dir,
            schema: &self.schema,
            arrow: &self.arrow,
        };
        let sources: Vec<merge::Source> = (self.sources.iter())
            .map(|(add, rows, deleted, hashes)| merge::Source {
                add,
                rows: *rows,
                deleted,
                hashes,
            })
            .collect();
        let (batch, hashes) = reader.live(&sources)?;
        if self.kept.indexed() && hashes.len() != batch.num_rows() {
            return Err(failed(&self.dir, "a merged file's rows have no hashes"));
        }
        // A file written before open and settled rows were kept apart holds both: the merge
        // parts them.
        let (parts, settled) = match self.kept {
            Kept::History(column) => {
                let (parts, settled) =
                    merge::by_class(&batch, &hashes, column).map_err(|e| failed(&self.dir, e))?;
                (parts, Some(settled))
            }
            Kept::Changes | Kept::Appends => {
                let none = batch.slice(0, 0);
                ([(batch, hashes), (none, Vec::new())], None)
            }
        };
        let mut files = Vec::new();
        for ((batch, hashes), settled) in parts.into_iter().zip([false, true]) {
            if batch.num_rows() == 0 {
                continue;
            }
            let rows = batch.num_rows() as u64;
            let (dir, url, arrow) = (&self.dir, &self.url, self.arrow.clone());
            let add = write_file(&runtime, dir, url, arrow, batch, false)?;
            files.push(NewFile {
                add,
                rows,
                hashes,
                settled,
            });
        }
        Ok(Merged {
            files,
            settled,
            noted: self.noted,
        })
    }
}

impl MaintainedTable {
    /// Merges ahead of the next version (see the module docs), which takes them in: a merge
    /// done since the last version goes into `ahead`; otherwise, unless one is running, the
    /// first full tier starts merging on a thread of its own. A writer with time between two
    /// versions (a durable step, once it has prepared its version; a session waiting for
    /// input) calls this there. The merged files are referenced only by the version that takes
    /// them; a table dropped before it deletes them, a process that dies leaves them for the
    /// vacuum. Does nothing when merges are already ahead.
    pub fn merge_ahead(&mut self) -> Result<()> {
        if self.ahead.is_some() {
            return Ok(());
        }
        let mut ahead = Ahead::default();
        self.take_merged(&mut ahead)?;
        // A merge reads files that versions hold: none starts beside one just taken in, whose
        // files no version holds yet.
        if ahead.actions.is_empty() && self.running.is_none() {
            if let Some((sources, merging)) = self.next_merge() {
                let noted = merging.noted;
                let thread = std::thread::spawn(move || merging.run());
                self.running = Some(Running {
                    sources,
                    thread,
                    noted,
                });
            }
        }
        self.ahead = Some(ahead);
        Ok(())
    }
    /// Merges the full tiers now, one after another, into `ahead` (a writer that does not merge
    /// ahead does so at the start of each version); a table of appends starts its merge on a
    /// thread instead, as [`MaintainedTable::merge_ahead`] does. Nothing merges while a merge
    /// ahead runs: it holds its files.
    pub(super) fn merge_now(&mut self, ahead: &mut Ahead) -> Result<()> {
        if self.kept == Kept::Appends {
            self.merge_ahead()?;
            *ahead = self.ahead.take().expect("merged ahead");
            return Ok(());
        }
        if self.running.is_some() {
            return Ok(());
        }
        while let Some((sources, merging)) = self.next_merge() {
            let merged = merging.run()?;
            self.take_in(sources, merged, ahead)?;
        }
        Ok(())
    }

    /// Takes a merge running beside the versions into `ahead` if it is done.
    pub(super) fn take_merged(&mut self, ahead: &mut Ahead) -> Result<()> {
        if !(self.running.as_ref()).is_some_and(|r| r.thread.is_finished()) {
            return Ok(());
        }
        let Running {
            sources, thread, ..
        } = self.running.take().expect("a finished merge");
        let merged = thread.join().unwrap_or_else(|panic| resume_unwind(panic))?;
        self.take_in(sources, merged, ahead)
    }

    /// The first full tier's merge: its files with their deletion vectors as they are, and
    /// what the merge reads; `None` when no tier is full. The merge is noted as begun
    /// ([`super::unheld`]): the caller runs it.
    fn next_merge(&self) -> Option<(Vec<(u32, RoaringTreemap)>, Merging)> {
        let ids = self.full_tier()?;
        let files = ids
            .iter()
            .map(|&id| (id, self.files[id as usize].as_ref().expect("a live file")));
        let (sources, read) = files
            .map(|(id, file)| {
                let read = (file.add.clone(), file.rows, file.deleted.clone());
                ((id, file.deleted.clone()), (read, file.hashes.clone()))
            })
            .unzip::<_, _, Vec<_>, Vec<_>>();
        let merging = Merging {
            kept: self.kept,
            store: self.store.clone(),
            dir: self.dir.clone(),
            url: self.url.clone(),
            schema: self.schema.clone(),
            arrow: self.arrow.clone(),
            sources: (read.into_iter())
                .map(|((add, rows, deleted), hashes)| (add, rows, deleted, hashes))
                .collect(),
            noted: self.unheld.began(),
        };
        Some((sources, merging))
    }

    /// Takes `merged`, the merge of the files `sources` (each with the positions its deletion
    /// vector held when the merge began), into `ahead`: the rows removed from the sources
    /// since are removed from the merged files at their new places, the merged files' live
    /// rows move there in the index, the sources leave (a source no version holds yet, merged
    /// earlier in the same version, without a `remove`). A merge one of whose sources has
    /// lost all its rows since is dropped, its files deleted.
    fn take_in(
        &mut self,
        sources: Vec<(u32, RoaringTreemap)>,
        merged: Merged,
        ahead: &mut Ahead,
    ) -> Result<()> {
        if (sources.iter()).any(|(id, _)| self.files[*id as usize].is_none()) {
            for file in &merged.files {
                let path = StorePath::from(file.add.path.as_str());
                // Best effort: a vacuum deletes what is left.
                let _ = self.runtime.block_on(self.store.delete(&path));
            }
            self.unheld.dropped(merged.noted);
            return Ok(());
        }
        let deleted = self.since(&sources, &merged)?;
        let ids: Vec<u32> = sources.iter().map(|(id, _)| *id).collect();
        let first = self.files.len() as u32;
        for ((new, deleted), file) in merged.files.iter().zip(&deleted).zip(first..) {
            let index = &mut self.index[usize::from(new.settled)];
            // Read ahead a block at a time, so that the block's slots are still cached.
            const BLOCK: usize = 4096;
            for (block, hashes) in new.hashes.chunks(BLOCK).enumerate() {
                index.warm(hashes.iter().copied());
                for (row, hash) in ((block * BLOCK) as u32..).zip(hashes) {
                    if !deleted.contains(u64::from(row)) {
                        index.moved(*hash, &ids, Location { file, row });
                    }
                }
            }
        }
        for id in ids {
            let file = self.files[id as usize].take().expect("a live source");
            ahead.deleted.remove(&id);
            let fresh = |a: &Action| matches!(a, Action::Add(add) if add.path == file.add.path);
            match ahead.actions.iter().any(fresh) {
                true => ahead.actions.retain(|a| !fresh(a)),
                false => ahead
                    .actions
                    .push(Action::Remove(remove(&file.add, 0, false))),
            }
        }
        for (new, deleted) in merged.files.into_iter().zip(deleted) {
            ahead.bytes += new.add.size as u64;
            ahead.rows += new.rows;
            let id = self.files.len() as u32;
            self.take_file(new, &mut ahead.actions);
            if !deleted.is_empty() {
                let file = self.files[id as usize].as_mut().expect("just taken");
                file.deleted = deleted.clone();
                ahead.deleted.insert(id, deleted);
            }
        }
        Ok(())
    }

    /// Per merged file, the positions of its rows removed from their sources since the merge
    /// began: the merged files hold the sources' rows live then, in order, each in its class's
    /// file.
    fn since(
        &self,
        sources: &[(u32, RoaringTreemap)],
        merged: &Merged,
    ) -> Result<Vec<RoaringTreemap>> {
        let part = |settled: bool| merged.files.iter().position(|f| f.settled == settled);
        let parts = [part(false), part(true)];
        let mut next = vec![0u64; merged.files.len()];
        let mut deleted = vec![RoaringTreemap::new(); merged.files.len()];
        let lost = || {
            failed(
                &self.dir,
                "a merge's files do not hold its sources' live rows",
            )
        };
        let mut k = 0;
        for (id, before) in sources {
            let file = self.files[*id as usize].as_ref().expect("a live source");
            let since = &file.deleted - before;
            let (mut skip, mut gone) = (before.iter().peekable(), since.iter().peekable());
            for p in 0..file.rows {
                if skip.next_if_eq(&p).is_some() {
                    continue;
                }
                let settled = (merged.settled.as_ref()).is_some_and(|s| k < s.len() && s.value(k));
                k += 1;
                let part = parts[usize::from(settled)].ok_or_else(lost)?;
                if gone.next_if_eq(&p).is_some() {
                    deleted[part].insert(next[part]);
                }
                next[part] += 1;
            }
        }
        if next.iter().zip(&merged.files).any(|(n, f)| *n != f.rows) {
            return Err(lost());
        }
        Ok(deleted)
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

    /// The fanout of a tier of settled files, or of open ones.
    fn fanout(&self, settled: bool) -> u64 {
        match (self.kept, settled) {
            (Kept::Appends, _) | (Kept::History(_), true) => COLD_FANOUT,
            _ => FANOUT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::tests::{history_schema, HistoryFeed};
    use crate::delta::Table;
    use rand::{RngExt, SeedableRng};
    use std::collections::BTreeMap;

    /// A history's merges taken in versions after they began, while those versions removed
    /// rows from the merged files (as merges ahead run beside a durable step's versions): each
    /// version holds what the feed leaves, read back by delta-rs, and the rows keep their
    /// places in the index (later commits remove them from the merged files). Its first 20
    /// commits write files mixing open and settled rows, whose merges part them.
    #[test]
    fn merges_taken_in_versions_later_keep_the_rows_removed_meanwhile_removed() {
        let schema = history_schema();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let mut table =
            MaintainedTable::create_as(&path, &schema, &BTreeMap::new(), "app", Kept::Changes)
                .unwrap();
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(11);
        let mut feed = HistoryFeed::new(11);
        // A merge run and held back: its sources, its files, the commit that takes it in.
        let mut held: Option<(Vec<(u32, RoaringTreemap)>, Merged, u64)> = None;
        let (mut taken, mut removed_meanwhile) = (0, 0);
        for commit in 1..=120u64 {
            if commit == 20 {
                // A merge's sources are the file ids of the table it began in.
                held = None;
                table = MaintainedTable::open_as(&path, &schema, "app", Kept::History(2)).unwrap();
            }
            let changes = feed.commit(commit);
            let mut ahead = Ahead::default();
            if held.as_ref().is_some_and(|(_, _, at)| *at == commit) {
                let (sources, merged, _) = held.take().unwrap();
                let before = ahead.deleted.len();
                table.take_in(sources, merged, &mut ahead).unwrap();
                removed_meanwhile += ahead.deleted.len() - before;
                taken += 1;
            }
            table.ahead = Some(ahead);
            let (prepared, _) = table
                .prepare(
                    commit,
                    1_000_000 * commit as i64,
                    &changes,
                    &Default::default(),
                )
                .unwrap();
            table.publish(&prepared).unwrap();
            if held.is_none() {
                if let Some((sources, merging)) = table.next_merge() {
                    let merged = merging.run().unwrap();
                    held = Some((sources, merged, commit + rng.random_range(1..5)));
                }
            }
            let expected = feed.rows();
            let mut rows = Table::open(&path).unwrap().rows().unwrap();
            rows.sort();
            assert_eq!(rows, expected, "after commit {commit}");
            let mut live = table.live_files().unwrap().into_iter().flat_map(|f| f.1);
            assert_eq!(
                live.by_ref().count(),
                expected.len(),
                "after commit {commit}"
            );
        }
        assert!(
            taken > 5 && removed_meanwhile > 0,
            "{taken} {removed_meanwhile}"
        );
        let files = table.live_files().unwrap();
        // Fewer than two full tiers of each class.
        let bound = 2 * (FANOUT + COLD_FANOUT) as usize;
        assert!(files.len() < bound, "{} files", files.len());
        for (is_settled, rows) in files.iter().filter(|f| f.0) {
            assert!(
                rows.iter().all(|r| !r.get(2).unwrap().is_null()),
                "{is_settled}"
            );
        }
    }
}

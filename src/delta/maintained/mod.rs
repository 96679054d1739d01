//! A Delta table maintained from a change feed: each commit's changes become one version, its
//! rows written in proportion to the change, never to the table.
//!
//! Layout of a version (one put-if-absent log entry, so it appears whole or not at all):
//! - the commit's new rows (inserts and post-images) in one new Parquet file — two for a
//!   history (see below): its open rows and its settled ones;
//! - the rows it removes (deletes and pre-images) as deletion vectors on the files holding
//!   them: each touched file is re-added with its grown vector (all vectors of a commit in one
//!   DV file, see [`super::dv`]), and a file with no row left is removed;
//! - the change data feed: the commit's changes with `_change_type` in one file under
//!   `_change_data/` (Delta's `cdc` action), which readers of the table's change data feed use
//!   as the version's changes;
//! - `txn` with the writer's application id and the scdflow commit, and `commitInfo` whose
//!   timestamp is the commit's (readers show it as `_commit_timestamp`) and whose
//!   [`FLOW_PROGRESS`] holds the commit's metrics per flow (the pipeline's event log);
//! - in the first version after the table's properties changed, its new `metaData`
//!   ([`MaintainedTable::set_properties`]): a version is a commit, so none is made for the
//!   properties alone.
//!
//! A version is first prepared (its files written, its log entry held as a [`Prepared`]) and
//! then published (the entry put in the log); [`MaintainedTable::commit`] does both. A durable
//! run publishes before its state commits (a step of streams' commits, whose `commitInfo`
//! records the input read, [`COMMIT_INPUT`], so that a state that lost them reads it again) or
//! after ([`roll_forward`] completes those entries after a crash).
//!
//! Compaction keeps the files few: files of the same order of magnitude are merged, each class
//! of rows apart, on a thread beside the versions, which take each merge in once it is done
//! ([`compaction`]).
//!
//! A history ([`Kept::History`]: an SCD2 or bitemporal target) keeps its settled rows — closed
//! versions, which later commits rarely remove — in files apart from its open rows, and
//! merges each class apart. Delta gives a file one deletion vector, rewritten whole when it
//! grows, and most commits remove open rows (the versions they close): were open and settled
//! rows mixed, every commit would rewrite vectors over files holding the whole history, bytes
//! growing with the table (measured: 162 KB of vectors per 1,000-event commit on a 900,000-row
//! history, then 25 KB with the classes apart). Vectors now grow with the open rows only.
//!
//! Invariant: the index of a row's class (open or settled, by the row itself) maps every live
//! row (by a 128-bit hash of its packed bytes) to its file and position, and each live file's
//! deletion vector holds exactly its removed positions;
//! a removal the index cannot place means the feed and the table disagree and fails the commit
//! before its version is prepared (the data and change-data files written meanwhile stay
//! unreferenced, for the vacuum). Memory: 32-64 bytes per live row for the index, and 16
//! per row of each live file for its rows' hashes, which a merge moves in the index without
//! reading the rows as packed rows ([`merge`]).
//!
//! Preparing a version, the removals are placed in the index while the new rows' data files
//! and the change-data file are encoded on threads of their own, the data files from the
//! change-data file's record batch (the same rows). With the placing and the data files side
//! by side, a followed 10,000-event step's p50 went from 47.7-50.7 to 44.8-45.6 ms (two
//! alternating runs of each build, 1 worker). Placing is memory-bound, and most removals of a
//! history are of open rows (the versions a commit closes): with one index for all rows,
//! placing the ~13,000 of a 10,000-event SCD2 commit on a 1M-row history looked each up among
//! a million entries (~9 ms); each class has its own index, so they are looked up among the
//! ~100,000 open rows (2.4 ms; 1.4 with the entries read ahead, [`RowIndex::warm`]), and a
//! followed step's p50 went from 44.5-48.8 to 41.5-43.4 ms. The new rows are placed there
//! too, at the files and positions their writing will give them, rather than after the files
//! are written (~2.5 ms of a 10,000-event SCD2 commit's ~20,000 new rows, on the path to its
//! version): file to log entry p50 38.8 -> 37.0 ms (eight alternating runs of each build, 20
//! followed steps each, 1 worker; ahead in six of the eight).
//!
//! A version whose changes are all inserts writes no change-data file: readers take the rows
//! of the file it adds (with `dataChange`) as its inserts, as the protocol says and as Spark's
//! own appends do, so the rows are written once, not twice (merges come before the commit's
//! files, so they never merge those away in the same version).
//!
//! Limits: the table's writer must be the only one (versions are made by this writer in
//! sequence: another writer's version makes the next commit fail); files merged away and
//! superseded DV files stay on disk until a vacuum deletes them after the retention period
//! ([`super::upkeep`]); files merged ahead for a version never prepared (the process died)
//! wait for the vacuum too — a table dropped with merges ahead deletes them itself.

mod compaction;
mod merge;
mod unheld;

pub use compaction::{COLD_FANOUT, FANOUT};

use super::batch::{arrow_schema, to_batch_with};
use super::dv::{self, DvFile};
use super::files::{self, as_add, remove, Codec};
use super::row_index::{self, Location, RowIndex};
use super::table::{failed, read_parquet};
use super::upkeep::{self, Schedule};
use crate::engine::changefeed::{ChangeType, FEED_COLUMN_NAMES};
use crate::value::{Row, Schema};
use crate::{Error, ErrorKind, Result};
use compaction::{Ahead, Running};
use deltalake::arrow::array::{RecordBatch, UInt64Array};
use deltalake::arrow::compute::take;
use deltalake::arrow::datatypes::SchemaRef;
use deltalake::kernel::transaction::{CommitData, TransactionError};
use deltalake::kernel::{Action, Add, AddCDCFile, Metadata, MetadataExt, Transaction};
use deltalake::logstore::object_store::{ObjectStoreExt, PutPayload};
use deltalake::logstore::{CommitOrBytes, LogStoreRef, ObjectStoreRef};
use deltalake::protocol::{DeltaOperation, OutputMode};
use deltalake::Path as StorePath;
use roaring::RoaringTreemap;
use smallvec::SmallVec;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::resume_unwind;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use tokio::runtime::Runtime;
use unheld::Unheld;

/// The `commitInfo` field holding a version's flow progress: per flow into the table, its name
/// and its metrics for the commit (`event_log(TABLE(t))` in `scdflow sql` reads them).
pub const FLOW_PROGRESS: &str = "flowProgress";

/// The `commitInfo` field holding the input a durable run's commit read (its file and the
/// bytes or versions it took), so that a run whose state lost the commit reads it again
/// exactly (`persist::catch_up`).
pub const COMMIT_INPUT: &str = "scdflowInput";

/// What a version's `commitInfo` records beside Delta's own fields.
#[derive(Clone, Debug, Default)]
pub struct Notes {
    /// The commit's flow progress ([`FLOW_PROGRESS`]); none: no field.
    pub progress: Vec<serde_json::Value>,
    /// The input it read ([`COMMIT_INPUT`]); `None`: no field.
    pub input: Option<serde_json::Value>,
}

/// What a maintained table's commits may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kept {
    /// Insert and remove rows (a target's change feed).
    Changes,
    /// Insert and remove rows of a history, where a row whose column `.0` is not NULL is
    /// settled (a closed version: later commits rarely remove it) and lives in files apart
    /// from the open rows (see the module docs).
    History(usize),
    /// Only insert rows (a streaming table's appends): no index is kept.
    Appends,
}

/// A file of the current version.
#[derive(Debug)]
struct LiveFile {
    add: Add,
    rows: u64,
    deleted: RoaringTreemap,
    /// Holds settled rows only ([`Kept::History`]).
    settled: bool,
    /// Its rows' hashes in file order (deleted ones too), for a merge to move them in the
    /// index without decoding them ([`merge`]); empty where rows are not indexed.
    hashes: Vec<u128>,
}

impl LiveFile {
    fn live(&self) -> u64 {
        self.rows - self.deleted.len()
    }
}

/// A data file just written: its `add`, its rows, their hashes in order (empty where rows are
/// not indexed), whether they are settled.
struct NewFile {
    add: Add,
    rows: u64,
    hashes: Vec<u128>,
    settled: bool,
}

impl Kept {
    /// Whether live rows are indexed (their removals placed).
    fn indexed(self) -> bool {
        self != Kept::Appends
    }

    /// Whether `row` is settled (see [`Kept::History`]).
    fn settled(self, row: &Row) -> bool {
        match self {
            Kept::History(column) => row.get(column).is_some_and(|d| !d.is_null()),
            Kept::Changes | Kept::Appends => false,
        }
    }
}

/// A version prepared and not yet in the log: its data files are written, its log entry is
/// held here. Publishing it ([`MaintainedTable::publish`], or [`roll_forward`] after a crash)
/// makes it the table's.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Prepared {
    /// The scdflow commit it holds (its `txn` version).
    pub commit: u64,
    /// The Delta version it becomes.
    pub version: u64,
    /// The log entry.
    pub entry: Vec<u8>,
}

/// What one commit wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// The Delta version made.
    pub version: u64,
    /// Bytes of data, change-feed, deletion-vector and log files written.
    pub bytes: u64,
    /// Rows rewritten by compaction.
    pub compacted_rows: u64,
}

/// A Delta table maintained from a change feed; see the module docs.
pub struct MaintainedTable {
    runtime: Runtime,
    store: ObjectStoreRef,
    log: LogStoreRef,
    url: url::Url,
    dir: PathBuf,
    schema: Schema,
    arrow: SchemaRef,
    cdc_schema: Schema,
    cdc_arrow: SchemaRef,
    app_id: String,
    kept: Kept,
    version: u64,
    schedule: Schedule,
    files: Vec<Option<LiveFile>>,
    /// Per class of row (open, settled: [`Kept::settled`]), the index of the live rows.
    index: [RowIndex; 2],
    /// Merges done ahead of the next version ([`MaintainedTable::merge_ahead`]), which they go
    /// into; `None` until merges are looked for again.
    ahead: Option<Ahead>,
    /// The merge running beside the versions, if one is.
    running: Option<Running>,
    /// The merges no published version holds yet, shared with the table's log.
    unheld: Unheld,
    /// The table's metadata as of the last version prepared.
    metadata: Metadata,
    /// New properties for the next version to carry ([`MaintainedTable::set_properties`]).
    new_metadata: Option<Metadata>,
}

impl MaintainedTable {
    /// Creates an empty table of `schema` at `dir` (version 0) with the change data feed and
    /// deletion vectors enabled and `properties`, written by the application `app_id`.
    pub fn create(
        dir: &Path,
        schema: &Schema,
        properties: &BTreeMap<String, String>,
        app_id: &str,
    ) -> Result<MaintainedTable> {
        Self::create_as(dir, schema, properties, app_id, Kept::Changes)
    }

    /// [`MaintainedTable::create`] of a table whose commits do what `kept` says. The change
    /// data feed is not enabled for a table with a column of a name the feed reserves
    /// ([`FEED_COLUMN_NAMES`]; only a table of appends may have one).
    pub fn create_as(
        dir: &Path,
        schema: &Schema,
        properties: &BTreeMap<String, String>,
        app_id: &str,
        kept: Kept,
    ) -> Result<MaintainedTable> {
        let reserved = feed_reserved(schema);
        if reserved && kept.indexed() {
            return Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "Delta table {}: a target with a column the change data feed reserves",
                    dir.display()
                ),
            ));
        }
        let properties = configuration(properties, schema);
        let table = super::Table::create(dir, schema, &properties, &[], false)?;
        drop(table);
        Self::open_as(dir, schema, app_id, kept)
    }

    /// Opens the maintained table at `dir`: its files, deletion vectors and live rows are read
    /// to build the index. Its columns must be `schema`'s.
    pub fn open(dir: &Path, schema: &Schema, app_id: &str) -> Result<MaintainedTable> {
        Self::open_as(dir, schema, app_id, Kept::Changes)
    }

    /// [`MaintainedTable::open`] of a table whose commits do what `kept` says: a table of
    /// appends reads its files' row counts from their statistics (a file without them is
    /// read) and their deletion vectors, not their rows.
    pub fn open_as(
        dir: &Path,
        schema: &Schema,
        app_id: &str,
        kept: Kept,
    ) -> Result<MaintainedTable> {
        let (runtime, url) = super::table::existing(dir)?;
        let table = runtime
            .block_on(deltalake::open_table(url.clone()))
            .map_err(|e| failed(dir, e))?;
        let arrow = arrow_schema(schema)?;
        let cdc_schema = files::feed_schema(schema);
        let cdc_arrow = arrow_schema(&cdc_schema)?;
        let snapshot = table.snapshot().map_err(|e| failed(dir, e))?;
        let columns = super::Table::open(dir)?.schema().clone();
        if columns != *schema {
            return Err(Error::new(
                ErrorKind::State,
                format!(
                    "Delta table {}: its columns are not the target's; drop it (`scdflow sql \
                     \"DROP TABLE ...\"`) or run without --state to publish it afresh",
                    dir.display()
                ),
            ));
        }
        let adds: Vec<Add> = snapshot.log_data().iter().map(|f| as_add(&f)).collect();
        let schedule = Schedule::of(snapshot.metadata().configuration(), dir)?;
        let mut maintained = MaintainedTable {
            store: table.object_store(),
            log: table.log_store(),
            version: table.version().unwrap_or(0),
            runtime,
            url,
            dir: dir.to_path_buf(),
            schema: schema.clone(),
            arrow,
            cdc_schema,
            cdc_arrow,
            app_id: app_id.to_string(),
            kept,
            schedule,
            files: Vec::new(),
            index: Default::default(),
            ahead: None,
            running: None,
            unheld: Unheld::default(),
            metadata: snapshot.metadata().clone(),
            new_metadata: None,
        };
        for add in adds {
            let where_ = dir.join(&add.path).display().to_string();
            let deleted = match &add.deletion_vector {
                Some(d) => dv::read(dir, d, &where_)?,
                None => RoaringTreemap::new(),
            };
            let file = maintained.files.len() as u32;
            let counted = stats_rows(&add).filter(|_| !kept.indexed());
            let (rows, settled, hashes) = match counted {
                Some(n) => (n, false, Vec::new()),
                None => {
                    let rows = maintained.read(&add)?;
                    let hashes: Vec<u128> = match kept.indexed() {
                        true => rows.iter().map(row_hash).collect(),
                        false => Vec::new(),
                    };
                    for (i, (row, hash)) in rows.iter().zip(&hashes).enumerate() {
                        if !deleted.contains(i as u64) {
                            let at = Location {
                                file,
                                row: i as u32,
                            };
                            let class = usize::from(kept.settled(row));
                            maintained.index[class].place(*hash, at);
                        }
                    }
                    let settled = !rows.is_empty() && rows.iter().all(|r| kept.settled(r));
                    (rows.len() as u64, settled, hashes)
                }
            };
            maintained.files.push(Some(LiveFile {
                rows,
                add,
                deleted,
                settled,
                hashes,
            }));
        }
        Ok(maintained)
    }

    /// The table's latest version.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Live rows.
    pub fn rows(&self) -> u64 {
        self.files.iter().flatten().map(LiveFile::live).sum()
    }

    /// Whether a merge ahead is still writing its files.
    #[cfg(test)]
    pub(crate) fn merging(&self) -> bool {
        (self.running.as_ref()).is_some_and(|r| !r.thread.is_finished())
    }

    /// Files of the current version.
    pub fn files(&self) -> usize {
        self.files.iter().flatten().count()
    }

    /// Each live file's live rows and whether it is a settled file.
    #[cfg(test)]
    pub(super) fn live_files(&self) -> Result<Vec<(bool, Vec<Row>)>> {
        (self.files.iter().flatten())
            .map(|file| {
                let rows = self.read(&file.add)?.into_iter().enumerate();
                let live = rows.filter(|(i, _)| !file.deleted.contains(*i as u64));
                Ok((file.settled, live.map(|(_, row)| row).collect()))
            })
            .collect()
    }

    /// The last scdflow commit this application wrote (its `txn` version), if any.
    pub fn last_commit(&self) -> Result<Option<u64>> {
        Self::last_commit_in(&self.dir, &self.app_id)
    }

    /// The last commit application `app_id` wrote to the table at `dir` (its `txn`), if any.
    pub fn last_commit_in(dir: &Path, app_id: &str) -> Result<Option<u64>> {
        let (runtime, url) = super::table::existing(dir)?;
        let table = runtime
            .block_on(deltalake::open_table(url))
            .map_err(|e| failed(dir, e))?;
        let log = table.log_store();
        let snapshot = table.snapshot().map_err(|e| failed(dir, e))?;
        let version = runtime
            .block_on(snapshot.transaction_version(log.as_ref(), app_id))
            .map_err(|e| failed(dir, e))?;
        Ok(version.map(|v| v as u64))
    }

    /// Makes `properties` the table's, as [`MaintainedTable::create`] would set them, from
    /// the next version on: a durable pipeline whose `TBLPROPERTIES` changed between runs
    /// publishes them with its next commit (a `metaData` action in that version, as Spark's
    /// `ALTER TABLE ... SET TBLPROPERTIES` writes one), and its checkpoints and vacuums follow
    /// the new schedule. Properties the table has and `properties` does not name are removed.
    /// Values are checked before anything is written.
    pub fn set_properties(&mut self, properties: &BTreeMap<String, String>) -> Result<()> {
        let wanted = configuration(properties, &self.schema);
        let current = self.metadata.configuration();
        let same = current.len() == wanted.len()
            && (wanted.iter()).all(|(k, v)| current.get(k).is_some_and(|c| c == v));
        if same {
            self.new_metadata = None;
            return Ok(());
        }
        let failed = |e| failed(&self.dir, e);
        let dropped: Vec<&String> = current
            .keys()
            .filter(|k| !wanted.contains_key(*k))
            .collect();
        let mut metadata = self.metadata.clone();
        for key in dropped {
            metadata = metadata.remove_config_key(key).map_err(failed)?;
        }
        for (key, value) in wanted {
            metadata = metadata.add_config_key(key, value).map_err(failed)?;
        }
        self.schedule = Schedule::of(metadata.configuration(), &self.dir)?;
        self.new_metadata = Some(metadata);
        Ok(())
    }

    /// Writes commit `commit`'s changes (in feed order) as the next version, with the commit's
    /// time `timestamp` (µs since the epoch).
    pub fn commit(
        &mut self,
        commit: u64,
        timestamp: i64,
        changes: &[(ChangeType, Row)],
        progress: &[serde_json::Value],
    ) -> Result<Written> {
        let notes = Notes {
            progress: progress.to_vec(),
            input: None,
        };
        let (prepared, written) = self.prepare(commit, timestamp, changes, &notes)?;
        self.publish(&prepared)?;
        Ok(written)
    }

    /// [`MaintainedTable::commit`] of the changes that return the table to version `version`
    /// (its `txn` then `commit`, the commit that version held), logged as a `RESTORE`.
    pub fn commit_restoring(
        &mut self,
        commit: u64,
        timestamp: i64,
        changes: &[(ChangeType, Row)],
        version: u64,
    ) -> Result<Written> {
        let operation = DeltaOperation::Restore {
            version: Some(version),
            datetime: None,
        };
        let notes = Notes::default();
        let (prepared, written) = self.prepare_as(commit, timestamp, changes, &notes, operation)?;
        self.publish(&prepared)?;
        Ok(written)
    }

    /// Writes the data files of commit `commit`'s changes and prepares its log entry as the
    /// version after the last one prepared; the table (as this value holds it) moves to that
    /// version. Until the entry is published, readers see the version before: a writer that
    /// cannot publish must drop this value and open the table again, as must one whose prepare
    /// failed (its index may hold the commit's rows in part).
    pub fn prepare(
        &mut self,
        commit: u64,
        timestamp: i64,
        changes: &[(ChangeType, Row)],
        notes: &Notes,
    ) -> Result<(Prepared, Written)> {
        let operation = DeltaOperation::StreamingUpdate {
            output_mode: OutputMode::Update,
            query_id: self.app_id.clone(),
            epoch_id: commit as i64,
        };
        self.prepare_as(commit, timestamp, changes, notes, operation)
    }

    fn prepare_as(
        &mut self,
        commit: u64,
        timestamp: i64,
        changes: &[(ChangeType, Row)],
        notes: &Notes,
        operation: DeltaOperation,
    ) -> Result<(Prepared, Written)> {
        // Due merges go in first, so that the commit's removals are placed in merged files.
        let mut ahead = match self.ahead.take() {
            Some(ahead) => ahead,
            None => {
                let mut ahead = Ahead::default();
                self.merge_now(&mut ahead)?;
                ahead
            }
        };
        // A merge done since goes in now: the first version prepared after a merge holds its
        // files (until then they are noted as unheld, and a vacuum keeps them).
        self.take_merged(&mut ahead)?;
        let running = self.running.as_ref().map(|r| r.noted);
        self.unheld.held_by(self.version + 1, running);
        let Ahead {
            mut actions,
            bytes,
            rows,
            deleted,
        } = ahead;
        // A file merged ahead is in no version yet: a removal from it re-adds it, no `remove`.
        let mut merged = Vec::new();
        for action in &mut actions {
            match action {
                Action::Add(add) => merged.push(add.path.clone()),
                Action::Remove(r) => r.deletion_timestamp = Some(timestamp.div_euclid(1000)),
                _ => {}
            }
        }
        let mut written = Written {
            bytes,
            compacted_rows: rows,
            ..Written::default()
        };
        let inserts_only = changes.iter().all(|(kind, _)| *kind == ChangeType::Insert);
        // The index is lent to the placing below while the change-data file is written.
        let mut index = std::mem::take(&mut self.index);
        let this = &*self;
        let refusal = |refused| {
            let dir = self.dir.display();
            let message = format!("Delta table {dir}: commit {commit} {refused}");
            Error::new(ErrorKind::Internal, message)
        };
        // The change-data file is the changes as they are: its batch is made on a thread of
        // its own while the changes are sorted out; then it is written on one, while the data
        // files are written on another (taking their rows from that batch — the inserts and
        // post-images are among the changes — instead of decoding them again) and the rows
        // are placed in the index (memory-bound): the removals taken out, the new rows put in
        // at the files and positions the writing gives them. A commit whose removals cannot be
        // placed publishes nothing (its files stay unreferenced).
        let sorted = std::thread::scope(|scope| {
            let batch = (!inserts_only).then(|| scope.spawn(|| this.feed_batch(changes)));
            let sorted = sort_out(this.kept, changes).map_err(refusal);
            let batch = batch.map(join).transpose();
            Ok::<_, Error>((sorted?, batch?))
        });
        let (sorted, batch) = match sorted {
            Ok(sorted) => sorted,
            Err(e) => {
                self.index = index;
                return Err(e);
            }
        };
        let first = self.files.len() as u32;
        let result = std::thread::scope(|scope| {
            let feed = (batch.clone()).map(|b| scope.spawn(move || this.write_feed_batch(b)));
            let adds = scope.spawn(|| this.write_files(&sorted.added, batch.as_ref()));
            let touched = place(&mut index, &sorted, this.kept, first).map_err(refusal);
            let adds = join(adds);
            let feed = feed.map(join);
            Ok((touched?, adds?, feed))
        });
        self.index = index;
        let (mut touched, adds, feed) = result?;
        // Rows removed from merged files while their merges ran.
        for (id, positions) in deleted {
            *touched.entry(id).or_default() |= positions;
        }
        for new in adds {
            written.bytes += self.take_file(new, &mut actions);
        }
        let mut vectors = DvFile::new();
        for (id, positions) in touched {
            let file = self.files[id as usize]
                .as_mut()
                .expect("a placed row's file");
            match merged.contains(&file.add.path) {
                true => {
                    actions.retain(|a| !matches!(a, Action::Add(add) if add.path == file.add.path))
                }
                false => actions.push(Action::Remove(remove(&file.add, timestamp, true))),
            }
            file.deleted |= positions;
            if file.live() == 0 {
                self.files[id as usize] = None;
                continue;
            }
            file.add.deletion_vector = Some(vectors.push(&file.deleted)?);
            files::widen(&mut file.add, &self.dir)?;
            file.add.data_change = true;
            actions.push(Action::Add(file.add.clone()));
        }
        if !vectors.is_empty() {
            written.bytes += vectors.bytes().len() as u64;
            self.put(&vectors.name(), vectors.bytes().to_vec())?;
        }
        // Inserts alone are the added files' rows (see the module docs): no change-data file.
        if let Some(cdc) = feed.transpose()? {
            written.bytes += cdc.size as u64;
            actions.push(Action::Cdc(cdc));
        }
        if let Some(metadata) = self.new_metadata.take() {
            actions.push(Action::Metadata(metadata.clone()));
            self.metadata = metadata;
        }
        let prepared = self.entry(commit, timestamp, actions, notes, operation)?;
        written.bytes += prepared.entry.len() as u64;
        written.version = prepared.version;
        self.version = prepared.version;
        Ok((prepared, written))
    }

    /// Puts a prepared version in the log, then runs the upkeep it is due (see
    /// [`super::upkeep`]: checkpoints, log cleanup, vacuum).
    pub fn publish(&self, prepared: &Prepared) -> Result<()> {
        put_entry(&self.runtime, &self.log, &self.dir, prepared)?;
        self.unheld.published(prepared.version);
        upkeep::after(
            &self.runtime,
            &self.dir,
            &self.url,
            self.schedule,
            prepared.version,
            self.unheld.since(prepared.version),
        )
    }

    /// The table's log, to publish prepared versions through while the table itself is busy
    /// (merging ahead on another thread).
    pub fn log(&self) -> Result<TableLog> {
        Ok(TableLog {
            runtime: super::table::runtime(&self.dir)?,
            log: self.log.clone(),
            dir: self.dir.clone(),
            url: self.url.clone(),
            schedule: self.schedule,
            unheld: self.unheld.clone(),
        })
    }

    /// Takes a file just written into the version, its rows placed in the index already: its
    /// `add` into `actions`; returns its bytes.
    fn take_file(&mut self, new: NewFile, actions: &mut Vec<Action>) -> u64 {
        let size = new.add.size as u64;
        actions.push(Action::Add(new.add.clone()));
        self.files.push(Some(LiveFile {
            rows: new.rows,
            deleted: RoaringTreemap::new(),
            settled: new.settled,
            add: new.add,
            hashes: new.hashes,
        }));
        size
    }

    /// The log entry of `actions` as the next version, with `txn` and `commitInfo`.
    fn entry(
        &self,
        commit: u64,
        timestamp: i64,
        actions: Vec<Action>,
        notes: &Notes,
        operation: DeltaOperation,
    ) -> Result<Prepared> {
        let mut info = operation.get_commit_info();
        info.timestamp = Some(timestamp.div_euclid(1000));
        info.read_version = Some(self.version);
        let mut all = vec![Action::CommitInfo(info)];
        all.extend(actions);
        let txn = Transaction::new_with_last_update(
            &self.app_id,
            commit as i64,
            Some(timestamp.div_euclid(1000)),
        );
        let mut metadata = HashMap::new();
        if !notes.progress.is_empty() {
            metadata.insert(FLOW_PROGRESS.to_string(), notes.progress.clone().into());
        }
        if let Some(input) = &notes.input {
            metadata.insert(COMMIT_INPUT.to_string(), input.clone());
        }
        let data = CommitData::new(all, operation, metadata, vec![txn]);
        let entry = super::commit::entry(&data).map_err(|e| failed(&self.dir, e))?;
        Ok(Prepared {
            commit,
            version: self.version + 1,
            entry,
        })
    }

    /// Writes the rows `added` as data files, the open and the settled ones apart (see
    /// [`Kept::History`]; a class without rows has no file, and the open rows' file comes
    /// first: [`place`] counts on that order); returns each file's `add`, its rows' hashes in
    /// order and whether they are the settled ones. With `feed` (the change-data batch,
    /// [`files::feed_batch`]), a file's rows are taken from its columns at the rows' positions
    /// among the changes rather than decoded.
    fn write_files(
        &self,
        added: &[Added<'_>; 2],
        feed: Option<&RecordBatch>,
    ) -> Result<Vec<NewFile>> {
        (added.iter().zip([false, true]))
            .filter(|(added, _)| !added.rows.is_empty())
            .map(|(added, settled)| {
                let batch = match feed {
                    Some(feed) => self.take_batch(feed, &added.at)?,
                    None => {
                        let rows = added.rows.iter().map(|(_, row)| row.as_row_ref());
                        to_batch_with(&self.schema.columns, &self.arrow, rows, Vec::new())?
                    }
                };
                let add = self.write_file(batch, true)?;
                let hashes = match self.kept.indexed() {
                    true => added.rows.iter().map(|(hash, _)| *hash).collect(),
                    false => Vec::new(),
                };
                Ok(NewFile {
                    add,
                    rows: added.rows.len() as u64,
                    hashes,
                    settled,
                })
            })
            .collect()
    }

    /// Rows `at` of change-data batch `feed`, the table's columns only.
    fn take_batch(&self, feed: &RecordBatch, at: &[u64]) -> Result<RecordBatch> {
        let at = UInt64Array::from(at.to_vec());
        let own = &feed.columns()[..self.schema.columns.len()];
        let columns = (own.iter())
            .map(|column| take(column, &at, None))
            .collect::<std::result::Result<Vec<_>, _>>()
            .and_then(|columns| RecordBatch::try_new(self.arrow.clone(), columns));
        columns.map_err(|e| failed(&self.dir, e))
    }

    /// Writes `batch` as one Parquet data file (see [`write_file`]).
    fn write_file(&self, batch: RecordBatch, data_change: bool) -> Result<Add> {
        let (runtime, dir, arrow) = (&self.runtime, &self.dir, self.arrow.clone());
        write_file(runtime, dir, &self.url, arrow, batch, data_change)
    }

    /// The record batch of the change-data file of `changes`.
    fn feed_batch(&self, changes: &[(ChangeType, Row)]) -> Result<RecordBatch> {
        files::feed_batch(&self.cdc_schema, &self.cdc_arrow, changes)
    }

    /// Writes a change-data file of [`MaintainedTable::feed_batch`]'s batch.
    fn write_feed_batch(&self, batch: RecordBatch) -> Result<AddCDCFile> {
        files::write_feed_batch(&self.dir, &self.cdc_arrow, batch)
    }

    fn put(&self, name: &str, bytes: Vec<u8>) -> Result<()> {
        let path = StorePath::from(name);
        self.runtime
            .block_on(self.store.put(&path, PutPayload::from(bytes)))
            .map(|_| ())
            .map_err(|e| failed(&self.dir, e))
    }

    /// The rows of a data file, in order.
    fn read(&self, add: &Add) -> Result<Vec<Row>> {
        let path = StorePath::from(add.path.as_str());
        read_parquet(&self.runtime, &self.store, &self.dir, &path, &self.schema)
    }
}

/// Whether a column of `schema` has a name the change data feed reserves
/// ([`FEED_COLUMN_NAMES`]): its table has no change data feed.
fn feed_reserved(schema: &Schema) -> bool {
    (schema.columns.iter()).any(|c| FEED_COLUMN_NAMES.contains(&c.name.as_str()))
}

/// A maintained table's configuration for the caller's `properties`: deletion vectors on, and
/// the change data feed where no column's name is one it reserves.
fn configuration(
    properties: &BTreeMap<String, String>,
    schema: &Schema,
) -> BTreeMap<String, String> {
    let mut configuration = properties.clone();
    configuration.insert("delta.enableDeletionVectors".into(), "true".into());
    if !feed_reserved(schema) {
        configuration.insert(super::FEED_PROPERTY.into(), "true".into());
    }
    configuration
}

/// A commit's changes as the table takes them, by class (open, settled: [`Kept::settled`]): the
/// hashes of the rows it removes, and the rows it adds (inserts and post-images) less those it
/// takes back itself.
struct Sorted<'c> {
    removed: [Vec<u128>; 2],
    added: [Added<'c>; 2],
}

/// The rows a commit adds to a class, with their hashes and their positions among the changes.
#[derive(Default)]
struct Added<'c> {
    rows: Vec<(u128, &'c Row)>,
    at: Vec<u64>,
}

/// Sorts out `changes` ([`Sorted`]); `Err` says what the table cannot do.
///
/// A removal takes back a row the commit added before it when their hashes are equal. Few do,
/// so the added rows' hashes go into a [`Filter`] first, and only the removals it may hold
/// (and the added rows with their hashes) are matched exactly: a map of every added row, made
/// afresh for each commit, was two thirds of the sorting out, its buckets' first writes missing
/// the cache (2.1 ms of a 10,000-event SCD2 commit's 26,000 changes). A followed step's file to
/// log entry p50 went from 33.9 to 31.6 ms (five alternating runs of 20 steps, 1 worker: ahead
/// in three, even in one).
fn sort_out(
    kept: Kept,
    changes: &[(ChangeType, Row)],
) -> std::result::Result<Sorted<'_>, &'static str> {
    let mut removed = [Vec::new(), Vec::new()];
    let mut added: [Added; 2] = Default::default();
    if !kept.indexed() {
        if changes.iter().any(|(kind, _)| *kind != ChangeType::Insert) {
            return Err("removes a row from a table of appends");
        }
        added[0].rows = changes.iter().map(|(_, row)| (0, row)).collect();
        added[0].at = (0..changes.len() as u64).collect();
        return Ok(Sorted { removed, added });
    }
    let adds = |kind: &ChangeType| matches!(kind, ChangeType::Insert | ChangeType::UpdatePostimage);
    let hashes: Vec<u128> = changes.iter().map(|(_, row)| row_hash(row)).collect();
    // Room for every change: more bits than the added rows alone need, and one pass fewer.
    let mut filter = Filter::with_room(changes.len());
    for ((kind, _), hash) in changes.iter().zip(&hashes) {
        if adds(kind) {
            filter.insert(*hash);
        }
    }
    let suspects: HashSet<u128, foldhash::fast::FixedState> = (changes.iter().zip(&hashes))
        .filter(|((kind, _), hash)| !adds(kind) && filter.may_hold(**hash))
        .map(|(_, hash)| *hash)
        .collect();
    // By hash, the suspect rows added so far (their changes' positions), and those taken back.
    let mut new_rows: HashMap<u128, SmallVec<[usize; 1]>, _> =
        HashMap::with_hasher(foldhash::fast::FixedState::default());
    let mut taken_back = HashSet::with_hasher(foldhash::fast::FixedState::default());
    for (c, ((kind, row), &hash)) in changes.iter().zip(&hashes).enumerate() {
        let suspect = !suspects.is_empty() && suspects.contains(&hash);
        match (adds(kind), suspect) {
            (true, true) => new_rows.entry(hash).or_default().push(c),
            (true, false) => {}
            (false, _) => match new_rows.get_mut(&hash).and_then(SmallVec::pop) {
                Some(c) => drop(taken_back.insert(c)),
                None => removed[usize::from(kept.settled(row))].push(hash),
            },
        }
    }
    for (c, ((kind, row), &hash)) in changes.iter().zip(&hashes).enumerate() {
        if adds(kind) && (taken_back.is_empty() || !taken_back.contains(&c)) {
            let class = &mut added[usize::from(kept.settled(row))];
            class.rows.push((hash, row));
            class.at.push(c as u64);
        }
    }
    Ok(Sorted { removed, added })
}

/// A set of 128-bit hashes that errs only by holding one it was not given (a Bloom filter of
/// at least 32 bits per hash, two probes: the low bits of each half of the hash). At most about
/// one absent hash in 270 is taken as held.
struct Filter {
    words: Vec<u64>,
    mask: u64,
}

impl Filter {
    /// An empty filter for `n` hashes.
    fn with_room(n: usize) -> Filter {
        let bits = (n.max(2) * 32).next_power_of_two();
        Filter {
            words: vec![0; bits / 64],
            mask: bits as u64 - 1,
        }
    }

    fn probes(&self, hash: u128) -> [u64; 2] {
        [hash as u64 & self.mask, (hash >> 64) as u64 & self.mask]
    }

    fn insert(&mut self, hash: u128) {
        for bit in self.probes(hash) {
            self.words[(bit / 64) as usize] |= 1 << (bit % 64);
        }
    }

    fn may_hold(&self, hash: u128) -> bool {
        (self.probes(hash).iter())
            .all(|bit| self.words[(bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }
}

/// Places a commit's rows in `index`: takes the rows `sorted` removes out (their positions, by
/// file, are returned) and puts the rows it adds in, at their positions in the files
/// [`MaintainedTable::write_files`] writes (ids from `first` on, the open rows' first); `Err`
/// when the table does not hold a removed row. Unindexed tables (`kept`) place nothing.
fn place(
    index: &mut [RowIndex; 2],
    sorted: &Sorted<'_>,
    kept: Kept,
    first: u32,
) -> std::result::Result<BTreeMap<u32, RoaringTreemap>, &'static str> {
    let mut touched: BTreeMap<u32, RoaringTreemap> = BTreeMap::new();
    if !kept.indexed() {
        return Ok(touched);
    }
    for (index, removed) in index.iter_mut().zip(&sorted.removed) {
        index.warm(removed.iter().copied());
        for &hash in removed {
            let at = index
                .unplace(hash)
                .ok_or("removes a row the table does not hold")?;
            touched.entry(at.file).or_default().insert(at.row as u64);
        }
    }
    let mut file = first;
    for (index, added) in index.iter_mut().zip(&sorted.added) {
        if added.rows.is_empty() {
            continue;
        }
        index.warm(added.rows.iter().map(|(hash, _)| *hash));
        for (row, (hash, _)) in (0u32..).zip(&added.rows) {
            index.place(*hash, Location { file, row });
        }
        file += 1;
    }
    Ok(touched)
}

/// A scoped thread's result (its panic resumed).
fn join<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
    thread.join().unwrap_or_else(|p| resume_unwind(p))
}

/// The hash `row` is indexed by.
fn row_hash(row: &Row) -> u128 {
    row_index::hash(row.as_row_ref().as_bytes())
}

/// Writes `batch` as one Parquet data file (statistics included) of the table at `url`
/// (`dir`), zstd ([`Codec`]); returns its `add`.
fn write_file(
    runtime: &Runtime,
    dir: &Path,
    url: &url::Url,
    arrow: SchemaRef,
    batch: RecordBatch,
    data_change: bool,
) -> Result<Add> {
    let mut adds = files::write_parquet(runtime, dir, url.as_str(), arrow, batch, Codec::Zstd)?;
    let mut add = (adds.pop().filter(|_| adds.is_empty()))
        .ok_or_else(|| failed(dir, "one batch made other than one file"))?;
    add.data_change = data_change;
    Ok(add)
}

impl Drop for MaintainedTable {
    /// Files merged ahead for a version that will never be prepared are referenced by none:
    /// they go now rather than wait for a vacuum (best effort: a vacuum deletes any left). A
    /// merge still running is waited for, and its file goes too.
    fn drop(&mut self) {
        let mut merged: Vec<Add> = (self.ahead.take().into_iter())
            .flat_map(|ahead| ahead.actions)
            .filter_map(|action| match action {
                Action::Add(add) => Some(add),
                _ => None,
            })
            .collect();
        if let Some(running) = self.running.take() {
            let files = running.thread.join().ok().and_then(Result::ok);
            merged.extend(files.into_iter().flat_map(|m| m.files).map(|f| f.add));
        }
        for add in merged {
            let path = StorePath::from(add.path.as_str());
            let _ = self.runtime.block_on(self.store.delete(&path));
        }
        self.unheld.forget_unheld();
    }
}

/// A maintained table's log, apart from the table ([`MaintainedTable::log`]).
pub struct TableLog {
    runtime: Runtime,
    log: LogStoreRef,
    dir: PathBuf,
    url: url::Url,
    schedule: Schedule,
    unheld: Unheld,
}

impl TableLog {
    /// Puts a prepared version in the log ([`MaintainedTable::publish`] without the upkeep).
    pub fn publish(&self, prepared: &Prepared) -> Result<()> {
        put_entry(&self.runtime, &self.log, &self.dir, prepared)?;
        self.unheld.published(prepared.version);
        Ok(())
    }

    /// Whether version `version` is due upkeep (see [`super::upkeep`]).
    pub fn due(&self, version: u64) -> bool {
        self.schedule.due(version)
    }

    /// Runs the upkeep version `version` is due, once it is in the log (see [`super::upkeep`]),
    /// while the writer may be writing files for later versions since `fresh`: a vacuum keeps
    /// every file last modified since then, or since the earliest merge `version` does not
    /// hold began ([`unheld`]).
    pub fn upkeep(&self, version: u64, fresh: SystemTime) -> Result<()> {
        let (runtime, dir, url) = (&self.runtime, &self.dir, &self.url);
        let fresh = (self.unheld.since(version)).map_or(fresh, |since| since.min(fresh));
        upkeep::after(runtime, dir, url, self.schedule, version, Some(fresh))
    }
}

/// The rows of a data file as its `add`'s statistics count them (`numRecords`), if they do.
fn stats_rows(add: &Add) -> Option<u64> {
    let stats: serde_json::Value = serde_json::from_str(add.stats.as_deref()?).ok()?;
    stats.get("numRecords")?.as_u64()
}

/// Publishes the versions of `prepared` (in order) that the table at `dir` does not hold yet:
/// those whose commit is past the last one `app_id` recorded (`txn`). A writer that committed
/// its own state with prepared versions and died before publishing them completes them so.
pub fn roll_forward(dir: &Path, app_id: &str, prepared: &[Prepared]) -> Result<()> {
    let (runtime, url) = super::table::existing(dir)?;
    let table = runtime
        .block_on(deltalake::open_table(url))
        .map_err(|e| failed(dir, e))?;
    let snapshot = table.snapshot().map_err(|e| failed(dir, e))?;
    let log = table.log_store();
    let last = runtime
        .block_on(snapshot.transaction_version(log.as_ref(), app_id))
        .map_err(|e| failed(dir, e))?;
    for p in prepared {
        if last.is_none_or(|last| (last as u64) < p.commit) {
            put_entry(&runtime, &log, dir, p)?;
        }
    }
    Ok(())
}

/// Puts a prepared entry as its version, which must be free.
fn put_entry(runtime: &Runtime, log: &LogStoreRef, dir: &Path, prepared: &Prepared) -> Result<()> {
    let written = runtime.block_on(log.write_commit_entry(
        prepared.version,
        CommitOrBytes::LogBytes(prepared.entry.clone().into()),
        uuid::Uuid::new_v4(),
    ));
    match written {
        Ok(()) => Ok(()),
        Err(TransactionError::VersionAlreadyExists(taken)) => Err(Error::new(
            ErrorKind::State,
            format!(
                "Delta table {}: another writer made version {taken}; scdflow maintains this \
                 table alone",
                dir.display()
            ),
        )),
        Err(e) => Err(failed(dir, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{Packer, Value};

    fn row(id: i64, end: Option<i64>) -> Row {
        let mut p = Packer::new();
        p.push(&Value::Int(id))
            .push(&end.map_or(Value::Null, Value::Int));
        p.finish()
    }

    #[test]
    fn a_removal_takes_back_the_latest_row_the_commit_added_before_it() {
        use ChangeType::{Delete, Insert, UpdatePostimage as Post, UpdatePreimage as Pre};
        let (a, b, closed) = (row(1, None), row(2, None), row(3, Some(9)));
        let changes = [
            (Delete, b.clone()),    // 0: a row of the table (added again at 1)
            (Insert, b.clone()),    // 1
            (Insert, a.clone()),    // 2: taken back at 4
            (Insert, a.clone()),    // 3: taken back at 5
            (Pre, a.clone()),       // 4
            (Delete, a.clone()),    // 5
            (Delete, a.clone()),    // 6: a row of the table
            (Post, closed.clone()), // 7: settled
        ];
        let sorted = sort_out(Kept::History(1), &changes).unwrap();
        assert_eq!(sorted.removed, [vec![row_hash(&b), row_hash(&a)], vec![]]);
        let rows = |class: &Added| {
            class
                .rows
                .iter()
                .map(|(_, r)| (*r).clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(rows(&sorted.added[0]), [b]);
        assert_eq!(sorted.added[0].at, [1]);
        assert_eq!(rows(&sorted.added[1]), [closed]);
        assert_eq!(sorted.added[1].at, [7]);
        // Distinct rows in thousands: the filter's false suspects take nothing back.
        let many: Vec<_> = (0..4000)
            .map(|i| (if i % 2 == 0 { Insert } else { Delete }, row(i, None)))
            .collect();
        let sorted = sort_out(Kept::Changes, &many).unwrap();
        assert_eq!(
            (sorted.removed[0].len(), sorted.added[0].rows.len()),
            (2000, 2000)
        );
        assert!(sort_out(Kept::Appends, &changes).is_err());
    }

    #[test]
    fn the_filter_holds_what_it_was_given_and_errs_rarely() {
        let hash = |i: u32| row_index::hash(&i.to_le_bytes());
        let mut filter = Filter::with_room(10_000);
        (0..10_000).for_each(|i| filter.insert(hash(i)));
        assert!((0..10_000).all(|i| filter.may_hold(hash(i))));
        let wrong = (10_000..110_000)
            .filter(|&i| filter.may_hold(hash(i)))
            .count();
        assert!(
            wrong < 1_000,
            "{wrong} of 100,000 absent hashes taken as held"
        );
    }
}

//! A state directory on disk, and the manifest that is its commit point.
//!
//! ```text
//! DIR/LOCK                   held (flock) by the run using the directory
//! DIR/MANIFEST               framed record file: the Manifest below
//! DIR/ckpt-<version>/        the operators' shards of that commit: t<target>-<part>-w<worker>
//! DIR/metrics.jsonl          every commit's metrics, appended (committed length in the manifest)
//! ```
//!
//! A run stages its shards in `ckpt-<version>.tmp/`, syncs them, renames the directory, then
//! replaces `MANIFEST` atomically: the manifest names the one checkpoint that counts, so a crash
//! at any instant leaves the previous manifest and its checkpoint intact, and opening the
//! directory removes whatever a crashed run left beside them. Files that runs append to (change
//! feeds, quarantine files, the metrics log) are recorded with their committed lengths; bytes past
//! them were written by a run that did not commit, and opening cuts them off.

use super::fingerprint::Fingerprint;
use super::frames::{self, FileKind, FrameReader};
use crate::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

const MANIFEST: &str = "MANIFEST";
const LOCK: &str = "LOCK";
const CHECKPOINT: &str = "ckpt-";
/// The metrics log, relative to the state directory.
pub const METRICS_LOG: &str = "metrics.jsonl";

/// What the last committed run left: enough to continue exactly where it stopped.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// Commits applied so far; the next commit is `version + 1`.
    pub version: u64,
    /// Commit time of the last commit (µs since the epoch): commit times never go back.
    pub last_timestamp: i64,
    /// The pipeline shape the state is for.
    pub fingerprint: Fingerprint,
    /// Where outputs go and in which format (`csv`/`jsonl`): the change feed continues there.
    pub out: PathBuf,
    /// The output format's extension.
    pub format: String,
    /// Number of workers that wrote the shards (each operator has one shard per worker).
    pub workers: usize,
    /// The checkpoint directory (relative to the state directory); `None` before any commit.
    pub checkpoint: Option<String>,
    /// Input consumed so far.
    pub inputs: Vec<InputProgress>,
    /// Per snapshot flow (by name): the last applied snapshot version (D12).
    pub snapshot_versions: Vec<(String, i64)>,
    /// Files runs append to, with their committed lengths.
    pub appended: Vec<Appended>,
    /// Per target (by name): tombstones held at the last commit.
    pub live_tombstones: Vec<(String, i64)>,
}

/// How much of one input file has been consumed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputProgress {
    /// The file, as the pipeline names it.
    pub file: PathBuf,
    /// Bytes consumed (a prefix of whole lines).
    pub consumed: u64,
    /// 1-based line number of the byte at `consumed`.
    pub next_line: u64,
    /// CRC-32 of the consumed prefix's last [`WINDOW`] bytes (fewer if shorter): a file whose
    /// consumed part was rewritten is noticed without re-reading it all.
    pub window: u32,
}

/// Bytes of a consumed prefix that are checked for a rewrite.
pub const WINDOW: u64 = 4096;

/// A file runs append to, and its committed length.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Appended {
    /// The file.
    pub path: PathBuf,
    /// Bytes committed.
    pub len: u64,
}

/// An open state directory, locked for this run.
#[derive(Debug)]
pub struct StateDir {
    dir: PathBuf,
    _lock: File,
}

impl StateDir {
    /// Opens (creating) `dir`, locks it, and returns its last manifest after removing what a
    /// crashed run left. With `full_refresh` every trace of earlier runs is removed first.
    pub fn open(dir: &Path, full_refresh: bool) -> Result<(StateDir, Option<Manifest>)> {
        std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, &e))?;
        let lock_path = dir.join(LOCK);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::write(&lock_path, &e))?;
        lock.try_lock().map_err(|_| {
            Error::new(
                ErrorKind::State,
                "the state directory is in use by another scdflow run",
            )
            .in_file(dir)
        })?;
        let state = StateDir {
            dir: dir.to_path_buf(),
            _lock: lock,
        };
        let manifest_path = dir.join(MANIFEST);
        if full_refresh {
            for path in [manifest_path.clone(), dir.join(METRICS_LOG)] {
                if path.exists() {
                    std::fs::remove_file(&path).map_err(|e| Error::write(&path, &e))?;
                }
            }
        }
        let manifest = if manifest_path.exists() {
            let mut reader = FrameReader::open(&manifest_path, FileKind::Manifest)?;
            let manifest: Manifest = reader.expect("the manifest")?;
            if reader.read::<()>()?.is_some() {
                return Err(reader.damaged(0, "holds more than one manifest"));
            }
            Some(manifest)
        } else {
            None
        };
        let keep = manifest.as_ref().and_then(|m| m.checkpoint.clone());
        state.remove_leftovers(keep.as_deref())?;
        Ok((state, manifest))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Removes temporary files and every checkpoint but `keep`.
    fn remove_leftovers(&self, keep: Option<&str>) -> Result<()> {
        let entries = std::fs::read_dir(&self.dir).map_err(|e| Error::read(&self.dir, &e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::read(&self.dir, &e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let stale_checkpoint = name.starts_with(CHECKPOINT) && Some(name.as_str()) != keep;
            if stale_checkpoint || name.ends_with(".tmp") {
                let removed = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
                removed.map_err(|e| Error::write(&path, &e))?;
            }
        }
        Ok(())
    }

    /// A fresh, empty directory to stage commit `version`'s shards in.
    pub fn stage(&self, version: u64) -> Result<PathBuf> {
        let staged = self.dir.join(format!("{CHECKPOINT}{version:012}.tmp"));
        if staged.exists() {
            std::fs::remove_dir_all(&staged).map_err(|e| Error::write(&staged, &e))?;
        }
        std::fs::create_dir(&staged).map_err(|e| Error::write(&staged, &e))?;
        Ok(staged)
    }

    /// The checkpoint directory named by a manifest.
    pub fn checkpoint(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Makes `manifest` the directory's state: the staged shards (if any) become its checkpoint,
    /// then the manifest is replaced atomically, then the previous checkpoint is removed.
    pub fn commit(&self, manifest: &mut Manifest, staged: Option<PathBuf>) -> Result<()> {
        let previous = manifest.checkpoint.clone();
        if let Some(staged) = staged {
            frames::sync_dir(&staged)?;
            let name = format!("{CHECKPOINT}{:012}", manifest.version);
            let target = self.dir.join(&name);
            std::fs::rename(&staged, &target).map_err(|e| Error::write(&target, &e))?;
            frames::sync_dir(&self.dir)?;
            manifest.checkpoint = Some(name);
        }
        frames::write_atomically(&self.dir.join(MANIFEST), FileKind::Manifest, |w| {
            w.write(&*manifest)
        })?;
        match previous {
            Some(old) if manifest.checkpoint.as_deref() != Some(old.as_str()) => {
                let old = self.dir.join(old);
                std::fs::remove_dir_all(&old).map_err(|e| Error::write(&old, &e))
            }
            _ => Ok(()),
        }
    }
}

/// Shard file name of part `part` of target `t` on worker `w`.
pub fn shard_name(t: usize, part: &str, w: usize) -> String {
    format!("t{t}-{part}-w{w}")
}

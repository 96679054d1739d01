//! What is new since the last durable run: the commits to read, and how each is recorded as
//! consumed once the run commits.
//!
//! - A file of a change source is consumed line by line: a new file, or lines appended to a
//!   known one, make a commit of the complete lines after the consumed offset. A known file that
//!   shrank, or whose last consumed bytes changed, was rewritten: that is an error (durable runs
//!   read appended lines; `--full-refresh` rereads everything). Only the last
//!   [`WINDOW`] consumed bytes are checked, so a check costs the same however long the file;
//!   a long-lived caller ([`Checked`], `--follow`) checks a file again only when its length,
//!   modification time or inode changed, or the consumed offset moved, so an idle poll reads
//!   no file. (A rewrite that keeps all three is not seen until the next process start.)
//! - A Delta table source is consumed version by version: its progress records the number of
//!   versions read (as `consumed`), and each later version that changes data is a commit.
//! - A file feeding a periodic snapshot flow (`FROM SNAPSHOT (SELECT ... FROM table)`) is a whole
//!   snapshot: when its length or checksum changed, all of it is the next snapshot.
//! - A `WITH VERSION` snapshot flow's next versions are its version query's answers after the
//!   last version the state applied ([`super::versions`]); only that version is recorded.
//! - A `VALUES` table's rows are read once, recorded by [`crate::ingest::values_key`]; the
//!   inputs of a table an `INSERT INTO ONCE` flow writes are read only until the state has
//!   committed.
//! - A versioned snapshot file (`FROM SNAPSHOT read_files(..., version => ...)`) is read once;
//!   a new file whose version is not newer than the last applied one is skipped (D12). A known
//!   one whose length or checksum changed was rewritten after it was applied: that is an error,
//!   as for a change source (a new snapshot takes a new version).

use super::commit::{CommitSource, ReadFrom, Span};
use crate::io;
use crate::persist::store::WINDOW;
use crate::persist::{Checks, InputProgress, Manifest};
use crate::plan::{Pipeline, SnapshotSource, SourceInput, VersionedInput};
use crate::{Error, ErrorKind, Result};
use foldhash::fast::FixedState;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// How a commit's input is recorded once the run commits.
#[derive(Clone, Debug)]
pub(crate) enum Consumed {
    /// Complete lines from `from` on (the read says where they end).
    Lines { file: PathBuf, from: ReadFrom },
    /// A whole file of `len` bytes with checksum `crc`.
    Whole { file: PathBuf, len: u64, crc: u32 },
    /// A version of the Delta table at `dir`: the next one to read is `next`.
    Version { dir: PathBuf, next: u64 },
    /// A version a `WITH VERSION` snapshot flow's query chose, applied unless the commit skips
    /// it.
    QueryVersion {
        flow: String,
        version: i64,
        skipped: bool,
    },
    /// A versioned snapshot file of `len` bytes with checksum `crc`; `version` is applied unless
    /// the commit skips it.
    Snapshot {
        file: PathBuf,
        flow: String,
        version: i64,
        skipped: bool,
        len: u64,
        crc: u32,
    },
}

/// Known files whose consumed bytes were checked, with what they looked like then: a file that
/// still looks the same is not read again. Also the snapshot versions already skipped.
#[derive(Debug, Default)]
pub struct Checked {
    files: HashMap<OsString, Look, FixedState>,
    skipped: super::versions::Skipped,
}

/// A file's length, modification time and inode, and the offset consumed when it was checked.
#[derive(Debug, PartialEq, Eq)]
struct Look {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
    consumed: u64,
}

impl Look {
    fn of(meta: &std::fs::Metadata, consumed: u64) -> Look {
        use std::os::unix::fs::MetadataExt;
        Look {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode: meta.ino(),
            consumed,
        }
    }
}

/// The commits of new input after `manifest` (all input without one), in commit order; files
/// `checked` already verified and unchanged since are not read again.
pub(crate) fn find(
    pipeline: &Pipeline,
    manifest: Option<&Manifest>,
    checked: &mut Checked,
) -> Result<Vec<(CommitSource, Consumed)>> {
    // Indexed once: `--follow` calls this at every poll, and a scan of the inputs per file made
    // each poll quadratic in the number of files.
    // By the spellings' bytes (both sides are absolute spellings, `normal_path`): hashing a
    // `Path` walks its components, which was a tenth of a poll over 1,000 files.
    let progress: HashMap<&OsStr, &InputProgress, FixedState> = manifest
        .map(|m| {
            m.inputs
                .iter()
                .rev()
                .map(|p| (p.file.as_os_str(), p))
                .collect()
        })
        .unwrap_or_default();
    let known = |file: &Path| progress.get(file.as_os_str()).copied();
    let mut commits = Vec::new();
    // An `INSERT INTO ONCE` flow's table is read by the first run only.
    let resumed = manifest.is_some_and(|m| m.version > 0);
    let read = |table: &usize| !(resumed && pipeline.tables[*table].once);
    let pipeline_file = io::normal_path(&pipeline.file)?;
    for (table, key) in crate::ingest::values_inputs(pipeline) {
        let recorded = crate::ingest::values_key(&pipeline_file, &pipeline.tables[table].name);
        if !read(&table) || known(&recorded).is_some() {
            continue;
        }
        let source = CommitSource::Table {
            table,
            file: key,
            span: Span::Whole,
        };
        let consumed = Consumed::Whole {
            file: recorded,
            len: 0,
            crc: 0,
        };
        commits.push((source, consumed));
    }
    let files = crate::ingest::input_files(pipeline)?;
    let mut normal = Normal::default();
    for (table, source) in files.into_iter().filter(|(t, _)| read(t)) {
        // Read by the pipeline's spelling, recorded by the file's one absolute spelling.
        let meta = std::fs::metadata(&source).map_err(|e| Error::read(&source, &e))?;
        let file = normal.path(&source)?;
        let len = meta.len();
        if feeds_periodic_snapshot(pipeline, table) {
            let crc = io::crc_of_range(&file, 0, len)?;
            let unchanged = known(&file).is_some_and(|p| p.consumed == len && p.window == crc);
            if !unchanged {
                let source = CommitSource::Table {
                    table,
                    file: source,
                    span: Span::Whole,
                };
                commits.push((source, Consumed::Whole { file, len, crc }));
            }
            continue;
        }
        let from = match known(&file) {
            None => ReadFrom { offset: 0, line: 1 },
            Some(p) => {
                let look = Look::of(&meta, p.consumed);
                if checked.files.get(file.as_os_str()) != Some(&look) {
                    check_unchanged(&file, len, p)?;
                    checked.files.insert(file.clone().into_os_string(), look);
                }
                ReadFrom {
                    offset: p.consumed,
                    line: p.next_line,
                }
            }
        };
        if grown_to(pipeline, table, &file, from.offset, len)? {
            let source = CommitSource::Table {
                table,
                file: source,
                span: Span::From(from),
            };
            commits.push((source, Consumed::Lines { file, from }));
        }
    }
    for (table, source) in crate::ingest::delta_inputs(pipeline)
        .into_iter()
        .filter(|(t, _)| read(t))
    {
        let dir = io::normal_path(source)?;
        let log = crate::delta::Log::open(source)?;
        let from = match known(&dir) {
            None => None,
            Some(p) => {
                let read = p.consumed;
                let latest = log.latest_version()?;
                if read > latest + 1 {
                    let message = format!(
                        "{read} versions of this Delta table were read, and it has {} now: it \
                         was dropped and created again; reprocess all input with --full-refresh",
                        latest + 1
                    );
                    return Err(Error::new(ErrorKind::State, message).in_file(source));
                }
                Some(read)
            }
        };
        for span in crate::ingest::delta_versions(pipeline, table, source, from)? {
            let commit = CommitSource::Table {
                table,
                file: source.to_path_buf(),
                span,
            };
            let consumed = Consumed::Version {
                dir: dir.clone(),
                next: span.delta_version().map_or(0, |v| v + 1),
            };
            commits.push((commit, consumed));
        }
    }
    for (flow, sf) in pipeline.snapshot_flows.iter().enumerate() {
        let SnapshotSource::Files { path, version, .. } = &sf.source else {
            continue;
        };
        let mut last = manifest.and_then(|m| {
            m.snapshot_versions
                .iter()
                .find(|(name, _)| *name == sf.name)
                .map(|(_, v)| *v)
        });
        for (v, source) in io::versioned_files(path, version)? {
            let meta = std::fs::metadata(&source).map_err(|e| Error::read(&source, &e))?;
            let file = normal.path(&source)?;
            if let Some(p) = known(&file) {
                let look = Look::of(&meta, p.consumed);
                if checked.files.get(file.as_os_str()) != Some(&look) {
                    let crc = manifest.and_then(|m| Checks::of(&m.checks.snapshots, &file));
                    check_snapshot_unchanged(&file, meta.len(), p.consumed, crc)?;
                    checked.files.insert(file.into_os_string(), look);
                }
                continue;
            }
            let len = meta.len();
            let crc = io::crc_of_range(&file, 0, len)?;
            let skipped = last.is_some_and(|l| v <= l);
            last = Some(last.map_or(v, |l| l.max(v)));
            let source = CommitSource::Snapshot {
                flow,
                version: v,
                file: source,
                skipped,
            };
            let consumed = Consumed::Snapshot {
                file,
                flow: sf.name.clone(),
                version: v,
                skipped,
                len,
                crc,
            };
            commits.push((source, consumed));
        }
    }
    let last = |flow: &str| {
        let versions = manifest
            .map(|m| m.snapshot_versions.as_slice())
            .unwrap_or_default();
        versions
            .iter()
            .find(|(name, _)| name == flow)
            .map(|(_, v)| *v)
    };
    for commit in super::versions::commits(pipeline, last, &mut checked.skipped)? {
        let CommitSource::Snapshot {
            flow,
            version,
            skipped,
            ..
        } = commit
        else {
            continue;
        };
        let consumed = Consumed::QueryVersion {
            flow: pipeline.snapshot_flows[flow].name.clone(),
            version,
            skipped,
        };
        commits.push((commit, consumed));
    }
    Ok(commits)
}

/// The directories whose changes may bring [`find`] new input, for a follower to watch
/// ([`io::watch`]): each file source's directory (or its file's), each Delta source's log, each
/// snapshot flow's files or table. A `WITH VERSION` flow's version query may read other tables
/// too; their changes are found at the next poll.
pub(crate) fn watched_dirs(pipeline: &Pipeline) -> Vec<PathBuf> {
    let log = |dir: &Path| dir.join("_delta_log");
    let tables = pipeline
        .tables
        .iter()
        .filter_map(|table| match &table.input {
            SourceInput::Files { path, .. } => Some(io::watch::dir_of(path)),
            SourceInput::Delta { dir, .. } => Some(log(dir)),
            _ => None,
        });
    // A periodic snapshot's table (`SnapshotSource::Table`) is one of the tables above.
    let snapshots = (pipeline.snapshot_flows.iter()).filter_map(|flow| match &flow.source {
        SnapshotSource::Files { path, .. } => Some(io::watch::dir_of(path)),
        SnapshotSource::Versioned(v) => Some(match &v.input {
            VersionedInput::Files { path, .. } => io::watch::dir_of(path),
            VersionedInput::Delta { dir, .. } => log(dir),
        }),
        SnapshotSource::Table { .. } => None,
    });
    let mut dirs: Vec<PathBuf> = tables.chain(snapshots).collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Files' absolute spellings ([`io::normal_path`]), their directories' made once: a `--follow`
/// poll spells every input file, and spelling each whole took a system call (the working
/// directory) and a walk over its components — with sorting by components, a quarter of a
/// poll over 1,000 files (2 ms of CPU every 2 ms).
#[derive(Default)]
struct Normal(HashMap<OsString, PathBuf, FixedState>);

impl Normal {
    fn path(&mut self, file: &Path) -> Result<PathBuf> {
        // A listed file's name is one plain component (never `.` or `..`), so it extends its
        // directory's spelling as it is.
        let dir = file.parent().filter(|dir| !dir.as_os_str().is_empty());
        let (Some(dir), Some(name)) = (dir, file.file_name()) else {
            return io::normal_path(file);
        };
        if let Some(spelled) = self.0.get(dir.as_os_str()) {
            return Ok(spelled.join(name));
        }
        let spelled = io::normal_path(dir)?;
        let path = spelled.join(name);
        self.0.insert(dir.as_os_str().to_owned(), spelled);
        Ok(path)
    }
}

/// Records a committed read in `manifest`; `end` is where a read of lines stopped.
pub(crate) fn record(
    manifest: &mut Manifest,
    consumed: &Consumed,
    end: Option<ReadFrom>,
) -> Result<()> {
    let progress = match consumed {
        Consumed::Lines { .. } | Consumed::Version { .. } => {
            stream_progress(consumed, end)?.expect("a stream's input")
        }
        Consumed::Whole { file, len, crc } => InputProgress {
            file: file.clone(),
            consumed: *len,
            next_line: 0,
            window: *crc,
        },
        Consumed::QueryVersion {
            flow,
            version,
            skipped,
        } => {
            if !skipped {
                applied(manifest, flow, *version);
            }
            return Ok(());
        }
        Consumed::Snapshot {
            file,
            flow,
            version,
            skipped,
            len,
            crc,
        } => {
            if !skipped {
                applied(manifest, flow, *version);
            }
            Checks::set(&mut manifest.checks.snapshots, file, *crc);
            InputProgress {
                file: file.clone(),
                consumed: *len,
                next_line: 0,
                window: 0,
            }
        }
    };
    match manifest.inputs.iter_mut().find(|p| p.file == progress.file) {
        Some(p) => *p = progress,
        None => manifest.inputs.push(progress),
    }
    Ok(())
}

/// Whether source table `table`'s file `file` holds new input after byte `from`.
pub(crate) fn grown(pipeline: &Pipeline, table: usize, file: &Path, from: u64) -> Result<bool> {
    grown_to(pipeline, table, file, from, io::file_len(file)?)
}

/// [`grown`] of a file `len` bytes long.
fn grown_to(pipeline: &Pipeline, table: usize, file: &Path, from: u64, len: u64) -> Result<bool> {
    match is_parquet(pipeline, table) {
        // A Parquet file is new input while it is unread; `ingest` refuses one rewritten.
        true => Ok(from < len),
        false => has_newline(file, from, len),
    }
}

/// What a manifest records of a stream's commit (`consumed`, whose complete lines read end at
/// `end`): `None` for a commit of another kind.
pub(crate) fn stream_progress(
    consumed: &Consumed,
    end: Option<ReadFrom>,
) -> Result<Option<InputProgress>> {
    Ok(Some(match consumed {
        Consumed::Lines { file, from } => {
            let end = end.unwrap_or(*from);
            InputProgress {
                file: file.clone(),
                consumed: end.offset,
                next_line: end.line,
                window: io::crc_of_range(file, end.offset.saturating_sub(WINDOW), end.offset)?,
            }
        }
        Consumed::Version { dir, next } => InputProgress {
            file: dir.clone(),
            consumed: *next,
            next_line: 0,
            window: 0,
        },
        _ => return Ok(None),
    }))
}

/// Records that `flow` applied snapshot `version`.
fn applied(manifest: &mut Manifest, flow: &str, version: i64) {
    let versions = &mut manifest.snapshot_versions;
    match versions.iter_mut().find(|(name, _)| name == flow) {
        Some(entry) => entry.1 = entry.1.max(version),
        None => versions.push((flow.to_string(), version)),
    }
}

/// Fails when an applied versioned snapshot file no longer has the length it was applied with,
/// or (when the state recorded it) its checksum.
fn check_snapshot_unchanged(file: &Path, len: u64, applied: u64, crc: Option<u32>) -> Result<()> {
    let changed =
        len != applied || crc.is_some_and(|crc| io::crc_of_range(file, 0, len).ok() != Some(crc));
    match changed {
        false => Ok(()),
        true => Err(Error::new(
            ErrorKind::State,
            format!(
                "this snapshot file was applied ({applied} bytes) and has changed since \
                 ({len} bytes now): a versioned snapshot is read once, so a new snapshot needs \
                 a file with a new version; restore the file, or reprocess all input with \
                 --full-refresh"
            ),
        )
        .in_file(file)),
    }
}

/// Whether source table `t` reads Parquet files.
fn is_parquet(pipeline: &Pipeline, t: usize) -> bool {
    matches!(
        pipeline.tables[t].input,
        SourceInput::Files {
            format: crate::plan::Format::Parquet,
            ..
        }
    )
}

/// Whether file-backed table `t` feeds a periodic snapshot flow, directly or through tables
/// reading it.
pub(crate) fn feeds_periodic_snapshot(pipeline: &Pipeline, t: usize) -> bool {
    let mut reached = vec![false; pipeline.tables.len()];
    reached[t] = true;
    for (i, table) in pipeline.tables.iter().enumerate().skip(t + 1) {
        reached[i] = table.input.parents().iter().any(|&p| reached[p]);
    }
    pipeline
        .snapshot_flows
        .iter()
        .any(|f| matches!(f.source, SnapshotSource::Table { table } if reached[table]))
}

/// Fails when a consumed prefix of `file` changed: it shrank below it, or its last bytes differ.
fn check_unchanged(file: &Path, len: u64, p: &InputProgress) -> Result<()> {
    let rewritten = |what: String| {
        Err(Error::new(
            ErrorKind::State,
            format!(
                "{what}: the file was rewritten since an earlier run consumed its first {} bytes; \
                 durable runs read lines appended to a file, never a changed file (use a new \
                 file, or --full-refresh to reprocess all input)",
                p.consumed
            ),
        )
        .in_file(file))
    };
    if len < p.consumed {
        return rewritten(format!("it has {len} bytes"));
    }
    let window = io::crc_of_range(file, p.consumed.saturating_sub(WINDOW), p.consumed)?;
    if window != p.window {
        return rewritten("its consumed bytes changed".into());
    }
    Ok(())
}

/// Whether bytes `from..to` of `file` hold a line end; searched from the end, where one is
/// usually found at once.
fn has_newline(file: &Path, from: u64, to: u64) -> Result<bool> {
    const CHUNK: u64 = 1 << 16;
    if to <= from {
        return Ok(false);
    }
    let mut f = File::open(file).map_err(|e| Error::read(file, &e))?;
    let mut buffer = vec![0u8; CHUNK as usize];
    let mut end = to;
    while end > from {
        let start = end.saturating_sub(CHUNK).max(from);
        let chunk = &mut buffer[..(end - start) as usize];
        f.seek(SeekFrom::Start(start))
            .and_then(|_| f.read_exact(chunk))
            .map_err(|e| Error::read(file, &e))?;
        if chunk.contains(&b'\n') {
            return Ok(true);
        }
        end = start;
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file spelled through its directory's memo is spelled as `normal_path` spells it whole,
    /// for every way a pipeline may name it.
    #[test]
    fn a_file_is_spelled_as_its_whole_path_would_be() {
        let mut normal = Normal::default();
        let names = [
            "events/commit_1.csv",
            "events/commit_2.csv",
            "./events/commit_1.csv",
            "events/./commit_1.csv",
            "other/../events/commit_1.csv",
            "commit_1.csv",
            "/data/in/commit_1.csv",
            "events/..",
            ".",
        ];
        for _ in 0..2 {
            for name in names {
                let path = Path::new(name);
                assert_eq!(
                    normal.path(path).unwrap(),
                    io::normal_path(path).unwrap(),
                    "{name}"
                );
            }
        }
    }
}

//! The framed, checksummed record files of a state directory.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! header   "SCDFLOW\0" (8 bytes) · format version (u32) · file kind (4 ASCII bytes)
//! frame*   payload length (u32, < 0xFFFF_FFFF) · CRC-32 of the payload (u32) · payload
//! end      0xFFFF_FFFF (u32) · number of frames (u64)
//! ```
//!
//! A payload is one record's bytes: a serde record in postcard's encoding, as the engine's
//! [`RecordOut`] / [`RecordIn`] make and take them. The end marker makes truncation
//! detectable (a file cut at a frame boundary still lacks it), the CRC catches flipped bits, and
//! the frame count catches a lost frame. Every problem is an [`ErrorKind::State`] error naming
//! the file and the byte offset of the frame at fault; nothing in a damaged file can make the
//! reader panic or allocate more than the file's own size.
//!
//! Writers do not replace files: callers write under a fresh name and rename
//! ([`write_atomically`]), so a crash leaves either the old file or a whole new one.

use crate::engine::{RecordIn, RecordOut};
use crate::runtime::{ShardFiles, ShardWriter};
use crate::{Error, ErrorKind, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"SCDFLOW\0";
/// The version of this layout and of the records in it; a reader refuses any other.
/// 3: rows are saved packed (`value::Row`'s bytes), no longer value by value. 4: an SCD1 key's
/// winner is saved as its sequence, kind and image, no longer as a whole event. 5: an SCD2 (and
/// a bitemporal key's) history is saved as its events; its versions are derived on restore.
/// 6: a delta gives a changed SCD2 key's events from the least sequence that changed on.
pub const FORMAT_VERSION: u32 = 6;
const END: u32 = u32::MAX;

/// What a record file holds; its tag is part of the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// The manifest: the commit point of a state directory.
    Manifest,
    /// One worker's share of one operator's state.
    Shard,
    /// What changed in one worker's share of one operator's state since its last save.
    Delta,
}

impl FileKind {
    fn tag(self) -> &'static [u8; 4] {
        match self {
            FileKind::Manifest => b"MANI",
            FileKind::Shard => b"SHRD",
            FileKind::Delta => b"DLTA",
        }
    }

    fn name(self) -> &'static str {
        match self {
            FileKind::Manifest => "manifest",
            FileKind::Shard => "state shard",
            FileKind::Delta => "state delta",
        }
    }
}

/// Writes records to a new file; [`FrameWriter::finish`] seals and syncs it.
pub struct FrameWriter {
    out: BufWriter<File>,
    path: PathBuf,
    frames: u64,
    buffer: Vec<u8>,
}

impl FrameWriter {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create(path: &Path, kind: FileKind) -> Result<Self> {
        let file = File::create(path).map_err(|e| Error::write(path, &e))?;
        let mut writer = FrameWriter {
            out: BufWriter::with_capacity(1 << 16, file),
            path: path.to_path_buf(),
            frames: 0,
            buffer: Vec::new(),
        };
        let mut header = Vec::with_capacity(16);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        header.extend_from_slice(kind.tag());
        writer.put_bytes(&header)?;
        Ok(writer)
    }

    /// Appends one record.
    pub fn write<T: Serialize + ?Sized>(&mut self, record: &T) -> Result<()> {
        (self as &mut dyn RecordOut).write(record)
    }

    /// Writes the end marker, then flushes and syncs the file to disk.
    pub fn finish(mut self) -> Result<()> {
        let mut end = [0u8; 12];
        end[..4].copy_from_slice(&END.to_le_bytes());
        end[4..].copy_from_slice(&self.frames.to_le_bytes());
        self.put_bytes(&end)?;
        let path = self.path.clone();
        let file = self
            .out
            .into_inner()
            .map_err(|e| Error::write(&path, e.error()))?;
        file.sync_all().map_err(|e| Error::write(&path, &e))
    }

    fn put_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        self.out
            .write_all(bytes)
            .map_err(|e| Error::write(&self.path, &e))
    }
}

impl RecordOut for FrameWriter {
    fn put(&mut self, encode: &mut dyn FnMut(&mut Vec<u8>) -> Result<()>) -> Result<()> {
        let mut payload = std::mem::take(&mut self.buffer);
        payload.clear();
        encode(&mut payload).map_err(|e| e.in_file(&self.path))?;
        let len = u32::try_from(payload.len())
            .ok()
            .filter(|&l| l != END)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Internal,
                    format!("a state record of {} bytes is too large", payload.len()),
                )
                .in_file(&self.path)
            })?;
        let mut frame = [0u8; 8];
        frame[..4].copy_from_slice(&len.to_le_bytes());
        frame[4..].copy_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        self.put_bytes(&frame)?;
        self.put_bytes(&payload)?;
        self.buffer = payload;
        self.frames += 1;
        Ok(())
    }
}

/// Reads the records of a file written by [`FrameWriter`].
pub struct FrameReader {
    input: BufReader<File>,
    path: PathBuf,
    offset: u64,
    frames: u64,
    remaining: u64,
    done: bool,
    buffer: Vec<u8>,
    /// Where the record last read (or the end marker) starts.
    last: u64,
}

impl FrameReader {
    /// Opens `path` and checks its header.
    pub fn open(path: &Path, kind: FileKind) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::read(path, &e))?;
        let size = file.metadata().map_err(|e| Error::read(path, &e))?.len();
        let mut reader = FrameReader {
            input: BufReader::with_capacity(1 << 16, file),
            path: path.to_path_buf(),
            offset: 0,
            frames: 0,
            remaining: size,
            done: false,
            buffer: Vec::new(),
            last: 0,
        };
        let mut header = [0u8; 16];
        if !reader.take(&mut header)? || &header[..8] != MAGIC {
            return Err(reader.damaged_at(0, format!("is not an scdflow {}", kind.name())));
        }
        let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
        if version != FORMAT_VERSION {
            // Not damage: another scdflow wrote it, and only a rebuild reads it again.
            let message = format!(
                "state format version {version}: this scdflow reads version \
                 {FORMAT_VERSION} only; rebuild the state with --full-refresh (or run the \
                 scdflow that wrote it)"
            );
            return Err(Error::new(ErrorKind::State, message).in_file(path));
        }
        if &header[12..16] != kind.tag() {
            return Err(reader.damaged_at(12, format!("is not an scdflow {}", kind.name())));
        }
        Ok(reader)
    }

    /// The next record, or `None` after the last one (the end marker, checked).
    pub fn read<T: DeserializeOwned>(&mut self) -> Result<Option<T>> {
        (self as &mut dyn RecordIn).read()
    }

    /// Reads the next record, which must exist.
    pub fn expect<T: DeserializeOwned>(&mut self, what: &str) -> Result<T> {
        (self as &mut dyn RecordIn).expect(what)
    }

    /// Reads the next frame's payload into `self.buffer`, checked; false after the end marker.
    fn next_frame(&mut self) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        let at = self.offset;
        self.last = at;
        let mut frame = [0u8; 8];
        if !self.take(&mut frame[..4])? {
            return Err(self.truncated(at));
        }
        let len = u32::from_le_bytes(frame[..4].try_into().expect("4 bytes"));
        if len == END {
            let mut count = [0u8; 8];
            if !self.take(&mut count)? {
                return Err(self.truncated(at));
            }
            let count = u64::from_le_bytes(count);
            if count != self.frames {
                return Err(self.damaged_at(
                    at,
                    format!(
                        "the end marker counts {count} records, the file has {}",
                        self.frames
                    ),
                ));
            }
            if self.remaining != 0 {
                return Err(self.damaged_at(self.offset, "has bytes after its end marker"));
            }
            self.done = true;
            return Ok(false);
        }
        if !self.take(&mut frame[4..])? {
            return Err(self.truncated(at));
        }
        // A damaged length must not make us allocate more than the file holds.
        if u64::from(len) > self.remaining {
            return Err(self.truncated(at));
        }
        let mut buffer = std::mem::take(&mut self.buffer);
        buffer.resize(len as usize, 0);
        let read = self.take(&mut buffer);
        self.buffer = buffer;
        if !read? {
            return Err(self.truncated(at));
        }
        let crc = u32::from_le_bytes(frame[4..].try_into().expect("4 bytes"));
        if crc32fast::hash(&self.buffer) != crc {
            return Err(self.damaged_at(at, "fails its checksum"));
        }
        self.frames += 1;
        Ok(true)
    }

    /// Fills `into` from the file; false when the file ends first.
    fn take(&mut self, into: &mut [u8]) -> Result<bool> {
        if (into.len() as u64) > self.remaining {
            return Ok(false);
        }
        self.input
            .read_exact(into)
            .map_err(|e| Error::read(&self.path, &e))?;
        self.offset += into.len() as u64;
        self.remaining -= into.len() as u64;
        Ok(true)
    }

    fn truncated(&self, at: u64) -> Error {
        self.damaged_at(at, "is truncated: it ends before its end marker")
    }

    /// An error about the file, at byte offset `at`.
    pub fn damaged_at(&self, at: u64, why: impl std::fmt::Display) -> Error {
        Error::new(
            ErrorKind::State,
            format!(
                "state file damaged at byte offset {at}: it {why}; restore the state directory \
                 from a backup or rebuild it with --full-refresh"
            ),
        )
        .in_file(&self.path)
    }
}

impl RecordIn for FrameReader {
    fn next_bytes(&mut self) -> Result<Option<&[u8]>> {
        Ok(self.next_frame()?.then_some(&self.buffer[..]))
    }

    fn damaged(&self, why: &str) -> Error {
        self.damaged_at(self.last, why)
    }
}

/// Writes `path` through `fill` so that a crash leaves either the old file or the whole new one:
/// a temporary sibling is written and synced, renamed over `path`, and the directory synced.
pub fn write_atomically(
    path: &Path,
    kind: FileKind,
    fill: impl FnOnce(&mut FrameWriter) -> Result<()>,
) -> Result<()> {
    let tmp = tmp_sibling(path);
    write_synced(&tmp, kind, fill)?;
    replace_with(&tmp, path)
}

/// Writes `path` through `fill` and syncs it (its directory entry is not synced).
pub fn write_synced(
    path: &Path,
    kind: FileKind,
    fill: impl FnOnce(&mut FrameWriter) -> Result<()>,
) -> Result<()> {
    let mut writer = FrameWriter::create(path, kind)?;
    fill(&mut writer)?;
    writer.finish()
}

/// Renames the synced file `tmp` over `path` and syncs their directory: the second half of
/// [`write_atomically`].
pub fn replace_with(tmp: &Path, path: &Path) -> Result<()> {
    std::fs::rename(tmp, path).map_err(|e| Error::write(path, &e))?;
    sync_parent(path)
}

/// `path` with `.tmp` appended.
pub fn tmp_sibling(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    PathBuf::from(tmp)
}

/// Syncs the directory holding `path`, so that a rename or creation in it is durable.
pub fn sync_parent(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    sync_dir(dir)
}

/// Syncs directory `dir` (its entries: creations, renames, removals).
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::write(dir, &e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    type Record = (Vec<Value>, u64);

    fn records() -> Vec<Record> {
        (0..50)
            .map(|i| {
                (
                    vec![Value::Int(i), Value::Str(format!("row {i}"))],
                    i as u64 * 7,
                )
            })
            .collect()
    }

    fn written(dir: &Path) -> (PathBuf, Vec<u8>) {
        let path = dir.join("shard");
        let mut w = FrameWriter::create(&path, FileKind::Shard).unwrap();
        for r in records() {
            w.write(&r).unwrap();
        }
        w.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        (path, bytes)
    }

    fn read_all(path: &Path) -> Result<Vec<Record>> {
        let mut r = FrameReader::open(path, FileKind::Shard)?;
        let mut out = Vec::new();
        while let Some(record) = r.read()? {
            out.push(record);
        }
        Ok(out)
    }

    #[test]
    fn records_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = written(dir.path());
        assert_eq!(read_all(&path).unwrap(), records());
    }

    #[test]
    fn every_truncation_is_an_error_naming_the_file_and_an_offset() {
        let dir = tempfile::tempdir().unwrap();
        let (path, bytes) = written(dir.path());
        for cut in 0..bytes.len() {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let e = read_all(&path).expect_err("a truncated file is refused");
            assert_eq!(e.kind(), ErrorKind::State, "cut at {cut}: {e}");
            assert_eq!(e.location().file.as_deref(), Some(path.as_path()));
            assert!(e.message().contains("byte offset"), "{e}");
        }
    }

    #[test]
    fn every_flipped_byte_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let (path, bytes) = written(dir.path());
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x41;
            std::fs::write(&path, &damaged).unwrap();
            let e = read_all(&path).expect_err("a damaged file is refused");
            assert_eq!(e.kind(), ErrorKind::State, "byte {at}: {e}");
        }
    }

    #[test]
    fn other_kinds_and_versions_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut bytes) = written(dir.path());
        let e = FrameReader::open(&path, FileKind::Manifest).err().unwrap();
        assert!(e.message().contains("not an scdflow manifest"), "{e}");
        bytes[8] = 9;
        std::fs::write(&path, &bytes).unwrap();
        let e = FrameReader::open(&path, FileKind::Shard).err().unwrap();
        assert!(e.message().contains("format version 9"), "{e}");
        assert!(!e.message().contains("damaged"), "{e}");
    }

    #[test]
    fn atomic_writes_leave_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("MANIFEST");
        write_atomically(&path, FileKind::Manifest, |w| w.write(&7u64)).unwrap();
        let mut r = FrameReader::open(&path, FileKind::Manifest).unwrap();
        assert_eq!(r.expect::<u64>("the manifest").unwrap(), 7);
        assert!(!tmp_sibling(&path).exists());
    }
}

/// Shards as record files: [`FileKind::Shard`] for whole states, [`FileKind::Delta`] for deltas.
#[derive(Debug, Default)]
pub struct ShardRecords;

impl ShardFiles for ShardRecords {
    fn create(&self, path: &Path, delta: bool) -> Result<Box<dyn ShardWriter>> {
        Ok(Box::new(FrameWriter::create(path, shard_kind(delta))?))
    }

    fn open(&self, path: &Path, delta: bool) -> Result<Box<dyn RecordIn>> {
        Ok(Box::new(FrameReader::open(path, shard_kind(delta))?))
    }
}

impl ShardWriter for FrameWriter {
    fn finish(self: Box<Self>) -> Result<()> {
        FrameWriter::finish(*self)
    }
}

fn shard_kind(delta: bool) -> FileKind {
    match delta {
        true => FileKind::Delta,
        false => FileKind::Shard,
    }
}

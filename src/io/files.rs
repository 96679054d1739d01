//! Finding input files and loading them as text.
//!
//! Invariants: a directory lists only its regular files, never recursing and skipping names that
//! start with `.` or `_` (editor backups, `_SUCCESS` markers, our own `_quarantine`), in
//! lexicographic order of the file name, so every run sees the same files in the same order.
//! Loaded text is valid UTF-8 without a leading byte-order mark. A file can also be read from a
//! byte offset on (seeking past what an earlier run read) and a byte range checksummed.
//!
//! Limit: no line may be longer than [`MAX_LINE_BYTES`]. Input is read into memory, so a file
//! without line ends (`/dev/zero`, a binary file, a huge single-line export) would otherwise
//! grow memory until the machine runs out; such a read stops at the limit with a `Format`
//! error naming the file and line.

use crate::{Error, ErrorKind, Result};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The data files behind `path`: the file itself, or a directory's visible regular files in name
/// order. A missing or unreadable path is an `Io` error naming it.
pub fn list_files(path: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path).map_err(|e| Error::read(path, &e))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(|e| Error::read(path, &e))? {
        let entry = entry.map_err(|e| Error::read(path, &e))?;
        let name = entry.file_name();
        let hidden = name
            .to_str()
            .is_some_and(|n| n.starts_with('.') || n.starts_with('_'));
        if hidden {
            continue;
        }
        // The entry's own type costs no system call where the file system records it (a
        // `--follow` poll lists the directory every few milliseconds); a symlink is followed,
        // so a link to a file counts as a file.
        let file = entry.path();
        let kind = entry.file_type().map_err(|e| Error::read(&file, &e))?;
        let is_file = match kind.is_symlink() {
            true => std::fs::metadata(&file)
                .map_err(|e| Error::read(&file, &e))?
                .is_file(),
            false => kind.is_file(),
        };
        if is_file {
            files.push((name, file));
        }
    }
    // The paths share their directory, so their file names order them; compared as the names
    // the listing gave, a path is never split into components (a `--follow` poll sorts every
    // file of the directory).
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(files.into_iter().map(|(_, file)| file).collect())
}

/// The first data file behind `path`, or an `Io` error when a directory has none.
pub fn first_file(path: &Path) -> Result<PathBuf> {
    list_files(path)?.into_iter().next().ok_or_else(|| {
        Error::new(
            ErrorKind::Io,
            format!("no input files in {}", path.display()),
        )
        .in_file(path)
    })
}

/// Reads `path` as UTF-8 text, dropping a leading byte-order mark. Invalid UTF-8 is a `Format`
/// error at the line and column of the first bad byte.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = read_from(path, 0, 1)?;
    let mut text = decode(path, bytes, 1)?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

/// `bytes` of `path` as UTF-8 text, their first byte on line `first_line`. Invalid UTF-8 is a
/// `Format` error at the (whole-file) line and column of the first bad byte.
pub(crate) fn decode(path: &Path, bytes: Vec<u8>, first_line: u64) -> Result<String> {
    match decode_marking(bytes, first_line) {
        (_, invalid) if !invalid.is_empty() => Err(invalid[0].error(path)),
        (text, _) => Ok(text),
    }
}

/// `bytes` as UTF-8 text, their first byte on line `first_line`, with every byte that is not
/// valid UTF-8 replaced by one U+001A (SUBSTITUTE, one byte: offsets into the text stay offsets
/// into the file), and where each run of such bytes starts ([`Invalid`]). A reader turns the
/// records on those lines into bad records, so that one damaged record need not fail a file.
pub(crate) fn decode_marking(bytes: Vec<u8>, first_line: u64) -> (String, Vec<Invalid>) {
    // Valid text, nearly always: no copy and no scan beyond the validation.
    let bytes = match String::from_utf8(bytes) {
        Ok(text) => return (text, Vec::new()),
        Err(e) => e.into_bytes(),
    };
    let mut text = String::with_capacity(bytes.len());
    let mut bad = Vec::new();
    let (mut line, mut line_start) = (first_line, 0usize);
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid();
        for (i, b) in valid.bytes().enumerate() {
            if b == b'\n' {
                line += 1;
                line_start = text.len() + i + 1;
            }
        }
        text.push_str(valid);
        if !chunk.invalid().is_empty() {
            bad.push(Invalid {
                offset: text.len(),
                line,
                column: (text.len() - line_start + 1) as u64,
            });
            text.extend(std::iter::repeat_n(SUBSTITUTE, chunk.invalid().len()));
        }
    }
    (text, bad)
}

/// Where a run of bytes that are not UTF-8 starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Invalid {
    /// Byte offset in the decoded text (and so in the bytes).
    pub(crate) offset: usize,
    /// Its line.
    pub(crate) line: u64,
    /// Its 1-based byte column.
    pub(crate) column: u64,
}

impl Invalid {
    /// The `Format` error that fails a file at these bytes.
    pub(crate) fn error(&self, path: &Path) -> Error {
        Error::new(
            ErrorKind::Format,
            format!("invalid UTF-8 at column {}", self.column),
        )
        .at_line(self.line)
        .in_file(path)
    }
}

/// What [`decode_marking`] puts for each byte that is not UTF-8.
pub(crate) const SUBSTITUTE: char = '\u{1a}';

/// `path` made absolute against the working directory, with `.` and `..` folded away
/// lexically: one spelling per file for records that outlive a working directory (a durable
/// state's consumed inputs). Symbolic links are not resolved, so a link that later points
/// elsewhere is still the same path.
pub fn normal_path(path: &Path) -> Result<std::path::PathBuf> {
    use std::path::Component;
    let absolute = std::path::absolute(path).map_err(|e| Error::read(path, &e))?;
    let mut normal = std::path::PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    Ok(normal)
}

/// The size of `path` in bytes; an `Io` error naming it when it cannot be read.
pub fn file_len(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path)
        .map_err(|e| Error::read(path, &e))?
        .len())
}

/// The longest line an input file may have, in bytes (see the module docs).
pub const MAX_LINE_BYTES: u64 = 64 << 20;

/// `bytes` as people say it: whole MiB, or bytes.
fn bytes_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

/// The bytes of `path` from offset `from` (on line `first_line`) to its end, without reading
/// those before `from`. A file now shorter than `from` (truncated or replaced) is an `Io` error:
/// its earlier reading no longer describes it. A line longer than [`MAX_LINE_BYTES`] is a
/// `Format` error at its line.
pub(crate) fn read_from(path: &Path, from: u64, first_line: u64) -> Result<Vec<u8>> {
    read_bounded(path, from, first_line, MAX_LINE_BYTES)
}

/// [`read_from`] with lines of at most `max_line` bytes.
fn read_bounded(path: &Path, from: u64, first_line: u64, max_line: u64) -> Result<Vec<u8>> {
    let mut file = open_at(path, from, from)?;
    let expected = file.metadata().map_or(0, |m| m.len().saturating_sub(from));
    let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    let (mut line, mut line_start) = (first_line, 0usize);
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::read(path, &e)),
        };
        let base = bytes.len();
        bytes.extend_from_slice(&chunk[..n]);
        // Every line that ends in this chunk, then the one still open after it. memchr finds
        // the ends: finding where to split a followed 10,000-event commit's file (a read of it
        // whole) took 0.36-0.41 ms with a loop over the bytes, 0.20-0.26 ms so.
        let mut too_long = false;
        for i in memchr::memchr_iter(b'\n', &chunk[..n]) {
            too_long = (base + i - line_start) as u64 > max_line;
            if too_long {
                break;
            }
            line += 1;
            line_start = base + i + 1;
        }
        if too_long || (bytes.len() - line_start) as u64 > max_line {
            let message = format!(
                "a line longer than {}; input lines may be at most that \
                 long",
                bytes_text(max_line)
            );
            return Err(Error::new(ErrorKind::Format, message)
                .at_line(line)
                .in_file(path));
        }
    }
}

/// The CRC-32 of the bytes `from..to` of `path` (to check that an already read part of a file did
/// not change). A file shorter than `to` is an `Io` error.
pub fn crc_of_range(path: &Path, from: u64, to: u64) -> Result<u32> {
    if from > to {
        let message = format!("reversed byte range {from}..{to}");
        return Err(Error::new(ErrorKind::Internal, message).in_file(path));
    }
    let mut range = open_at(path, from, to)?.take(to - from);
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = match range.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::read(path, &e)),
        };
        hasher.update(&buf[..n]);
    }
    if range.limit() > 0 {
        // The file shrank after `open_at` looked at its length.
        return Err(shorter(path, to));
    }
    Ok(hasher.finalize())
}

/// `path` opened and positioned at `offset`; an `Io` error when it is shorter than `len` bytes.
pub(crate) fn open_at(path: &Path, offset: u64, len: u64) -> Result<File> {
    let mut file = File::open(path).map_err(|e| Error::read(path, &e))?;
    let actual = file.metadata().map_err(|e| Error::read(path, &e))?.len();
    if actual < len {
        return Err(shorter(path, len));
    }
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::read(path, &e))?;
    Ok(file)
}

fn shorter(path: &Path, len: u64) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("the file has fewer than {len} bytes (was it truncated or replaced?)"),
    )
    .in_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_lists_visible_files_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.csv", "a.csv", "_SUCCESS", ".hidden", "c.csv"] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let names: Vec<_> = list_files(dir.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.csv", "b.csv", "c.csv"]);
    }

    #[test]
    fn a_file_lists_itself_and_missing_paths_are_io_errors() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("one.jsonl");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(list_files(&file).unwrap(), vec![file.clone()]);
        let missing = dir.path().join("nope");
        let err = list_files(&missing).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io);
        assert_eq!(err.location().file.as_deref(), Some(missing.as_path()));
    }

    #[test]
    fn empty_directory_has_no_first_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = first_file(dir.path()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io);
        assert!(err.message().starts_with("no input files in "));
    }

    #[test]
    fn invalid_utf8_names_line_and_column_and_bom_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.csv");
        std::fs::write(&bad, b"a,b\nx,\xff\n").unwrap();
        let err = read_text(&bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Format);
        assert_eq!(err.location().line, Some(2));
        assert_eq!(err.message(), "invalid UTF-8 at column 3");
        let bom = dir.path().join("bom.csv");
        std::fs::write(&bom, "\u{feff}a\n").unwrap();
        assert_eq!(read_text(&bom).unwrap(), "a\n");
    }

    #[test]
    fn length_and_range_checksums() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "hello\nworld\n").unwrap();
        assert_eq!(file_len(&file).unwrap(), 12);
        assert_eq!(
            crc_of_range(&file, 6, 12).unwrap(),
            crc32fast::hash(b"world\n")
        );
        assert_eq!(crc_of_range(&file, 0, 0).unwrap(), crc32fast::hash(b""));
        assert_eq!(read_from(&file, 6, 2).unwrap(), b"world\n");
        assert_eq!(read_from(&file, 12, 3).unwrap(), b"");
        for err in [
            crc_of_range(&file, 6, 13).unwrap_err(),
            read_from(&file, 13, 3).unwrap_err(),
            file_len(&dir.path().join("nope")).unwrap_err(),
        ] {
            assert_eq!(err.kind(), ErrorKind::Io);
        }
        assert_eq!(
            crc_of_range(&file, 7, 6).unwrap_err().kind(),
            ErrorKind::Internal
        );
    }

    /// Issue 13, item 10: a record without an end cannot grow memory without bound.
    #[test]
    fn a_line_past_the_limit_is_a_format_error_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        let long = "x".repeat(200_000);
        std::fs::write(&file, format!("a\nb\n{long}\nc\n")).unwrap();
        assert!(read_bounded(&file, 0, 1, 200_000).is_ok());
        let err = read_bounded(&file, 0, 1, 199_999).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Format);
        assert_eq!(err.location().line, Some(3));
        assert_eq!(
            err.message(),
            "a line longer than 199999 bytes; input lines may be at most \
             that long"
        );
        // From an offset, lines are numbered from the line there.
        let err = read_bounded(&file, 4, 3, 1000).unwrap_err();
        assert_eq!(err.location().line, Some(3));
        // A device that never ends stops at the limit.
        let err = read_bounded(Path::new("/dev/zero"), 0, 1, 1 << 20).unwrap_err();
        assert_eq!(
            err.message(),
            "a line longer than 1 MiB; input lines may be at most that long"
        );
    }
}

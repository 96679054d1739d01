//! Splitting one large input file into shares of whole records: among the processes of a
//! cluster ([`split_points`]), each parsing and validating only the records that begin in its
//! share of the bytes, and between two threads of one process ([`halves`]).
//!
//! A cluster's split points are record boundaries found by the same tokenizers that read the
//! file: a JSON-lines record ends at `\n`; a CSV record ends where the reader's own scan ends
//! it, so a quoted field spanning lines is never cut. Every process computes the same points
//! (one pass over the bytes, without converting any value), then reads its share with
//! [`super::read_file_range`]. The middle of two halves is a guess checked by the reading of
//! the first half instead, since both threads wait for any pass made before them.

use super::csv_records::CsvRecords;
use super::tail::Ending;
use crate::plan::Format;
use crate::Result;
use memchr::{memchr, memrchr};
use std::path::Path;

/// `parts + 1` record boundaries of `path`, `(byte offset, 1-based line)`, from `(0, 1)` to the
/// end of the file: share `p` is the records that begin in `points[p].0..points[p + 1].0`. A
/// share may be empty (a file with fewer records than parts).
pub fn split_points(path: &Path, format: Format, parts: usize) -> Result<Vec<(u64, u64)>> {
    if format == Format::Parquet {
        return Err(super::read_whole("split"));
    }
    let bytes = super::files::read_from(path, 0, 1)?;
    let len = bytes.len() as u64;
    let parts = parts.max(1) as u64;
    let mut points = vec![(0, 1)];
    let mut next = 1;
    // A malformed file is not split: the share that reads it reports the problem.
    record_ends(path, format, bytes, |offset, line| {
        let offset = offset as u64;
        // Every target this boundary reaches gets it (short records may cover several).
        while next < parts && offset >= next * len / parts {
            points.push((offset, line));
            next += 1;
        }
    });
    while points.len() < parts as usize + 1 {
        let last = *points.last().expect("starts with (0, 1)");
        points.push(last);
    }
    let end = points.len() - 1;
    points[end].0 = len;
    Ok(points)
}

/// Calls `each` with the end of every record of `bytes` (the whole file `path`), in order: its
/// offset and the line after it. A JSON-lines record ends at each `\n` (text after the last is
/// left to the caller); a CSV record where the reader's own scan ends it. Returns false when a
/// malformed CSV record stopped the scan. (Parquet files are never split: callers refuse them
/// first.)
fn record_ends(
    path: &Path,
    format: Format,
    bytes: Vec<u8>,
    mut each: impl FnMut(usize, u64),
) -> bool {
    match format {
        Format::Json | Format::Parquet => {
            let mut line = 1;
            for (i, _) in bytes.iter().enumerate().filter(|(_, &b)| b == b'\n') {
                line += 1;
                each(i + 1, line);
            }
            true
        }
        Format::Csv => {
            // Offsets into the decoded text are offsets into the file (bad bytes stay one
            // byte each).
            let (text, _) = super::files::decode_marking(bytes, 1);
            let mut records = CsvRecords::starting_at(path, &text, 1, Ending::Whole);
            while let Some(record) = records.next_record() {
                if record.is_err() {
                    return false;
                }
                let (offset, line) = records.consumed();
                each(offset, line);
            }
            true
        }
    }
}

/// Where to split a read of `path` from `from` (a record boundary on line `first_line`) in two
/// — to its end, or with `growing` up to its last `\n` — for two threads to read at once: the
/// middle `(offset, line)`, just past the first `\n` at or after the middle of the records'
/// bytes, and the end. The middle is a guess, made without scanning the records (a full scan
/// was 1 ms of a followed 10,000-event commit, before either thread began): a CSV `\n` inside
/// a quoted field is not a record boundary. The first half is read with
/// [`super::read_file_upto`], which tells whether the guess was one; if it was not, the part
/// is read whole. `None` when the part has no `\n` past its first record (a CSV header read
/// from the file's start counts as one) to split at.
pub fn halves(
    path: &Path,
    format: Format,
    from: u64,
    first_line: u64,
    growing: bool,
) -> Result<Option<((u64, u64), u64)>> {
    if format == Format::Parquet {
        return Ok(None);
    }
    let mut bytes = super::files::read_from(path, from, first_line)?;
    if growing {
        let cut = memrchr(b'\n', &bytes).map_or(0, |i| i + 1);
        bytes.truncate(cut);
    }
    // A file read from its start may begin with its header: the middle is past it.
    let start = match (format, from) {
        (Format::Csv, 0) => memchr(b'\n', &bytes).map_or(bytes.len(), |i| i + 1),
        _ => 0,
    };
    let middle = start + (bytes.len() - start) / 2;
    let Some(mid) = memchr(b'\n', &bytes[middle..]).map(|i| middle + i + 1) else {
        return Ok(None);
    };
    if mid >= bytes.len() || mid <= start {
        return Ok(None);
    }
    let lines = memchr::memchr_iter(b'\n', &bytes[..mid]).count() as u64;
    let end = from + bytes.len() as u64;
    Ok(Some(((from + mid as u64, first_line + lines), end)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{DataType, Schema};

    fn schema() -> Schema {
        Schema::new([
            ("id".to_string(), DataType::Int),
            ("note".to_string(), DataType::String),
        ])
    }

    /// Reading every share and concatenating gives what reading the whole file gives.
    fn check(text: &str, format: Format, header: bool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, text).unwrap();
        let whole = crate::io::read_file(&path, format, header, &schema()).unwrap();
        for parts in 1..=5 {
            let points = split_points(&path, format, parts).unwrap();
            assert_eq!(points.len(), parts + 1);
            assert_eq!(points[0], (0, 1));
            assert_eq!(points[parts].0, text.len() as u64);
            let mut joined = Vec::new();
            for p in 0..parts {
                let (from, line) = points[p];
                let to = points[p + 1].0;
                joined.extend(
                    crate::io::read_file_range(&path, format, header, &schema(), from, line, to)
                        .unwrap(),
                );
            }
            assert_eq!(joined, whole, "{parts} parts of {text:?}");
        }
    }

    /// CSV records of `id,note` with quoted fields spanning lines, escaped quotes, CRLF and a
    /// quote inside an unquoted field.
    fn awkward_rows() -> String {
        (0..40)
            .map(|i| match i % 4 {
                0 => format!("{i},\"two\nlines\"\n"),
                1 => format!("{i},\"a \"\"quote\"\", then\r\nmore\"\r\n"),
                2 => format!("{i},x\"y\n"),
                _ => format!("{i},\n"),
            })
            .collect()
    }

    #[test]
    fn csv_shares_never_cut_a_quoted_field() {
        let rows = awkward_rows();
        check(&format!("id,note\n{rows}"), Format::Csv, true);
        check(&rows, Format::Csv, false);
        check(&format!("id,note\n{rows}99,no newline"), Format::Csv, true);
        check("id,note\n", Format::Csv, true);
        check("id,note\n1,bad,extra\n2,x\n", Format::Csv, true);
    }

    /// Reads `text` in the halves [`halves`] guesses, as the driver does: `None` when it makes
    /// none, `Some(false)` when the first half's read refuses the middle (then no record of the
    /// file ends there), `Some(true)` when both halves read what one read reads, rows and end.
    fn check_halves(
        text: &str,
        format: Format,
        header: bool,
        growing: bool,
        from: (u64, u64),
    ) -> Option<bool> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, text).unwrap();
        let schema = schema();
        let (one, end) = match growing {
            true => {
                let tail =
                    crate::io::read_file_from(&path, format, header, &schema, from.0, from.1)
                        .unwrap();
                (tail.rows, (tail.end, tail.end_line))
            }
            false => (
                crate::io::read_file(&path, format, header, &schema).unwrap(),
                (text.len() as u64, 0),
            ),
        };
        let ((middle, line), last) = halves(&path, format, from.0, from.1, growing).unwrap()?;
        assert!(from.0 < middle && middle < last, "{text:?}");
        let first = crate::io::read_file_upto(&path, format, header, &schema, from, middle);
        let first = first.unwrap();
        if first.end != middle {
            let mut ends = Vec::new();
            record_ends(&path, format, text.as_bytes().to_vec(), |end, _| {
                ends.push(end as u64)
            });
            assert!(!ends.contains(&middle), "{text:?}");
            return Some(false);
        }
        let second = match growing {
            true => {
                let tail = crate::io::read_file_from(&path, format, header, &schema, middle, line)
                    .unwrap();
                assert_eq!((tail.end, tail.end_line), end, "{text:?}");
                tail.rows
            }
            false => crate::io::read_file_range(&path, format, header, &schema, middle, line, last)
                .unwrap(),
        };
        let joined: Vec<_> = first.rows.into_iter().chain(second).collect();
        assert_eq!(joined, one, "{text:?}");
        Some(true)
    }

    #[test]
    fn halves_read_what_one_read_reads() {
        let rows = awkward_rows();
        let with_header = format!("id,note\n{rows}");
        for growing in [false, true] {
            check_halves(&with_header, Format::Csv, true, growing, (0, 1));
            check_halves(&rows, Format::Csv, false, growing, (0, 1));
            check_halves(
                &format!("{with_header}99,no newline"),
                Format::Csv,
                true,
                growing,
                (0, 1),
            );
            check_halves(
                &format!("{with_header}99,\"open\nquote"),
                Format::Csv,
                true,
                true,
                (0, 1),
            );
            check_halves("id,note\n1,a\n", Format::Csv, true, growing, (0, 1));
            check_halves(
                "id,note\n1,bad,extra\n2,x\n3,y\n",
                Format::Csv,
                true,
                growing,
                (0, 1),
            );
        }
        // From a record boundary past the header, as a durable run reads a grown file.
        let at = with_header.find("4,").unwrap();
        let line = with_header[..at].matches('\n').count() as u64 + 1;
        check_halves(
            &format!("{with_header}9"),
            Format::Csv,
            true,
            true,
            (at as u64, line),
        );
        // The middle guessed inside a quoted field of many lines is refused; one between plain
        // records holds.
        let spanning = format!("id,note\n1,\"{}\"\n2,x\n", "a\n".repeat(50));
        let plain: String = (0..40).map(|i| format!("{i},n{i}\n")).collect();
        for growing in [false, true] {
            let held = |text: &str| check_halves(text, Format::Csv, true, growing, (0, 1));
            assert_eq!(held(&spanning), Some(false));
            assert_eq!(held(&format!("id,note\n{plain}")), Some(true));
        }
        let json: String = (0..30)
            .map(|i| format!("{{\"id\": {i}, \"note\": \"n{i}\"}}\n"))
            .collect();
        for growing in [false, true] {
            assert_eq!(
                check_halves(&json, Format::Json, false, growing, (0, 1)),
                Some(true)
            );
            check_halves(
                &format!("{json}{{\"id\": 9"),
                Format::Json,
                false,
                growing,
                (0, 1),
            );
        }
    }

    #[test]
    fn json_lines_shares_are_whole_lines() {
        let rows: String = (0..30)
            .map(|i| format!("{{\"id\": {i}, \"note\": \"n{i}\"}}\n"))
            .collect();
        check(&rows, Format::Json, false);
        check(&format!("{rows}{{\"id\": 99}}"), Format::Json, false);
        check("", Format::Json, false);
    }
}

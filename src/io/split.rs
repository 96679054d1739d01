//! Splitting one large input file into shares of whole records: among the processes of a
//! cluster ([`split_points`]), each parsing and validating only the records that begin in its
//! share of the bytes, and between two threads of one process ([`halves`]).
//!
//! The split points are record boundaries found by the same tokenizers that read the file: a
//! JSON-lines record ends at `\n`; a CSV record ends where the reader's own scan ends it, so a
//! quoted field spanning lines is never cut. Every process computes the same points (one pass
//! over the bytes, without converting any value), then reads its share with
//! [`super::read_file_range`].

use super::csv_records::CsvRecords;
use super::tail::Ending;
use crate::plan::Format;
use crate::Result;
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
    record_ends(path, format, bytes, 1, Ending::Whole, |offset, line| {
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

/// Calls `each` with the end of every record of `bytes` (a part of `path` from a record
/// boundary on line `first_line`, read as `ending`), in order: its offset into `bytes` and
/// the line after it. A JSON-lines record ends at each `\n` (text after the last is left to
/// the caller); a CSV record where the reader's own scan ends it. Returns false when a
/// malformed CSV record stopped the scan. (Parquet files are never split: callers refuse them
/// first.)
fn record_ends(
    path: &Path,
    format: Format,
    bytes: Vec<u8>,
    first_line: u64,
    ending: Ending,
    mut each: impl FnMut(usize, u64),
) -> bool {
    match format {
        Format::Json | Format::Parquet => {
            let mut line = first_line;
            for (i, _) in bytes.iter().enumerate().filter(|(_, &b)| b == b'\n') {
                line += 1;
                each(i + 1, line);
            }
            true
        }
        Format::Csv => {
            // Offsets into the decoded text are offsets into the file (bad bytes stay one
            // byte each).
            let (text, _) = super::files::decode_marking(bytes, first_line);
            let mut records = CsvRecords::starting_at(path, &text, first_line, ending);
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

/// The two halves of what a read of `path` from `from` (a record boundary on line
/// `first_line`) takes — to its end, or with `growing` up to its last complete record as
/// [`super::read_file_from`] reads it — as `[(from, first_line), middle, end]`: reading
/// `from..middle` and `middle..end` with [`super::read_file_range`] gives that read's rows, and
/// `end` (offset and line) is where it stops. `None` when the part does not split into
/// records (a malformed CSV record: one read reports it) or holds fewer than two. A CSV part
/// read from the file's start is split after its first record (the header, when it has one).
pub fn halves(
    path: &Path,
    format: Format,
    from: u64,
    first_line: u64,
    growing: bool,
) -> Result<Option<[(u64, u64); 3]>> {
    if format == Format::Parquet {
        return Ok(None);
    }
    let mut bytes = super::files::read_from(path, from, first_line)?;
    if growing {
        // As a growing read: nothing after the last `\n` exists yet.
        let cut = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(cut);
    }
    let ending = match growing {
        true => Ending::Growing,
        false => Ending::Whole,
    };
    let len = bytes.len();
    let mut ends: Vec<(usize, u64)> = Vec::new();
    if !record_ends(path, format, bytes, first_line, ending, |end, line| {
        ends.push((end, line))
    }) {
        return Ok(None);
    }
    if format == Format::Json && ends.last().is_none_or(|&(end, _)| end < len) {
        let line = ends.last().map_or(first_line, |&(_, line)| line);
        ends.push((len, line));
    }
    // The first record of a file read from its start may be its header.
    let records = match (format, from) {
        (Format::Csv, 0) => ends.get(1..).unwrap_or_default(),
        _ => &ends[..],
    };
    let Some(&(end, end_line)) = records.last() else {
        return Ok(None);
    };
    let start = match (format, from) {
        (Format::Csv, 0) => ends[0].0,
        _ => 0,
    };
    // The first record that ends past the middle of the records' bytes ends the first half.
    let middle = start + (end - start) / 2;
    let cut = records.partition_point(|&(e, _)| e <= middle);
    let Some(&(mid, mid_line)) = records.get(cut.min(records.len() - 1)) else {
        return Ok(None);
    };
    if mid == end || mid <= start {
        return Ok(None);
    }
    let at = |offset: usize| from + offset as u64;
    Ok(Some([
        (from, first_line),
        (at(mid), mid_line),
        (at(end), end_line),
    ]))
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

    /// Reading both halves gives what one read gives, rows and end alike.
    fn check_halves(text: &str, format: Format, header: bool, growing: bool, from: (u64, u64)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, text).unwrap();
        let (one, end) = match growing {
            true => {
                let tail =
                    crate::io::read_file_from(&path, format, header, &schema(), from.0, from.1)
                        .unwrap();
                (tail.rows, (tail.end, tail.end_line))
            }
            false => (
                crate::io::read_file(&path, format, header, &schema()).unwrap(),
                (text.len() as u64, 0),
            ),
        };
        let Some([first, middle, last]) = halves(&path, format, from.0, from.1, growing).unwrap()
        else {
            // Only a part of one record does not split (every case here parses as records).
            assert!(one.len() < 2, "{text:?}");
            return;
        };
        assert_eq!(first, from);
        assert!(first.0 < middle.0 && middle.0 < last.0, "{text:?}");
        let mut joined = Vec::new();
        for ((from, line), (to, _)) in [(first, middle), (middle, last)] {
            joined.extend(
                crate::io::read_file_range(&path, format, header, &schema(), from, line, to)
                    .unwrap(),
            );
        }
        assert_eq!(joined, one, "{text:?}");
        match growing {
            true => assert_eq!(last, end, "{text:?}"),
            false => assert_eq!(last.0, end.0, "{text:?}"),
        }
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
        let json: String = (0..30)
            .map(|i| format!("{{\"id\": {i}, \"note\": \"n{i}\"}}\n"))
            .collect();
        for growing in [false, true] {
            check_halves(&json, Format::Json, false, growing, (0, 1));
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

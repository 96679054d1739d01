//! Reading a file from a byte offset on, as durable runs (`--state DIR`) read a file that grew.
//!
//! A run remembers how far it read a file (a byte offset and the line number there); the next
//! run seeks to that offset and reads only what was appended since. A writer may be appending
//! while we read, so only complete lines count: the bytes after the file's last `\n` are left
//! for a later read, and so is a CSV record whose quoted field is still open at that `\n` (a
//! quoted field may span lines). The consequence: a file's last line needs its `\n` to be read
//! by a durable run. [`read_file`](super::read_file) (a non-durable run) reads the whole file as
//! it is, last line with or without `\n`; both go through [`read`], [`Ending`] telling them apart.
//!
//! With a CSV header and an offset past it, the header is read on its own from the start of the
//! file (up to its first complete record, never more than the offset) to map the columns. Line
//! numbers of rows and errors are those of the whole file. A BOM is skipped only at offset 0.

use super::csv_read::{read_records, Header};
use super::csv_records::{CsvRecord, CsvRecords};
use super::files;
use super::json_read::read_json_from;
use super::row::{RowError, SourceRow};
use crate::plan::Format;
use crate::value::Schema;
use crate::{Error, ErrorKind, Result};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// What a read of a file from a byte offset saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tail {
    /// Rows and row errors of the complete lines after `from`, with line numbers of the whole
    /// file.
    pub rows: Vec<Result<SourceRow, RowError>>,
    /// Byte offset just past the last complete line read (== `from` when nothing new): the
    /// `from` of the next read.
    pub end: u64,
    /// The 1-based line number of the byte at `end`: the `first_line` of the next read.
    pub end_line: u64,
}

/// How a read treats the end of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The file is complete: its last line is read even without a `\n`, and a CSV quote still
    /// open at the end is a `Format` error.
    Whole,
    /// A writer may be appending: only the lines up to the last `\n` are read, and a CSV record
    /// whose quoted field is open at that `\n` is left (with what follows) for a later read.
    Growing,
    /// The file is complete and the read stops at this byte offset, a record boundary
    /// ([`super::split_points`]): one share of a file split among processes.
    At(u64),
    /// The read stops at this byte offset, just past a `\n`, read as [`Ending::Growing`]: a
    /// record whose quoted field is open there is left, so [`Tail::end`] falls short of the
    /// offset exactly when it is not a record boundary (the guessed middle of [`super::halves`]).
    Upto(u64),
}

const BOM: char = '\u{feff}';

/// Reads `path` from byte `from` (a record boundary on line `first_line`) to its end as `ending`
/// says.
pub(crate) fn read(
    path: &Path,
    format: Format,
    header: bool,
    schema: &Schema,
    from: u64,
    first_line: u64,
    ending: Ending,
) -> Result<Tail> {
    let mut bytes = files::read_from(path, from, first_line)?;
    let ending = match ending {
        Ending::At(to) => {
            bytes.truncate(to.saturating_sub(from) as usize);
            Ending::Whole
        }
        Ending::Upto(to) => {
            bytes.truncate(to.saturating_sub(from) as usize);
            Ending::Growing
        }
        other => other,
    };
    if ending == Ending::Growing {
        // `\n` never occurs inside a multi-byte UTF-8 sequence, so a half-written character
        // after the cut is never decoded.
        let cut = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(cut);
    }
    let (text, invalid) = files::decode_marking(bytes, first_line);
    let skip = match text.strip_prefix(BOM) {
        Some(_) if from == 0 => BOM.len_utf8(),
        _ => 0,
    };
    let body = &text[skip..];
    let read = || -> Result<_> {
        Ok(match format {
            Format::Json => {
                let rows = read_json_from(path, body, first_line, schema)?;
                let lines = body.bytes().filter(|&b| b == b'\n').count() as u64;
                (rows, body.len(), first_line + lines)
            }
            Format::Parquet => return Err(super::read_whole("read as text")),
            Format::Csv => {
                let header = match (header, from) {
                    (false, _) => Header::None,
                    (true, 0) => Header::First,
                    (true, _) => Header::Known(header_record(path, from)?),
                };
                let mut records = CsvRecords::starting_at(path, body, first_line, ending);
                match read_records(path, &mut records, header, schema)? {
                    // No complete header yet: nothing is consumed, not even blank lines, so that a
                    // later read from a nonzero offset always finds the header before it.
                    None => (Vec::new(), 0, first_line),
                    Some(rows) => {
                        let (consumed, line) = records.consumed();
                        (rows, consumed, line)
                    }
                }
            }
        })
    };
    // A file-level error on a line with bytes that are not UTF-8 (a header, say) is theirs.
    let (mut rows, consumed, end_line) = read().map_err(|e| match invalid.first() {
        Some(bad) if e.location().line.is_none_or(|l| l == bad.line) => bad.error(path),
        _ => e,
    })?;
    // Bytes past what this read consumed (a record still being written) are a later read's.
    let read_part = invalid
        .iter()
        .take_while(|bad| bad.offset < skip + consumed);
    mark_invalid_utf8(path, &text, first_line, read_part, &mut rows)?;
    let end = match consumed {
        0 => from,
        _ => from + (skip + consumed) as u64,
    };
    Ok(Tail {
        rows,
        end,
        end_line,
    })
}

/// Turns the record on each line `invalid` names (`(line, column)` of bytes that are not UTF-8;
/// a record with a multi-line field is the one that starts last at or before the line) into a
/// bad record. Bytes before the first record (a CSV header) are a `Format` error for the file.
fn mark_invalid_utf8<'i>(
    path: &Path,
    text: &str,
    first_line: u64,
    invalid: impl Iterator<Item = &'i files::Invalid>,
    rows: &mut [std::result::Result<SourceRow, RowError>],
) -> Result<()> {
    let start = |r: &std::result::Result<SourceRow, RowError>| match r {
        Ok(row) => row.line,
        Err(e) => e.line,
    };
    // `invalid` is in line order: one pass over the text's lines.
    let mut lines = text.split('\n').zip(first_line..);
    let mut last = None;
    for bad in invalid {
        let files::Invalid { line, column, .. } = *bad;
        if last == Some(line) {
            continue;
        }
        last = Some(line);
        let at = rows.partition_point(|r| start(r) <= line);
        let Some(record) = at.checked_sub(1).map(|i| &mut rows[i]) else {
            return Err(bad.error(path));
        };
        let shown = lines
            .find(|(_, n)| *n == line)
            .map_or_else(String::new, |(l, _)| {
                l.replace(files::SUBSTITUTE, "\u{fffd}")
            });
        let reason = match start(record) == line {
            true => format!("invalid UTF-8 at column {column}"),
            false => format!("invalid UTF-8 at line {line}, column {column}"),
        };
        *record = Err(RowError {
            line: start(record),
            column: None,
            reason,
            raw: serde_json::Value::String(shown),
        });
    }
    Ok(())
}

/// The header of the CSV file `path`: its first complete record, which must end within its
/// first `limit` bytes (the part already read). Reads line by line, only as far as needed.
fn header_record(path: &Path, limit: u64) -> Result<CsvRecord> {
    let file = files::open_at(path, 0, limit)?;
    let mut reader = BufReader::new(file.take(limit));
    let mut bytes = Vec::new();
    loop {
        let read = reader
            .read_until(b'\n', &mut bytes)
            .map_err(|e| Error::read(path, &e))?;
        if read == 0 {
            let message = format!(
                "no complete CSV header in the first {limit} bytes, which were read before (was the file replaced?)"
            );
            return Err(Error::new(ErrorKind::Format, message).in_file(path));
        }
        if !bytes.ends_with(b"\n") {
            continue;
        }
        let text = files::decode(path, bytes.clone(), 1)?;
        let text = text.strip_prefix(BOM).unwrap_or(&text);
        if let Some(record) = CsvRecords::starting_at(path, text, 1, Ending::Growing).next() {
            return record;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{read_file, read_file_from};
    use crate::value::{DataType, Row, Value};
    use std::path::PathBuf;

    type Rows = Vec<Result<SourceRow, RowError>>;

    fn schema() -> Schema {
        Schema::new([
            ("id".to_string(), DataType::Int),
            ("name".to_string(), DataType::String),
        ])
    }

    struct File {
        _dir: tempfile::TempDir,
        path: PathBuf,
    }

    impl File {
        fn new(name: &str) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(name);
            File { _dir: dir, path }
        }

        fn write(&self, bytes: &[u8]) {
            std::fs::write(&self.path, bytes).unwrap();
        }

        fn from(&self, format: Format, header: bool, from: u64, line: u64) -> Tail {
            read_file_from(&self.path, format, header, &schema(), from, line).unwrap()
        }
    }

    /// Rows of `content` read as it grows through the prefixes `cuts` (any byte positions,
    /// ascending) to the whole, one read per step continuing where the last stopped; also checks
    /// each step's `end` and `end_line` against the bytes.
    fn read_growing(
        file: &File,
        format: Format,
        header: bool,
        content: &[u8],
        cuts: &[usize],
    ) -> Rows {
        let (mut from, mut line, mut rows) = (0u64, 1u64, Vec::new());
        for &cut in cuts.iter().chain([&content.len()]) {
            file.write(&content[..cut]);
            let tail = file.from(format, header, from, line);
            assert!(
                tail.end >= from && tail.end <= cut as u64,
                "{cut}: {tail:?}"
            );
            let consumed = &content[from as usize..tail.end as usize];
            assert_eq!(
                tail.end_line,
                line + consumed.iter().filter(|&&b| b == b'\n').count() as u64
            );
            rows.extend(tail.rows);
            (from, line) = (tail.end, tail.end_line);
        }
        assert_eq!(from, content.len() as u64, "everything consumed in the end");
        rows
    }

    /// Whole-file reading and every way of reading the file as it grows in two or three steps
    /// agree on rows and line numbers.
    fn check_growth(name: &str, format: Format, header: bool, content: &str) {
        let file = File::new(name);
        file.write(content.as_bytes());
        let whole = read_file(&file.path, format, header, &schema()).unwrap();
        assert!(whole.len() >= 3, "{whole:?}");
        let content = content.as_bytes();
        let n = content.len();
        for i in 0..=n {
            assert_eq!(
                read_growing(&file, format, header, content, &[i]),
                whole,
                "cut {i}"
            );
            // Three steps: a second cut after the first, some bytes further on.
            for j in (i..=n).step_by(3) {
                assert_eq!(
                    read_growing(&file, format, header, content, &[i, j]),
                    whole,
                    "cuts {i}, {j}"
                );
            }
        }
    }

    #[test]
    fn csv_with_header_read_whole_or_growing_agree() {
        let content = "\u{feff}\"ex\ntra\",NAME,id\r\nz,\"Al, B\",1\n\n\nq,\"two\nlines é\",2\nq,x,oops\n\"\",,\n";
        check_growth("a.csv", Format::Csv, true, content);
    }

    #[test]
    fn csv_without_header_read_whole_or_growing_agree() {
        let content = "1,a\r\n\n2,\"b\n\"\"c\"\"\nd\"\n3\n4,é\n";
        check_growth("a.csv", Format::Csv, false, content);
    }

    #[test]
    fn json_lines_read_whole_or_growing_agree() {
        let content = "\u{feff}{\"id\":1,\"name\":\"é\"}\r\n\n  \n{\"id\":\"x\"}\n{\"name\":\"b\",\"id\":3}\n";
        check_growth("a.jsonl", Format::Json, false, content);
    }

    #[test]
    fn reading_from_each_record_boundary_gives_the_rest_of_the_rows() {
        let file = File::new("a.csv");
        let content = "name,id\nx,1\n\"y\nz\",2\nw,3\n";
        file.write(content.as_bytes());
        let whole = read_file(&file.path, Format::Csv, true, &schema()).unwrap();
        // (offset, line) just past the header and past each record.
        for (from, line, rest) in [(8, 2, 0), (12, 3, 1), (20, 5, 2), (24, 6, 3)] {
            let tail = file.from(Format::Csv, true, from, line);
            assert_eq!(tail.rows, whole[rest..], "from {from}");
            assert_eq!((tail.end, tail.end_line), (24, 6));
        }
    }

    #[test]
    fn a_partial_last_line_is_read_once_completed() {
        let file = File::new("a.jsonl");
        file.write(b"{\"id\":1}\n{\"id\":2}");
        let first = file.from(Format::Json, false, 0, 1);
        assert_eq!((first.rows.len(), first.end, first.end_line), (1, 9, 2));
        // A non-durable read takes the last line as it is.
        let whole = read_file(&file.path, Format::Json, false, &schema()).unwrap();
        assert_eq!(whole.len(), 2);
        file.write(b"{\"id\":1}\n{\"id\":2");
        // Nothing new yet.
        let again = file.from(Format::Json, false, 9, 2);
        assert_eq!((again.rows, again.end, again.end_line), (vec![], 9, 2));
        file.write(b"{\"id\":1}\n{\"id\":22}\n");
        let rest = file.from(Format::Json, false, 9, 2);
        assert_eq!(
            rest.rows,
            [Ok(SourceRow {
                line: 2,
                row: Row::from(vec![Value::Int(22), Value::Null])
            })]
        );
        assert_eq!((rest.end, rest.end_line), (19, 3));
    }

    #[test]
    fn a_quoted_csv_field_open_at_the_last_newline_waits() {
        let file = File::new("a.csv");
        file.write(b"id,name\n1,\"two\n");
        let first = file.from(Format::Csv, true, 0, 1);
        assert_eq!((first.rows, first.end, first.end_line), (vec![], 8, 2));
        file.write(b"id,name\n1,\"two\nlines\"\n2,b");
        let rest = file.from(Format::Csv, true, 8, 2);
        assert_eq!(
            rest.rows,
            [Ok(SourceRow {
                line: 2,
                row: Row::from(vec![Value::Int(1), Value::Str("two\nlines".into())])
            })]
        );
        assert_eq!((rest.end, rest.end_line), (22, 4));
        // The same file read whole: the open quote at the end is an error there.
        file.write(b"id,name\n1,\"two\n");
        let err = read_file(&file.path, Format::Csv, true, &schema()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Format);
    }

    #[test]
    fn an_incomplete_header_consumes_nothing() {
        let file = File::new("a.csv");
        for content in ["", "\n\n", "id,na", "\n\"id\n"] {
            file.write(content.as_bytes());
            let tail = file.from(Format::Csv, true, 0, 1);
            assert_eq!(
                (tail.rows, tail.end, tail.end_line),
                (vec![], 0, 1),
                "{content:?}"
            );
        }
        file.write(b"\n\nid,name\n");
        let tail = file.from(Format::Csv, true, 0, 1);
        assert_eq!((tail.rows, tail.end, tail.end_line), (vec![], 10, 4));
    }

    #[test]
    fn a_row_error_in_the_tail_has_its_whole_file_line() {
        let file = File::new("a.csv");
        file.write(b"id,name\n1,a\n\nx,b\n");
        let tail = file.from(Format::Csv, true, 12, 3);
        let err = tail.rows[0].as_ref().unwrap_err();
        assert_eq!((err.line, err.column.as_deref()), (4, Some("id")));
        file.write(b"{\"id\":1}\n{\"id\":\"x\"}\n");
        let tail = file.from(Format::Json, false, 9, 2);
        assert_eq!(tail.rows[0].as_ref().unwrap_err().line, 2);
    }

    #[test]
    fn the_tail_of_a_csv_maps_columns_by_its_header() {
        let file = File::new("a.csv");
        file.write(b"Name,extra,ID\na,z,1\nb,y,2\n");
        let tail = file.from(Format::Csv, true, 20, 3);
        assert_eq!(
            tail.rows,
            [Ok(SourceRow {
                line: 3,
                row: Row::from(vec![Value::Int(2), Value::Str("b".into())])
            })]
        );
        // The header still decides the width: a short record is a row error.
        file.write(b"Name,extra,ID\na,z,1\nb,2\n");
        let tail = file.from(Format::Csv, true, 20, 3);
        assert_eq!(
            tail.rows[0].as_ref().unwrap_err().reason,
            "expected 3 fields, found 2"
        );
        // A header lacking a schema column is a file error, as when reading whole.
        file.write(b"Name,extra\na,z\nb,y\n");
        let err = read_file_from(&file.path, Format::Csv, true, &schema(), 15, 3).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{}:1: CSV header has no column `id`", file.path.display())
        );
    }

    /// Bytes that are not UTF-8 in a record still being written (a quoted field open at the
    /// end) belong to the later read that completes it, not to the record before.
    #[test]
    fn bad_bytes_past_the_read_part_wait_with_it() {
        let file = File::new("g.csv");
        file.write(b"id,name\n1,a\n2,\"b\xff\nc");
        let tail = read_file_from(&file.path, Format::Csv, true, &schema(), 0, 1).unwrap();
        assert_eq!(tail.rows.len(), 1);
        assert!(tail.rows[0].is_ok(), "{:?}", tail.rows[0]);
        assert_eq!(tail.end, 12);
        file.write(b"id,name\n1,a\n2,\"b\xff\nc\"\n");
        let tail = read_file_from(&file.path, Format::Csv, true, &schema(), 12, 3).unwrap();
        let bad = tail.rows[0].as_ref().unwrap_err();
        assert_eq!(
            (bad.line, bad.reason.as_str()),
            (3, "invalid UTF-8 at column 5")
        );
    }

    #[test]
    fn bad_input_is_an_error_naming_file_and_line() {
        let file = File::new("a.jsonl");
        // Bytes that are not UTF-8, or a line that is not an object: one bad record each
        // (issue 13, item 15), at its line of the whole file.
        file.write(b"{\"id\":1}\n\n{\"id\":\xff}\n{\"id\":2}\n");
        let tail = read_file_from(&file.path, Format::Json, false, &schema(), 9, 2).unwrap();
        let bad = tail.rows[0].as_ref().unwrap_err();
        assert_eq!(
            (bad.line, bad.reason.as_str()),
            (3, "invalid UTF-8 at column 7")
        );
        assert_eq!(bad.raw, serde_json::json!("{\"id\":\u{fffd}}"));
        assert!(tail.rows[1].is_ok());
        file.write(b"{\"id\":1}\n[]\n");
        let tail = read_file_from(&file.path, Format::Json, false, &schema(), 9, 2).unwrap();
        let bad = tail.rows[0].as_ref().unwrap_err();
        assert_eq!(bad.line, 2);
        assert!(
            bad.reason.starts_with("not a JSON object"),
            "{}",
            bad.reason
        );
        // Bytes that are not UTF-8 in a CSV header fail the file.
        let csv = File::new("h.csv");
        csv.write(b"id,na\xffme\n1,a\n");
        let err = read_file_from(&csv.path, Format::Csv, true, &schema(), 0, 1).unwrap_err();
        assert_eq!(
            (err.kind(), err.location().line),
            (ErrorKind::Format, Some(1))
        );
        assert_eq!(err.message(), "invalid UTF-8 at column 6");
        // A file now shorter than what was read before.
        let err = read_file_from(&file.path, Format::Json, false, &schema(), 100, 9).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io);
        // A CSV whose header is not within the part read before.
        let csv = File::new("a.csv");
        csv.write(b"\n\nid,name\n1,a\n");
        let err = read_file_from(&csv.path, Format::Csv, true, &schema(), 2, 3).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Format);
    }
}

//! Reading sources and writing targets.
//!
//! Reading: [`list_files`] finds a source's files (a directory's visible files in name order),
//! [`read_file`] turns one file into typed rows against a schema, and [`infer_schema`] guesses a
//! schema from a source's first file (D17). Two kinds of failure are kept apart:
//! - a file that cannot be read as its format at all (unreadable, a CSV header missing a schema
//!   column or holding bytes that are not UTF-8, a CSV quote never closed) is an
//!   [`Error`](crate::Error) of kind `Io` or `Format` naming file and line;
//! - a record that does not fit (a bad value, the wrong number of CSV fields, a JSON line that is
//!   not an object or gives a column twice, bytes that are not UTF-8) is a [`RowError`] among the
//!   rows, so the caller can fail the update or quarantine it (D3).
//!
//! NULL on input: an empty unquoted CSV field, a JSON `null`, a missing JSON key. `""` in CSV is
//! the empty string. Line numbers are 1-based physical lines (counted by `\n`) where a record
//! starts. Value syntax is in `parse_value`; CSV and JSON details in `csv_read` and
//! `json_read`.
//!
//! Durable runs (`--state DIR`) read only what was appended to a file since the last run:
//! [`read_file_from`] seeks to the byte offset consumed before and returns the rows of the
//! complete lines after it with the new offset ([`Tail`]). Only lines ending in `\n` are read (a
//! writer may be mid-line), so a file's last line needs its `\n` to be read by a durable run,
//! while [`read_file`] reads it regardless. [`file_len`] and [`crc_of_range`] let the caller
//! check that the part already read is still there and unchanged. Details in `tail`.
//!
//! Writing: [`write_rows`] writes a whole target or change-feed file (CSV or JSONL) atomically,
//! [`append_quarantine`] appends invalid rows, [`swap_in`] moves a group of staged files into
//! place all together or not at all; value text forms are in [`format`](mod@format).

mod csv_read;
mod csv_records;
mod files;
pub mod format;
mod infer;
mod json_lines;
mod json_read;
pub mod names;
pub(crate) mod parse_value;
mod row;
mod split;
mod swap;
mod tail;
mod versioned;
pub mod watch;
mod write;

pub use files::{crc_of_range, file_len, first_file, list_files, normal_path};
pub use format::{format_double, format_value_text, value_to_json, value_to_json_text};
pub use row::{RowError, SourceRow};
pub use split::{halves, split_points};
pub use swap::{finish_swap, swap_in, JOURNAL};
pub use tail::Tail;
pub use versioned::{version_regex, versioned_files};
pub(crate) use write::replace_file;
pub use write::{
    append_quarantine, push_row, push_row_with_tail, render_quarantine, render_rows,
    render_rows_into, row_tail, write_rows, write_table, OutputFormat,
};

use crate::plan::Format;
use crate::value::Schema;
use crate::Result;
use std::path::Path;

/// The error of a text reader handed a Parquet file, which only `ingest` reads (whole, through
/// `delta::read_parquet_file`): a caller's bug, never the user's.
fn read_whole(what: &str) -> crate::Error {
    let message = format!("a Parquet file cannot be {what} here; it is read whole");
    crate::Error::new(crate::ErrorKind::Internal, message)
}

/// Reads one text file (CSV or JSON lines) against `schema` (`header` applies to CSV only).
/// The outer error is a whole-file problem; each inner item is a row or the reason its record
/// does not fit.
pub fn read_file(
    path: &Path,
    format: Format,
    header: bool,
    schema: &Schema,
) -> Result<Vec<Result<SourceRow, RowError>>> {
    Ok(tail::read(path, format, header, schema, 0, 1, tail::Ending::Whole)?.rows)
}

/// Reads `path` from byte offset `from` (0 = the whole file) up to its last `\n`: the rows of
/// the complete lines after `from`, and where they end. `from` must be a record boundary (0 or
/// an `end` of an earlier read of the same file) and `first_line` the 1-based line number of the
/// byte there (1 when `from` is 0), so rows and errors are numbered as [`read_file`] numbers them.
///
/// The bytes after the last `\n` are not read (a writer may be mid-line; they are read once
/// their line is complete), nor is a CSV record whose quoted field is still open at that `\n`.
/// With a CSV header and `from > 0`, the header is read from the start of the file (only it).
/// The bytes before `from` are not read otherwise. A file shorter than `from` is an `Io` error;
/// file-level problems in the new part (invalid UTF-8, a JSON line that is not an object) are
/// `Format` errors naming file and line, as for [`read_file`].
pub fn read_file_from(
    path: &Path,
    format: Format,
    header: bool,
    schema: &Schema,
    from: u64,
    first_line: u64,
) -> Result<Tail> {
    tail::read(
        path,
        format,
        header,
        schema,
        from,
        first_line,
        tail::Ending::Growing,
    )
}

/// Reads the complete records of `path` from byte `from` (a record boundary on line
/// `first_line`) up to byte `to`, just past a `\n`, as [`read_file_from`] reads a growing file
/// cut there: the first half of a part read in [`halves`], whose middle is a guess. The tail's
/// `end` is `to` exactly when `to` is a record boundary; otherwise a record spans it, and only
/// the records before that one are read.
pub fn read_file_upto(
    path: &Path,
    format: Format,
    header: bool,
    schema: &Schema,
    (from, first_line): (u64, u64),
    to: u64,
) -> Result<Tail> {
    let ending = tail::Ending::Upto(to);
    tail::read(path, format, header, schema, from, first_line, ending)
}

/// Reads the records of `path` that begin in bytes `from..to` (record boundaries from
/// [`split_points`]; `first_line` is the line at `from`), with whole-file line numbers: one
/// process's share of a file split among the processes of a cluster. Reading every share gives
/// exactly what [`read_file`] gives.
pub fn read_file_range(
    path: &Path,
    format: Format,
    header: bool,
    schema: &Schema,
    from: u64,
    first_line: u64,
    to: u64,
) -> Result<Vec<Result<SourceRow, RowError>>> {
    let ending = tail::Ending::At(to);
    Ok(tail::read(path, format, header, schema, from, first_line, ending)?.rows)
}

/// Infers the schema of `path` (a file or a directory) from the first records of its first file
/// (D17; rules in the `infer` module).
pub fn infer_schema(path: &Path, format: Format, header: bool) -> Result<Schema> {
    let first = files::first_file(path)?;
    let text = files::read_text(&first)?;
    infer::infer(&first, &text, format, header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::DataType;
    use crate::ErrorKind;

    /// Deterministic pseudo-random bytes (xorshift), so failures reproduce.
    fn garbage(seed: u64, len: usize, alphabet: &[u8]) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                alphabet[(x % alphabet.len() as u64) as usize]
            })
            .collect()
    }

    #[test]
    fn readers_and_inference_never_panic_on_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g");
        let schema = Schema::new([
            ("a".to_string(), DataType::Int),
            ("b".to_string(), DataType::Timestamp),
            (
                "c".to_string(),
                DataType::Struct(vec![("x".into(), DataType::Double)]),
            ),
        ]);
        let all_bytes: Vec<u8> = (0..=255).collect();
        let csvish = b"a,b,c\"\r\n 0123456789e.-+{}[]:TZ";
        let jsonish = b"{}[]\":,0123456789e.-+ntruefalsnul\\ \nabcTZ";
        for seed in 0..300 {
            for alphabet in [&all_bytes[..], csvish, jsonish] {
                std::fs::write(&path, garbage(seed, 64 + seed as usize % 200, alphabet)).unwrap();
                for format in [Format::Csv, Format::Json] {
                    for header in [true, false] {
                        for result in [
                            read_file(&path, format, header, &schema).map(|_| ()),
                            infer_schema(&path, format, header).map(|_| ()),
                        ] {
                            if let Err(e) = result {
                                assert_ne!(e.kind(), ErrorKind::Internal, "{e}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn truncated_quotes_and_huge_numbers_are_handled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let schema = Schema::new([("a".to_string(), DataType::BigInt)]);
        std::fs::write(&path, "a\n1\n\"2").unwrap();
        let err = read_file(&path, Format::Csv, true, &schema).unwrap_err();
        assert_eq!(
            (err.kind(), err.location().line),
            (ErrorKind::Format, Some(3))
        );
        std::fs::write(&path, format!("a\n{}\n", "9".repeat(5000))).unwrap();
        let rows = read_file(&path, Format::Csv, true, &schema).unwrap();
        assert!(rows[0].is_err());
        std::fs::write(&path, format!("{{\"a\":{}}}\n", "9".repeat(30))).unwrap();
        let rows = read_file(&path, Format::Json, true, &schema).unwrap();
        assert!(rows[0].is_err());
        // Beyond f64 range serde_json rejects the number, and so the line (one bad record).
        std::fs::write(&path, format!("{{\"a\":{}}}\n", "9".repeat(5000))).unwrap();
        let rows = read_file(&path, Format::Json, true, &schema).unwrap();
        assert!(rows[0]
            .as_ref()
            .unwrap_err()
            .reason
            .starts_with("not a JSON object"));
    }

    #[test]
    fn infer_reads_the_first_file_of_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.csv"), "x\nhello\n").unwrap();
        std::fs::write(dir.path().join("a.csv"), "x\n1\n").unwrap();
        let schema = infer_schema(dir.path(), Format::Csv, true).unwrap();
        assert_eq!(schema, Schema::new([("x".to_string(), DataType::BigInt)]));
        let empty = tempfile::tempdir().unwrap();
        let err = infer_schema(empty.path(), Format::Json, true).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io);
    }
}

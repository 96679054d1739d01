//! Reading sources and writing targets.
//!
//! Reading: [`list_files`] finds a source's files (a directory's visible files in name order),
//! [`read_file`] turns one file into typed rows against a schema, and [`infer_schema`] guesses a
//! schema from a source's first file (D17). Two kinds of failure are kept apart:
//! - a file that cannot be read as its format at all (unreadable, invalid UTF-8, a CSV header
//!   missing a schema column, a JSON line that is not an object) is an [`Error`](crate::Error)
//!   of kind `Io` or `Format` naming file and line;
//! - a record that does not fit the schema (a bad value, the wrong number of CSV fields) is a
//!   [`RowError`] among the rows, so the caller can fail the update or quarantine it (D3).
//!
//! NULL on input: an empty unquoted CSV field, a JSON `null`, a missing JSON key. `""` in CSV is
//! the empty string. Line numbers are 1-based physical lines (counted by `\n`) where a record
//! starts. Value syntax is in `parse_value`; CSV and JSON details in `csv_read` and
//! `json_read`.
//!
//! Writing: [`write_rows`] writes a whole target or change-feed file (CSV or JSONL) atomically,
//! [`append_quarantine`] appends invalid rows; value text forms are in [`format`](mod@format).

mod csv_read;
mod csv_records;
mod files;
pub mod format;
mod infer;
mod json_lines;
mod json_read;
pub(crate) mod parse_value;
mod row;
mod versioned;
mod write;

pub use files::list_files;
pub use format::{format_double, format_value_text, value_to_json, value_to_json_text};
pub use row::{RowError, SourceRow};
pub use versioned::{version_regex, versioned_files};
pub use write::{append_quarantine, render_rows, write_rows, OutputFormat};

use crate::plan::Format;
use crate::value::Schema;
use crate::Result;
use std::path::Path;

/// Reads one file against `schema` (`header` applies to CSV only). The outer error is a
/// whole-file problem; each inner item is a row or the reason its record does not fit.
pub fn read_file(
    path: &Path,
    format: Format,
    header: bool,
    schema: &Schema,
) -> Result<Vec<Result<SourceRow, RowError>>> {
    let text = files::read_text(path)?;
    match format {
        Format::Csv => csv_read::read_csv(path, &text, header, schema),
        Format::Json => json_read::read_json(path, &text, schema),
    }
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
        // Beyond f64 range serde_json rejects the number, and so the line.
        std::fs::write(&path, format!("{{\"a\":{}}}\n", "9".repeat(5000))).unwrap();
        let err = read_file(&path, Format::Json, true, &schema).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Format);
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

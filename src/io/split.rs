//! Splitting one large input file among the processes of a cluster: each process parses and
//! validates only the records that begin in its share of the bytes.
//!
//! The split points are record boundaries found by the same tokenizers that read the file: a
//! JSON-lines record ends at `\n`; a CSV record ends where the reader's own scan ends it, so a
//! quoted field spanning lines is never cut. Every process computes the same points (one pass
//! over the bytes, without converting any value), then reads its share with
//! [`super::read_file_range`].

use super::csv_records::CsvRecords;
use crate::plan::Format;
use crate::Result;
use std::path::Path;

/// `parts + 1` record boundaries of `path`, `(byte offset, 1-based line)`, from `(0, 1)` to the
/// end of the file: share `p` is the records that begin in `points[p].0..points[p + 1].0`. A
/// share may be empty (a file with fewer records than parts).
pub fn split_points(path: &Path, format: Format, parts: usize) -> Result<Vec<(u64, u64)>> {
    let bytes = super::files::read_from(path, 0, 1)?;
    let len = bytes.len() as u64;
    let parts = parts.max(1) as u64;
    let mut points = vec![(0, 1)];
    let mut next = 1;
    let mut take = |points: &mut Vec<(u64, u64)>, offset: u64, line: u64| {
        // Every target this boundary reaches gets it (short records may cover several).
        while next < parts && offset >= next * len / parts {
            points.push((offset, line));
            next += 1;
        }
    };
    match format {
        Format::Json => {
            let mut line = 1;
            for (i, _) in bytes.iter().enumerate().filter(|(_, &b)| b == b'\n') {
                line += 1;
                take(&mut points, i as u64 + 1, line);
            }
        }
        Format::Parquet => return Err(super::read_whole("split")),
        Format::Csv => {
            // Offsets into the decoded text are offsets into the file (bad bytes stay one
            // byte each).
            let (text, _) = super::files::decode_marking(bytes, 1);
            let mut records = CsvRecords::new(path, &text);
            // A malformed file is not split: the share that reads it reports the problem.
            while let Some(Ok(_)) = records.next_record() {
                let (offset, line) = records.consumed();
                take(&mut points, offset as u64, line);
            }
        }
    }
    while points.len() < parts as usize + 1 {
        let last = *points.last().expect("starts with (0, 1)");
        points.push(last);
    }
    let end = points.len() - 1;
    points[end].0 = len;
    Ok(points)
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

    #[test]
    fn csv_shares_never_cut_a_quoted_field() {
        let rows: String = (0..40)
            .map(|i| match i % 4 {
                0 => format!("{i},\"two\nlines\"\n"),
                1 => format!("{i},\"a \"\"quote\"\", then\r\nmore\"\r\n"),
                2 => format!("{i},x\"y\n"),
                _ => format!("{i},\n"),
            })
            .collect();
        check(&format!("id,note\n{rows}"), Format::Csv, true);
        check(&rows, Format::Csv, false);
        check(&format!("id,note\n{rows}99,no newline"), Format::Csv, true);
        check("id,note\n", Format::Csv, true);
        check("id,note\n1,bad,extra\n2,x\n", Format::Csv, true);
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

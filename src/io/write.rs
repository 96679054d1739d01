//! Writing targets, change feeds and quarantine files.
//!
//! Invariants (golden tests compare bytes):
//! - `write_rows` replaces its file atomically: it writes `<path>.tmp`, syncs it, renames it over
//!   `path` and syncs the directory, so a reader (or a crash) sees the old file or the whole new
//!   one, never a mix.
//! - CSV: a header line of column names, then one line per row, `\n` endings. NULL is an empty
//!   unquoted field; a field is quoted (`"`, inner quotes doubled) when it is empty or contains
//!   `,` `"` CR or LF or starts or ends with a space or tab, so the empty string (`""`) and
//!   leading/trailing blanks survive a round trip through our reader. Cell text is
//!   [`format_value_text`].
//! - JSONL: one compact object per row, keys in column order, `null` for NULL, values as
//!   [`super::format::write_json`] renders them.
//! - Quarantine: appended JSON lines `{"file","line","column","reason","record"}`, in that order.
//!
//! A CSV row of a one-column table whose value is NULL is an empty line, which CSV readers skip;
//! that one shape does not round-trip.

use super::format::{format_value_text, write_json_datum, write_json_string};
use super::row::RowError;
use crate::value::{Datum, Row, Schema, Value};
use crate::{Error, ErrorKind, Result};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Output file format of targets and change feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// RFC 4180 CSV with a header line.
    Csv,
    /// JSON lines, one object per row.
    Jsonl,
}

impl OutputFormat {
    /// The file extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            OutputFormat::Csv => "csv",
            OutputFormat::Jsonl => "jsonl",
        }
    }
}

/// Writes exactly `rows`, in the given order, to `path` (atomically replacing it). Every row
/// must have one value per schema column.
pub fn write_rows(path: &Path, format: OutputFormat, schema: &Schema, rows: &[Row]) -> Result<()> {
    let out = render_rows(format, schema, rows).map_err(|e| e.in_file(path))?;
    replace_file(path, out.as_bytes())
}

/// Writes a table file as [`write_rows`] does, its rows written (already rendered, in order) by
/// `rows`: a table streamed from rendered parts is never held as one text.
pub fn write_table(
    path: &Path,
    format: OutputFormat,
    schema: &Schema,
    rows: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<()> {
    let mut header = String::new();
    render_rows_into(&mut header, format, schema, &[], true)?;
    replace_file_with(path, |out| {
        out.write_all(header.as_bytes())?;
        rows(out)
    })
}

/// `rows` as the text [`write_rows`] writes: CSV with a header line, or JSON lines. Every row
/// must have one value per schema column.
pub fn render_rows(format: OutputFormat, schema: &Schema, rows: &[Row]) -> Result<String> {
    let mut out = String::new();
    render_rows_into(&mut out, format, schema, rows, true)?;
    Ok(out)
}

/// Appends `rows` to `out` as [`render_rows`] renders them, with the CSV header line only if
/// `header` (a file that grows commit by commit has it once, at its start).
pub fn render_rows_into(
    out: &mut String,
    format: OutputFormat,
    schema: &Schema,
    rows: &[Row],
    header: bool,
) -> Result<()> {
    if header && format == OutputFormat::Csv {
        let names: Vec<&str> = schema.names().collect();
        push_csv_line(out, names.iter().map(|n| Some(*n)));
    }
    for row in rows {
        check_width(schema, row)?;
        push_row(out, format, schema, row.iter());
    }
    Ok(())
}

/// Appends `records` (each with the source file it came from) to the quarantine file `path`.
pub fn append_quarantine(path: &Path, records: &[(PathBuf, RowError)]) -> Result<()> {
    let out = render_quarantine(records);
    create_parent(path)?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::write(path, &e))?;
    file.write_all(out.as_bytes())
        .map_err(|e| Error::write(path, &e))
}

/// `records` as the JSON lines [`append_quarantine`] appends.
pub fn render_quarantine(records: &[(PathBuf, RowError)]) -> String {
    let mut out = String::new();
    for (file, bad) in records {
        out.push_str("{\"file\":");
        write_json_string(&mut out, &file.to_string_lossy());
        let _ = write!(out, ",\"line\":{},\"column\":", bad.line);
        match &bad.column {
            Some(column) => write_json_string(&mut out, column),
            None => out.push_str("null"),
        }
        out.push_str(",\"reason\":");
        write_json_string(&mut out, &bad.reason);
        out.push_str(",\"record\":");
        out.push_str(&bad.raw.to_string());
        out.push_str("}\n");
    }
    out
}

fn check_width(schema: &Schema, row: &Row) -> Result<()> {
    if row.len() == schema.len() {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Internal,
        format!("row of {} values for {} columns", row.len(), schema.len()),
    ))
}

/// Appends one row, given as its values (one per schema column, in order), as
/// [`render_rows`] renders it. Cells are written straight into `out`, so a row costs no
/// allocation but a quoted text's.
pub fn push_row<'v>(
    out: &mut String,
    format: OutputFormat,
    schema: &Schema,
    values: impl Iterator<Item = Datum<'v>>,
) {
    push_row_with_tail(out, format, &schema.columns, values, "");
}

/// As [`push_row`] for the first columns of a row (`columns`, `values`), the rest being `tail`:
/// their rendering by [`row_tail`], made once for the many rows that end alike (the change
/// feed's change type, commit version and commit time).
///
/// The loops take each value straight from `values`: a `zip().enumerate()` chain over them was
/// a call per value that returned it through memory (see `Datums::next`), 6% of the main
/// thread's samples in a plain 1M-event SCD2 run.
pub fn push_row_with_tail<'v>(
    out: &mut String,
    format: OutputFormat,
    columns: &[crate::value::Column],
    mut values: impl Iterator<Item = Datum<'v>>,
    tail: &str,
) {
    match format {
        OutputFormat::Csv => {
            for (i, c) in columns.iter().enumerate() {
                let Some(v) = values.next() else { break };
                if i > 0 {
                    out.push(',');
                }
                push_csv_cell(out, v, &c.ty);
            }
            out.push_str(tail);
            out.push('\n');
        }
        OutputFormat::Jsonl => {
            out.push('{');
            for (i, column) in columns.iter().enumerate() {
                let Some(v) = values.next() else { break };
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, &column.name);
                out.push(':');
                write_json_datum(out, v, &column.ty);
            }
            out.push_str(tail);
            out.push_str("}\n");
        }
    }
}

/// The rendering of a row's last columns (`columns`, `values`, at least one) that
/// [`push_row_with_tail`] appends after the first ones.
pub fn row_tail(
    format: OutputFormat,
    columns: &[crate::value::Column],
    values: &[Value],
) -> String {
    let mut tail = String::new();
    push_row_with_tail(&mut tail, format, columns, Row::from(values).iter(), "");
    // Drop the row's own opening and ending; what is left follows other fields.
    let body = match format {
        OutputFormat::Csv => &tail[..tail.len() - 1],
        OutputFormat::Jsonl => &tail[1..tail.len() - 2],
    };
    format!(",{body}")
}

/// One CSV cell: NULL is empty; other values as [`format_value_text`], quoted when needed.
fn push_csv_cell(out: &mut String, v: Datum<'_>, ty: &crate::value::DataType) {
    match v {
        Datum::Null => {}
        Datum::Int(i) => out.push_str(itoa::Buffer::new().format(i)),
        Datum::Str(text) => push_csv_text(out, text),
        other => push_csv_text(out, &format_value_text(&other.to_value(), ty)),
    }
}

fn push_csv_text(out: &mut String, text: &str) {
    if needs_quotes(text) {
        out.push('"');
        out.push_str(&text.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(text);
    }
}

/// Appends one CSV line; `None` cells are NULL.
fn push_csv_line<'a>(out: &mut String, cells: impl Iterator<Item = Option<&'a str>>) {
    for (i, cell) in cells.enumerate() {
        if i > 0 {
            out.push(',');
        }
        if let Some(text) = cell {
            push_csv_text(out, text);
        }
    }
    out.push('\n');
}

fn needs_quotes(text: &str) -> bool {
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let bytes = text.as_bytes();
    // Bytes, not chars: every byte tested is ASCII, which never occurs inside a UTF-8 sequence.
    bytes.first().is_none_or(blank)
        || bytes.last().is_some_and(blank)
        || bytes
            .iter()
            .any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n'))
}

/// Replaces `path` by `bytes` atomically: writes and syncs `<path>.tmp`, renames it over `path`,
/// syncs the directory.
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    replace_file_with(path, |out| out.write_all(bytes))
}

/// [`replace_file`] with the bytes written by `fill` (through a buffer).
fn replace_file_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<()> {
    create_parent(path)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let written = std::fs::File::create(&tmp)
        .and_then(|f| {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, f);
            fill(&mut out)?;
            out.into_inner()
                .map_err(|e| e.into_error())
                .and_then(|f| f.sync_all())
        })
        .map_err(|e| Error::write(&tmp, &e));
    let renamed = written
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| Error::write(path, &e)))
        .and_then(|()| crate::persist::frames::sync_parent(path));
    if renamed.is_err() {
        // Best effort: the error that matters is the one being returned.
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

fn create_parent(path: &Path) -> Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => {
            std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, &e))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::read_file;
    use crate::plan::Format;
    use crate::value::{DataType, F64};

    fn schema() -> Schema {
        Schema::new([
            ("id".to_string(), DataType::BigInt),
            ("name".to_string(), DataType::String),
            ("score".to_string(), DataType::Double),
            ("at".to_string(), DataType::Timestamp),
        ])
    }

    fn rows() -> Vec<Row> {
        [
            vec![
                Value::Int(1),
                Value::Str(String::new()),
                Value::Double(F64(3.0)),
                Value::Timestamp(1_752_832_860_000_000),
            ],
            vec![Value::Int(2), Value::Null, Value::Null, Value::Null],
            vec![
                Value::Int(3),
                Value::Str(" a,\"b\"\nc ".into()),
                Value::Double(F64(f64::NAN)),
                Value::Null,
            ],
        ]
        .into_iter()
        .map(Row::from)
        .collect()
    }

    #[test]
    fn csv_bytes_quote_only_when_needed_and_null_is_unquoted_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out/t.csv");
        write_rows(&path, OutputFormat::Csv, &schema(), &rows()).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "id,name,score,at\n\
             1,\"\",3.0,2025-07-18T10:01:00\n\
             2,,,\n\
             3,\" a,\"\"b\"\"\nc \",NaN,\n"
        );
        assert!(!dir.path().join("out/t.csv.tmp").exists());
    }

    #[test]
    fn csv_round_trips_null_empty_and_awkward_strings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        write_rows(&path, OutputFormat::Csv, &schema(), &rows()).unwrap();
        let back: Vec<Row> = read_file(&path, Format::Csv, true, &schema())
            .unwrap()
            .into_iter()
            .map(|r| r.unwrap().row)
            .collect();
        assert_eq!(back, rows());
    }

    #[test]
    fn jsonl_keeps_column_order_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        write_rows(&path, OutputFormat::Jsonl, &schema(), &rows()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.lines().next().unwrap(),
            r#"{"id":1,"name":"","score":3.0,"at":"2025-07-18T10:01:00"}"#
        );
        let back: Vec<Row> = read_file(&path, Format::Json, true, &schema())
            .unwrap()
            .into_iter()
            .map(|r| r.unwrap().row)
            .collect();
        assert_eq!(back, rows());
    }

    #[test]
    fn rewriting_replaces_and_empty_outputs_are_well_formed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        write_rows(&path, OutputFormat::Csv, &schema(), &rows()).unwrap();
        write_rows(&path, OutputFormat::Csv, &schema(), &[]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "id,name,score,at\n"
        );
        let jsonl = dir.path().join("t.jsonl");
        write_rows(&jsonl, OutputFormat::Jsonl, &schema(), &[]).unwrap();
        assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), "");
        assert_eq!(OutputFormat::Jsonl.extension(), "jsonl");
    }

    #[test]
    fn a_row_of_the_wrong_width_is_an_internal_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_rows(
            &dir.path().join("t.csv"),
            OutputFormat::Csv,
            &schema(),
            &[Row::new()],
        )
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Internal);
    }

    #[test]
    fn quarantine_lines_append_in_fixed_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("_quarantine/flow.jsonl");
        let bad = RowError {
            line: 3,
            column: Some("seq".into()),
            reason: "`x` is not a valid INT".into(),
            raw: serde_json::json!(["1", "x"]),
        };
        let whole = RowError {
            column: None,
            reason: "expected 2 fields, found 1".into(),
            ..bad.clone()
        };
        append_quarantine(&path, &[(PathBuf::from("in/a.csv"), bad)]).unwrap();
        append_quarantine(&path, &[(PathBuf::from("in/b.csv"), whole)]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            concat!(
                r#"{"file":"in/a.csv","line":3,"column":"seq","#,
                r#""reason":"`x` is not a valid INT","record":["1","x"]}"#,
                "\n",
                r#"{"file":"in/b.csv","line":3,"column":null,"#,
                r#""reason":"expected 2 fields, found 1","record":["1","x"]}"#,
                "\n",
            )
        );
    }
}

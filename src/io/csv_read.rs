//! Reading a CSV file into typed rows.
//!
//! With a header, the first record names the columns: schema columns are found in it by name,
//! case-insensitively (the first match wins), extra file columns are ignored, and a schema
//! column the header lacks is a `Format` error for the whole file. Without a header, fields map
//! to schema columns by position. Either way every record must have as many fields as the
//! header (or schema); a record that does not, or a field that does not parse as its column's
//! type, is a [`RowError`] and the other rows still count. An empty unquoted field is NULL at any
//! type; `""` is the empty string (a STRING, or a bad value for other types).
//!
//! Rows are packed as they are parsed ([`crate::value::Row`]): a STRING field's text goes
//! from the record into the row, with no owned string in between.
//!
//! The records may also be the end of a file (see `super::tail`): their columns are then mapped
//! by the file's header read separately ([`Header::Known`]).

use super::csv_records::{CsvRecord, CsvRecords, Record};
use super::parse_value::{parse_scalar, parse_text};
use super::row::{RowError, SourceRow};
use crate::value::{closest, Datum, Packer, Schema};
use crate::{Error, ErrorKind, Result};
use std::path::Path;

/// Where the names of a CSV file's columns come from.
pub(crate) enum Header {
    /// Nowhere: fields map to schema columns by position.
    None,
    /// The first record read is the header.
    First,
    /// The file's header record, read apart from the records (which follow it in the file).
    Known(CsvRecord),
}

/// Reads `records` of `path` against `schema`, columns mapped as `header` says; `None` when the
/// header is the first record and there is none.
pub(crate) fn read_records(
    path: &Path,
    records: &mut CsvRecords<'_>,
    header: Header,
    schema: &Schema,
) -> Result<Option<Vec<Result<SourceRow, RowError>>>> {
    let (positions, width) = match header {
        Header::None => ((0..schema.len()).collect(), schema.len()),
        Header::First => match records.next_record() {
            None => return Ok(None),
            Some(first) => columns(path, first?, schema)?,
        },
        Header::Known(record) => columns(path, record.view(), schema)?,
    };
    // Sized once: grown by doubling, the rows of a 10,000-record file were moved about as
    // many times again, each time to pages never touched before.
    let mut rows = Vec::with_capacity(records.most_left());
    while let Some(record) = records.next_record() {
        rows.push(to_row(record?, &positions, width, schema));
    }
    Ok(Some(rows))
}

/// For each schema column the index of its field in `header`, and the header's width.
fn columns(path: &Path, header: Record<'_>, schema: &Schema) -> Result<(Vec<usize>, usize)> {
    Ok((header_positions(path, header, schema)?, header.len()))
}

/// For each schema column, the index of its field in the header record.
fn header_positions(path: &Path, header: Record<'_>, schema: &Schema) -> Result<Vec<usize>> {
    let names: Vec<&str> = header.fields().map(Option::unwrap_or_default).collect();
    schema
        .names()
        .map(|column| {
            let mut found = names
                .iter()
                .enumerate()
                .filter(|(_, n)| n.eq_ignore_ascii_case(column))
                .map(|(i, _)| i);
            let first = found.next();
            if let (Some(a), Some(b)) = (first, found.next()) {
                // Which of the two the data means is unknowable: taking the first silently
                // could load every row from the wrong field.
                let message = format!(
                    "CSV header names column `{column}` twice (fields {} and {})",
                    a + 1,
                    b + 1
                );
                return Err(Error::new(ErrorKind::Format, message)
                    .at_line(header.line)
                    .in_file(path));
            }
            first.ok_or_else(|| {
                let hint = closest(column, names.iter().copied())
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                Error::new(
                    ErrorKind::Format,
                    format!("CSV header has no column `{column}`{hint}"),
                )
                .at_line(header.line)
                .in_file(path)
            })
        })
        .collect()
}

fn to_row(
    record: Record<'_>,
    positions: &[usize],
    width: usize,
    schema: &Schema,
) -> Result<SourceRow, RowError> {
    let bad = |column: Option<&str>, reason: String| RowError {
        line: record.line,
        column: column.map(str::to_string),
        reason,
        raw: record.to_json(),
    };
    if record.len() != width {
        let found = record.len();
        return Err(bad(None, format!("expected {width} fields, found {found}")));
    }
    let mut row = Packer::new();
    for (column, &at) in schema.columns.iter().zip(positions) {
        let ty = &column.ty;
        match record.field(at) {
            None => row.push_datum(Datum::Null),
            // A scalar is packed straight from the record (a STRING's text is the value, never
            // an owned string); only STRUCT and ARRAY cells become values first.
            Some(text) => match parse_scalar(text, ty) {
                Some(datum) => row.push_datum(datum.map_err(|r| bad(Some(&column.name), r))?),
                None => row.push(&parse_text(text, ty).map_err(|r| bad(Some(&column.name), r))?),
            },
        };
    }
    Ok(SourceRow {
        line: record.line,
        row: row.finish(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{DataType, Row, Value};
    use serde_json::json;

    fn schema() -> Schema {
        Schema::new([
            ("id".to_string(), DataType::Int),
            ("name".to_string(), DataType::String),
        ])
    }

    fn read(text: &str, header: bool) -> Result<Vec<Result<SourceRow, RowError>>> {
        let path = Path::new("in.csv");
        let header = if header { Header::First } else { Header::None };
        // A file without even a header line has no rows.
        let rows = read_records(path, &mut CsvRecords::new(path, text), header, &schema())?;
        Ok(rows.unwrap_or_default())
    }

    fn ok(line: u64, row: Vec<Value>) -> Result<SourceRow, RowError> {
        Ok(SourceRow {
            line,
            row: Row::from(row),
        })
    }

    #[test]
    fn header_maps_columns_by_name_ignoring_case_and_extras() {
        let rows = read("extra,NAME,Id\nz,\"Al, B\",1\n,,\n", true).unwrap();
        assert_eq!(
            rows,
            [
                ok(2, vec![Value::Int(1), Value::Str("Al, B".into())]),
                ok(3, vec![Value::Null, Value::Null]),
            ]
        );
    }

    /// Issue 13, item 15: a column named twice is not silently read from its first field.
    #[test]
    fn a_header_naming_a_column_twice_is_a_format_error() {
        let err = read("id,name,ID\n1,a,2\n", true).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Format);
        assert_eq!(
            err.to_string(),
            "in.csv:1: CSV header names column `id` twice (fields 1 and 3)"
        );
        // A repeated column the schema does not read is an extra, as any other.
        assert!(read("id,x,name,x\n1,a,b,c\n", true).is_ok());
    }

    #[test]
    fn missing_header_column_is_a_format_error_with_a_hint() {
        let err = read("idd,name\n1,a\n", true).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Format);
        assert_eq!(
            err.to_string(),
            "in.csv:1: CSV header has no column `id` (did you mean `idd`?)"
        );
    }

    #[test]
    fn without_header_fields_are_positional() {
        let rows = read("1,\"\"\n2,\n", false).unwrap();
        assert_eq!(
            rows,
            [
                ok(1, vec![Value::Int(1), Value::Str(String::new())]),
                ok(2, vec![Value::Int(2), Value::Null]),
            ]
        );
    }

    #[test]
    fn bad_values_and_field_counts_are_row_errors() {
        let rows = read("id,name\n3000000000,a\n1\n2,b\n\"\",c\n", true).unwrap();
        assert_eq!(
            rows[0],
            Err(RowError {
                line: 2,
                column: Some("id".into()),
                reason: "`3000000000` is not a valid INT (out of range)".into(),
                raw: json!(["3000000000", "a"]),
            })
        );
        assert_eq!(
            rows[1],
            Err(RowError {
                line: 3,
                column: None,
                reason: "expected 2 fields, found 1".into(),
                raw: json!(["1"]),
            })
        );
        assert_eq!(rows[2], ok(4, vec![Value::Int(2), Value::Str("b".into())]));
        assert_eq!(
            rows[3].as_ref().unwrap_err().reason,
            "`` is not a valid INT"
        );
    }

    #[test]
    fn multi_line_field_row_reports_its_first_line() {
        let rows = read("id,name\n1,\"two\nlines\"\nx,y\n", true).unwrap();
        assert_eq!(
            rows[0],
            ok(2, vec![Value::Int(1), Value::Str("two\nlines".into())])
        );
        assert_eq!(rows[1].as_ref().unwrap_err().line, 4);
    }

    #[test]
    fn empty_file_has_no_rows() {
        assert_eq!(read("", true).unwrap(), []);
        assert_eq!(read("\n\n", false).unwrap(), []);
    }
}

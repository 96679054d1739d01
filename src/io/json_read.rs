//! Reading a JSON-lines file into typed rows.
//!
//! Each non-blank line is one object (see [`super::json_lines`]). Schema columns are found among
//! the keys by name, exact match first, then case-insensitively; keys the schema lacks are
//! ignored. A missing key and `null` are both NULL. A line that is not one JSON object, a schema
//! column's key given twice (`{"a":1,"a":2}`, or `a` and `A`: which one counts would be a
//! guess), or a value of the wrong JSON type or out of range (rules in [`super::parse_value`])
//! is a [`RowError`]: the flow's `--on-invalid` fails the run on it or sets the line aside, and
//! the other rows still count. The text may be the end of a file; lines are numbered as in the
//! whole file.

use super::json_lines::{json_lines_from, parse_object, JsonObject};
use super::parse_value::json_to_value;
use super::row::{RowError, SourceRow};
use crate::value::{DataType, Datum, Packer, Schema};
use crate::Result;
use serde_json::Value as Json;
use std::path::Path;

/// Reads the JSON-lines `text`, the part of `path` from line `first_line` on, against `schema`.
pub(crate) fn read_json_from(
    path: &Path,
    text: &str,
    first_line: u64,
    schema: &Schema,
) -> Result<Vec<Result<SourceRow, RowError>>> {
    let rows = json_lines_from(text, first_line).map(|(line, text)| {
        match parse_object(path, line, text) {
            Ok(object) => to_row(line, &object, schema),
            Err(e) => Err(RowError {
                line,
                column: None,
                reason: e.message().to_string(),
                raw: serde_json::Value::String(text.to_string()),
            }),
        }
    });
    Ok(rows.collect())
}

fn to_row(line: u64, object: &JsonObject, schema: &Schema) -> Result<SourceRow, RowError> {
    let mut row = Packer::new();
    for column in &schema.columns {
        let bad = |reason| RowError {
            line,
            column: Some(column.name.clone()),
            reason,
            raw: object.to_json(),
        };
        match object.get(&column.name) {
            Err((first, second)) => {
                return Err(bad(format!(
                    "the object gives this column twice (keys `{first}` and `{second}`)"
                )))
            }
            Ok(None) => row.push_datum(Datum::Null),
            // A JSON string read as a STRING is packed from the parsed text, not copied first.
            Ok(Some(Json::String(text))) if column.ty == DataType::String => {
                row.push_datum(Datum::Str(text))
            }
            Ok(Some(json)) => row.push(&json_to_value(json, &column.ty).map_err(bad)?),
        };
    }
    Ok(SourceRow {
        line,
        row: row.finish(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{Row, Value};
    use serde_json::json;

    fn schema() -> Schema {
        Schema::new([
            ("userId".to_string(), DataType::BigInt),
            ("ts".to_string(), DataType::Timestamp),
            (
                "tags".to_string(),
                DataType::Array(Box::new(DataType::String)),
            ),
        ])
    }

    fn read(text: &str) -> Result<Vec<Result<SourceRow, RowError>>> {
        read_json_from(Path::new("in.jsonl"), text, 1, &schema())
    }

    #[test]
    fn keys_match_case_insensitively_and_missing_is_null() {
        let rows =
            read("{\"USERID\":1,\"extra\":true,\"tags\":[\"a\"]}\n\n{\"userId\":null}\n").unwrap();
        assert_eq!(
            rows,
            [
                Ok(SourceRow {
                    line: 1,
                    row: Row::from(vec![
                        Value::Int(1),
                        Value::Null,
                        Value::Array(vec![Value::Str("a".into())])
                    ]),
                }),
                Ok(SourceRow {
                    line: 3,
                    row: Row::from(vec![Value::Null, Value::Null, Value::Null]),
                }),
            ]
        );
    }

    #[test]
    fn timestamps_with_offsets_are_utc() {
        let rows =
            read("{\"ts\":\"2025-07-18T12:01:00+02:00\"}\n{\"ts\":\"2025-07-18T10:01:00Z\"}\n")
                .unwrap();
        let ts: Vec<_> = rows.into_iter().map(|r| r.unwrap().row.value(1)).collect();
        assert!(matches!(ts[0], Value::Timestamp(_)));
        assert_eq!(ts[0], ts[1]);
    }

    #[test]
    fn wrong_types_are_row_errors_with_the_raw_object() {
        let rows =
            read("{\"userId\":\"7\"}\n{\"userId\":1.5}\n{\"ts\":5}\n{\"tags\":\"a\"}\n").unwrap();
        assert_eq!(
            rows[0],
            Err(RowError {
                line: 1,
                column: Some("userId".into()),
                reason: "`\"7\"` is not a valid BIGINT".into(),
                raw: json!({"userId": "7"}),
            })
        );
        for (row, column) in rows[1..].iter().zip(["userId", "ts", "tags"]) {
            assert_eq!(row.as_ref().unwrap_err().column.as_deref(), Some(column));
        }
    }

    /// Issue 13, item 15: a broken line is one bad record, which quarantine can set aside.
    #[test]
    fn a_line_that_is_not_an_object_is_a_bad_record() {
        let rows = read("{\"userId\":1}\n[1]\n{\"userId\":\n{\"userId\":2}\n").unwrap();
        assert_eq!(rows.len(), 4);
        assert!(rows[0].is_ok() && rows[3].is_ok());
        let bad = rows[1].as_ref().unwrap_err();
        assert_eq!((bad.line, bad.column.as_deref()), (2, None));
        assert!(
            bad.reason.starts_with("not a JSON object"),
            "{}",
            bad.reason
        );
        assert_eq!(bad.raw, json!("[1]"));
        assert_eq!(rows[2].as_ref().unwrap_err().line, 3);
    }

    /// Issue 13, item 15: which of two keys for one column counts would be a guess.
    #[test]
    fn a_column_given_twice_is_a_bad_record() {
        let rows = read("{\"userId\":1,\"userId\":2}\n{\"userId\":1,\"USERID\":2}\n").unwrap();
        for (row, keys) in rows
            .iter()
            .zip(["`userId` and `userId`", "`userId` and `USERID`"])
        {
            let bad = row.as_ref().unwrap_err();
            assert_eq!(bad.column.as_deref(), Some("userId"));
            assert!(bad.reason.contains(keys), "{}", bad.reason);
        }
    }
}

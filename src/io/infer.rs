//! Schema inference from the first records of a file (SPEC D17).
//!
//! CSV: columns are named by the header (or `_c0`, `_c1`, ... without one, as many as the first
//! record has fields; an empty header name also gets its `_cN`). Each column gets the first of
//! BIGINT, DOUBLE, BOOLEAN, TIMESTAMP that parses every non-NULL sample, else STRING; a column
//! with only NULLs is STRING.
//!
//! JSON lines: columns are the union of keys (case-insensitively, spelled as first seen) in
//! first-seen order. Per column: JSON numbers give BIGINT when all are integers in range, else
//! DOUBLE; booleans BOOLEAN; strings TIMESTAMP when all parse, else STRING; arrays ARRAY of the
//! type inferred from all their elements; objects STRUCT with the union of their fields in name
//! order; a mix of JSON kinds, or only `null`, STRING.
//!
//! Invariant: the inferred type accepts every sampled value, so re-reading the sample with the
//! inferred schema yields no row errors (except CSV rows with the wrong number of fields and
//! JSON columns that mix kinds).

use super::csv_records::{CsvRecord, CsvRecords, Record};
use super::json_lines::{json_lines, parse_object};
use super::parse_value::{parse_bigint, parse_bool, parse_double};
use crate::plan::Format;
use crate::temporal::parse_timestamp;
use crate::value::{DataType, Schema};
use crate::{Error, ErrorKind, Result};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::Path;

/// How many records (after a CSV header) inference looks at.
pub(crate) const SAMPLE_RECORDS: usize = 1000;

/// Infers the schema of the `text` of `path`.
pub(crate) fn infer(path: &Path, text: &str, format: Format, header: bool) -> Result<Schema> {
    let schema = match format {
        Format::Csv => infer_csv(path, text, header)?,
        Format::Json => infer_json(path, text)?,
        Format::Parquet => return Err(super::read_whole("inferred")),
    };
    if schema.is_empty() {
        return Err(Error::new(
            ErrorKind::Format,
            "cannot infer a schema: the file has no records",
        )
        .in_file(path));
    }
    Ok(schema)
}

fn infer_csv(path: &Path, text: &str, header: bool) -> Result<Schema> {
    let mut records = CsvRecords::new(path, text);
    let head: Option<CsvRecord> = records.next().transpose()?;
    let Some(head) = head else {
        return Ok(Schema::default());
    };
    let mut sample = Vec::new();
    let names: Vec<String> = if header {
        csv_names(path, head.view())?
    } else {
        let names = (0..head.view().len()).map(|i| format!("_c{i}")).collect();
        sample.push(head);
        names
    };
    for record in records.take(SAMPLE_RECORDS - sample.len()) {
        sample.push(record?);
    }
    let columns = names.into_iter().enumerate().map(|(i, name)| {
        let values = sample.iter().filter_map(|r| r.view().field(i));
        (name, text_type(values))
    });
    Ok(Schema::new(columns))
}

/// Header names, `_cN` for empty ones; names equal up to case are a `Format` error, since
/// columns are looked up case-insensitively.
fn csv_names(path: &Path, head: Record<'_>) -> Result<Vec<String>> {
    let mut names: Vec<String> = Vec::with_capacity(head.len());
    for (i, field) in head.fields().enumerate() {
        let name = match field {
            None | Some("") => format!("_c{i}"),
            Some(name) => name.to_string(),
        };
        if names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
            return Err(Error::new(
                ErrorKind::Format,
                format!("CSV header names column `{name}` twice"),
            )
            .at_line(head.line)
            .in_file(path));
        }
        names.push(name);
    }
    Ok(names)
}

/// The narrowest type parsing every text sample.
fn text_type<'a>(samples: impl Iterator<Item = &'a str>) -> DataType {
    let candidates: [(DataType, fn(&str) -> bool); 4] = [
        (DataType::BigInt, |s| parse_bigint(s).is_some()),
        (DataType::Double, |s| parse_double(s).is_some()),
        (DataType::Boolean, |s| parse_bool(s).is_some()),
        (DataType::Timestamp, |s| parse_timestamp(s).is_some()),
    ];
    let mut alive = [true; 4];
    let mut seen = false;
    for sample in samples {
        seen = true;
        for (ok, (_, parses)) in alive.iter_mut().zip(&candidates) {
            *ok = *ok && parses(sample);
        }
        if !alive.contains(&true) {
            break;
        }
    }
    match alive.iter().position(|&ok| ok) {
        Some(i) if seen => candidates[i].0.clone(),
        _ => DataType::String,
    }
}

fn infer_json(path: &Path, text: &str) -> Result<Schema> {
    // Columns in first-seen order, with every sampled value of each.
    let mut columns: Vec<(String, Vec<Json>)> = Vec::new();
    for (line, text) in json_lines(text).take(SAMPLE_RECORDS) {
        for (key, value) in parse_object(path, line, text)?.0 {
            match columns
                .iter_mut()
                .find(|(k, _)| k.eq_ignore_ascii_case(&key))
            {
                Some((_, values)) => values.push(value),
                None => columns.push((key, vec![value])),
            }
        }
    }
    Ok(Schema::new(
        columns
            .into_iter()
            .map(|(name, values)| (name, json_type(values.iter()))),
    ))
}

/// The type of a set of JSON values (rules in the module docs).
fn json_type<'a>(values: impl Iterator<Item = &'a Json>) -> DataType {
    #[derive(PartialEq)]
    enum Kind {
        Bool,
        Int,
        Number,
        String,
        Array,
        Object,
    }
    let mut kind = None;
    let mut strings_are_timestamps = true;
    let mut elements: Vec<&Json> = Vec::new();
    let mut fields: BTreeMap<&str, Vec<&Json>> = BTreeMap::new();
    for value in values {
        let this = match value {
            Json::Null => continue,
            Json::Bool(_) => Kind::Bool,
            Json::Number(n) if n.is_i64() => Kind::Int,
            Json::Number(_) => Kind::Number,
            Json::String(s) => {
                strings_are_timestamps = strings_are_timestamps && parse_timestamp(s).is_some();
                Kind::String
            }
            Json::Array(items) => {
                elements.extend(items);
                Kind::Array
            }
            Json::Object(map) => {
                for (k, v) in map {
                    fields.entry(k.as_str()).or_default().push(v);
                }
                Kind::Object
            }
        };
        kind = match (kind, this) {
            (None, this) => Some(this),
            (Some(Kind::Int), Kind::Number) | (Some(Kind::Number), Kind::Int) => Some(Kind::Number),
            (Some(k), this) if k == this => Some(k),
            _ => return DataType::String,
        };
    }
    match kind {
        None => DataType::String,
        Some(Kind::String) if strings_are_timestamps => DataType::Timestamp,
        Some(Kind::String) => DataType::String,
        Some(Kind::Bool) => DataType::Boolean,
        Some(Kind::Int) => DataType::BigInt,
        Some(Kind::Number) => DataType::Double,
        Some(Kind::Array) => DataType::Array(Box::new(json_type(elements.into_iter()))),
        Some(Kind::Object) => DataType::Struct(
            fields
                .into_iter()
                .map(|(name, values)| (name.to_string(), json_type(values.into_iter())))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(text: &str, header: bool) -> Result<Schema> {
        infer(Path::new("in.csv"), text, Format::Csv, header)
    }

    fn json(text: &str) -> Result<Schema> {
        infer(Path::new("in.jsonl"), text, Format::Json, true)
    }

    fn cols(pairs: &[(&str, DataType)]) -> Schema {
        Schema::new(pairs.iter().map(|(n, t)| (n.to_string(), t.clone())))
    }

    #[test]
    fn csv_columns_get_the_narrowest_type() {
        let text = "id,score,ok,at,name,empty\n\
                    1,2,true,2025-07-18T10:01:00Z,a,\n\
                    -3,2.5,FALSE,2025-07-18T12:01:00+02:00,7,\n\
                    ,NaN,,,,\n";
        assert_eq!(
            csv(text, true).unwrap(),
            cols(&[
                ("id", DataType::BigInt),
                ("score", DataType::Double),
                ("ok", DataType::Boolean),
                ("at", DataType::Timestamp),
                ("name", DataType::String),
                ("empty", DataType::String),
            ])
        );
    }

    #[test]
    fn csv_without_header_names_columns_by_position() {
        assert_eq!(
            csv("1,x\n2,\"\"\n", false).unwrap(),
            cols(&[("_c0", DataType::BigInt), ("_c1", DataType::String)])
        );
    }

    #[test]
    fn csv_header_problems() {
        assert_eq!(
            csv(",b\n1,2\n", true).unwrap().names().collect::<Vec<_>>(),
            ["_c0", "b"]
        );
        let err = csv("a,A\n", true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "in.csv:1: CSV header names column `A` twice"
        );
        assert_eq!(csv("", true).unwrap_err().kind(), ErrorKind::Format);
    }

    #[test]
    fn only_the_first_records_are_sampled() {
        let mut text = String::from("n\n");
        for _ in 0..SAMPLE_RECORDS {
            text.push_str("1\n");
        }
        text.push_str("x\n");
        assert_eq!(csv(&text, true).unwrap(), cols(&[("n", DataType::BigInt)]));
    }

    #[test]
    fn json_keys_in_first_seen_order_with_types() {
        let text = r#"{"z":1,"a":"2025-07-18T10:01:00Z","flag":true}
{"A":"2025-07-18T10:01:00+01:00","z":2.5,"tags":["x"],"s":{"b":1,"a":"q"}}
{"n":null,"mixed":1}
{"mixed":"x","tags":[]}"#;
        assert_eq!(
            json(text).unwrap(),
            cols(&[
                ("z", DataType::Double),
                ("a", DataType::Timestamp),
                ("flag", DataType::Boolean),
                ("tags", DataType::Array(Box::new(DataType::String))),
                (
                    "s",
                    DataType::Struct(vec![
                        ("a".into(), DataType::String),
                        ("b".into(), DataType::BigInt),
                    ])
                ),
                ("n", DataType::String),
                ("mixed", DataType::String),
            ])
        );
    }

    #[test]
    fn json_integers_beyond_bigint_are_double() {
        assert_eq!(
            json("{\"v\":1}\n{\"v\":18446744073709551615}").unwrap(),
            cols(&[("v", DataType::Double)])
        );
    }
}

//! Text forms of values for output: CSV cell text and JSON.
//!
//! One set of rules for every output so a value reads the same in a CSV target, a JSONL change
//! feed and `query` output:
//! - DOUBLE: Rust's shortest round-trip form with `.0` on integral values (`3.0`, `0.1`,
//!   `1e16`, `1e-7`), like Spark's `3.0`; non-finite as `NaN`, `Infinity`, `-Infinity` (JSON
//!   strings, since JSON numbers cannot be non-finite). Every form parses back to the same bits.
//! - TIMESTAMP `2025-07-18T10:01:00[.ffffff]` (UTC, no zone), DATE `YYYY-MM-DD`; JSON strings.
//! - STRUCT as a JSON object with fields in declaration order, ARRAY as a JSON array; in CSV
//!   their compact JSON text.
//!
//! The value decides the form and the type only supplies STRUCT field names, so a value that
//! does not match its type still renders (a STRUCT without names as a JSON array) instead of
//! failing.

use crate::temporal::{format_date, format_timestamp};
use crate::value::{DataType, Datum, Value};
use serde_json::Value as Json;
use std::fmt::Write;

/// The CSV cell text of `v` before quoting; NULL is the empty text (the CSV writer tells it
/// apart from the empty string by quoting the latter).
pub fn format_value_text(v: &Value, ty: &DataType) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Double(d) => format_double(d.0),
        Value::Str(s) => s.clone(),
        Value::Date(d) => format_date(*d),
        Value::Timestamp(t) => format_timestamp(*t),
        Value::Struct(_) | Value::Array(_) => value_to_json_text(v, ty),
    }
}

/// A DOUBLE's text: shortest round-trip digits, `.0` when integral, `NaN`/`Infinity`/`-Infinity`.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        "NaN".to_string()
    } else if d.is_infinite() {
        if d > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        // Debug, unlike Display, keeps `.0` and switches to exponent form for very large or
        // small magnitudes instead of printing hundreds of digits.
        format!("{d:?}")
    }
}

/// `v` as a JSON value. STRUCT field order is lost (`serde_json` maps are sorted); use
/// [`value_to_json_text`] where the text must keep it.
pub fn value_to_json(v: &Value, ty: &DataType) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Double(d) => match serde_json::Number::from_f64(d.0) {
            Some(n) => Json::Number(n),
            None => Json::String(format_double(d.0)),
        },
        Value::Str(s) => Json::String(s.clone()),
        Value::Date(d) => Json::String(format_date(*d)),
        Value::Timestamp(t) => Json::String(format_timestamp(*t)),
        Value::Struct(values) => match struct_fields(ty, values.len()) {
            Some(fields) => Json::Object(
                fields
                    .iter()
                    .zip(values)
                    .map(|((name, ty), v)| (name.clone(), value_to_json(v, ty)))
                    .collect(),
            ),
            None => values
                .iter()
                .map(|v| value_to_json(v, &DataType::Null))
                .collect(),
        },
        Value::Array(items) => {
            let elem = element_type(ty);
            items.iter().map(|v| value_to_json(v, elem)).collect()
        }
    }
}

/// `v` as compact JSON text, STRUCT fields in declaration order.
pub fn value_to_json_text(v: &Value, ty: &DataType) -> String {
    let mut out = String::new();
    write_json(&mut out, v, ty);
    out
}

/// Appends the compact JSON text of `v` to `out`.
pub(crate) fn write_json(out: &mut String, v: &Value, ty: &DataType) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Double(d) if d.0.is_finite() => out.push_str(&format_double(d.0)),
        Value::Double(d) => write_json_string(out, &format_double(d.0)),
        Value::Str(s) => write_json_string(out, s),
        Value::Date(d) => write_json_string(out, &format_date(*d)),
        Value::Timestamp(t) => write_json_string(out, &format_timestamp(*t)),
        Value::Struct(values) => match struct_fields(ty, values.len()) {
            Some(fields) => {
                out.push('{');
                for (i, ((name, ty), v)) in fields.iter().zip(values).enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_json_string(out, name);
                    out.push(':');
                    write_json(out, v, ty);
                }
                out.push('}');
            }
            None => write_json_array(out, values, &DataType::Null),
        },
        Value::Array(items) => write_json_array(out, items, element_type(ty)),
    }
}

/// [`write_json`] for a value borrowed from a packed row.
pub(crate) fn write_json_datum(out: &mut String, v: Datum<'_>, ty: &DataType) {
    match v {
        Datum::Null => out.push_str("null"),
        Datum::Int(i) => out.push_str(itoa::Buffer::new().format(i)),
        Datum::Str(s) => write_json_string(out, s),
        other => write_json(out, &other.to_value(), ty),
    }
}

/// Appends `s` as a JSON string, escaped exactly as `serde_json` does (quote, backslash and
/// control characters; everything else verbatim).
pub(crate) fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    // Most strings need no escape: copied whole, not char by char.
    if !s.bytes().any(|b| b == b'"' || b == b'\\' || b < b' ') {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c < ' ' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_json_array(out: &mut String, items: &[Value], elem: &DataType) {
    out.push('[');
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_json(out, v, elem);
    }
    out.push(']');
}

/// The field names and types of a STRUCT type with `len` fields.
fn struct_fields(ty: &DataType, len: usize) -> Option<&[(String, DataType)]> {
    match ty {
        DataType::Struct(fields) if fields.len() == len => Some(fields),
        _ => None,
    }
}

fn element_type(ty: &DataType) -> &DataType {
    match ty {
        DataType::Array(elem) => elem,
        _ => &DataType::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::parse_value::parse_double;
    use crate::value::F64;
    use serde_json::json;

    fn double(d: f64) -> Value {
        Value::Double(F64(d))
    }

    #[test]
    fn doubles_are_shortest_round_trip_with_point_zero() {
        let cases = [
            (3.0, "3.0"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e16"),
            (1.5e300, "1.5e300"),
            (1e-7, "1e-7"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (d, text) in cases {
            assert_eq!(format_double(d), text);
            let back = parse_double(text).unwrap();
            assert_eq!(F64(back), F64(d), "{text}");
        }
    }

    #[test]
    fn cell_text_per_type() {
        assert_eq!(format_value_text(&Value::Null, &DataType::String), "");
        assert_eq!(
            format_value_text(&Value::Bool(true), &DataType::Boolean),
            "true"
        );
        assert_eq!(format_value_text(&Value::Int(-5), &DataType::Int), "-5");
        assert_eq!(
            format_value_text(&Value::Date(0), &DataType::Date),
            "1970-01-01"
        );
        assert_eq!(
            format_value_text(&Value::Timestamp(60_500_000), &DataType::Timestamp),
            "1970-01-01T00:01:00.5"
        );
    }

    #[test]
    fn structs_keep_field_order_and_arrays_nest() {
        let ty = DataType::Struct(vec![
            ("z".into(), DataType::Double),
            ("a".into(), DataType::Array(Box::new(DataType::Timestamp))),
        ]);
        let v = Value::Struct(vec![
            double(f64::NAN),
            Value::Array(vec![Value::Timestamp(0), Value::Null]),
        ]);
        assert_eq!(
            format_value_text(&v, &ty),
            r#"{"z":"NaN","a":["1970-01-01T00:00:00",null]}"#
        );
        assert_eq!(
            value_to_json(&v, &ty),
            json!({"z": "NaN", "a": ["1970-01-01T00:00:00", null]})
        );
        // Without a matching type, a STRUCT still renders, as an array.
        assert_eq!(
            value_to_json_text(&v, &DataType::Null),
            r#"["NaN",["1970-01-01T00:00:00",null]]"#
        );
    }

    #[test]
    fn json_strings_escape_like_serde_json() {
        let s = "q\"b\\n\n\r\t\u{8}\u{c}\u{1}\u{7f}é/";
        let mut ours = String::new();
        write_json_string(&mut ours, s);
        assert_eq!(ours, serde_json::to_string(s).unwrap());
    }

    #[test]
    fn json_text_agrees_with_json_value() {
        let ty = DataType::Array(Box::new(DataType::Double));
        let v = Value::Array(vec![double(2.0), double(0.25), double(1e100)]);
        let parsed: Json = serde_json::from_str(&value_to_json_text(&v, &ty)).unwrap();
        assert_eq!(parsed, value_to_json(&v, &ty));
    }
}

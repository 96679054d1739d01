//! Typing input values: CSV cell text and JSON values become [`Value`]s of a column's type (a
//! CSV cell of a scalar type also as a [`Datum`], which a reader packs as it is).
//!
//! Parsing is strict so that a file means one thing: INT/BIGINT take an optional sign and digits
//! (INT must fit 32 bits), DOUBLE takes a decimal or exponent number or exactly `NaN`,
//! `Infinity`, `-Infinity`, BOOLEAN takes `true`/`false` in any case, DATE and TIMESTAMP take
//! ISO-8601 text, STRUCT and ARRAY take JSON. In JSON input a number is never read from a string
//! nor a string from a number; the one exception is the non-finite DOUBLE spellings above, which
//! JSON cannot write as numbers (our own JSONL output writes them as strings).
//!
//! Failures are reasons (`` `abc` is not a valid INT ``), not errors: the caller knows the file,
//! line and column and decides whether the row fails the update or goes to quarantine.

use crate::temporal::{parse_date, parse_timestamp};
use crate::value::{DataType, Datum, Value, F64};
use serde_json::Value as Json;
use std::num::IntErrorKind;

/// Longest raw text quoted in a reason; longer text is cut so messages stay one readable line.
const MAX_QUOTED: usize = 80;

/// Parses CSV cell text (never NULL: the caller maps empty unquoted cells to NULL first).
pub(crate) fn parse_text(text: &str, ty: &DataType) -> Result<Value, String> {
    match parse_scalar(text, ty) {
        Some(scalar) => scalar.map(|d| d.to_value()),
        None => match serde_json::from_str::<Json>(text) {
            Ok(json) => json_to_value(&json, ty),
            Err(_) => Err(invalid(text, ty, "")),
        },
    }
}

/// [`parse_text`] of a scalar type, as a datum (a STRING borrows `text`); `None` for a STRUCT
/// or ARRAY. A reader packs it as it is: made a [`Value`] first, each INT cell of a CSV record
/// was built, matched again to be packed, and dropped (reading the 200,000 records of
/// `generate --events 200000 --keys 20000 --commits 20 --seed 7`: 521 -> 491 M instructions).
pub(crate) fn parse_scalar<'t>(text: &'t str, ty: &DataType) -> Option<Result<Datum<'t>, String>> {
    let bad = || invalid(text, ty, "");
    Some(match ty {
        DataType::Int | DataType::BigInt => parse_int(text, ty).map(Datum::Int),
        DataType::Double => parse_double(text)
            .map(|d| Datum::Double(F64(d)))
            .ok_or_else(bad),
        DataType::Boolean => parse_bool(text).map(Datum::Bool).ok_or_else(bad),
        DataType::String => Ok(Datum::Str(text)),
        DataType::Date => parse_date(text).map(Datum::Date).ok_or_else(bad),
        DataType::Timestamp => parse_timestamp(text).map(Datum::Timestamp).ok_or_else(bad),
        DataType::Null => Err(bad()),
        DataType::Struct(_) | DataType::Array(_) => return None,
    })
}

/// Converts a JSON value to a value of `ty`; JSON `null` is NULL at any type.
pub(crate) fn json_to_value(json: &Json, ty: &DataType) -> Result<Value, String> {
    let bad = || invalid(&json.to_string(), ty, "");
    match (ty, json) {
        (_, Json::Null) => Ok(Value::Null),
        (DataType::Int | DataType::BigInt, Json::Number(n)) => {
            let int = n.as_i64().or_else(|| n.as_f64().and_then(integral));
            match int {
                Some(i) if fits(i, ty) => Ok(Value::Int(i)),
                _ => Err(invalid(
                    &n.to_string(),
                    ty,
                    " (out of range or not integral)",
                )),
            }
        }
        (DataType::Double, Json::Number(n)) => {
            n.as_f64().map(|d| Value::Double(F64(d))).ok_or_else(bad)
        }
        (DataType::Double, Json::String(s)) => {
            non_finite(s).map(|d| Value::Double(F64(d))).ok_or_else(bad)
        }
        (DataType::Boolean, Json::Bool(b)) => Ok(Value::Bool(*b)),
        (DataType::String, Json::String(s)) => Ok(Value::Str(s.clone())),
        (DataType::Date, Json::String(s)) => parse_date(s).map(Value::Date).ok_or_else(bad),
        (DataType::Timestamp, Json::String(s)) => {
            parse_timestamp(s).map(Value::Timestamp).ok_or_else(bad)
        }
        (DataType::Struct(fields), Json::Object(map)) => {
            let mut values = Vec::with_capacity(fields.len());
            for (name, field_ty) in fields {
                let field = lookup(map, name).unwrap_or(&Json::Null);
                let value =
                    json_to_value(field, field_ty).map_err(|r| format!("field `{name}`: {r}"))?;
                values.push(value);
            }
            Ok(Value::Struct(values))
        }
        (DataType::Array(elem), Json::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| json_to_value(item, elem).map_err(|r| format!("element {i}: {r}")))
            .collect::<Result<_, _>>()
            .map(Value::Array),
        _ => Err(bad()),
    }
}

/// A JSON object's member named `name`: the exact name if present, else any case-insensitive
/// match (the first in the map's order, so the choice is deterministic).
pub(crate) fn lookup<'a>(map: &'a serde_json::Map<String, Json>, name: &str) -> Option<&'a Json> {
    map.get(name).or_else(|| {
        map.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

/// Parses BIGINT text; `None` for anything but an optional sign and digits in range.
pub(crate) fn parse_bigint(text: &str) -> Option<i64> {
    text.parse().ok()
}

/// Parses DOUBLE text. Rust's float syntax, minus its word forms (`inf`, `nan`, `infinity` in any
/// case) except our exact non-finite spellings, so a column of names like "Nan" is not numeric.
pub(crate) fn parse_double(text: &str) -> Option<f64> {
    if text.bytes().any(|b| b.is_ascii_digit()) {
        text.parse().ok()
    } else {
        non_finite(text)
    }
}

/// Parses BOOLEAN text: `true` or `false` in any case.
pub(crate) fn parse_bool(text: &str) -> Option<bool> {
    if text.eq_ignore_ascii_case("true") {
        Some(true)
    } else if text.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

fn parse_int(text: &str, ty: &DataType) -> Result<i64, String> {
    match text.parse::<i64>() {
        Ok(i) if fits(i, ty) => Ok(i),
        Ok(_) => Err(invalid(text, ty, " (out of range)")),
        Err(e)
            if matches!(
                e.kind(),
                IntErrorKind::PosOverflow | IntErrorKind::NegOverflow
            ) =>
        {
            Err(invalid(text, ty, " (out of range)"))
        }
        Err(_) => Err(invalid(text, ty, "")),
    }
}

fn non_finite(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "Infinity" | "+Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// An integral double as i64, if it is one and in range (2^63 itself is not).
fn integral(d: f64) -> Option<i64> {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (d.fract() == 0.0 && (-LIMIT..LIMIT).contains(&d)).then_some(d as i64)
}

fn fits(i: i64, ty: &DataType) -> bool {
    *ty != DataType::Int || i32::try_from(i).is_ok()
}

fn invalid(text: &str, ty: &DataType, detail: &str) -> String {
    format!("`{}` is not a valid {ty}{detail}", shorten(text))
}

fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(s: &str, ty: DataType) -> Result<Value, String> {
        parse_text(s, &ty)
    }

    #[test]
    fn integers_are_strict_and_int_fits_32_bits() {
        assert_eq!(text("-42", DataType::Int), Ok(Value::Int(-42)));
        assert_eq!(text("+7", DataType::BigInt), Ok(Value::Int(7)));
        assert_eq!(
            text("2147483648", DataType::Int),
            Err("`2147483648` is not a valid INT (out of range)".into())
        );
        assert_eq!(
            text("2147483648", DataType::BigInt),
            Ok(Value::Int(2147483648))
        );
        assert_eq!(
            text("99999999999999999999", DataType::BigInt),
            Err("`99999999999999999999` is not a valid BIGINT (out of range)".into())
        );
        assert_eq!(
            text("abc", DataType::Int),
            Err("`abc` is not a valid INT".into())
        );
        for bad in [" 1", "1.0", "", "1e3", "0x10"] {
            assert!(text(bad, DataType::BigInt).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn doubles_booleans_and_strings() {
        assert_eq!(
            text("1.5e3", DataType::Double),
            Ok(Value::Double(F64(1500.0)))
        );
        assert_eq!(
            text("-Infinity", DataType::Double),
            Ok(Value::Double(F64(f64::NEG_INFINITY)))
        );
        assert!(matches!(text("NaN", DataType::Double), Ok(Value::Double(F64(d))) if d.is_nan()));
        for bad in ["nan", "inf", "Nan", "", "1,5"] {
            assert!(text(bad, DataType::Double).is_err(), "{bad:?}");
        }
        assert_eq!(text("TRUE", DataType::Boolean), Ok(Value::Bool(true)));
        assert_eq!(text("False", DataType::Boolean), Ok(Value::Bool(false)));
        assert!(text("yes", DataType::Boolean).is_err());
        assert_eq!(text(" a ", DataType::String), Ok(Value::Str(" a ".into())));
    }

    #[test]
    fn dates_timestamps_and_offsets() {
        let ts = |s| text(s, DataType::Timestamp);
        assert_eq!(ts("2025-07-18T10:01:00Z"), ts("2025-07-18T12:01:00+02:00"));
        assert!(ts("2025-07-18T10:01:00Z").is_ok());
        assert_eq!(
            ts("yesterday"),
            Err("`yesterday` is not a valid TIMESTAMP".into())
        );
        assert_eq!(text("1970-01-02", DataType::Date), Ok(Value::Date(1)));
        assert!(text("1970-13-02", DataType::Date).is_err());
    }

    #[test]
    fn structs_and_arrays_from_json_text() {
        let ty = DataType::Struct(vec![
            ("v".into(), DataType::BigInt),
            ("w".into(), DataType::String),
        ]);
        assert_eq!(
            text(r#"{"W":"x","v":3}"#, ty.clone()),
            Ok(Value::Struct(vec![Value::Int(3), Value::Str("x".into())]))
        );
        assert_eq!(
            text(r#"{"v":"3"}"#, ty.clone()),
            Err(r#"field `v`: `"3"` is not a valid BIGINT"#.into())
        );
        assert!(text("{", ty).is_err());
        let arr = DataType::Array(Box::new(DataType::String));
        assert_eq!(
            text(r#"["a",null]"#, arr),
            Ok(Value::Array(vec![Value::Str("a".into()), Value::Null]))
        );
    }

    #[test]
    fn json_types_are_strict() {
        let j = |v: Json, ty: DataType| json_to_value(&v, &ty);
        assert_eq!(j(json!(3), DataType::Int), Ok(Value::Int(3)));
        assert_eq!(j(json!(3.0), DataType::BigInt), Ok(Value::Int(3)));
        assert!(j(json!(3.5), DataType::BigInt).is_err());
        assert!(j(json!(1e20), DataType::BigInt).is_err());
        assert!(j(json!(u64::MAX), DataType::BigInt).is_err());
        assert!(j(json!(3_000_000_000_i64), DataType::Int).is_err());
        assert_eq!(
            j(json!("3"), DataType::Int),
            Err(r#"`"3"` is not a valid INT"#.into())
        );
        assert!(j(json!(3), DataType::String).is_err());
        assert!(j(json!("true"), DataType::Boolean).is_err());
        assert_eq!(j(json!(2), DataType::Double), Ok(Value::Double(F64(2.0))));
        assert_eq!(
            j(json!("Infinity"), DataType::Double),
            Ok(Value::Double(F64(f64::INFINITY)))
        );
        assert!(j(json!("2.5"), DataType::Double).is_err());
        assert_eq!(j(json!(null), DataType::Date), Ok(Value::Null));
        assert_eq!(
            j(json!([1, "x"]), DataType::Array(Box::new(DataType::BigInt))),
            Err(r#"element 1: `"x"` is not a valid BIGINT"#.into())
        );
    }

    #[test]
    fn long_text_is_shortened_in_reasons() {
        let long = "x".repeat(200);
        let reason = text(&long, DataType::Int).unwrap_err();
        assert!(reason.len() < 120 && reason.contains("..."), "{reason}");
    }
}

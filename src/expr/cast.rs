//! `CAST` between types: which casts are allowed (decided at compile time) and how a value
//! converts (at run time, failing only on values that do not fit the target type).

use crate::temporal;
use crate::value::{DataType, Value, F64};

const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;

/// Whether `CAST(x AS to)` is allowed for an `x` of type `from`.
pub(crate) fn can_cast(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    match (from, to) {
        (Null, _) => true,
        (a, b) if a == b => true,
        (Array(a), Array(b)) => can_cast(a, b),
        (Struct(a), Struct(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|((_, x), (_, y))| can_cast(x, y))
        }
        (Array(_) | Struct(_), _) | (_, Array(_) | Struct(_) | Null) => false,
        (_, String) | (String, _) => true,
        (Int | BigInt | Double | Boolean, Int | BigInt | Double | Boolean) => true,
        (Date | Timestamp, Date | Timestamp) => true,
        (Timestamp, Int | BigInt | Double) | (Int | BigInt, Timestamp) => true,
        _ => false,
    }
}

/// Whether a value of type `from` may go into a column of type `into` (Spark's ANSI store
/// assignment): numbers into numbers (a value that does not fit fails its row), dates into
/// timestamps, text into dates and timestamps; never text into a number.
pub fn store_assignable(from: &DataType, into: &DataType) -> bool {
    from == into
        || from == &DataType::Null
        || (from.is_numeric() && into.is_numeric())
        || matches!(
            (from, into),
            (DataType::Date, DataType::Timestamp)
                | (DataType::String, DataType::Date | DataType::Timestamp)
        )
}

/// Converts `value` to type `to`; NULL stays NULL. Assumes `can_cast(type of value, to)`.
pub fn cast_value(value: Value, to: &DataType) -> Result<Value, String> {
    let result = match (&value, to) {
        (Value::Null, _) => Some(Value::Null),
        (_, DataType::String) => to_string(&value).map(Value::Str),
        (_, DataType::Int) => to_i64(&value)
            .filter(|i| i32::try_from(*i).is_ok())
            .map(Value::Int),
        (_, DataType::BigInt) => to_i64(&value).map(Value::Int),
        (_, DataType::Double) => to_f64(&value).map(|f| Value::Double(F64(f))),
        (_, DataType::Boolean) => to_bool(&value).map(Value::Bool),
        (_, DataType::Date) => to_date(&value).map(Value::Date),
        (_, DataType::Timestamp) => to_timestamp(&value).map(Value::Timestamp),
        (Value::Array(items), DataType::Array(element)) => {
            let items = items.iter().map(|v| cast_value(v.clone(), element));
            return items.collect::<Result<_, _>>().map(Value::Array);
        }
        (Value::Struct(fields), DataType::Struct(types)) if fields.len() == types.len() => {
            let fields = fields
                .iter()
                .zip(types)
                .map(|(v, (_, t))| cast_value(v.clone(), t));
            return fields.collect::<Result<_, _>>().map(Value::Struct);
        }
        _ => None,
    };
    result.ok_or_else(|| format!("cannot cast {} to {to}", describe(&value)))
}

/// A value as it would appear in a message.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Str(s) => format!("'{s}'"),
        other => to_string(other).unwrap_or_else(|| format!("{other:?}")),
    }
}

/// The text form of a scalar value (the one `CAST(x AS STRING)` gives).
pub(crate) fn to_string(value: &Value) -> Option<String> {
    Some(match value {
        Value::Str(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Double(F64(f)) => format_double(*f),
        Value::Bool(b) => b.to_string(),
        Value::Date(d) => temporal::format_date(*d),
        Value::Timestamp(t) => temporal::format_timestamp(*t),
        Value::Null | Value::Struct(_) | Value::Array(_) => return None,
    })
}

/// Shortest round-trip text, with `.0` on integral values so a DOUBLE never reads as an INT.
fn format_double(f: f64) -> String {
    let text = f.to_string();
    if f.is_finite() && !text.contains(['.', 'e', 'E']) {
        text + ".0"
    } else {
        text
    }
}

fn to_i64(value: &Value) -> Option<i64> {
    match value {
        Value::Int(i) => Some(*i),
        Value::Double(F64(f)) => f64_to_i64(*f),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Timestamp(t) => Some(t.div_euclid(MICROS_PER_SECOND)),
        Value::Str(s) => {
            let s = s.trim();
            s.parse::<i64>()
                .ok()
                .or_else(|| s.parse::<f64>().ok().and_then(f64_to_i64))
        }
        _ => None,
    }
}

/// Truncates toward zero; `None` when out of range or not a number.
fn f64_to_i64(f: f64) -> Option<i64> {
    // 2^63 is exactly representable, so the bounds test is exact.
    let in_range = (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f);
    in_range.then(|| f.trunc() as i64)
}

fn to_f64(value: &Value) -> Option<f64> {
    match value {
        Value::Int(i) => Some(*i as f64),
        Value::Double(F64(f)) => Some(*f),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Timestamp(t) => Some(*t as f64 / MICROS_PER_SECOND as f64),
        Value::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn to_bool(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Int(i) => Some(*i != 0),
        Value::Double(F64(f)) => Some(*f != 0.0),
        Value::Str(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "t" | "yes" | "y" | "1" => Some(true),
            "false" | "f" | "no" | "n" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn to_date(value: &Value) -> Option<i32> {
    match value {
        Value::Date(d) => Some(*d),
        Value::Timestamp(t) => i32::try_from(t.div_euclid(MICROS_PER_DAY)).ok(),
        Value::Str(s) => temporal::parse_date(s).or_else(|| {
            let t = temporal::parse_timestamp(s)?;
            i32::try_from(t.div_euclid(MICROS_PER_DAY)).ok()
        }),
        _ => None,
    }
}

fn to_timestamp(value: &Value) -> Option<i64> {
    match value {
        Value::Timestamp(t) => Some(*t),
        Value::Date(d) => Some(i64::from(*d) * MICROS_PER_DAY),
        Value::Int(seconds) => seconds.checked_mul(MICROS_PER_SECOND),
        Value::Str(s) => temporal::parse_timestamp(s)
            .or_else(|| temporal::parse_date(s).map(|d| i64::from(d) * MICROS_PER_DAY)),
        _ => None,
    }
}

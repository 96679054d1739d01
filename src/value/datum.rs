//! A value borrowed from a packed row.
//!
//! Invariant: a `Datum` orders, compares and converts exactly as the [`Value`] it stands for,
//! so code may move between the two without changing any result.

use super::{RowRef, Value, F64};
use std::cmp::Ordering;

/// One value of a [`super::Row`], borrowed: strings and nested fields point into the row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Datum<'a> {
    /// SQL NULL; sorts lowest.
    Null,
    /// BOOLEAN.
    Bool(bool),
    /// INT or BIGINT.
    Int(i64),
    /// DOUBLE.
    Double(F64),
    /// STRING.
    Str(&'a str),
    /// DATE as days since the epoch.
    Date(i32),
    /// TIMESTAMP as microseconds since the epoch (UTC).
    Timestamp(i64),
    /// STRUCT field values in declaration order.
    Struct(RowRef<'a>),
    /// ARRAY elements.
    Array(RowRef<'a>),
}

impl<'a> Datum<'a> {
    /// True for SQL NULL.
    pub fn is_null(self) -> bool {
        matches!(self, Datum::Null)
    }

    /// The owned value.
    pub fn to_value(self) -> Value {
        match self {
            Datum::Null => Value::Null,
            Datum::Bool(b) => Value::Bool(b),
            Datum::Int(i) => Value::Int(i),
            Datum::Double(d) => Value::Double(d),
            Datum::Str(s) => Value::Str(s.to_owned()),
            Datum::Date(d) => Value::Date(d),
            Datum::Timestamp(t) => Value::Timestamp(t),
            Datum::Struct(fields) => Value::Struct(fields.to_values()),
            Datum::Array(items) => Value::Array(items.to_values()),
        }
    }

    /// The variant's place in the order (as [`Value`]'s).
    fn rank(self) -> u8 {
        match self {
            Datum::Null => 0,
            Datum::Bool(_) => 1,
            Datum::Int(_) => 2,
            Datum::Double(_) => 3,
            Datum::Str(_) => 4,
            Datum::Date(_) => 5,
            Datum::Timestamp(_) => 6,
            Datum::Struct(_) => 7,
            Datum::Array(_) => 8,
        }
    }
}

impl From<Datum<'_>> for Value {
    fn from(datum: Datum<'_>) -> Self {
        datum.to_value()
    }
}

impl PartialEq<Value> for Datum<'_> {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Datum::Struct(a), Value::Struct(b)) | (Datum::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a == *b)
            }
            (Datum::Null, Value::Null) => true,
            (Datum::Bool(a), Value::Bool(b)) => a == b,
            (Datum::Int(a), Value::Int(b)) => a == b,
            (Datum::Double(a), Value::Double(b)) => a == b,
            (Datum::Str(a), Value::Str(b)) => a == b,
            (Datum::Date(a), Value::Date(b)) => a == b,
            (Datum::Timestamp(a), Value::Timestamp(b)) => a == b,
            _ => false,
        }
    }
}

impl Ord for Datum<'_> {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Datum::Int(a), Datum::Int(b)) => a.cmp(b),
            (Datum::Null, Datum::Null) => Ordering::Equal,
            (Datum::Bool(a), Datum::Bool(b)) => a.cmp(b),
            (Datum::Double(a), Datum::Double(b)) => a.cmp(b),
            (Datum::Str(a), Datum::Str(b)) => a.cmp(b),
            (Datum::Date(a), Datum::Date(b)) => a.cmp(b),
            (Datum::Timestamp(a), Datum::Timestamp(b)) => a.cmp(b),
            (Datum::Struct(a), Datum::Struct(b)) | (Datum::Array(a), Datum::Array(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for Datum<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

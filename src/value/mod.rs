//! Values and SQL types.
//!
//! Invariant: `Value`'s derived `Ord` is SQL ascending order for values of one type: NULL sorts
//! lowest, STRUCTs and ARRAYs compare field by field, DOUBLE uses the IEEE total order (so NaN has
//! a place and the order is total). Values of different types never meet in one column, so their
//! relative order (by variant) only has to be deterministic, which it is.
//!
//! INT and BIGINT share one representation (`Int(i64)`); the schema says which, and input parsing
//! rejects an INT that does not fit 32 bits.
//!
//! A [`Value`] is the owned form expressions compute with; a [`Row`] is the packed form rows are
//! kept and moved in (one buffer, small rows inline), read back as borrowed [`Datum`]s. Both
//! order the same way.

mod datum;
mod packed;
mod projection;
mod row;
mod seq;

pub use datum::Datum;
pub use projection::{Projection, SortKey};
/// Values of every type, for property tests across the crate.
#[cfg(test)]
pub(crate) use row::tests::value as any_value;
pub use row::{Datums, Decoded, Packer, Row, RowRef, Unpacked};
pub use seq::Seq;

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

/// A SQL type of a column or expression.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum DataType {
    /// 32-bit signed integer.
    Int,
    /// 64-bit signed integer.
    BigInt,
    /// 64-bit IEEE float.
    Double,
    /// TRUE / FALSE.
    Boolean,
    /// UTF-8 text.
    String,
    /// Calendar date (days since 1970-01-01).
    Date,
    /// Instant in microseconds since 1970-01-01T00:00:00Z, normalised to UTC.
    Timestamp,
    /// Named fields, compared field by field.
    Struct(Vec<(String, DataType)>),
    /// Ordered list of one element type (used for `COLUMNS TO UPDATE` lists).
    Array(Box<DataType>),
    /// The type of a bare NULL literal; fits every column.
    Null,
}

impl DataType {
    /// True for the types whose values can be ordered (all of ours).
    pub fn is_orderable(&self) -> bool {
        true
    }

    /// True for INT, BIGINT and DOUBLE.
    pub fn is_numeric(&self) -> bool {
        matches!(self, DataType::Int | DataType::BigInt | DataType::Double)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Int => f.write_str("INT"),
            DataType::BigInt => f.write_str("BIGINT"),
            DataType::Double => f.write_str("DOUBLE"),
            DataType::Boolean => f.write_str("BOOLEAN"),
            DataType::String => f.write_str("STRING"),
            DataType::Date => f.write_str("DATE"),
            DataType::Timestamp => f.write_str("TIMESTAMP"),
            DataType::Null => f.write_str("NULL"),
            DataType::Array(t) => write!(f, "ARRAY<{t}>"),
            DataType::Struct(fields) => {
                f.write_str("STRUCT<")?;
                for (i, (n, t)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{n}: {t}")?;
                }
                f.write_str(">")
            }
        }
    }
}

/// A DOUBLE with a total order (IEEE `total_cmp`), so rows can be sorted, hashed and deduplicated.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct F64(pub f64);

impl PartialEq for F64 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for F64 {}
impl PartialOrd for F64 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for F64 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}
impl std::hash::Hash for F64 {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state)
    }
}

/// One SQL value. Values order by variant (in declaration order, so NULL lowest), then by
/// content.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Value {
    /// SQL NULL; sorts lowest.
    Null,
    /// BOOLEAN.
    Bool(bool),
    /// INT or BIGINT.
    Int(i64),
    /// DOUBLE.
    Double(F64),
    /// STRING.
    Str(String),
    /// DATE as days since the epoch.
    Date(i32),
    /// TIMESTAMP as microseconds since the epoch (UTC).
    Timestamp(i64),
    /// STRUCT field values in declaration order.
    Struct(Vec<Value>),
    /// ARRAY elements.
    Array(Vec<Value>),
}

impl Value {
    /// True for SQL NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

impl Ord for Value {
    /// Sequences are mostly integers, and histories are searched by sequence: an inlined
    /// integer case keeps those searches from calling out for every comparison.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            _ => self.cmp_any(other),
        }
    }
}

impl PartialOrd for Value {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Value {
    /// The variant's place in the order.
    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) => 2,
            Value::Double(_) => 3,
            Value::Str(_) => 4,
            Value::Date(_) => 5,
            Value::Timestamp(_) => 6,
            Value::Struct(_) => 7,
            Value::Array(_) => 8,
        }
    }

    fn cmp_any(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Double(a), Value::Double(b)) => a.cmp(b),
            (Value::Str(a), Value::Str(b)) => a.cmp(b),
            (Value::Date(a), Value::Date(b)) => a.cmp(b),
            (Value::Timestamp(a), Value::Timestamp(b)) => a.cmp(b),
            (Value::Struct(a), Value::Struct(b)) => a.cmp(b),
            (Value::Array(a), Value::Array(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// A named, typed column.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Column {
    /// Column name as declared (case preserved; lookups are case-insensitive).
    pub name: String,
    /// Column type.
    pub ty: DataType,
}

/// An ordered list of columns.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Schema {
    /// The columns, in order.
    pub columns: Vec<Column>,
}

impl Schema {
    /// Builds a schema from `(name, type)` pairs.
    pub fn new(columns: impl IntoIterator<Item = (String, DataType)>) -> Self {
        Schema {
            columns: columns
                .into_iter()
                .map(|(name, ty)| Column { name, ty })
                .collect(),
        }
    }

    /// Index of a column, matching names case-insensitively (as Databricks SQL does).
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// True when the schema has no columns.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Column names in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.columns.iter().map(|c| c.name.as_str())
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} {}", c.name, c.ty)?;
        }
        Ok(())
    }
}

/// The name in `candidates` closest to `name` (edit distance at most a third of its length, at
/// least 2), for "did you mean" hints.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    let limit = (name.len() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (edit_distance(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_sorts_lowest_and_structs_field_by_field() {
        assert!(Value::Null < Value::Int(i64::MIN));
        let a = Value::Struct(vec![Value::Int(10), Value::Int(2)]);
        let b = Value::Struct(vec![Value::Int(10), Value::Int(1)]);
        let c = Value::Struct(vec![Value::Int(9), Value::Int(9)]);
        assert!(c < b && b < a);
        assert!(
            Value::Struct(vec![Value::Null, Value::Int(1)]) < Value::Struct(vec![Value::Int(0)])
        );
    }

    /// The order: by variant in declaration order, then by content; the integer fast path
    /// agrees with the rest.
    #[test]
    fn values_order_by_variant_then_content() {
        let ascending = [
            Value::Null,
            Value::Bool(false),
            Value::Bool(true),
            Value::Int(i64::MIN),
            Value::Int(-5),
            Value::Int(3),
            Value::Double(F64(f64::NEG_INFINITY)),
            Value::Double(F64(-0.5)),
            Value::Double(F64(2.0)),
            Value::Str(String::new()),
            Value::Str("a".into()),
            Value::Str("b".into()),
            Value::Date(-1),
            Value::Date(2),
            Value::Timestamp(0),
            Value::Timestamp(9),
            Value::Struct(vec![Value::Null]),
            Value::Struct(vec![Value::Int(1)]),
            Value::Struct(vec![Value::Int(1), Value::Int(0)]),
            Value::Array(Vec::new()),
            Value::Array(vec![Value::Int(0)]),
        ];
        for (i, a) in ascending.iter().enumerate() {
            for (j, b) in ascending.iter().enumerate() {
                assert_eq!(a.cmp(b), i.cmp(&j), "{a:?} vs {b:?}");
                assert_eq!(a.partial_cmp(b), Some(i.cmp(&j)));
                assert_eq!(a == b, i == j);
            }
        }
    }

    #[test]
    fn closest_finds_typos() {
        assert_eq!(
            closest("sequenceNm", ["userId", "sequenceNum"]),
            Some("sequenceNum")
        );
        assert_eq!(closest("zzz", ["userId"]), None);
    }
}

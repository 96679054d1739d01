//! Sequence values as events carry them and states keep them.
//!
//! An SCD2 history holds a sequence for every stored event and three for every version (its
//! start, its end and its last upsert): they were most of its bytes while each was a
//! [`Value`], 32 bytes. A [`Seq`] takes 16: the types sequences nearly always have (integers,
//! timestamps, dates) are held inline, any other value boxed. An [`crate::event::Event`]
//! carries its sequence and system time as `Seq`s too, so a state takes them without a
//! conversion and an event is 40 bytes smaller.
//!
//! Invariant: a `Seq` is canonical — an integer, timestamp or date is never boxed — so the
//! derived equality and hash agree with the order. Order, equality and serde are those of the
//! value held: a state saved with `Value` sequences reads back unchanged, and the history's
//! decisions (D2 ties, run boundaries) are the same as on values.

use crate::value::{Datum, Packer, Row, Value};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::cmp::Ordering;

/// A sequence value; see the module docs. Made from a [`Value`] (`Seq::from`), which keeps it
/// canonical; read back with [`Seq::to_value`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Seq(Repr);

/// What a [`Seq`] holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Repr {
    /// INT or BIGINT.
    Int(i64),
    /// TIMESTAMP (microseconds since the epoch).
    Timestamp(i64),
    /// DATE (days since the epoch).
    Date(i32),
    /// Any other type (a STRUCT of several sequence columns, a STRING, ...).
    Other(Box<Value>),
}

// The point of the type: half a `Value`, and no larger inside an `Option`.
const _: () = assert!(std::mem::size_of::<Seq>() == 16);
const _: () = assert!(std::mem::size_of::<Option<Seq>>() == 16);

impl Seq {
    /// The value held.
    pub fn to_value(&self) -> Cow<'_, Value> {
        match self {
            Seq(Repr::Int(i)) => Cow::Owned(Value::Int(*i)),
            Seq(Repr::Timestamp(t)) => Cow::Owned(Value::Timestamp(*t)),
            Seq(Repr::Date(d)) => Cow::Owned(Value::Date(*d)),
            Seq(Repr::Other(v)) => Cow::Borrowed(v),
        }
    }

    /// Whether it holds an integer.
    pub(crate) fn is_int(&self) -> bool {
        matches!(self.0, Repr::Int(_))
    }

    /// The value held in a heap block of its own, if it is one.
    pub(crate) fn boxed(&self) -> Option<&Value> {
        match &self.0 {
            Repr::Other(v) => Some(v),
            _ => None,
        }
    }

    /// The row of a version: `image`'s values, then `start` and `end` (NULL for `None`), as
    /// SCD2's `__START_AT`, `__END_AT` and the bitemporal system interval follow the image.
    /// Scalar sequences (nearly all) are encoded in place ([`Row::with_scalars`]).
    pub(crate) fn versioned(image: &Row, start: &Seq, end: Option<&Seq>) -> Row {
        let scalars = (start.scalar(), end.map_or(Some(Datum::Null), Seq::scalar));
        if let (Some(start), Some(end)) = scalars {
            if let Some(row) = Row::with_scalars(image.as_row_ref(), [start, end]) {
                return row;
            }
        }
        let mut row = Packer::new();
        row.extend_from(image.as_row_ref());
        row.push(&start.to_value());
        match end {
            Some(end) => row.push(&end.to_value()),
            None => row.push_datum(Datum::Null),
        };
        row.finish()
    }

    /// The value held as a datum, unless it is boxed.
    fn scalar(&self) -> Option<Datum<'static>> {
        match self.0 {
            Repr::Int(i) => Some(Datum::Int(i)),
            Repr::Timestamp(t) => Some(Datum::Timestamp(t)),
            Repr::Date(d) => Some(Datum::Date(d)),
            Repr::Other(_) => None,
        }
    }
}

impl From<Value> for Seq {
    fn from(value: Value) -> Self {
        match value {
            Value::Int(i) => Seq(Repr::Int(i)),
            Value::Timestamp(t) => Seq(Repr::Timestamp(t)),
            Value::Date(d) => Seq(Repr::Date(d)),
            other => Seq(Repr::Other(Box::new(other))),
        }
    }
}

impl From<i64> for Seq {
    /// An INT or BIGINT sequence.
    fn from(i: i64) -> Self {
        Seq(Repr::Int(i))
    }
}

impl From<&Value> for Seq {
    fn from(value: &Value) -> Self {
        match value {
            Value::Int(i) => Seq(Repr::Int(*i)),
            Value::Timestamp(t) => Seq(Repr::Timestamp(*t)),
            Value::Date(d) => Seq(Repr::Date(*d)),
            other => Seq(Repr::Other(Box::new(other.clone()))),
        }
    }
}

impl Ord for Seq {
    /// Histories are searched by sequence: the integer case is inlined into the searches, the
    /// rest is a call.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Seq(Repr::Int(a)), Seq(Repr::Int(b)))
            | (Seq(Repr::Timestamp(a)), Seq(Repr::Timestamp(b))) => a.cmp(b),
            _ => self.cmp_other(other),
        }
    }
}

impl Seq {
    #[inline(never)]
    fn cmp_other(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Seq(Repr::Date(a)), Seq(Repr::Date(b))) => a.cmp(b),
            _ => self.to_value().cmp(&other.to_value()),
        }
    }
}

impl PartialOrd for Seq {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for Seq {
    /// As `Value`'s derived `Serialize` writes the variant held (its name and index in `Value`),
    /// without making the value.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Seq(Repr::Int(i)) => serializer.serialize_newtype_variant("Value", 2, "Int", i),
            Seq(Repr::Date(d)) => serializer.serialize_newtype_variant("Value", 5, "Date", d),
            Seq(Repr::Timestamp(t)) => {
                serializer.serialize_newtype_variant("Value", 6, "Timestamp", t)
            }
            Seq(Repr::Other(v)) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Seq {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Seq::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::any_value;
    use proptest::prelude::*;

    proptest! {
        /// Order and equality are the values', whatever two types meet; serde round-trips
        /// through the value's own encoding.
        #[test]
        fn seqs_order_and_save_as_their_values(a in any_value(), b in any_value()) {
            let (sa, sb) = (Seq::from(&a), Seq::from(b.clone()));
            prop_assert_eq!(sa.cmp(&sb), a.cmp(&b));
            prop_assert_eq!(sa == sb, a == b);
            prop_assert_eq!(sa.to_value().into_owned(), a.clone());
            let bytes = postcard::to_stdvec(&sa).unwrap();
            prop_assert_eq!(&bytes, &postcard::to_stdvec(&a).unwrap());
            prop_assert_eq!(postcard::from_bytes::<Seq>(&bytes).unwrap(), sa.clone());
            // A self-describing format checks the variant names too.
            prop_assert_eq!(serde_json::to_string(&sa).unwrap(), serde_json::to_string(&a).unwrap());
        }

        /// A version's row is its image's values, then its start and end, whatever their types
        /// and the image's length (short images take the stack, long ones a packer).
        #[test]
        fn a_version_row_is_its_image_then_its_interval(
            image in proptest::collection::vec(any_value(), 0..12),
            start in any_value(),
            end in proptest::option::of(any_value()),
        ) {
            let row = Seq::versioned(&Row::from(image.clone()), &Seq::from(&start), end.as_ref().map(Seq::from).as_ref());
            let mut values = image;
            values.push(start);
            values.push(end.unwrap_or(Value::Null));
            prop_assert_eq!(row, Row::from(values));
        }
    }

    /// An image too long for the stack takes the packer, its interval scalars or not.
    #[test]
    fn a_long_image_is_versioned_whole() {
        let image = vec![Value::Int(7), Value::Str("x".repeat(300))];
        for (start, end) in [(Value::Int(1), Some(Value::Int(2))), (Value::Date(3), None)] {
            let seqs = (Seq::from(&start), end.as_ref().map(Seq::from));
            let row = Seq::versioned(&Row::from(image.clone()), &seqs.0, seqs.1.as_ref());
            let mut values = image.clone();
            values.extend([start, end.unwrap_or(Value::Null)]);
            assert_eq!(row, Row::from(values));
        }
    }
}

//! Packed rows: a row's values encoded one after another in one buffer.
//!
//! Why packed: the engine keeps every event's key and image and every version's row, and
//! clones them between its logs, histories and outputs. As `Vec<Value>` a row of an integer
//! and two short strings was three heap allocations and 120 bytes; packed it is 24 bytes with
//! no allocation, and cloning it is a copy. This is Materialize's `mz_repr::Row` layout: the
//! buffer is [`compact_bytes::CompactBytes`] (written for that row by Materialize), which keeps
//! up to 23 bytes inline and spills larger rows to one exact-size heap block. Rows are built in
//! a [`Packer`], whose stack buffer makes the row's heap block exactly as large as its bytes.
//!
//! Invariants: a row's bytes are the canonical encoding of its values (`super::packed`), so
//! equality and hashing are on bytes, and ordering ([`Ord`]) walks the values and gives the
//! order of the same row as a `Vec<Value>`: value by value, a prefix first. Reading a value is a
//! walk from the start ([`RowRef::get`] is O(position)); iterate where a row is read whole.

use super::packed::{self, Sink};
use super::{Datum, SortKey, Value};
use compact_bytes::CompactBytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smallvec::SmallVec;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;

/// A row: values in schema order, packed into one buffer.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Row {
    bytes: CompactBytes,
}

/// A row borrowed: the packed values of a [`Row`], or the fields of a nested STRUCT or ARRAY.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RowRef<'a> {
    bytes: &'a [u8],
}

/// A row's values decoded for reading by position (on the stack for rows of up to 16).
pub type Unpacked<'a> = SmallVec<[Datum<'a>; 16]>;

/// A row's values decoded for reading by position ([`RowRef::decode_into`], or
/// [`RowRef::unpack`]), and its bytes, so that a row of some of its values copies their bytes
/// where building it from the values would encode each again: the key and image of each event
/// read from a file (`prepare::to_event`) are made so.
pub struct Decoded<'s, 'a> {
    bytes: &'a [u8],
    datums: &'s [Datum<'a>],
}

impl<'s, 'a> Decoded<'s, 'a> {
    /// `row` with its values `datums`, all of them in order.
    pub fn new(row: RowRef<'a>, datums: &'s [Datum<'a>]) -> Self {
        Decoded {
            bytes: row.bytes,
            datums,
        }
    }

    /// The values, in order.
    pub fn datums(&self) -> &'s [Datum<'a>] {
        self.datums
    }

    /// The row of the values at `columns` (ascending, as a key's or an image's nearly always
    /// are), in that order: each run of adjacent columns copied as one slice, found by the
    /// values' lengths from the last run's end. Columns out of order take
    /// [`RowRef::project`].
    pub fn project(&self, columns: &[usize]) -> Row {
        if !columns.is_sorted_by(|a, b| a < b) {
            return RowRef::trusted(self.bytes).project(columns);
        }
        let mut packer = Packer::new();
        let (mut next, mut at) = (0, 0);
        let mut columns = columns.iter().copied().peekable();
        while let Some(first) = columns.next() {
            let mut last = first;
            while columns.next_if(|&c| c == last + 1).is_some() {
                last += 1;
            }
            for _ in next..first {
                at += packed::value_len(&self.bytes[at..]);
            }
            let start = at;
            for _ in first..=last {
                at += packed::value_len(&self.bytes[at..]);
            }
            packer.bytes.put(&self.bytes[start..at]);
            next = last + 1;
        }
        packer.finish()
    }
}

/// The values of a row, in order.
#[derive(Clone)]
pub struct Datums<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Datums<'a> {
    type Item = Datum<'a>;

    /// Always inlined, as `packed::decode` is: a datum returned through memory is written
    /// field by field and read back as a whole, and the read waits for the writes to retire
    /// (a failed store-to-load forward) at every value. Inlined, it stays in registers: the
    /// plain 1M-event runs' CPU fell by a fifth (SCD2 2.75-2.81 -> 2.21-2.22 s, SCD1
    /// 1.29-1.35 -> 1.11-1.12 s), most of it rendering the change feed and unpacking rows.
    #[inline(always)]
    fn next(&mut self) -> Option<Datum<'a>> {
        if self.rest.is_empty() {
            return None;
        }
        let (datum, rest) = packed::decode(self.rest);
        self.rest = rest;
        Some(datum)
    }
}

impl<'a> RowRef<'a> {
    /// Bytes known to be well-formed: a row's own, or a nested value's inside them.
    pub(super) fn trusted(bytes: &'a [u8]) -> Self {
        RowRef { bytes }
    }

    /// The values in order.
    #[inline]
    pub fn iter(self) -> Datums<'a> {
        Datums { rest: self.bytes }
    }

    /// The value at `index`, if the row is that long.
    pub fn get(self, index: usize) -> Option<Datum<'a>> {
        self.iter().nth(index)
    }

    /// The number of values.
    pub fn len(self) -> usize {
        self.iter().count()
    }

    /// True when the row has no values.
    pub fn is_empty(self) -> bool {
        self.bytes.is_empty()
    }

    /// The packed bytes.
    pub fn as_bytes(self) -> &'a [u8] {
        self.bytes
    }

    /// The owned values.
    pub fn to_values(self) -> Vec<Value> {
        self.iter().map(Datum::to_value).collect()
    }

    /// The values, decoded once for reading by position.
    pub fn unpack(self) -> Unpacked<'a> {
        self.iter().collect()
    }

    /// Decodes the values into `out`: how many there are, or `None` for a row of more values
    /// than `out` holds. A buffer the caller reuses, where [`RowRef::unpack`] fills a vector
    /// of sixteen values and returns it by copy: preparing an event from a row read from a file
    /// took 1,674 instructions unpacked, 1,588 so (callgrind, as in `io::csv_records`).
    pub fn decode_into(self, out: &mut [Datum<'a>]) -> Option<usize> {
        let (mut rest, mut n) = (self.bytes, 0);
        while !rest.is_empty() {
            let slot = out.get_mut(n)?;
            let (datum, after) = packed::decode(rest);
            *slot = datum;
            rest = after;
            n += 1;
        }
        Some(n)
    }

    /// A number that orders as the row wherever two rows' numbers differ: sorts compare it
    /// first and compare the rows only when it ties.
    pub fn order_prefix(self) -> u64 {
        packed::order_prefix(self.bytes)
    }

    /// [`RowRef::order_prefix`] over sixteen bytes, for rows that often share their first
    /// eight (texts with a common head), and whether it holds the whole row (no text or nested
    /// value, sixteen bytes at most): then rows of as many values with equal prefixes are
    /// equal.
    pub fn sort_key(self) -> SortKey {
        let (prefix, whole) = packed::prefix_bytes::<16>(self.bytes);
        SortKey::from_parts(u128::from_be_bytes(prefix), whole)
    }

    /// The row of the values at `columns`, in that order: their bytes copied, not decoded.
    pub fn project(self, columns: &[usize]) -> Row {
        let Some(&last) = columns.iter().max() else {
            return Row::new();
        };
        let mut bounds: SmallVec<[(usize, usize); 16]> = SmallVec::new();
        let mut at = 0;
        while bounds.len() <= last && at < self.bytes.len() {
            let end = at + packed::value_len(&self.bytes[at..]);
            bounds.push((at, end));
            at = end;
        }
        let mut packer = Packer::new();
        for &i in columns {
            let (start, end) = bounds[i];
            packer.bytes.put(&self.bytes[start..end]);
        }
        packer.finish()
    }
}

impl Row {
    /// The empty row.
    pub fn new() -> Row {
        Row::default()
    }

    /// A row of `bytes` known to be well-formed.
    fn from_bytes(bytes: &[u8]) -> Row {
        Row {
            bytes: CompactBytes::new(bytes),
        }
    }

    /// `head`'s values followed by two scalars (NULL, an integer, a date, ...), or `None` when
    /// one is not a scalar or `head` is longer than [`WITH_SCALARS`] bytes. The bytes are put
    /// together on the stack, each scalar a fixed-size copy, and the row made from them in one
    /// exact-size block. A version's row is made so ([`super::Seq::versioned`]): through a
    /// [`Packer`] an SCD2 output row took 304 instructions, 210 so (its allocation is 48 of
    /// them); SCD2's worker makes 2.25 an event, and its instructions an event fell from 2,804
    /// to 2,682, bitemporal's from 6,671 to 6,414 (callgrind, `scdflow bench --events 400000
    /// --keys 100000 --displacement 1000 --flows scd2`; bitemporal 200,000 events).
    pub(super) fn with_scalars(head: RowRef<'_>, scalars: [Datum<'_>; 2]) -> Option<Row> {
        let mut len = head.bytes.len();
        if len > WITH_SCALARS {
            return None;
        }
        let mut bytes = [0; WITH_SCALARS + 2 * packed::HEAD];
        bytes[..len].copy_from_slice(head.bytes);
        for scalar in scalars {
            let (encoded, n) = packed::scalar_head(scalar)?;
            bytes[len..len + packed::HEAD].copy_from_slice(&encoded);
            len += n;
        }
        Some(Row::from_bytes(&bytes[..len]))
    }

    /// The row borrowed.
    #[inline]
    pub fn as_row_ref(&self) -> RowRef<'_> {
        RowRef {
            bytes: self.bytes.as_slice(),
        }
    }

    /// The values in order.
    #[inline]
    pub fn iter(&self) -> Datums<'_> {
        self.as_row_ref().iter()
    }

    /// The value at `index`, if the row is that long.
    pub fn get(&self, index: usize) -> Option<Datum<'_>> {
        self.as_row_ref().get(index)
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.as_row_ref().len()
    }

    /// True when the row has no values.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes of the row's heap block: none while it fits inline.
    pub(crate) fn spilled_capacity(&self) -> usize {
        if self.bytes.spilled() {
            self.bytes.capacity()
        } else {
            0
        }
    }

    /// The owned values.
    pub fn to_values(&self) -> Vec<Value> {
        self.as_row_ref().to_values()
    }

    /// The value at `index`, owned. Panics when the row is shorter, as indexing a slice does.
    pub fn value(&self, index: usize) -> Value {
        match self.get(index) {
            Some(datum) => datum.to_value(),
            None => panic!("value {index} of a row of {} values", self.len()),
        }
    }

    /// A row of `n` NULLs.
    pub fn nulls(n: usize) -> Row {
        std::iter::repeat_n(Datum::Null, n).collect()
    }

    /// The values, decoded once for reading by position.
    pub fn unpack(&self) -> Unpacked<'_> {
        self.as_row_ref().unpack()
    }

    /// [`RowRef::order_prefix`].
    pub fn order_prefix(&self) -> u64 {
        self.as_row_ref().order_prefix()
    }

    /// The row of the values at `columns`, in that order.
    pub fn project(&self, columns: &[usize]) -> Row {
        self.as_row_ref().project(columns)
    }

    /// Appends a value. Appending to a row that has spilled to the heap may leave it more
    /// capacity than bytes: build rows that are kept in a [`Packer`] instead.
    pub fn push(&mut self, value: impl Borrow<Value>) {
        packed::encode(&mut self.bytes, value.borrow());
    }

    /// Appends a borrowed value (see [`Row::push`]).
    pub fn push_datum(&mut self, datum: Datum<'_>) {
        packed::encode_datum(&mut self.bytes, datum);
    }

    /// The packed size in bytes.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// The heap bytes this row holds beyond its own 24 (0 for a row stored inline).
    pub fn heap_bytes(&self) -> usize {
        if self.bytes.spilled() {
            self.bytes.capacity()
        } else {
            0
        }
    }
}

/// Builds rows on the stack, so that a built row's heap block (if it needs one) is exact.
#[derive(Default)]
pub struct Packer {
    bytes: StackBuf,
}

/// Bytes kept in a fixed stack array while they fit, else in a vector. Written by hand rather
/// than with `SmallVec`: its append reserves out of line, which took a fifth of the time of
/// building an output row, where here the common append is one bounds check and a copy.
struct StackBuf {
    stack: [u8; STACK],
    len: usize,
    /// Every byte once the row outgrows the stack; empty before.
    spilled: Vec<u8>,
}

/// Bytes of a row built without a heap allocation.
const STACK: usize = 256;

/// The longest row [`Row::with_scalars`] extends.
const WITH_SCALARS: usize = 128;

impl Default for StackBuf {
    fn default() -> Self {
        StackBuf {
            stack: [0; STACK],
            len: 0,
            spilled: Vec::new(),
        }
    }
}

impl StackBuf {
    fn as_slice(&self) -> &[u8] {
        if self.spilled.is_empty() {
            &self.stack[..self.len]
        } else {
            &self.spilled
        }
    }

    fn clear(&mut self) {
        self.len = 0;
        self.spilled.clear();
    }
}

impl Sink for StackBuf {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if end <= STACK && self.spilled.is_empty() {
            self.stack[self.len..end].copy_from_slice(bytes);
        } else {
            if self.spilled.is_empty() {
                self.spilled.extend_from_slice(&self.stack[..self.len]);
            }
            self.spilled.extend_from_slice(bytes);
        }
        self.len = end;
    }

    #[inline]
    fn put_head(&mut self, head: [u8; packed::HEAD], len: usize) {
        if self.len + packed::HEAD <= STACK && self.spilled.is_empty() {
            self.stack[self.len..self.len + packed::HEAD].copy_from_slice(&head);
            self.len += len;
        } else {
            self.put(&head[..len]);
        }
    }

    fn written(&self) -> usize {
        self.len
    }

    fn patch(&mut self, at: usize, bytes: &[u8]) {
        let target = if self.spilled.is_empty() {
            &mut self.stack[..self.len]
        } else {
            &mut self.spilled[..]
        };
        target[at..at + bytes.len()].copy_from_slice(bytes);
    }
}

impl Packer {
    /// An empty packer.
    pub fn new() -> Packer {
        Packer::default()
    }

    /// Appends a value.
    pub fn push(&mut self, value: &Value) -> &mut Self {
        packed::encode(&mut self.bytes, value);
        self
    }

    /// Appends a borrowed value.
    pub fn push_datum(&mut self, datum: Datum<'_>) -> &mut Self {
        packed::encode_datum(&mut self.bytes, datum);
        self
    }

    /// Appends every value of `row`.
    pub fn extend_from(&mut self, row: RowRef<'_>) -> &mut Self {
        self.bytes.put(row.as_bytes());
        self
    }

    /// The row packed so far; the packer is empty again afterwards.
    pub fn finish(&mut self) -> Row {
        let row = Row::from_bytes(self.bytes.as_slice());
        self.bytes.clear();
        row
    }
}

impl Ord for RowRef<'_> {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        packed::compare(self.bytes, other.bytes)
    }
}

impl PartialOrd for RowRef<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Row {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_row_ref().cmp(&other.as_row_ref())
    }
}

impl PartialOrd for Row {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for RowRef<'_> {
    /// As the `Vec<Value>` it stands for: `[Int(1), Str("a")]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_row_ref().fmt(f)
    }
}

impl<'a> IntoIterator for &'a Row {
    type Item = Datum<'a>;
    type IntoIter = Datums<'a>;
    fn into_iter(self) -> Datums<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for RowRef<'a> {
    type Item = Datum<'a>;
    type IntoIter = Datums<'a>;
    fn into_iter(self) -> Datums<'a> {
        self.iter()
    }
}

impl FromIterator<Value> for Row {
    fn from_iter<I: IntoIterator<Item = Value>>(values: I) -> Row {
        let mut packer = Packer::new();
        values.into_iter().for_each(|v| {
            packer.push(&v);
        });
        packer.finish()
    }
}

impl<'v> FromIterator<&'v Value> for Row {
    fn from_iter<I: IntoIterator<Item = &'v Value>>(values: I) -> Row {
        let mut packer = Packer::new();
        values.into_iter().for_each(|v| {
            packer.push(v);
        });
        packer.finish()
    }
}

impl<'a> FromIterator<Datum<'a>> for Row {
    fn from_iter<I: IntoIterator<Item = Datum<'a>>>(datums: I) -> Row {
        let mut packer = Packer::new();
        datums.into_iter().for_each(|d| {
            packer.push_datum(d);
        });
        packer.finish()
    }
}

impl Extend<Value> for Row {
    /// Appends values (see [`Row::push`] on capacity).
    fn extend<I: IntoIterator<Item = Value>>(&mut self, values: I) {
        values.into_iter().for_each(|v| self.push(v));
    }
}

impl From<Vec<Value>> for Row {
    fn from(values: Vec<Value>) -> Row {
        values.iter().collect()
    }
}

impl From<&[Value]> for Row {
    fn from(values: &[Value]) -> Row {
        values.iter().collect()
    }
}

impl<const N: usize> From<[Value; N]> for Row {
    fn from(values: [Value; N]) -> Row {
        values.iter().collect()
    }
}

impl PartialEq<[Value]> for Row {
    fn eq(&self, other: &[Value]) -> bool {
        let mut values = other.iter();
        self.iter().all(|d| values.next().is_some_and(|v| d == *v)) && values.next().is_none()
    }
}

impl PartialEq<Vec<Value>> for Row {
    fn eq(&self, other: &Vec<Value>) -> bool {
        *self == **other
    }
}

impl Serialize for Row {
    /// The packed bytes as they are: a checkpoint or an exchange between workers copies rows
    /// without re-encoding their values.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.bytes.as_slice())
    }
}

impl<'de> Deserialize<'de> for Row {
    /// Checks the bytes (`packed::validate`): a damaged checkpoint is an error, never a row
    /// that misreads.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Row, D::Error> {
        struct Bytes;
        impl<'de> serde::de::Visitor<'de> for Bytes {
            type Value = Row;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a packed row")
            }
            fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Row, E> {
                packed::validate(bytes).map_err(E::custom)?;
                Ok(Row::from_bytes(bytes))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Row, A::Error> {
                let mut bytes = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    bytes.push(b);
                }
                self.visit_bytes(&bytes)
            }
        }
        deserializer.deserialize_bytes(Bytes)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::F64;
    use super::*;
    use proptest::prelude::*;

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            prop_oneof![
                any::<i8>().prop_map(i64::from),
                any::<i16>().prop_map(i64::from),
                any::<i32>().prop_map(i64::from),
                any::<i64>()
            ]
            .prop_map(Value::Int),
            any::<f64>().prop_map(|d| Value::Double(F64(d))),
            prop_oneof![".{0,3}", ".{250,260}"].prop_map(Value::Str),
            any::<i32>().prop_map(Value::Date),
            any::<i64>().prop_map(Value::Timestamp),
        ]
    }

    /// Any value: every type, nested STRUCTs and ARRAYs, the edges of the packed layout.
    pub(crate) fn value() -> impl Strategy<Value = Value> {
        scalar().prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Struct),
                prop::collection::vec(inner, 0..3).prop_map(Value::Array),
            ]
        })
    }

    /// `packed::prefix_bytes` as first written: each value's bytes copied apart.
    fn value_by_value<const N: usize>(bytes: &[u8]) -> ([u8; N], bool) {
        let mut prefix = [0u8; N];
        let mut at = 0;
        while at < bytes.len() && at < N {
            match bytes[at] {
                packed::STR8 | packed::STR64 => {
                    prefix[at] = packed::STR8;
                    let (skip, len) = match bytes[at] {
                        packed::STR8 => (2, usize::from(bytes[at + 1])),
                        _ => (
                            9,
                            u64::from_le_bytes(bytes[at + 1..at + 9].try_into().unwrap()) as usize,
                        ),
                    };
                    let n = len.min(N - at - 1);
                    prefix[at + 1..at + 1 + n].copy_from_slice(&bytes[at + skip..at + skip + n]);
                    return (prefix, false);
                }
                tag @ (packed::STRUCT | packed::ARRAY) => {
                    prefix[at] = tag;
                    return (prefix, false);
                }
                _ => {
                    let end = (at + packed::value_len(&bytes[at..])).min(N);
                    prefix[at..end].copy_from_slice(&bytes[at..end]);
                    at = end;
                }
            }
        }
        (prefix, at >= bytes.len())
    }

    fn values() -> impl Strategy<Value = Vec<Value>> {
        prop::collection::vec(value(), 0..4)
    }

    proptest! {
        /// Packing loses nothing, and a packed row orders, equals and hashes as its values.
        #[test]
        fn packed_rows_behave_as_their_values(a in values(), b in values()) {
            let (ra, rb) = (Row::from(a.clone()), Row::from(b.clone()));
            prop_assert_eq!(ra.to_values(), a.clone());
            prop_assert_eq!(ra.len(), a.len());
            prop_assert_eq!(ra.cmp(&rb), a.cmp(&b));
            prop_assert_eq!(ra == rb, a == b);
            prop_assert!(ra == a);
            let hash = |r: &Row| {
                use std::hash::BuildHasher;
                foldhash::fast::FixedState::default().hash_one(r)
            };
            if a == b {
                prop_assert_eq!(hash(&ra), hash(&rb));
            }
            for (i, v) in a.iter().enumerate() {
                prop_assert_eq!(ra.get(i).map(Datum::to_value), Some(v.clone()));
                prop_assert!(ra.get(i).unwrap() == *v);
            }
            prop_assert_eq!(ra.get(a.len()), None);
            let columns: Vec<usize> = (0..a.len()).rev().chain(0..a.len()).collect();
            let projected: Vec<Value> = columns.iter().map(|&i| a[i].clone()).collect();
            prop_assert_eq!(ra.project(&columns), projected);
        }

        /// Decoding into a buffer gives the row's values, or `None` past the buffer's size;
        /// a decoded row projects any columns (runs, gaps, out of order, repeated) to the
        /// row of their values, as packing those values makes it.
        #[test]
        fn decoded_rows_project_as_their_values(
            a in values(),
            columns in prop::collection::vec(0..8usize, 0..6),
        ) {
            let row = Row::from(a.clone());
            let mut buffer = [Datum::Null; 2];
            let n = row.as_row_ref().decode_into(&mut buffer);
            prop_assert_eq!(n, (a.len() <= 2).then_some(a.len()));
            let unpacked = row.unpack();
            let datums = match n {
                Some(n) => &buffer[..n],
                None => &unpacked[..],
            };
            prop_assert!(datums.iter().zip(&a).all(|(d, v)| *d == *v));
            let decoded = Decoded::new(row.as_row_ref(), datums);
            let mut columns = columns;
            columns.retain(|&c| c < a.len());
            let values: Vec<Value> = columns.iter().map(|&c| a[c].clone()).collect();
            prop_assert_eq!(decoded.project(&columns), Row::from(values.clone()));
            columns.sort_unstable();
            columns.dedup();
            let values: Vec<Value> = columns.iter().map(|&c| a[c].clone()).collect();
            prop_assert_eq!(decoded.project(&columns), Row::from(values));
        }

        /// Order prefixes are the bytes their rule says, value by value (the rule as it was
        /// first written, copying each value's bytes apart), for whole rows and for rows cut
        /// eight bytes past the prefix, as sort keys cut them.
        #[test]
        fn order_prefixes_follow_their_rule_value_by_value(values in values()) {
            let row = Row::from(values);
            let bytes = row.as_row_ref().as_bytes();
            for cut in [bytes, &bytes[..bytes.len().min(24)]] {
                prop_assert_eq!(packed::prefix_bytes::<16>(cut), value_by_value::<16>(cut));
            }
            for cut in [bytes, &bytes[..bytes.len().min(16)]] {
                prop_assert_eq!(packed::prefix_bytes::<8>(cut), value_by_value::<8>(cut));
            }
        }

        /// Where two rows' order prefixes differ, they order as the rows.
        #[test]
        fn order_prefixes_that_differ_order_as_the_rows(
            head in values(), b in values(), c in values()
        ) {
            let x: Vec<Value> = head.iter().chain(&b).cloned().collect();
            let y: Vec<Value> = head.iter().chain(&c).cloned().collect();
            for (p, q) in [(&head, &x), (&x, &y), (&b, &c)] {
                let (p, q) = (Row::from(p.clone()), Row::from(q.clone()));
                let (pp, pq) = (p.as_row_ref().order_prefix(), q.as_row_ref().order_prefix());
                if pp != pq {
                    prop_assert_eq!(pp.cmp(&pq), p.cmp(&q));
                }
                let (kp, kq) = (p.as_row_ref().sort_key(), q.as_row_ref().sort_key());
                let (wp, wq) = (kp.prefix(), kq.prefix());
                if wp != wq {
                    prop_assert_eq!(wp.cmp(&wq), p.cmp(&q));
                } else if kp.whole() && kq.whole() && p.len() == q.len() {
                    prop_assert_eq!(&p, &q);
                }
            }
        }

        /// Rows that share leading values (whose bytes the comparison skips) still order as
        /// their values.
        #[test]
        fn rows_with_a_common_prefix_order_as_their_values(
            head in values(), b in values(), c in values()
        ) {
            let (x, y): (Vec<Value>, Vec<Value>) =
                (head.iter().chain(&b).cloned().collect(), head.iter().chain(&c).cloned().collect());
            prop_assert_eq!(Row::from(x.clone()).cmp(&Row::from(y.clone())), x.cmp(&y));
        }

        /// Rows survive a checkpoint's encoding, and a packer and pushes make the same row.
        #[test]
        fn rows_round_trip_and_build_alike(a in values()) {
            let row = Row::from(a.clone());
            let bytes = postcard::to_stdvec(&row).unwrap();
            prop_assert_eq!(postcard::from_bytes::<Row>(&bytes).unwrap(), row.clone());
            let mut pushed = Row::new();
            for v in &a {
                pushed.push(v);
            }
            prop_assert_eq!(&pushed, &row);
            let copied: Row = row.iter().collect();
            prop_assert_eq!(&copied, &row);
            let mut packer = Packer::new();
            packer.extend_from(row.as_row_ref()).extend_from(row.as_row_ref());
            let twice: Vec<Value> = a.iter().chain(&a).cloned().collect();
            prop_assert_eq!(packer.finish(), Row::from(twice));
        }

        /// Foreign bytes are checked: any damage to a row's bytes is refused or reads as some
        /// other well-formed row, never misread.
        #[test]
        fn damaged_bytes_are_refused(a in values(), at in any::<prop::sample::Index>(), to in any::<u8>()) {
            let mut bytes = Row::from(a).as_row_ref().as_bytes().to_vec();
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] = to;
                if let Ok(row) = postcard::from_bytes::<Row>(&postcard::to_stdvec(&serde_bytes(&bytes)).unwrap()) {
                    prop_assert_eq!(Row::from(row.to_values()), row);
                }
            }
        }
    }

    fn serde_bytes(bytes: &[u8]) -> impl Serialize + '_ {
        struct B<'a>(&'a [u8]);
        impl Serialize for B<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(self.0)
            }
        }
        B(bytes)
    }

    /// Integers at the edges of every width, dates and timestamps at their extremes: packed, they
    /// sort as their values and read back unchanged.
    #[test]
    fn scalars_at_their_edges_sort_by_their_bytes() {
        let mut values: Vec<Value> = [
            i64::MIN,
            -(1 << 32) - 1,
            -(1 << 32),
            -(1 << 16) - 1,
            -(1 << 16),
            -257,
            -256,
            -1,
            0,
            255,
            256,
            (1 << 16) - 1,
            1 << 16,
            (1 << 32) - 1,
            1 << 32,
            i64::MAX,
        ]
        .into_iter()
        .map(Value::Int)
        .collect();
        values.extend([i32::MIN, -1, 0, i32::MAX].map(Value::Date));
        values.extend([i64::MIN, -1, 0, i64::MAX].map(Value::Timestamp));
        for w in values.windows(2) {
            let (a, b) = (Row::from([w[0].clone()]), Row::from([w[1].clone()]));
            assert!(a < b, "{a:?} < {b:?}");
            assert!(a.as_row_ref().as_bytes() < b.as_row_ref().as_bytes());
            assert_eq!(a.to_values(), vec![w[0].clone()]);
        }
    }

    /// The cases a random search meets rarely: a short and a long string (whose tags differ but
    /// which compare by content), a string where the other row has an integer, a row that ends
    /// where the other has a NULL.
    #[test]
    fn order_prefixes_at_the_edges_order_as_the_rows() {
        let long = Value::Str("a".repeat(300));
        let rows = [
            vec![Value::Str("b".into())],
            vec![long.clone()],
            vec![Value::Int(1), Value::Str("b".into())],
            vec![Value::Int(1), long],
            vec![Value::Int(1), Value::Int(5)],
            vec![Value::Int(1)],
            vec![Value::Int(1), Value::Null],
            vec![Value::Int(1), Value::Struct(vec![Value::Int(2)])],
            vec![Value::Int(1), Value::Array(vec![Value::Int(0)])],
        ];
        for a in &rows {
            for b in &rows {
                let (ra, rb) = (Row::from(a.clone()), Row::from(b.clone()));
                let (pa, pb) = (
                    ra.as_row_ref().order_prefix(),
                    rb.as_row_ref().order_prefix(),
                );
                assert!(pa == pb || pa.cmp(&pb) == a.cmp(b), "{a:?} vs {b:?}");
                let (wa, wb) = (
                    ra.as_row_ref().sort_key().prefix(),
                    rb.as_row_ref().sort_key().prefix(),
                );
                assert!(wa == wb || wa.cmp(&wb) == a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn small_rows_stay_inline() {
        let row = Row::from(vec![
            Value::Int(7),
            Value::Str("v000123".into()),
            Value::Str("v000456".into()),
        ]);
        assert_eq!(row.byte_len(), 2 + 9 + 9);
        assert_eq!(row.heap_bytes(), 0);
        assert_eq!(std::mem::size_of::<Row>(), 24);
        assert_eq!(
            format!("{row:?}"),
            r#"[Int(7), Str("v000123"), Str("v000456")]"#
        );
        let nested = Row::from(vec![Value::Struct(vec![Value::Int(1), Value::Null])]);
        assert_eq!(format!("{nested:?}"), "[Struct([Int(1), Null])]");
        assert!(postcard::from_bytes::<Row>(&[2, 99, 0]).is_err());
        // 5 fits one byte: its two-byte form is refused.
        assert!(postcard::from_bytes::<Row>(&[3, 8, 0, 5]).is_err());
    }
}

//! The byte layout of a packed row: each value is one tag byte, then its payload.
//!
//! | value | tag | payload |
//! |---|---|---|
//! | NULL, FALSE, TRUE | 0, 1, 2 | none |
//! | INT / BIGINT | 3, 4, 5, 6 | the value in 1, 2, 4 or 8 bytes, the fewest that hold it |
//! | DOUBLE | 7 | IEEE bits, 8 bytes |
//! | STRING | 8 / 9 | length in 1 / 8 bytes, then the UTF-8 bytes |
//! | DATE | 10 | days, 4 bytes |
//! | TIMESTAMP | 11 | microseconds, 8 bytes |
//! | STRUCT, ARRAY | 12, 13 | byte length in 8 bytes, then the packed fields / elements |
//!
//! Numbers are little-endian. Invariant: the encoding of a value is canonical (one value, one
//! byte string: integers take their narrowest form, strings their short form when it fits), so
//! rows are equal exactly when their bytes are, and hash by their bytes.
//!
//! Bytes come from [`encode`] or pass [`validate`] (rows read back from a checkpoint or from
//! another process), so [`decode`] trusts them: it reads strings without re-checking UTF-8.

use super::{Datum, RowRef, Value, F64};

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT8: u8 = 3;
const INT16: u8 = 4;
const INT32: u8 = 5;
const INT64: u8 = 6;
const DOUBLE: u8 = 7;
const STR8: u8 = 8;
const STR64: u8 = 9;
const DATE: u8 = 10;
const TIMESTAMP: u8 = 11;
const STRUCT: u8 = 12;
const ARRAY: u8 = 13;

/// Where encoded bytes go: a packer's stack buffer or a row's own.
pub(super) trait Sink {
    fn put(&mut self, bytes: &[u8]);
    /// Bytes written so far (nested values patch their length in after their fields).
    fn written(&self) -> usize;
    fn patch(&mut self, at: usize, bytes: &[u8]);
}

impl<const N: usize> Sink for smallvec::SmallVec<[u8; N]> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    fn written(&self) -> usize {
        self.len()
    }
    fn patch(&mut self, at: usize, bytes: &[u8]) {
        self[at..at + bytes.len()].copy_from_slice(bytes);
    }
}

impl Sink for compact_bytes::CompactBytes {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    fn written(&self) -> usize {
        self.len()
    }
    fn patch(&mut self, at: usize, bytes: &[u8]) {
        self.as_mut_slice()[at..at + bytes.len()].copy_from_slice(bytes);
    }
}

/// Appends the encoding of `value`.
pub(super) fn encode(out: &mut impl Sink, value: &Value) {
    match value {
        Value::Struct(fields) => nested(out, STRUCT, |out| {
            fields.iter().for_each(|v| encode(out, v))
        }),
        Value::Array(items) => nested(out, ARRAY, |out| items.iter().for_each(|v| encode(out, v))),
        Value::Null => out.put(&[NULL]),
        Value::Bool(b) => encode_datum(out, Datum::Bool(*b)),
        Value::Int(i) => encode_datum(out, Datum::Int(*i)),
        Value::Double(d) => encode_datum(out, Datum::Double(*d)),
        Value::Str(s) => encode_datum(out, Datum::Str(s)),
        Value::Date(d) => encode_datum(out, Datum::Date(*d)),
        Value::Timestamp(t) => encode_datum(out, Datum::Timestamp(*t)),
    }
}

/// Appends the encoding of `datum`.
pub(super) fn encode_datum(out: &mut impl Sink, datum: Datum<'_>) {
    match datum {
        Datum::Null => out.put(&[NULL]),
        Datum::Bool(false) => out.put(&[FALSE]),
        Datum::Bool(true) => out.put(&[TRUE]),
        Datum::Int(i) => {
            if let Ok(i) = i8::try_from(i) {
                out.put(&[INT8, i as u8]);
            } else if let Ok(i) = i16::try_from(i) {
                tagged(out, INT16, &i.to_le_bytes());
            } else if let Ok(i) = i32::try_from(i) {
                tagged(out, INT32, &i.to_le_bytes());
            } else {
                tagged(out, INT64, &i.to_le_bytes());
            }
        }
        Datum::Double(d) => tagged(out, DOUBLE, &d.0.to_bits().to_le_bytes()),
        Datum::Str(s) => {
            match u8::try_from(s.len()) {
                Ok(len) => out.put(&[STR8, len]),
                Err(_) => tagged(out, STR64, &(s.len() as u64).to_le_bytes()),
            }
            out.put(s.as_bytes());
        }
        Datum::Date(d) => tagged(out, DATE, &d.to_le_bytes()),
        Datum::Timestamp(t) => tagged(out, TIMESTAMP, &t.to_le_bytes()),
        Datum::Struct(fields) => tagged_nested(out, STRUCT, fields.as_bytes()),
        Datum::Array(items) => tagged_nested(out, ARRAY, items.as_bytes()),
    }
}

fn tagged(out: &mut impl Sink, tag: u8, payload: &[u8]) {
    out.put(&[tag]);
    out.put(payload);
}

fn tagged_nested(out: &mut impl Sink, tag: u8, packed: &[u8]) {
    tagged(out, tag, &(packed.len() as u64).to_le_bytes());
    out.put(packed);
}

fn nested<S: Sink>(out: &mut S, tag: u8, fields: impl FnOnce(&mut S)) {
    out.put(&[tag]);
    let at = out.written();
    out.put(&[0; 8]);
    fields(out);
    let len = (out.written() - at - 8) as u64;
    out.patch(at, &len.to_le_bytes());
}

/// The first value of `bytes` (non-empty, well-formed) and the bytes after it.
#[inline]
pub(super) fn decode(bytes: &[u8]) -> (Datum<'_>, &[u8]) {
    let (tag, rest) = (bytes[0], &bytes[1..]);
    match tag {
        NULL => (Datum::Null, rest),
        FALSE => (Datum::Bool(false), rest),
        TRUE => (Datum::Bool(true), rest),
        INT8 => (Datum::Int(i64::from(rest[0] as i8)), &rest[1..]),
        INT16 => (
            Datum::Int(i64::from(i16::from_le_bytes(fixed(rest)))),
            &rest[2..],
        ),
        INT32 => (
            Datum::Int(i64::from(i32::from_le_bytes(fixed(rest)))),
            &rest[4..],
        ),
        INT64 => (Datum::Int(i64::from_le_bytes(fixed(rest))), &rest[8..]),
        DOUBLE => (
            Datum::Double(F64(f64::from_bits(u64::from_le_bytes(fixed(rest))))),
            &rest[8..],
        ),
        STR8 => {
            let len = usize::from(rest[0]);
            (Datum::Str(text(&rest[1..1 + len])), &rest[1 + len..])
        }
        STR64 => {
            let len = u64::from_le_bytes(fixed(rest)) as usize;
            (Datum::Str(text(&rest[8..8 + len])), &rest[8 + len..])
        }
        DATE => (Datum::Date(i32::from_le_bytes(fixed(rest))), &rest[4..]),
        TIMESTAMP => (
            Datum::Timestamp(i64::from_le_bytes(fixed(rest))),
            &rest[8..],
        ),
        STRUCT | ARRAY => {
            let len = u64::from_le_bytes(fixed(rest)) as usize;
            let inner = RowRef::trusted(&rest[8..8 + len]);
            let datum = if tag == STRUCT {
                Datum::Struct(inner)
            } else {
                Datum::Array(inner)
            };
            (datum, &rest[8 + len..])
        }
        _ => unreachable!("packed rows hold only the tags `encode` writes"),
    }
}

#[inline]
fn fixed<const N: usize>(bytes: &[u8]) -> [u8; N] {
    bytes[..N].try_into().expect("a fixed-width payload")
}

#[inline]
fn text(bytes: &[u8]) -> &str {
    // SAFETY: string payloads are copied from `&str`s by `encode_datum`, or checked by
    // `validate` before a row is made from foreign bytes; either way they are UTF-8.
    unsafe { std::str::from_utf8_unchecked(bytes) }
}

/// Checks that `bytes` are a sequence of well-formed, canonically encoded values, as [`encode`]
/// writes them; says what is wrong otherwise.
pub(super) fn validate(mut bytes: &[u8]) -> Result<(), String> {
    while let Some((&tag, rest)) = bytes.split_first() {
        let take = |n: usize| {
            rest.get(..n)
                .ok_or_else(|| format!("a value of tag {tag} is cut short"))
        };
        let length = |n: u64| usize::try_from(n).map_err(|_| "a length overflows".to_string());
        let used = match tag {
            NULL | FALSE | TRUE => 0,
            INT8 => take(1).map(|_| 1)?,
            INT16 => {
                let i = i16::from_le_bytes(fixed(take(2)?));
                canonical(i8::try_from(i).is_err(), tag)?;
                2
            }
            INT32 => {
                let i = i32::from_le_bytes(fixed(take(4)?));
                canonical(i16::try_from(i).is_err(), tag)?;
                4
            }
            INT64 => {
                let i = i64::from_le_bytes(fixed(take(8)?));
                canonical(i32::try_from(i).is_err(), tag)?;
                8
            }
            DOUBLE | TIMESTAMP => take(8).map(|_| 8)?,
            DATE => take(4).map(|_| 4)?,
            STR8 | STR64 => {
                let (head, len): (usize, usize) = if tag == STR8 {
                    (1, usize::from(take(1)?[0]))
                } else {
                    (8, length(u64::from_le_bytes(fixed(take(8)?)))?)
                };
                canonical(tag == STR8 || len > usize::from(u8::MAX), tag)?;
                let body = head.checked_add(len).ok_or("a length overflows")?;
                std::str::from_utf8(&take(body)?[head..])
                    .map_err(|_| "a string is not UTF-8".to_string())?;
                body
            }
            STRUCT | ARRAY => {
                let len = length(u64::from_le_bytes(fixed(take(8)?)))?;
                let body = len.checked_add(8).ok_or("a length overflows")?;
                validate(&take(body)?[8..])?;
                body
            }
            _ => return Err(format!("unknown value tag {tag}")),
        };
        bytes = &rest[used..];
    }
    Ok(())
}

fn canonical(ok: bool, tag: u8) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("a value of tag {tag} is not in its shortest form"))
    }
}

//! The byte layout of a packed row: each value is one tag byte, then its payload.
//!
//! | value | tag | payload |
//! |---|---|---|
//! | NULL, FALSE, TRUE | 0, 1, 2 | none |
//! | INT / BIGINT < 0 | 3, 4, 5, 6 | `v + 2^64`, `v + 2^32`, `v + 2^16`, `v + 2^8` in 8, 4, 2, 1 bytes |
//! | INT / BIGINT >= 0 | 7, 8, 9, 10 | `v` in 1, 2, 4, 8 bytes |
//! | DOUBLE | 11 | IEEE bits, sign bit flipped (all bits for negatives), 8 bytes |
//! | STRING | 12 / 13 | length in 1 / 8 bytes (little-endian), then the UTF-8 bytes |
//! | DATE | 14 | days + 2^31, 4 bytes |
//! | TIMESTAMP | 15 | microseconds + 2^63, 8 bytes |
//! | STRUCT, ARRAY | 16, 17 | byte length in 8 bytes (little-endian), then the packed values |
//!
//! Invariant: the encoding of a value is canonical (one value, one byte string: integers take
//! the fewest bytes that hold them, strings their short form when it fits), so rows are equal
//! exactly when their bytes are, and hash by their bytes.
//!
//! Why this layout: tags follow [`Value`]'s order of types, and every scalar but STRING is
//! stored big-endian and offset so that its bytes sort as it does. Two rows then compare by
//! their bytes up to the first value that differs, and that value by its differing byte, unless
//! it is a STRING, STRUCT or ARRAY ([`compare`]). Keys, sequences and the starts of versions are
//! mostly integers and dates, so most comparisons never decode a value. Strings keep their
//! length in front, as Materialize's rows do, so that a value is borrowed as a `&str` in place.
//!
//! Bytes come from [`encode`] or pass [`validate`] (rows read back from a checkpoint or from
//! another process), so [`decode`] trusts them: it reads strings without re-checking UTF-8.

use super::{Datum, RowRef, Value, F64};
use std::cmp::Ordering;

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const NEG8: u8 = 3;
const NEG4: u8 = 4;
const NEG2: u8 = 5;
const NEG1: u8 = 6;
const POS1: u8 = 7;
const POS2: u8 = 8;
const POS4: u8 = 9;
const POS8: u8 = 10;
const DOUBLE: u8 = 11;
pub(super) const STR8: u8 = 12;
pub(super) const STR64: u8 = 13;
const DATE: u8 = 14;
const TIMESTAMP: u8 = 15;
pub(super) const STRUCT: u8 = 16;
pub(super) const ARRAY: u8 = 17;

/// The tag of an integer and its payload width in bytes.
fn int_form(i: i64) -> (u8, usize) {
    let fits = |bits: u32| i >= -(1i64 << bits) && i < (1i64 << bits);
    match (i < 0, fits(8), fits(16), fits(32)) {
        (true, true, _, _) => (NEG1, 1),
        (true, _, true, _) => (NEG2, 2),
        (true, _, _, true) => (NEG4, 4),
        (true, _, _, _) => (NEG8, 8),
        (false, true, _, _) => (POS1, 1),
        (false, _, true, _) => (POS2, 2),
        (false, _, _, true) => (POS4, 4),
        (false, _, _, _) => (POS8, 8),
    }
}

/// The payload of integer `i` in its form: the offset value's last `width` big-endian bytes.
fn int_payload(i: i64, width: usize) -> [u8; 8] {
    let offset = if i < 0 && width < 8 {
        i + (1i64 << (8 * width))
    } else {
        i
    };
    (offset as u64).to_be_bytes()
}

/// The integer of tag `tag` (an integer tag) and payload `bytes`.
#[inline]
fn int_value(tag: u8, bytes: &[u8]) -> i64 {
    let width = width_of(tag);
    // One fixed-size load per width: a copy of run-time length was a memcpy call per integer.
    let raw = match width {
        1 => u64::from(bytes[0]),
        2 => u64::from(u16::from_be_bytes(fixed(bytes))),
        4 => u64::from(u32::from_be_bytes(fixed(bytes))),
        _ => u64::from_be_bytes(fixed(bytes)),
    } as i64;
    if tag < POS1 && width < 8 {
        raw - (1i64 << (8 * width))
    } else {
        raw
    }
}

/// The payload width of an integer tag.
#[inline]
fn width_of(tag: u8) -> usize {
    match tag {
        NEG1 | POS1 => 1,
        NEG2 | POS2 => 2,
        NEG4 | POS4 => 4,
        _ => 8,
    }
}

fn double_bits(d: f64) -> u64 {
    let bits = d.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    }
}

fn double_value(bits: u64) -> f64 {
    if bits >> 63 == 1 {
        f64::from_bits(bits ^ (1 << 63))
    } else {
        f64::from_bits(!bits)
    }
}

/// Where encoded bytes go: a packer's stack buffer or a row's own.
pub(super) trait Sink {
    fn put(&mut self, bytes: &[u8]);
    /// Appends the first `len` bytes of `head`: a tag and at most eight payload bytes, the
    /// whole of every scalar but a string. A sink may copy all nine and keep `len`, one
    /// fixed-size move where a slice of a length known only at run time is a call to `memcpy`.
    fn put_head(&mut self, head: [u8; HEAD], len: usize) {
        self.put(&head[..len]);
    }
    /// Bytes written so far (nested values patch their length in after their fields).
    fn written(&self) -> usize;
    fn patch(&mut self, at: usize, bytes: &[u8]);
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
        Datum::Str(s) => {
            match u8::try_from(s.len()) {
                Ok(len) => tagged(out, STR8, &[len]),
                Err(_) => tagged(out, STR64, &(s.len() as u64).to_le_bytes()),
            }
            out.put(s.as_bytes());
        }
        Datum::Struct(fields) => tagged_nested(out, STRUCT, fields.as_bytes()),
        Datum::Array(items) => tagged_nested(out, ARRAY, items.as_bytes()),
        scalar => {
            let (head, len) = scalar_head(scalar).expect("every other datum is a scalar");
            out.put_head(head, len);
        }
    }
}

/// The whole encoding of a scalar (NULL, BOOLEAN, an integer, DOUBLE, DATE, TIMESTAMP) as a
/// [`Sink::put_head`] takes it; `None` for a string or a nested value.
#[inline(always)]
pub(super) fn scalar_head(datum: Datum<'_>) -> Option<([u8; HEAD], usize)> {
    Some(match datum {
        Datum::Null => ([NULL; HEAD], 1),
        Datum::Bool(false) => ([FALSE; HEAD], 1),
        Datum::Bool(true) => ([TRUE; HEAD], 1),
        Datum::Int(i) => {
            let (tag, width) = int_form(i);
            // The payload moved to the front of eight bytes, so that the head is filled by a
            // copy of fixed size: a slice of the width's length was a call to `memcpy` per
            // integer (the plain 1M-event SCD1 run's CPU 1.36-1.39 -> 1.34-1.35 s).
            let front = u64::from_be_bytes(int_payload(i, width)) << (8 * (8 - width));
            let mut head = [0; HEAD];
            head[0] = tag;
            head[1..].copy_from_slice(&front.to_be_bytes());
            (head, 1 + width)
        }
        Datum::Double(d) => head_of(DOUBLE, &double_bits(d.0).to_be_bytes()),
        Datum::Date(d) => head_of(DATE, &((d as u32) ^ (1 << 31)).to_be_bytes()),
        Datum::Timestamp(t) => head_of(TIMESTAMP, &((t as u64) ^ (1 << 63)).to_be_bytes()),
        Datum::Str(_) | Datum::Struct(_) | Datum::Array(_) => return None,
    })
}

/// Bytes of [`Sink::put_head`].
pub(super) const HEAD: usize = 9;

/// Whether a value of tag `tag` is a scalar: its encoding is at most [`HEAD`] bytes, and its
/// prefix bytes ([`prefix_bytes`]) are those bytes.
#[inline]
pub(super) fn is_scalar(tag: u8) -> bool {
    !matches!(tag, STR8 | STR64 | STRUCT | ARRAY)
}

/// The head of a value: `tag`, then `payload` (at most eight bytes), and its length.
#[inline(always)]
fn head_of(tag: u8, payload: &[u8]) -> ([u8; HEAD], usize) {
    let mut head = [0; HEAD];
    head[0] = tag;
    head[1..=payload.len()].copy_from_slice(payload);
    (head, 1 + payload.len())
}

fn tagged(out: &mut impl Sink, tag: u8, payload: &[u8]) {
    let (head, len) = head_of(tag, payload);
    out.put_head(head, len);
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

/// The first value of `bytes` (non-empty, well-formed) and the bytes after it. Always inlined
/// (see `Datums::next`).
#[inline(always)]
pub(super) fn decode(bytes: &[u8]) -> (Datum<'_>, &[u8]) {
    let (tag, rest) = (bytes[0], &bytes[1..]);
    match tag {
        NULL => (Datum::Null, rest),
        FALSE => (Datum::Bool(false), rest),
        TRUE => (Datum::Bool(true), rest),
        NEG8..=POS8 => (Datum::Int(int_value(tag, rest)), &rest[width_of(tag)..]),
        DOUBLE => (
            Datum::Double(F64(double_value(u64::from_be_bytes(fixed(rest))))),
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
        DATE => (
            Datum::Date((u32::from_be_bytes(fixed(rest)) ^ (1 << 31)) as i32),
            &rest[4..],
        ),
        TIMESTAMP => (
            Datum::Timestamp((u64::from_be_bytes(fixed(rest)) ^ (1 << 63)) as i64),
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

/// The order of two packed rows (well-formed): as their values', value by value, a prefix
/// first. The values both rows share byte for byte are skipped; the first that differs decides,
/// by its tag when the types differ and by its differing byte when it is a scalar other than a
/// STRING (module docs), otherwise decoded.
#[inline]
pub(super) fn compare(a: &[u8], b: &[u8]) -> Ordering {
    let same = common_prefix(a, b);
    if same == a.len() && same == b.len() {
        return Ordering::Equal;
    }
    let mut at = 0;
    while at < same {
        let len = value_len(&a[at..]);
        if at + len > same {
            break;
        }
        at += len;
    }
    // A row that ends at a value boundary both share is a prefix of the other.
    if at == a.len() || at == b.len() {
        return a.len().cmp(&b.len());
    }
    let (ta, tb) = (a[at], b[at]);
    let text = |t: u8| t == STR8 || t == STR64;
    let decoded = |t: u8| text(t) || t == STRUCT || t == ARRAY;
    if ta == tb && !decoded(ta) {
        return a[same].cmp(&b[same]);
    }
    if ta != tb && !(text(ta) && text(tb)) {
        return ta.cmp(&tb);
    }
    decode(&a[at..]).0.cmp(&decode(&b[at..]).0)
}

/// The row's first eight bytes as a number that orders as the row does wherever two such
/// numbers differ (equal numbers say nothing): a normalized key prefix, as sort-heavy engines
/// keep one to settle most comparisons of a sort on one integer compare.
///
/// The bytes are the row's own up to its first STRING, STRUCT or ARRAY (whose bytes do not
/// sort as the value does); a STRUCT or ARRAY contributes its tag alone, a STRING its tag
/// (both STRING tags as one, since a short and a long string compare by content) and its
/// text's first bytes, and zeros follow, as they do past the row's end. Wherever two rows'
/// prefixes first differ, they differ in the tag of the value that decides, in a scalar's
/// payload byte, which sorts as the value does, or in a text's byte (where a text that ended
/// has a zero, and is the lesser); a row that ends sorts before any value, and zero (NULL, the
/// least tag) only ties with it.
pub(super) fn order_prefix(bytes: &[u8]) -> u64 {
    u64::from_be_bytes(prefix_bytes(bytes).0)
}

/// The first `N` bytes of [`order_prefix`]'s rule, and whether they are all of `bytes` (no
/// STRING, STRUCT or ARRAY among them and nothing past them): then two rows of as many values
/// with equal prefixes are equal. `bytes` may be a row cut anywhere at or past `N + 8` bytes:
/// a value is read past its tag only up to the `N + 8`th byte (a long string's text starts
/// nine bytes after its tag).
///
/// The bytes are first copied whole ([`head`]): a scalar's prefix bytes are its own, and a copy
/// per value of its run-time length was a call to `memcpy` each (a sort key of an SCD2 identity
/// made two). A string or nested value then rewrites the prefix from its tag on. `scdflow run`
/// over 200,000 SCD2 events under callgrind: 177 -> 135 instructions a prefix.
pub(super) fn prefix_bytes<const N: usize>(bytes: &[u8]) -> ([u8; N], bool) {
    let mut prefix = head::<N>(bytes);
    let mut at = 0;
    while at < bytes.len() && at < N {
        let tag = bytes[at];
        if matches!(tag, STR8 | STR64) {
            // The text's first bytes follow the tag, as many as fit, whichever of the two
            // encodings holds it: strings compare byte by byte, and a shorter text's zeros
            // sort as its end does, before any byte (a zero byte only ties). Keys of text
            // (names, codes, UUIDs) nearly always differ within them: with the tag alone
            // every text key tied, and each sort compared them value by value (the 1M-event
            // SCD2 run keyed by text: 2.80-2.87 s then, 1.45-1.59 s now; SCD1 0.92-0.97 ->
            // 0.70-0.72 s; integer keys as before).
            prefix[at..].fill(0);
            prefix[at] = STR8;
            let (skip, len) = match tag {
                STR8 => (2, usize::from(bytes[at + 1])),
                _ => (9, u64::from_le_bytes(fixed(&bytes[at + 1..])) as usize),
            };
            let n = len.min(N - at - 1);
            prefix[at + 1..at + 1 + n].copy_from_slice(&bytes[at + skip..at + skip + n]);
            return (prefix, false);
        }
        if matches!(tag, STRUCT | ARRAY) {
            prefix[at..].fill(0);
            prefix[at] = tag;
            return (prefix, false);
        }
        at = (at + value_len(&bytes[at..])).min(N);
    }
    (prefix, at >= bytes.len())
}

/// The first `N` bytes of `bytes`, zeros after a shorter slice: one fixed-size move, or for a
/// short slice (a key of one integer) a few of eight, four, two and one bytes.
#[inline(always)]
fn head<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(first) = bytes.get(..N) {
        out.copy_from_slice(first);
        return out;
    }
    let mut at = 0;
    for width in [8, 4, 2, 1] {
        if bytes.len() - at >= width {
            out[at..at + width].copy_from_slice(&bytes[at..at + width]);
            at += width;
        }
    }
    out
}

/// The length of the longest common prefix of `a` and `b`, eight bytes at a time.
#[inline]
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_ne_bytes(fixed(&a[i..]));
        let y = u64::from_ne_bytes(fixed(&b[i..]));
        if x != y {
            break;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// The encoded length of the first value of `bytes` (non-empty, well-formed), found from its
/// tag and length field without decoding it.
#[inline]
pub(super) fn value_len(bytes: &[u8]) -> usize {
    match bytes[0] {
        NULL | FALSE | TRUE => 1,
        NEG8..=POS8 => 1 + width_of(bytes[0]),
        DATE => 5,
        DOUBLE | TIMESTAMP => 9,
        STR8 => 2 + usize::from(bytes[1]),
        STR64 | STRUCT | ARRAY => 9 + u64::from_le_bytes(fixed(&bytes[1..])) as usize,
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
            NEG8..=POS8 => {
                let width = width_of(tag);
                let i = int_value(tag, take(width)?);
                canonical(int_form(i) == (tag, width), tag)?;
                width
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

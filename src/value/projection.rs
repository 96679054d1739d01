//! [`Projection`]: chosen columns of rows, compared and prefixed where they lie.
//!
//! Invariant: a projection orders rows exactly as their projected rows
//! ([`RowRef::project`]) order; where two rows' [`SortKey`]s differ they order the same way,
//! and keys that hold their whole projections are equal only for equal projections.
//! Nothing is copied: a row's chosen values are found by walking its tags and length fields
//! up to the last chosen column, which costs one step per column before it.
//!
//! Why: labelling a commit's change feed sorts every update by its identity (keys and
//! interval starts). Copying each identity into a row of its own was a third of that sort's
//! cost, and an eight-byte prefix left the sort walking rows wherever it tied, which for an
//! SCD2 identity (a key and a start, a few bytes each) is every pair of versions of a key:
//! sixteen bytes hold such an identity whole, so ties settle without reading the rows.

use super::{packed, Row, RowRef};
use smallvec::SmallVec;
use std::cmp::Ordering;

/// Columns of rows, in the order they are read (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Projection {
    columns: Vec<usize>,
}

/// A number that orders rows as a projection does where two differ ([`Projection::sort_key`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortKey {
    prefix: u128,
    /// Whether the prefix is the whole projection, so that equal prefixes settle equality.
    whole: bool,
}

impl SortKey {
    /// The key made of its two parts, as [`SortKey::prefix`] and [`SortKey::whole`] give them.
    pub(crate) fn from_parts(prefix: u128, whole: bool) -> SortKey {
        SortKey { prefix, whole }
    }

    /// The number: keys that differ order as their projections.
    pub fn prefix(self) -> u128 {
        self.prefix
    }

    /// Whether the number holds the whole projection, so that equal numbers mean equal
    /// projections.
    pub fn whole(self) -> bool {
        self.whole
    }
}

/// The chosen values' bytes of one row, in projection order.
type Values<'a> = SmallVec<[&'a [u8]; 4]>;

impl Projection {
    /// The columns at these positions, in this order.
    pub fn new(columns: Vec<usize>) -> Projection {
        Projection { columns }
    }

    /// The projected row: the chosen values' bytes copied.
    pub fn project(&self, row: RowRef<'_>) -> Row {
        row.project(&self.columns)
    }

    /// The order of `a` and `b` by their chosen values, value by value.
    pub fn cmp(&self, a: RowRef<'_>, b: RowRef<'_>) -> Ordering {
        let (a, b) = (self.values(a), self.values(b));
        for (x, y) in a.iter().zip(&b) {
            match packed::compare(x, y) {
                Ordering::Equal => {}
                other => return other,
            }
        }
        a.len().cmp(&b.len())
    }

    /// The projected row's first sixteen bytes as a number, by [`RowRef::order_prefix`]'s
    /// rule: where two keys differ they order as the projections do, and keys that hold their
    /// whole projections (integers, dates, timestamps of up to sixteen bytes together) are
    /// equal only for equal projections. Only those bytes are gathered.
    pub fn sort_key(&self, row: RowRef<'_>) -> SortKey {
        const N: usize = 16;
        // Eight bytes more than the key: a long text's first bytes come nine after its tag.
        let mut head = [0u8; N + 8];
        let (mut len, mut cut, mut scalars) = (0, false, true);
        self.each_value(row, |value| {
            scalars &= packed::is_scalar(value[0]);
            let n = value.len().min(N + 8 - len);
            head[len..len + n].copy_from_slice(&value[..n]);
            len += n;
            cut = n < value.len();
            !cut
        });
        // Scalars' bytes are the prefix as they stand (`packed::prefix_bytes` rewrites only
        // from a text or a nested value on), zeros after them: SCD2's identity, a key and an
        // interval start, took 418 instructions a key with the walk of `prefix_bytes`, 297
        // without (callgrind, `scdflow bench --events 400000 --keys 100000 --displacement 1000
        // --flows scd2`: its labelling 617 -> 508 M instructions).
        if scalars {
            let prefix = u128::from_be_bytes(head[..N].try_into().expect("sixteen bytes"));
            return SortKey {
                prefix,
                whole: len <= N,
            };
        }
        let (prefix, whole) = packed::prefix_bytes::<N>(&head[..len]);
        SortKey {
            prefix: u128::from_be_bytes(prefix),
            whole: whole && !cut,
        }
    }

    fn values<'a>(&self, row: RowRef<'a>) -> Values<'a> {
        let mut values = Values::new();
        self.each_value(row, |value| {
            values.push(value);
            true
        });
        values
    }

    /// Hands each chosen value's bytes to `visit` in projection order, until it returns false.
    /// The walk goes on from the last chosen column when the next is after it (keys, then an
    /// interval start: one pass over the row), and restarts otherwise. A column past the row's
    /// end has no value to hand over.
    fn each_value<'a>(&self, row: RowRef<'a>, mut visit: impl FnMut(&'a [u8]) -> bool) {
        let bytes = row.as_bytes();
        let (mut column, mut at) = (0, 0);
        for &c in &self.columns {
            if c < column {
                (column, at) = (0, 0);
            }
            while column < c && at < bytes.len() {
                at += packed::value_len(&bytes[at..]);
                column += 1;
            }
            if at >= bytes.len() {
                return;
            }
            let end = at + packed::value_len(&bytes[at..]);
            if !visit(&bytes[at..end]) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::any_value as value;
    use crate::value::Value;
    use proptest::prelude::*;

    proptest! {
        /// In-place comparisons and prefixes agree with the copied projection's.
        #[test]
        fn a_projection_orders_as_the_projected_rows(
            a in proptest::collection::vec(value(), 4),
            b in proptest::collection::vec(value(), 4),
            columns in proptest::collection::vec(0usize..4, 1..4),
        ) {
            let projection = Projection::new(columns);
            let (a, b): (Row, Row) = (Row::from(a), Row::from(b));
            let (pa, pb) = (projection.project(a.as_row_ref()), projection.project(b.as_row_ref()));
            let (a, b) = (a.as_row_ref(), b.as_row_ref());
            prop_assert_eq!(projection.cmp(a, b), pa.cmp(&pb));
            let (ka, kb) = (projection.sort_key(a), projection.sort_key(b));
            if ka.prefix != kb.prefix {
                prop_assert_eq!(ka.prefix.cmp(&kb.prefix), pa.cmp(&pb));
            } else if ka.whole && kb.whole {
                prop_assert_eq!(pa, pb);
            }
        }
    }

    /// A text contributes its first bytes to a key, whichever encoding holds it (a long
    /// text's start nine bytes after its tag): texts that differ there have keys that differ,
    /// ordered as the texts; a shorter text's key is the lesser.
    #[test]
    fn text_keys_hold_their_texts_first_bytes() {
        let projection = Projection::new(vec![1, 0]);
        let long = "a".repeat(300);
        let texts = [
            String::new(),
            "a".into(),
            "a\0".into(),
            "ab".into(),
            "b".into(),
            "a".repeat(20),
            long.clone(),
            format!("{long}b"),
            "zz".into(),
        ];
        let row = |t: &str| Row::from(vec![Value::Int(3), Value::Str(t.into())]);
        let key = |t: &str| projection.sort_key(row(t).as_row_ref());
        for a in &texts {
            for b in &texts {
                let (ka, kb) = (key(a), key(b));
                let order = projection.cmp(row(a).as_row_ref(), row(b).as_row_ref());
                assert!(ka.prefix == kb.prefix || ka.prefix.cmp(&kb.prefix) == order);
                assert!(!ka.whole, "{a:?}");
            }
        }
        assert!(key("a").prefix < key("ab").prefix);
        assert!(key("ab").prefix < key("b").prefix);
        assert!(key("b").prefix < key("zz").prefix);
        assert!(key("zz").prefix > key(&long).prefix);
        assert_eq!(key(&long).prefix, key(&format!("{long}b")).prefix);
    }

    #[test]
    fn rows_that_share_their_projection_compare_equal() {
        let projection = Projection::new(vec![2, 0]);
        let a = Row::from(vec![Value::Int(1), Value::Str("a".into()), Value::Int(7)]);
        let b = Row::from(vec![Value::Int(1), Value::Str("b".into()), Value::Int(7)]);
        assert_eq!(
            projection.cmp(a.as_row_ref(), b.as_row_ref()),
            Ordering::Equal
        );
        let c = Row::from(vec![Value::Int(0), Value::Str("a".into()), Value::Int(8)]);
        assert_eq!(
            projection.cmp(a.as_row_ref(), c.as_row_ref()),
            Ordering::Less
        );
        // Two integers fit the key whole; a string or a seventeenth byte does not.
        assert!(projection.sort_key(a.as_row_ref()).whole);
        let strings = Projection::new(vec![1]);
        assert!(!strings.sort_key(a.as_row_ref()).whole);
        let big = Row::from(vec![Value::Int(i64::MAX), Value::Int(i64::MIN)]);
        assert!(!Projection::new(vec![0, 1]).sort_key(big.as_row_ref()).whole);
        let nulls = Row::from(vec![Value::Int(1), Value::Null]);
        let ends = Row::from(vec![Value::Int(1), Value::Int(0)]);
        let both = Projection::new(vec![0, 1]);
        let (kn, ke) = (
            both.sort_key(nulls.as_row_ref()),
            both.sort_key(ends.as_row_ref()),
        );
        assert!(kn.whole && ke.whole && kn.prefix < ke.prefix);
    }
}

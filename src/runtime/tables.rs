//! Tables read out of the states key by key and rendered by the caller, so that writing a
//! table never holds a copy of its rows: each worker sorts the keys it owns, hands each key's
//! rows to the caller's [`RenderRows`] (which orders and renders them in its file format), and
//! keeps only the text and, per key, where its text ends. The table file is then the workers'
//! texts merged by key ([`RenderedTables::write`]): keys are owned by one worker each, so the
//! merge is exact.
//!
//! Memory: the rendered text and one copy of each key, instead of every row as values (a
//! rendered row is several times smaller than its `Vec<Value>`).

use crate::value::Row;
use crate::Result;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

/// Renders one key's rows of target `t` (in no particular order; the renderer orders them) by
/// appending them to the text.
pub type RenderRows = Arc<dyn Fn(usize, &mut Vec<Row>, &mut String) -> Result<()> + Send + Sync>;

/// One worker's rendered share of one table.
#[derive(Debug, Default)]
pub struct RenderedTable {
    /// Its keys, ascending.
    keys: Vec<Row>,
    /// Per key: where its text ends.
    ends: Vec<usize>,
    text: String,
    rows: usize,
}

impl RenderedTable {
    /// Renders a table from its keys and a way to read each key's rows.
    pub(super) fn render(
        mut keys: Vec<&Row>,
        mut rows_of: impl FnMut(&Row, &mut Vec<(Row, isize)>),
        t: usize,
        render: &RenderRows,
    ) -> Result<RenderedTable> {
        keys.sort_unstable();
        let mut table = RenderedTable::default();
        let (mut counted, mut rows) = (Vec::new(), Vec::new());
        for key in keys {
            counted.clear();
            rows_of(key, &mut counted);
            rows.clear();
            for (row, n) in counted.drain(..) {
                rows.extend(std::iter::repeat_n(row, n.max(0) as usize));
            }
            if rows.is_empty() {
                continue;
            }
            table.rows += rows.len();
            render(t, &mut rows, &mut table.text)?;
            table.keys.push(key.clone());
            table.ends.push(table.text.len());
        }
        Ok(table)
    }

    /// A table rendered whole, in order (no keys to merge by).
    pub fn whole(text: String, rows: usize) -> RenderedTable {
        let end = text.len();
        RenderedTable {
            keys: Vec::new(),
            ends: vec![end],
            text,
            rows,
        }
    }
}

/// Every target's table, rendered in parts.
#[derive(Debug, Default)]
pub struct RenderedTables {
    /// Per target: the parts (one per worker, or one whole).
    parts: Vec<Vec<RenderedTable>>,
}

impl RenderedTables {
    /// Tables of one part each.
    pub fn whole(tables: Vec<RenderedTable>) -> RenderedTables {
        RenderedTables {
            parts: tables.into_iter().map(|t| vec![t]).collect(),
        }
    }

    pub(super) fn from_parts(parts: Vec<Vec<RenderedTable>>) -> RenderedTables {
        RenderedTables { parts }
    }

    /// Target `t`'s rows.
    pub fn rows(&self, t: usize) -> usize {
        self.parts[t].iter().map(|p| p.rows).sum()
    }

    /// Writes target `t`'s text in key order.
    pub fn write(&self, t: usize, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let parts = &self.parts[t];
        if let [part] = parts.as_slice() {
            return out.write_all(part.text.as_bytes());
        }
        // Per part: the next key to write.
        let mut next: BinaryHeap<Reverse<(&Row, usize, usize)>> = parts
            .iter()
            .enumerate()
            .filter_map(|(p, part)| part.keys.first().map(|k| Reverse((k, p, 0))))
            .collect();
        while let Some(Reverse((_, p, i))) = next.pop() {
            let part = &parts[p];
            let start = if i == 0 { 0 } else { part.ends[i - 1] };
            out.write_all(&part.text.as_bytes()[start..part.ends[i]])?;
            if let Some(key) = part.keys.get(i + 1) {
                next.push(Reverse((key, p, i + 1)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn key(k: i64) -> Row {
        Row::from([Value::Int(k)])
    }

    #[test]
    fn parts_merge_by_key_and_keys_without_rows_are_skipped() {
        let render: RenderRows = Arc::new(|_, rows: &mut Vec<Row>, text: &mut String| {
            rows.sort();
            for row in rows.iter() {
                text.push_str(&format!("{:?}\n", row.value(1)));
            }
            Ok(())
        });
        // Worker 0 owns the even keys, worker 1 the odd ones; key 4 has no rows.
        let rows_of = |k: &Row, out: &mut Vec<(Row, isize)>| {
            let Value::Int(n) = k.value(0) else {
                unreachable!()
            };
            if n != 4 {
                out.push((Row::from([Value::Int(n), Value::Int(n * 10 + 1)]), 1));
                out.push((Row::from([Value::Int(n), Value::Int(n * 10)]), 2));
            }
        };
        let (even, odd) = ([key(4), key(0), key(2)], [key(3), key(1)]);
        let parts: Vec<RenderedTable> = [even.iter().collect(), odd.iter().collect()]
            .into_iter()
            .map(|keys: Vec<&Row>| RenderedTable::render(keys, rows_of, 0, &render).unwrap())
            .collect();
        let tables = RenderedTables::from_parts(vec![parts]);
        assert_eq!(tables.rows(0), 12);
        let mut out = Vec::new();
        tables.write(0, &mut out).unwrap();
        let expected: String = [0, 1, 2, 3]
            .iter()
            .map(|n| format!("Int({0})\nInt({0})\nInt({1})\n", n * 10, n * 10 + 1))
            .collect();
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }
}

//! Tables read out of the states key by key and rendered by the caller, so that writing a
//! table never holds a copy of its rows: each worker sorts the keys it owns, hands each key's
//! rows to the caller's [`RenderRows`] (which orders and renders them in its file format), and
//! keeps only the text and, per key, where its text ends. The table file is then the workers'
//! texts merged by key ([`RenderedTables::write`]): keys are owned by one worker each, so the
//! merge is exact.
//!
//! A worker renders its keys in as many ranges side by side as the cores it has to itself
//! ([`RenderedTable::render`]): a table is rendered once the commits are done, when the
//! process has nothing else to do, and on fewer workers than cores one worker rendering alone
//! was the tail of a plain run (an eighth of the 1M-event SCD2 run's CPU, one core idle; that
//! run went from 1.58–1.59 to 1.45–1.52 s). Ranges of one worker are copied out whole, one
//! after the other; only parts whose keys interleave (several workers') are merged key by key.
//!
//! Memory: one copy of each key and at most [`SPILL_AT`] bytes of text per worker (shared by
//! its ranges): past that, a worker's text goes to an unnamed file in the caller's directory
//! ([`Rendering::spill`], next to the outputs, whose disk has room for the table), which the
//! merge reads back in order. A 10M-event SCD2 table's text is ~360 MB, and holding it (and, while it grew, a copy
//! of half of it) was most of that run's peak above its state. The bound is 64 MB, not less:
//! a spilled text is written twice, and fresh page-cache pages cost as much as fresh memory on
//! the machines here; at 8 MB the 1M-event SCD2 table (40 MB) spilled, and writing the spill
//! was an eighth of the worker's run (1.73–2.02 s then, 1.56–1.69 s without the spill). The
//! price is at 10M events: that run peaks at 0.99–1.03 GB on one worker, 1.09 GB on two
//! (946 and 963 MB with the 8 MB bound). The buffer's room is made once, past a megabyte, so
//! the text never takes twice the bound while it grows.

use crate::value::Row;
use crate::{Error, ErrorKind, Result};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::Arc;

/// Renders one key's rows of target `t` (in no particular order; the renderer orders them) by
/// appending them to the text.
pub type RenderRows = Arc<dyn Fn(usize, &mut Vec<Row>, &mut String) -> Result<()> + Send + Sync>;

/// How the workers render tables.
#[derive(Clone)]
pub struct Rendering {
    /// Renders each key's rows.
    pub rows: RenderRows,
    /// Where a worker's text goes past [`SPILL_AT`] bytes (an existing directory).
    pub spill: PathBuf,
}

/// Bytes of text a worker keeps in memory before it spills them (see the module docs).
pub const SPILL_AT: usize = 64 << 20;

/// One worker's rendered share of one table.
#[derive(Debug, Default)]
pub struct RenderedTable {
    /// Its keys, ascending.
    keys: Vec<Row>,
    /// Per key: where its text ends.
    ends: Vec<u64>,
    /// The text, or its tail after what went to `spilled`.
    text: String,
    /// The text's head, when it outgrew memory.
    spilled: Option<File>,
    rows: usize,
}

impl RenderedTable {
    /// Renders a table from its keys and a way to read each key's rows, in up to `ranges`
    /// ranges of keys side by side (on the helpers of [`super::cores`]), each a part of its
    /// own, in key order.
    pub(super) fn render(
        mut keys: Vec<&Row>,
        rows_of: impl Fn(&Row, &mut Vec<(Row, isize)>) + Sync,
        t: usize,
        rendering: &Rendering,
        ranges: usize,
    ) -> Result<Vec<RenderedTable>> {
        // Below this many keys a range costs its thread more than it saves.
        const KEYS_PER_RANGE: usize = 8192;
        // By each key's order prefix first, ties by the keys: comparing the keys alone read
        // both keys' bytes, scattered over the state's map, at every step of this sort, the
        // render's serial start. A 1M-event SCD2 run's 100,000 keys: the worker's samples in
        // the sort and its comparisons 74 -> 39 at 2 kHz (about 17 ms).
        let mut by_prefix: Vec<(u64, &Row)> = keys.iter().map(|k| (k.order_prefix(), *k)).collect();
        by_prefix.sort_unstable();
        keys.clear();
        keys.extend(by_prefix.into_iter().map(|(_, key)| key));
        let ranges = ranges.min(keys.len() / KEYS_PER_RANGE).max(1);
        Self::render_ranges(&keys, &rows_of, t, rendering, ranges, SPILL_AT / ranges)
    }

    /// Renders sorted `keys` in `ranges` ranges, each spilling past `spill_at` bytes.
    fn render_ranges(
        keys: &[&Row],
        rows_of: &(impl Fn(&Row, &mut Vec<(Row, isize)>) + Sync),
        t: usize,
        rendering: &Rendering,
        ranges: usize,
        spill_at: usize,
    ) -> Result<Vec<RenderedTable>> {
        use rayon::prelude::*;
        let render = |chunk| Self::render_spilling(chunk, rows_of, t, rendering, spill_at);
        let size = keys.len().div_ceil(ranges).max(1);
        match ranges {
            1 => keys.chunks(size).map(render).collect(),
            _ => super::cores::install(|| keys.par_chunks(size).map(render).collect()),
        }
    }

    /// Renders the rows of `keys` (ascending).
    fn render_spilling(
        keys: &[&Row],
        rows_of: impl Fn(&Row, &mut Vec<(Row, isize)>),
        t: usize,
        rendering: &Rendering,
        spill_at: usize,
    ) -> Result<RenderedTable> {
        let mut table = RenderedTable::default();
        // Room for the text up to a spill, and a key's rows past it, made once a table's text
        // is past a megabyte: grown by doubling, the buffer reached twice `spill_at`.
        let room = spill_at.min(SPILL_AT);
        let room = room + room / 8;
        let (mut counted, mut rows) = (Vec::new(), Vec::new());
        let mut spilled_bytes = 0u64;
        for &key in keys {
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
            if table.text.len() > 1 << 20 && table.text.capacity() < room {
                table.text.reserve(room - table.text.len());
            }
            (rendering.rows)(t, &mut rows, &mut table.text)?;
            table.keys.push(key.clone());
            table.ends.push(spilled_bytes + table.text.len() as u64);
            if table.text.len() > spill_at {
                spilled_bytes += table.text.len() as u64;
                table.spill(&rendering.spill)?;
            }
        }
        Ok(table)
    }

    /// Moves the text in memory to the end of the spill file (made on the first spill).
    fn spill(&mut self, dir: &std::path::Path) -> Result<()> {
        let failed = |e: std::io::Error| {
            let why = format!("cannot spill a rendered table into {}: {e}", dir.display());
            Error::new(ErrorKind::Io, why)
        };
        let file = match &mut self.spilled {
            Some(file) => file,
            None => self
                .spilled
                .insert(tempfile::tempfile_in(dir).map_err(failed)?),
        };
        file.write_all(self.text.as_bytes()).map_err(failed)?;
        self.text.clear();
        Ok(())
    }

    /// A table rendered whole, in order (no keys to merge by).
    pub fn whole(text: String, rows: usize) -> RenderedTable {
        let end = text.len() as u64;
        RenderedTable {
            keys: Vec::new(),
            ends: vec![end],
            text,
            spilled: None,
            rows,
        }
    }

    /// The text from its start, read in order: the spilled head, then the tail in memory.
    fn reader(&self) -> std::io::Result<Box<dyn Read + '_>> {
        let tail = self.text.as_bytes();
        Ok(match &self.spilled {
            None => Box::new(tail),
            Some(file) => {
                // `&File` reads and seeks: the text is read back without `&mut self`.
                let mut file = file;
                file.seek(SeekFrom::Start(0))?;
                Box::new(BufReader::new(file).chain(tail))
            }
        })
    }
}

/// Every target's table, rendered in parts.
#[derive(Debug, Default)]
pub struct RenderedTables {
    /// Per target: the parts (per worker, one per range of its keys; or one whole).
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
    pub fn write(&self, t: usize, out: &mut dyn Write) -> std::io::Result<()> {
        let parts = &self.parts[t];
        if let [part] = parts.as_slice() {
            std::io::copy(&mut part.reader()?, out)?;
            return Ok(());
        }
        // One worker's ranges (or any parts whose keys do not interleave): each copied whole.
        let mut filled: Vec<&RenderedTable> = parts.iter().filter(|p| !p.keys.is_empty()).collect();
        filled.sort_unstable_by_key(|p| &p.keys[0]);
        if filled
            .windows(2)
            .all(|w| w[0].keys.last() < w[1].keys.first())
        {
            for part in filled {
                std::io::copy(&mut part.reader()?, out)?;
            }
            return Ok(());
        }
        let mut readers = (parts.iter())
            .map(RenderedTable::reader)
            .collect::<std::io::Result<Vec<_>>>()?;
        // Per part: the next key to write.
        let mut next: BinaryHeap<Reverse<(&Row, usize, usize)>> = parts
            .iter()
            .enumerate()
            .filter_map(|(p, part)| part.keys.first().map(|k| Reverse((k, p, 0))))
            .collect();
        while let Some(Reverse((_, p, i))) = next.pop() {
            let part = &parts[p];
            let start = if i == 0 { 0 } else { part.ends[i - 1] };
            let copied = std::io::copy(&mut (&mut readers[p]).take(part.ends[i] - start), out)?;
            if copied != part.ends[i] - start {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "a rendered table's spill file ended early",
                ));
            }
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

    /// Parts merge by key, spilled or not, rendered whole or in ranges: every key's text
    /// spilled at once (0), a spill in the middle of a part's text (12 bytes), nothing spilled.
    #[test]
    fn parts_merge_by_key_and_keys_without_rows_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let rendering = Rendering {
            rows: Arc::new(|_, rows: &mut Vec<Row>, text: &mut String| {
                rows.sort();
                for row in rows.iter() {
                    text.push_str(&format!("{:?}\n", row.value(1)));
                }
                Ok(())
            }),
            spill: dir.path().to_path_buf(),
        };
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
        let expected: String = [0, 1, 2, 3]
            .iter()
            .map(|n| format!("Int({0})\nInt({0})\nInt({1})\n", n * 10, n * 10 + 1))
            .collect();
        for spill_at in [0, 12, usize::MAX] {
            let render = |keys: &mut Vec<&Row>, ranges| {
                keys.sort();
                RenderedTable::render_ranges(keys, &rows_of, 0, &rendering, ranges, spill_at)
                    .unwrap()
            };
            let text = |tables: RenderedTables| {
                assert_eq!(tables.rows(0), 12);
                let mut out = Vec::new();
                tables.write(0, &mut out).unwrap();
                String::from_utf8(out).unwrap()
            };
            let (even, odd) = ([key(4), key(0), key(2)], [key(3), key(1)]);
            let all = [key(0), key(1), key(2), key(3)];
            for ranges in [1, 2, 3] {
                let mut parts = render(&mut even.iter().collect(), ranges);
                assert_eq!(parts[0].spilled.is_some(), spill_at < usize::MAX);
                parts.extend(render(&mut odd.iter().collect(), ranges));
                let merged = RenderedTables::from_parts(vec![parts]);
                assert_eq!(
                    text(merged),
                    expected,
                    "spill at {spill_at}, {ranges} ranges"
                );
                // One worker's parts (whole, or its ranges) are copied out one after the other.
                let one = render(&mut all.iter().collect(), ranges);
                assert_eq!(one.len() > 1, ranges > 1);
                let one = RenderedTables::from_parts(vec![one]);
                assert_eq!(text(one), expected, "spill at {spill_at}, {ranges} ranges");
            }
        }
    }
}

//! REPLACE USING state (SPEC 1.6, 3.12): per replace-key value, the highest sequence seen and
//! the rows carrying it.
//!
//! A commit's rows for a key keep only their highest sequence `s`; against the stored sequence
//! they replace all of the key's rows (`s` higher), are appended (`s` equal) or are ignored (`s`
//! lower). Keys absent from a commit are untouched. The table is therefore, per key, every row
//! ever offered with the key's highest sequence (duplicates kept) — a function of the multiset
//! of rows, whatever their arrival order or split into commits.
//!
//! Saved ([`Durable`]) key by key, with no worker-wide data.

use super::durable::{
    misfit, read_changes, read_header, read_keys, write_changes, write_header, Changed, Durable,
};
use super::records::{RecordIn, RecordOut};
use super::KeyMap;
use crate::value::{Datum, Row, Value};
use crate::Result;
use differential_dataflow::consolidation::consolidate_from;
use std::collections::BTreeMap;

/// Which columns of a row are the replace keys and which is the sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplaceConfig {
    /// Replace-key column indices.
    pub keys: Vec<usize>,
    /// The sequence column index.
    pub sequence: usize,
}

impl ReplaceConfig {
    /// The replace-key values of `row` (rows are exchanged and held by them).
    pub(crate) fn key(&self, row: &Row) -> Row {
        row.project(&self.keys)
    }

    /// The number of columns a row needs for this configuration.
    fn width(&self) -> usize {
        self.keys
            .iter()
            .chain([&self.sequence])
            .max()
            .map_or(0, |m| m + 1)
    }
}

/// The REPLACE USING rows of the replace keys one worker owns.
#[derive(Debug)]
pub struct ReplaceState {
    config: ReplaceConfig,
    keys: KeyMap<(Value, Vec<Row>)>,
    changed: Changed,
}

impl ReplaceState {
    /// An empty state for rows shaped by `config`.
    pub fn new(config: ReplaceConfig) -> Self {
        ReplaceState {
            config,
            keys: KeyMap::default(),
            changed: Changed::default(),
        }
    }

    /// The configuration the state was built with.
    pub fn config(&self) -> &ReplaceConfig {
        &self.config
    }

    /// Number of replace-key values held.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Applies one commit's rows and appends the resulting row updates (consolidated) to `out`.
    pub fn apply(&mut self, rows: Vec<Row>, out: &mut Vec<(Row, isize)>) {
        let start = out.len();
        for (key, rows) in self.by_key(rows) {
            self.replace(key, rows, out);
        }
        consolidate_from(out, start);
    }

    /// Groups rows by replace key.
    fn by_key(&self, rows: Vec<Row>) -> BTreeMap<Row, Vec<Row>> {
        let mut groups: BTreeMap<Row, Vec<Row>> = BTreeMap::new();
        for row in rows {
            groups.entry(self.config.key(&row)).or_default().push(row);
        }
        groups
    }

    /// Applies one commit's rows of one key against the stored rows of that key.
    fn replace(&mut self, key: Row, rows: Vec<Row>, out: &mut Vec<(Row, isize)>) {
        let sequence = self.config.sequence;
        fn at(r: &Row, sequence: usize) -> Datum<'_> {
            r.get(sequence).unwrap_or(Datum::Null)
        }
        let Some(top) = rows
            .iter()
            .map(|r| at(r, sequence))
            .max()
            .map(Datum::to_value)
        else {
            return;
        };
        let winners: Vec<Row> = rows
            .into_iter()
            .filter(|r| at(r, sequence) == top)
            .collect();
        self.changed.mark(&key);
        let stored = self
            .keys
            .entry(key)
            .or_insert_with(|| (top.clone(), Vec::new()));
        if top > stored.0 {
            out.extend(stored.1.drain(..).map(|r| (r, -1)));
            stored.0 = top;
        } else if top < stored.0 {
            return;
        }
        out.extend(winners.iter().cloned().map(|r| (r, 1)));
        stored.1.extend(winners);
    }
}

const TAG: &str = "replace";

impl Durable for ReplaceState {
    fn save(&mut self, out: &mut dyn RecordOut) -> Result<()> {
        write_header(out, TAG, &())?;
        for (key, (seq, rows)) in &self.keys {
            out.write(&(key, (seq, rows)))?;
        }
        self.changed.clear();
        Ok(())
    }

    fn track_changes(&mut self) {
        self.changed.track();
    }

    fn save_changes(&mut self, out: &mut dyn RecordOut) -> Result<()> {
        write_header(out, TAG, &())?;
        write_changes(out, &mut self.changed, &self.keys)
    }

    fn restore_changes(
        &mut self,
        input: &mut dyn RecordIn,
        owns: &dyn Fn(&Row) -> bool,
        _wrote: &dyn Fn(&Row) -> bool,
    ) -> Result<()> {
        read_header::<()>(input, TAG)?;
        let width = self.config.width();
        read_changes(input, owns, |key, entry: Option<(Value, Vec<Row>)>| {
            self.keys.remove(&key);
            if let Some(entry) = entry {
                if entry.1.iter().any(|row| row.len() < width) {
                    return Err(misfit(format!("a row has fewer than {width} columns")));
                }
                self.keys.insert(key, entry);
            }
            Ok(())
        })
    }

    fn restore(&mut self, input: &mut dyn RecordIn, owns: &dyn Fn(&Row) -> bool) -> Result<()> {
        read_header::<()>(input, TAG)?;
        let width = self.config.width();
        read_keys(input, owns, |key, entry: (Value, Vec<Row>)| {
            if entry.1.iter().any(|row| row.len() < width) {
                return Err(misfit(format!("a row has fewer than {width} columns")));
            }
            Ok(self.keys.insert(key, entry).is_none())
        })
    }

    fn table_keys(&self) -> Vec<&Row> {
        self.keys.keys().collect()
    }

    fn key_rows(&self, key: &Row, out: &mut Vec<(Row, isize)>) {
        if let Some((_, rows)) = self.keys.get(key) {
            let start = out.len();
            out.extend(rows.iter().map(|r| (r.clone(), 1)));
            consolidate_from(out, start);
        }
    }

    fn live_tombstones(&self) -> u64 {
        0
    }
}

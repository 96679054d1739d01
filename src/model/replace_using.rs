//! REPLACE USING reference: per replace-key value, the rows of the highest sequence offered
//! (see the rules in the [module docs](super)).

use super::sort_rows;
use crate::plan::Target;
use crate::value::{Row, Value};
use std::collections::BTreeMap;

/// The table of REPLACE USING target `target` after the incoming `rows` (whole target rows,
/// already filtered by the expectations; any order, any split into commits). `target.keys` are
/// the replace keys and `sequence` is the index of the `SEQUENCE BY` column. Per key value
/// (plain [`Value`] equality, so NULL keys group together), the result holds every row whose
/// sequence equals the greatest sequence offered for that key, duplicates kept. Sorted by the
/// key columns, then the whole row.
pub fn replace_using(target: &Target, sequence: usize, rows: &[Row]) -> Vec<Row> {
    let key = |row: &Row| -> Row { row.project(&target.keys) };
    let mut max_seq: BTreeMap<Row, Value> = BTreeMap::new();
    for row in rows {
        let seq = row.value(sequence);
        max_seq
            .entry(key(row))
            .and_modify(|m| {
                if seq > *m {
                    *m = seq.clone();
                }
            })
            .or_insert(seq);
    }
    let mut table: Vec<Row> = rows
        .iter()
        .filter(|row| max_seq[&key(row)] == row.value(sequence))
        .cloned()
        .collect();
    sort_rows(target, &mut table, &[]);
    table
}

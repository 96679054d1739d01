//! The state a state-loop run leaves, per table row, beside the raw width of those rows: the
//! figure the engine's layout is judged by (bytes per live version against the bytes of its
//! columns).
//!
//! The state's bytes are counted from its structures (`CdcState::heap_bytes`: capacities and
//! heap blocks, not the allocator's rounding), so they are exact for the layout and repeatable;
//! a row's raw width is its values at their natural width: 8 bytes for an integer, double or
//! timestamp, 4 for a date, 1 for a boolean, a string's UTF-8 bytes, nothing for NULL, a
//! STRUCT's or ARRAY's values summed. The rows are the target's table (every SCD2 version, every
//! bitemporal interval), enumerated from the state after the run.

use crate::engine::{CdcState, Durable, SnapshotState};
use crate::value::{Datum, RowRef};

/// A state's bytes and its table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StateSize {
    /// Heap bytes of the state (and of a snapshot flow's snapshot state).
    pub bytes: u64,
    /// Rows of the target's table.
    pub rows: u64,
    /// The raw width of those rows, summed.
    pub raw: u64,
}

impl StateSize {
    /// The figures of `state` (and `snapshots`, for snapshot flows).
    pub(super) fn of<S: CdcState + Durable + ?Sized>(state: &S, snapshots: &SnapshotState) -> Self {
        let mut rows = Vec::new();
        for key in state.table_keys() {
            state.key_rows(key, &mut rows);
        }
        StateSize {
            bytes: (state.heap_bytes() + snapshots.heap_bytes()) as u64,
            rows: rows.len() as u64,
            raw: rows
                .iter()
                .map(|(row, _)| raw_width(row.as_row_ref()))
                .sum(),
        }
    }

    /// State bytes per table row.
    pub fn per_row(&self) -> f64 {
        self.bytes as f64 / self.rows.max(1) as f64
    }

    /// Raw bytes per table row.
    pub fn raw_per_row(&self) -> f64 {
        self.raw as f64 / self.rows.max(1) as f64
    }
}

/// The raw width of a row's values (module docs).
fn raw_width(row: RowRef<'_>) -> u64 {
    row.iter()
        .map(|datum| match datum {
            Datum::Null => 0,
            Datum::Bool(_) => 1,
            Datum::Date(_) => 4,
            Datum::Int(_) | Datum::Double(_) | Datum::Timestamp(_) => 8,
            Datum::Str(s) => s.len() as u64,
            Datum::Struct(fields) | Datum::Array(fields) => raw_width(fields),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{Row, Value};

    #[test]
    fn raw_width_is_the_values_at_their_width() {
        let row = Row::from(vec![
            Value::Int(7),
            Value::Str("abc".into()),
            Value::Null,
            Value::Date(3),
            Value::Struct(vec![Value::Bool(true), Value::Timestamp(1)]),
        ]);
        assert_eq!(raw_width(row.as_row_ref()), 8 + 3 + 4 + 1 + 8);
    }
}

//! Snapshot diffing state (SPEC 3.7): the previous full snapshot's image per key, and the change
//! events between it and the next snapshot.
//!
//! Each worker holds the keys it owns. A new snapshot (its rows of those keys, at version `v`)
//! turns every key whose image is new or changed into an upsert at sequence `v`, and every held
//! key the snapshot no longer has into a delete at `v`; unchanged keys produce nothing. A key
//! must occur once per snapshot (the driver rejects duplicates); if one repeats anyway, every
//! occurrence that differs from the previous image is an upsert and the first is kept.
//!
//! Saved ([`Durable`]) key by key, with no worker-wide data.

use super::durable::{read_header, read_keys, write_header, Durable};
use super::KeyMap;
use crate::event::{Event, EventKind};
use crate::state::{FrameReader, FrameWriter};
use crate::value::{Row, Value};
use crate::Result;
use std::collections::hash_map::Entry;

/// The previous snapshot of the keys one worker owns.
#[derive(Debug, Default)]
pub struct SnapshotState {
    previous: KeyMap<Row>,
}

impl SnapshotState {
    /// An empty state: the first snapshot is all upserts.
    pub fn new() -> Self {
        SnapshotState::default()
    }

    /// Number of keys held (those of the previous snapshot).
    pub fn len(&self) -> usize {
        self.previous.len()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.previous.is_empty()
    }

    /// Replaces the previous snapshot by `snapshot` (`(key, image)` rows) and returns the
    /// events between them at sequence `version`.
    pub fn diff(&mut self, snapshot: Vec<(Row, Row)>, version: i64) -> Vec<Event> {
        let seq = Value::Int(version);
        let event = |kind, key, image| Event {
            seq: seq.clone(),
            kind,
            key,
            image,
            authored: None,
            system: Value::Null,
        };
        let mut events = Vec::new();
        let mut next = KeyMap::with_capacity_and_hasher(snapshot.len(), Default::default());
        for (key, image) in snapshot {
            let changed = self.previous.remove(&key).is_none_or(|old| old != image);
            if changed {
                events.push(event(EventKind::Upsert, key.clone(), image.clone()));
            }
            if let Entry::Vacant(v) = next.entry(key) {
                v.insert(image);
            }
        }
        for (key, _) in self.previous.drain() {
            events.push(event(EventKind::Delete, key, Vec::new()));
        }
        self.previous = next;
        events
    }
}

const TAG: &str = "snapshot";

impl Durable for SnapshotState {
    fn save(&self, out: &mut FrameWriter) -> Result<()> {
        write_header(out, TAG, &())?;
        for (key, image) in &self.previous {
            out.write(&(key, image))?;
        }
        Ok(())
    }

    fn restore(&mut self, input: &mut FrameReader, owns: &dyn Fn(&Row) -> bool) -> Result<()> {
        read_header::<()>(input, TAG)?;
        read_keys(input, owns, |key, image: Row| {
            Ok(self.previous.insert(key, image).is_none())
        })
    }

    /// Nothing: this state produces events, not table rows. The previous snapshot it holds is
    /// already reflected in the targets downstream, which restore their own rows.
    fn rows(&self, _out: &mut Vec<(Row, isize)>) {}

    fn live_tombstones(&self) -> u64 {
        0
    }
}

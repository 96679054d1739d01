//! Snapshot diffing state (SPEC 3.7): the previous full snapshot's image per key, and the change
//! events between it and the next snapshot.
//!
//! Each worker holds the keys it owns. A new snapshot (its rows of those keys, at version `v`)
//! turns every key whose image is new or changed into an upsert at sequence `v`, and every held
//! key the snapshot no longer has into a delete at `v`; unchanged keys produce nothing. A key
//! must occur once per snapshot (the driver rejects duplicates); if one repeats anyway, each
//! later occurrence is an upsert and the first is kept.
//!
//! The map is updated in place: each held image carries the number of the last snapshot that
//! had its key, so a row costs one probe (an unchanged row moves nothing and is dropped), and one
//! pass over the map afterwards deletes the keys the snapshot did not mark.
//!
//! A REPLACE WHERE target ([`SnapshotState::replacing`]) keeps, besides, the previous rows
//! its condition does not hold for at the snapshot's instant, and takes only the snapshot rows
//! it holds for: each update replaces the condition's slice of the table. Its keys are whole
//! rows with an occurrence number, so equal rows may repeat; a row's key and image agree, so
//! a key is never updated, only inserted or deleted. A condition that cannot be compiled at an
//! instant holds for no row (nothing is replaced).
//!
//! Saved ([`Durable`]) key by key, with no worker-wide data (the condition is the plan's).

use super::durable::{read_changes, read_header, read_keys, write_header, Changed, Durable};
use super::records::{RecordIn, RecordOut};
use super::KeyMap;
use crate::event::{Event, EventKind};
use crate::plan::ReplaceWhere;
use crate::value::{Row, Seq};
use crate::Result;
use std::collections::hash_map::Entry;

/// The previous snapshot of the keys one worker owns.
#[derive(Debug, Default)]
pub struct SnapshotState {
    /// Per key, its image and the number of the last snapshot that had it.
    previous: KeyMap<(Row, u64)>,
    /// Snapshots diffed so far.
    snapshots: u64,
    changed: Changed,
    /// A REPLACE WHERE target's condition.
    replace_where: Option<ReplaceWhere>,
}

impl SnapshotState {
    /// The bytes the state holds on the heap, as [`super::CdcState::heap_bytes`] counts them
    /// (a REPLACE WHERE condition aside).
    pub fn heap_bytes(&self) -> usize {
        use super::heap::HeapSize;
        self.previous.heap_bytes() + self.changed.heap_bytes()
    }

    /// An empty state: the first snapshot is all upserts.
    pub fn new() -> Self {
        SnapshotState::default()
    }

    /// An empty state of a REPLACE WHERE target: each snapshot replaces only the rows
    /// `condition` holds for.
    pub fn replacing(condition: ReplaceWhere) -> Self {
        SnapshotState {
            replace_where: Some(condition),
            ..SnapshotState::default()
        }
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
    /// events between them at sequence `version`. `now` (microseconds since the epoch) is the
    /// instant a REPLACE WHERE condition is evaluated at.
    pub fn diff(&mut self, snapshot: Vec<(Row, Row)>, version: i64, now: i64) -> Vec<Event> {
        let condition = self.replace_where.as_ref().map(|r| r.at(now).ok());
        // Whether an image is in the slice this snapshot replaces (every image, but for
        // REPLACE WHERE).
        let in_slice = |image: &Row| match &condition {
            None => true,
            Some(None) => false,
            Some(Some(c)) => c.eval_predicate(&image.unpack()).unwrap_or(false),
        };
        let seq = Seq::from(version);
        let event = |kind, key, image| Event {
            seq: seq.clone(),
            kind,
            key,
            image,
            authored: None,
            system: None,
        };
        self.snapshots += 1;
        let this = self.snapshots;
        let mut events = Vec::new();
        for (key, image) in snapshot {
            if !in_slice(&image) {
                continue;
            }
            match self.previous.entry(key) {
                Entry::Occupied(mut o) => {
                    if o.get().1 == this {
                        events.push(event(EventKind::Upsert, o.key().clone(), image));
                        continue;
                    }
                    let changed = o.get().0 != image;
                    if changed {
                        events.push(event(EventKind::Upsert, o.key().clone(), image.clone()));
                        self.changed.mark(o.key());
                    }
                    let (held, seen) = o.get_mut();
                    *seen = this;
                    if changed {
                        *held = image;
                    }
                }
                Entry::Vacant(v) => {
                    self.changed.mark(v.key());
                    events.push(event(EventKind::Upsert, v.key().clone(), image.clone()));
                    v.insert((image, this));
                }
            }
        }
        let changed = &mut self.changed;
        self.previous.retain(|key, (image, seen)| {
            if *seen == this || !in_slice(image) {
                return true;
            }
            changed.mark(key);
            events.push(event(EventKind::Delete, key.clone(), Row::new()));
            false
        });
        events
    }
}

const TAG: &str = "snapshot";

impl Durable for SnapshotState {
    fn save(&mut self, out: &mut dyn RecordOut) -> Result<()> {
        write_header(out, TAG, &())?;
        for (key, (image, _)) in &self.previous {
            out.write(&(key, image))?;
        }
        self.changed.clear();
        Ok(())
    }

    fn track_changes(&mut self) {
        self.changed.track();
    }

    fn save_changes(&mut self, out: &mut dyn RecordOut) -> Result<()> {
        write_header(out, TAG, &())?;
        let previous = &self.previous;
        let touch = |key: &Row| usize::from(previous.contains_key(key));
        self.changed.save_each(touch, |key, _| {
            out.write(&(key, previous.get(key).map(|(image, _)| image)))
        })
    }

    fn restore_changes(
        &mut self,
        input: &mut dyn RecordIn,
        owns: &dyn Fn(&Row) -> bool,
        _wrote: &dyn Fn(&Row) -> bool,
    ) -> Result<()> {
        read_header::<()>(input, TAG)?;
        read_changes(input, owns, |key, image: Option<Row>| {
            match image {
                Some(image) => self.previous.insert(key, (image, self.snapshots)),
                None => self.previous.remove(&key),
            };
            Ok(())
        })
    }

    fn restore(&mut self, input: &mut dyn RecordIn, owns: &dyn Fn(&Row) -> bool) -> Result<()> {
        read_header::<()>(input, TAG)?;
        read_keys(input, owns, |key, image: Row| {
            Ok(self.previous.insert(key, (image, self.snapshots)).is_none())
        })
    }

    /// Nothing: this state produces events, not table rows. The previous snapshot it holds is
    /// already reflected in the targets downstream, which restore their own rows.
    /// The previous snapshot is not a table.
    fn table_keys(&self) -> Vec<&Row> {
        Vec::new()
    }

    fn key_rows(&self, _key: &Row, _out: &mut Vec<(Row, isize)>) {}

    fn live_tombstones(&self) -> u64 {
        0
    }
}

//! Change events: what a flow's source rows become once classified, sequenced and projected.
//!
//! An event is a function of one source row and the flow's clauses (SPEC 3.1): the sequence and
//! the delete/truncate predicates are evaluated on the raw row, then the image is projected.
//! Both the reference model and the engine consume exactly these.
//!
//! Ordering contract (D2): events of one key are ordered by `seq`; at equal `seq` a DELETE beats
//! an UPSERT and among upserts the greatest `(image, authored)` wins. `EventKind`'s and
//! `Event`'s derived orders encode that: the winner of a tie is the *greatest* event.

use crate::value::{Row, Seq};
use serde::{Deserialize, Serialize};

/// What an event does (SPEC 1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EventKind {
    /// Insert or update (the API does not distinguish them).
    Upsert,
    /// Delete of the key.
    Delete,
    /// Delete of every key (SCD1 only); key and image are empty.
    Truncate,
}

/// One change event for one target.
///
/// 104 bytes: an event is moved several times between its source row and its key's state (into
/// a commit, across to its worker, into the commit's stash, grouped by key), and every byte of
/// it crosses from the reading thread's core to the worker's. Its sequences are [`Seq`]s (16
/// bytes, a `Value` takes 32) and its authored columns a boxed slice (16, a `Vec` takes 24);
/// it was 144 bytes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Event {
    /// The sequence value (never NULL).
    pub seq: Seq,
    /// What the event does.
    pub kind: EventKind,
    /// Key values, in `KEYS` order (empty for truncates).
    pub key: Row,
    /// The image: the selected columns, in target order. Empty for deletes and truncates, whose
    /// payload carries no meaning (Q24), so that equal deletes deduplicate (D1).
    pub image: Row,
    /// For partial updates, which image columns this upsert sets; `None` = all of them.
    pub authored: Option<Box<[bool]>>,
    /// Bitemporal targets: the `SYSTEM SEQUENCE BY` value (when the system learned the event;
    /// never `None` there). `None` for every other target.
    pub system: Option<Seq>,
}

// See the type's docs: the size is the point.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Event>() == 104);

impl Event {
    /// Whether this event sets image column `i`.
    pub fn authors(&self, i: usize) -> bool {
        self.authored.as_ref().is_none_or(|a| a[i])
    }

    /// The tie-break identity of the event at its sequence: the winner of a tie is the greatest.
    pub fn tie_rank(&self) -> (EventKind, &Row, Option<&[bool]>) {
        (self.kind, &self.image, self.authored.as_deref())
    }
}

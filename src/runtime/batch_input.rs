//! A worker's input of one kind of record, taking a commit's records as one message.
//!
//! Differential's `InputSession` moves record after record into a buffer of 8 KiB (51 events)
//! and sends each full buffer as a message: a 1,000-event commit cost 1,000 pushes and 20
//! buffers before an operator saw it, and the operator then moved each event again into its
//! own store. Here a commit's records become updates in one pass over their vector, which goes
//! on as the single message of the commit; an operator that owns the commit's time takes it
//! whole. Records are inserts only (the operators behind these inputs drop retractions).

use timely::container::CapacityContainerBuilder;
use timely::dataflow::operators::core::input::Handle;
use timely::dataflow::operators::core::input::Input;
use timely::dataflow::{Scope, Stream};

/// Updates of records `D` at commit versions.
pub(super) type Updates<D> = Vec<(D, u64, isize)>;

/// The input handle; its stream is the collection of the records inserted.
pub(super) struct BatchInput<D: Clone + 'static> {
    handle: Handle<u64, CapacityContainerBuilder<Updates<D>>>,
}

impl<D: Clone + 'static> BatchInput<D> {
    /// A new input of `scope` and the stream of its updates.
    pub(super) fn new<'s>(scope: &Scope<'s, u64>) -> (Self, Stream<'s, u64, Updates<D>>) {
        let (handle, stream) = scope.new_input::<Updates<D>>();
        (BatchInput { handle }, stream)
    }

    /// Inserts `records` at the current version, as one message.
    pub(super) fn insert_all(&mut self, records: Vec<D>) {
        if records.is_empty() {
            return;
        }
        let at = *self.handle.time();
        let mut updates: Updates<D> = records.into_iter().map(|r| (r, at, 1)).collect();
        self.handle.send_batch(&mut updates);
    }

    /// Moves to `version`: every record inserted before is at an earlier version.
    pub(super) fn advance_to(&mut self, version: u64) {
        self.handle.advance_to(version);
    }
}

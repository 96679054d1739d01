//! Differential-dataflow operators that maintain SCD targets from change events.
//!
//! Each operator takes a collection of [`Event`](crate::event::Event)s whose timestamps are
//! commit numbers and returns the target's rows as a collection: its update stream is the
//! target's change feed. Events are exchanged by key hash; truncates are broadcast to every
//! worker. A commit's events are applied once the input frontier has passed it, so updates at
//! time `t` are exactly the difference between the target after commits `..t` and `..=t`.
//!
//! Limits: events are insert-only (a retraction of an event is ignored), and timestamps must be
//! totally ordered.

mod change_feed;
mod keyed;
mod scd1;
mod scd2;

pub use change_feed::ChangeFeed;
pub use scd1::{Scd1, Scd1Config};
pub use scd2::{Scd2, Scd2Config};

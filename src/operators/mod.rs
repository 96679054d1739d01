//! Differential-dataflow operators that maintain CDC targets.
//!
//! [`Scd1`], [`Scd2`] and [`Bitemporal`] take a collection of [`Event`](crate::event::Event)s
//! whose timestamps are commit numbers and return the target's rows as a collection: its update
//! stream is the target's change feed ([`ChangeFeed`] labels it). Events are exchanged by key
//! hash; truncates are broadcast to every worker. [`SnapshotDiff`] turns full snapshots into the
//! events between consecutive ones, and [`ReplaceUsing`] maintains partial-snapshot replacement.
//! [`TypedScd1`], [`TypedScd2`] and [`TypedSnapshotDiff`] do the same over collections of the
//! caller's own types (`u64` keys, structs), for research dataflows.
//! Every operator applies a time's input once its input frontier has passed it, so its updates
//! at time `t` are exactly the difference between the result after times `..t` and `..=t`.
//!
//! Each operator keeps its per-worker state in an [`engine`](crate::engine) state. The traits
//! follow differential's naming ladder: `scd2(config)` builds the state, `scd2_with` adds a
//! clock and counters, and `scd2_core` takes a state the caller shares (`Rc<RefCell<_>>`) to
//! restore it before the first commit, save it between commits and read its table
//! ([`Durable::rows`](crate::engine::Durable::rows)). [`TargetState`] is where a plan target
//! becomes these states and operators, for the runtime and the flow builder alike.
//!
//! Limits: inputs are insert-only (a retraction is ignored), and timestamps must be totally
//! ordered.

mod as_of;
mod bitemporal;
mod change_feed;
mod keyed;
mod render;
mod replace_using;
mod scd1;
mod scd2;
mod snapshot_diff;
mod typed;

pub use as_of::{as_of, AsOf, AsOfIndex, AsOfPoint, AsOfTime, AsOfTrace, Instant, Unchanged};
pub use bitemporal::{Bitemporal, BitemporalConfig};
pub use change_feed::ChangeFeed;
pub use render::{ScdState, TargetInputs, TargetState};
pub use replace_using::{ReplaceConfig, ReplaceUsing};
pub use scd1::{Scd1, Scd1Config};
pub use scd2::{Scd2, Scd2Config};
pub use snapshot_diff::SnapshotDiff;
pub use typed::{TypedScd1, TypedScd2, TypedSnapshotDiff};

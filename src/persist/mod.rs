//! Durable pipelines (`scdflow run PIPELINE --state DIR`), in one place: what a run persists so
//! that the next run processes only new input, continues the commit numbering and the change
//! feed, and survives a crash at any instant — and the sessions that run against it.
//!
//! - [`Session`] (`session`): a durable run, step by step; [`follow`] (`follow`) for
//!   `--follow`, woken by a watch on the input directories;
//!   [`Session::rewind`] returns a state and its outputs to an earlier commit;
//! - [`store`]: the state directory, its manifest (the commit point) and checkpoints;
//! - [`frames`]: the on-disk record format (versioned, checksummed, serde), and the shard files
//!   the runtime saves the operators' states through ([`ShardRecords`]);
//! - [`appended`]: outputs appended exactly once, verified by checksum;
//! - `published`: targets published as Delta tables, exactly once; `catch_up`: a state
//!   catching up with tables that hold commits it lost; `table_edits`: other writers' edits of
//!   them (DML), taken into the state;
//! - [`fingerprint`]: what a state depends on in the pipeline, checked on every run.
//!
//! The operators' states themselves are saved per worker by [`crate::engine::Durable`] (through
//! the engine's record traits) and restored on any number of workers, so a restart costs time
//! proportional to the state, never to the input history. Where a run starts is the driver's
//! [`crate::driver::Resume`], which a session fills from the manifest.

pub mod appended;
mod catch_up;
pub mod fingerprint;
mod follow;
pub mod frames;
mod published;
mod session;
pub mod store;
mod table_edits;

pub use fingerprint::Fingerprint;
pub use follow::follow;
pub use frames::{FileKind, FrameReader, FrameWriter, ShardRecords};
pub use session::{run, Durability, DurableRun, NewInput, Rewound, Session, MAX_DELTAS};
pub use store::{Appended, Checks, InputProgress, Manifest, Publishing, StateDir};

//! Durable pipelines (`scdflow run --state DIR`): what a run persists so that the next run
//! processes only new input, continues the commit numbering and the change feed, and survives a
//! crash at any instant.
//!
//! - [`frames`]: the on-disk record format (versioned, checksummed, serde);
//! - [`store`]: the state directory, its manifest (the commit point) and checkpoints;
//! - [`appended`]: outputs appended exactly once;
//! - [`fingerprint`]: what a state depends on in the pipeline, checked on every run.
//!
//! The operators' states themselves are saved per worker by [`crate::engine::Durable`] and
//! restored on any number of workers, so a restart costs time proportional to the state, never
//! to the input history.

pub mod appended;
pub mod fingerprint;
pub mod frames;
pub mod store;

pub use fingerprint::Fingerprint;
pub use frames::{FileKind, FrameReader, FrameWriter, ShardRecords};
pub use store::{Appended, Checks, InputProgress, Manifest, StateDir};

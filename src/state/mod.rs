//! Durable pipelines (`scdflow run --state DIR`): what a run persists so that the next run
//! processes only new input, and how it is laid out on disk.

pub mod frames;

pub use frames::{FileKind, FrameReader, FrameWriter};

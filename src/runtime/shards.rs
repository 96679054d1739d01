//! Where the workers' shards are kept. The runtime decides which shards exist and what they are
//! called (one per target, part and worker, [`shard_name`]); how a shard is stored — the file
//! format, its checksums, syncing — is the caller's, behind [`ShardFiles`], so the runtime
//! depends on no file format (the CLI's is `crate::persist::frames`).

use crate::engine::{RecordIn, RecordOut};
use crate::Result;
use std::path::Path;

/// Creates and opens shard files.
pub trait ShardFiles: Send + Sync + std::fmt::Debug {
    /// A new shard file at `path`: a whole state, or with `delta` what changed since the save
    /// before.
    fn create(&self, path: &Path, delta: bool) -> Result<Box<dyn ShardWriter>>;
    /// The records of the shard file at `path`, which must be of the kind `delta` says.
    fn open(&self, path: &Path, delta: bool) -> Result<Box<dyn RecordIn>>;
}

/// A shard being written.
pub trait ShardWriter: RecordOut {
    /// Seals the shard and makes it durable.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// The file name of part `part` of target `t` on worker `w`.
pub fn shard_name(t: usize, part: &str, w: usize) -> String {
    format!("t{t}-{part}-w{w}")
}

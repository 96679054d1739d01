//! The record streams a [`Durable`](super::Durable) state saves into and restores from: serde
//! records in postcard's encoding, one at a time.
//!
//! The engine defines these two traits and nothing about where the bytes go: files, framing,
//! checksums and names belong to the caller (`crate::persist::frames` puts each record in a
//! checksummed frame of a record file). So the states depend on no file format, and a damaged
//! record is reported by the source that knows where it came from.
//!
//! Encoding reuses the sink's buffer, so saving a state allocates nothing per record.

use crate::{Error, ErrorKind, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Where a state's records go.
pub trait RecordOut {
    /// Appends one record: `encode` fills the (cleared) buffer it is given with its bytes.
    fn put(&mut self, encode: &mut dyn FnMut(&mut Vec<u8>) -> Result<()>) -> Result<()>;
}

/// Where a state's records come from.
pub trait RecordIn {
    /// The next record's bytes (whole and checked by the source), or `None` after the last.
    fn next_bytes(&mut self) -> Result<Option<&[u8]>>;
    /// An [`ErrorKind::State`] error about the record last returned (or the end, after the
    /// last): it `why`.
    fn damaged(&self, why: &str) -> Error;
}

impl dyn RecordOut + '_ {
    /// Appends `record`.
    pub fn write<T: Serialize + ?Sized>(&mut self, record: &T) -> Result<()> {
        self.put(&mut |buffer| {
            let taken = std::mem::take(buffer);
            *buffer = postcard::to_extend(record, taken).map_err(|e| {
                Error::new(
                    ErrorKind::Internal,
                    format!("a state record does not encode: {e}"),
                )
            })?;
            Ok(())
        })
    }
}

impl dyn RecordIn + '_ {
    /// The next record, or `None` after the last one.
    pub fn read<T: DeserializeOwned>(&mut self) -> Result<Option<T>> {
        let decoded = match self.next_bytes()? {
            None => return Ok(None),
            Some(bytes) => postcard::from_bytes(bytes),
        };
        decoded
            .map(Some)
            .map_err(|e| self.damaged(&format!("holds a record that does not decode ({e})")))
    }

    /// The next record, which must exist: `what` names it in the error.
    pub fn expect<T: DeserializeOwned>(&mut self, what: &str) -> Result<T> {
        self.read()?
            .ok_or_else(|| self.damaged(&format!("ends where {what} was expected")))
    }
}

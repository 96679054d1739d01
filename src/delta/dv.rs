//! Deletion vectors: which rows of a Parquet file a table version no longer holds.
//!
//! Format (Delta protocol, "Deletion Vector Format"): a DV file starts with a version byte (1),
//! then each vector as its size (u32 big-endian: magic plus bitmap), the magic number 1681511377
//! (u32 little-endian), the positions as a portable 64-bit roaring bitmap (`RoaringTreemap`,
//! the `roaring` crate: the layout Delta's own readers deserialize), and a CRC-32 of magic and
//! bitmap (big-endian). A descriptor in the log names the file by a z85-encoded UUID
//! (`deletion_vector_<uuid>.bin` in the table's directory, storage type `u`), an offset and a
//! size; a small vector may instead be inline (`i`: the z85 text of magic and bitmap), or at an
//! absolute path (`p`). We write `u` files, one per commit holding every vector it changed, and
//! read all three.
//!
//! A vector is written with run containers where they are smaller (`RoaringTreemap::optimize`).
//! A file most of whose rows are deleted holds long runs of deleted positions, and its vector,
//! rewritten whole each time a commit touches the file, was a bitmap of 8 KB per 65,536 rows.
//! The vectors of 30 followed 10,000-event SCD2 commits on a 1M-row history took 933 KB, the
//! same vectors without runs 1,163 (both sizes taken of each vector in one run: the bench's
//! per-commit vector bytes move by ±15% between runs of one build, with when merges finish).
//! Python `deltalake`, Polars and delta-rs read run containers.
//!
//! Why our own ~100 lines rather than delta-kernel's writer: the kernel makes DV paths only
//! inside its own transactions (`DeletionVectorPath::new` is crate-private), and our commits
//! are not kernel transactions (see `commit`). Python `deltalake` (its query engine) and Polars
//! read what this writes in CI (`.ci/delta_readers.py`).

use crate::{Error, ErrorKind, Result};
use deltalake::kernel::{DeletionVectorDescriptor, StorageType};
use roaring::RoaringTreemap;
use std::path::Path;

/// The magic number before a portable roaring bitmap.
const MAGIC: u32 = 1681511377;

/// The version byte a DV file starts with.
const FILE_VERSION: u8 = 1;

/// A DV file being filled: append vectors, then write the bytes under [`DvFile::name`].
pub struct DvFile {
    uuid: uuid::Uuid,
    bytes: Vec<u8>,
}

impl DvFile {
    /// An empty file with a fresh name.
    pub fn new() -> DvFile {
        DvFile {
            uuid: uuid::Uuid::new_v4(),
            bytes: vec![FILE_VERSION],
        }
    }

    /// The file's name in the table's directory.
    pub fn name(&self) -> String {
        format!("deletion_vector_{}.bin", self.uuid)
    }

    /// Whether no vector was added.
    pub fn is_empty(&self) -> bool {
        self.bytes.len() == 1
    }

    /// Appends `positions`; returns the descriptor the log gives the file it belongs to.
    pub fn push(&mut self, positions: &RoaringTreemap) -> Result<DeletionVectorDescriptor> {
        let mut positions = positions.clone();
        positions.optimize();
        let offset = self.bytes.len();
        let bitmap_len = positions.serialized_size();
        let size = 4 + bitmap_len;
        let (Ok(offset), Ok(size_in_bytes)) = (i32::try_from(offset), i32::try_from(size)) else {
            return Err(Error::new(
                ErrorKind::Internal,
                "a deletion vector file over 2 GiB".to_string(),
            ));
        };
        self.bytes.extend_from_slice(&(size as u32).to_be_bytes());
        let start = self.bytes.len();
        self.bytes.extend_from_slice(&MAGIC.to_le_bytes());
        positions
            .serialize_into(&mut self.bytes)
            .map_err(|e| Error::new(ErrorKind::Internal, format!("a deletion vector: {e}")))?;
        let crc = crc32fast::hash(&self.bytes[start..]);
        self.bytes.extend_from_slice(&crc.to_be_bytes());
        Ok(DeletionVectorDescriptor {
            storage_type: StorageType::UuidRelativePath,
            path_or_inline_dv: z85::encode(self.uuid.as_bytes()),
            offset: Some(offset),
            size_in_bytes,
            cardinality: positions.len() as i64,
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// The positions `dv` deletes from a file of the table at `dir` (`what` names the file in
/// errors).
pub fn read(dir: &Path, dv: &DeletionVectorDescriptor, what: &str) -> Result<RoaringTreemap> {
    let bad = |why: String| {
        Error::new(
            ErrorKind::Format,
            format!("{what}: its deletion vector: {why}"),
        )
    };
    let size = usize::try_from(dv.size_in_bytes).map_err(|_| bad("a negative size".into()))?;
    let stored = match dv.storage_type {
        StorageType::Inline => {
            let bytes = z85::decode(&dv.path_or_inline_dv).map_err(|e| bad(e.to_string()))?;
            return bitmap(bytes.get(..size).ok_or_else(|| bad("cut short".into()))?).map_err(bad);
        }
        StorageType::UuidRelativePath => {
            let encoded = &dv.path_or_inline_dv;
            let split = encoded
                .len()
                .checked_sub(20)
                .filter(|s| encoded.is_char_boundary(*s))
                .ok_or_else(|| bad(format!("`{encoded}` is no UUID path")))?;
            let (prefix, id) = encoded.split_at(split);
            let uuid = z85::decode(id)
                .ok()
                .and_then(|b| uuid::Uuid::from_slice(&b).ok())
                .ok_or_else(|| bad(format!("`{encoded}` is no UUID path")))?;
            // The prefix is a folder inside the table: no `..`, no root.
            if let Some(why) = prefix
                .split('/')
                .filter(|part| !part.is_empty())
                .find_map(crate::io::names::component_problem)
            {
                return Err(bad(format!("its folder `{prefix}`: {why}")));
            }
            dir.join(prefix).join(format!("deletion_vector_{uuid}.bin"))
        }
        StorageType::AbsolutePath => url::Url::parse(&dv.path_or_inline_dv)
            .ok()
            .and_then(|u| u.to_file_path().ok())
            .ok_or_else(|| bad(format!("`{}` is no local path", dv.path_or_inline_dv)))?,
    };
    let bytes = std::fs::read(&stored).map_err(|e| Error::read(&stored, &e))?;
    let offset = dv.offset.unwrap_or(1);
    let start = usize::try_from(offset).map_err(|_| bad("a negative offset".into()))?;
    let shown = stored.display();
    let framed = bytes
        .get(start..start + 4 + size + 4)
        .filter(|_| bytes.first() == Some(&FILE_VERSION))
        .ok_or_else(|| {
            bad(format!(
                "{shown} is not a deletion vector file of that size"
            ))
        })?;
    let (length, rest) = framed.split_at(4);
    let (body, crc) = rest.split_at(size);
    if u32::from_be_bytes(length.try_into().expect("4 bytes")) as usize != size
        || u32::from_be_bytes(crc.try_into().expect("4 bytes")) != crc32fast::hash(body)
    {
        return Err(bad(format!("{shown}: damaged at offset {offset}")));
    }
    bitmap(body).map_err(bad)
}

/// Magic and bitmap, decoded.
fn bitmap(body: &[u8]) -> std::result::Result<RoaringTreemap, String> {
    match body.split_first_chunk::<4>() {
        Some((magic, bitmap)) if u32::from_le_bytes(*magic) == MAGIC => {
            RoaringTreemap::deserialize_from(bitmap).map_err(|e| e.to_string())
        }
        _ => Err("not a portable roaring bitmap".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_read_back_from_a_file_and_inline() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = DvFile::new();
        let first: RoaringTreemap = [0u64, 5, 1 << 33].into_iter().collect();
        let second: RoaringTreemap = (100u64..5000).step_by(3).collect();
        let a = file.push(&first).unwrap();
        let b = file.push(&second).unwrap();
        std::fs::write(dir.path().join(file.name()), file.bytes()).unwrap();
        assert_eq!(read(dir.path(), &a, "a").unwrap(), first);
        assert_eq!(read(dir.path(), &b, "b").unwrap(), second);
        assert_eq!(b.cardinality, second.len() as i64);

        let start = b.offset.unwrap() as usize + 4;
        let mut body = file.bytes()[start..start + b.size_in_bytes as usize].to_vec();
        body.resize(body.len().div_ceil(4) * 4, 0);
        let inline = DeletionVectorDescriptor {
            storage_type: StorageType::Inline,
            path_or_inline_dv: z85::encode(&body),
            offset: None,
            ..b.clone()
        };
        assert_eq!(read(dir.path(), &inline, "b").unwrap(), second);

        let mut damaged = file.bytes().to_vec();
        damaged[start + 6] ^= 1;
        std::fs::write(dir.path().join(file.name()), damaged).unwrap();
        let e = read(dir.path(), &b, "b").unwrap_err();
        assert!(e.to_string().contains("damaged at offset"), "{e}");
    }

    /// A file whose rows are nearly all deleted, in runs, has a vector of a few runs: tens of
    /// bytes where a bitmap of each position took 8 KB per 65,536 rows.
    #[test]
    fn runs_of_positions_are_stored_as_runs() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = DvFile::new();
        let mut positions: RoaringTreemap = (0u64..8_600).collect();
        positions.remove(4_000);
        let d = file.push(&positions).unwrap();
        assert!(d.size_in_bytes < 64, "{} bytes", d.size_in_bytes);
        std::fs::write(dir.path().join(file.name()), file.bytes()).unwrap();
        assert_eq!(read(dir.path(), &d, "d").unwrap(), positions);
    }
}

//! Files that runs append to (change feeds, quarantine files, the metrics log), kept exactly
//! once: a run appends and syncs before it commits their new lengths in the manifest, and the
//! next run first cuts each file back to its committed length. A commit's rows therefore appear
//! once whatever instant a crash hits, and never twice. The manifest also keeps a CRC-32 of the
//! last [`WINDOW`] committed bytes of each file ([`tail_crc`]): a file that another program (or
//! a plain run into the same `--out`) rewrote is refused rather than cut to a length that no
//! longer ends a commit.

use super::store::{Appended, Checks, WINDOW};
use crate::{Error, ErrorKind, Result};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

/// What the errors say of `--full-refresh`, which is no repair: it throws the state away.
const REBUILD: &str = "--full-refresh would instead rebuild every output from all input, \
                       starting the change feeds over at version 1";

/// CRC-32 of the last [`WINDOW`] bytes of `path`'s first `len` bytes.
pub fn tail_crc(path: &Path, len: u64) -> Result<u32> {
    crate::io::crc_of_range(path, len.saturating_sub(WINDOW), len)
}

/// Cuts each file back to its committed length. A file shorter than that, or whose committed
/// bytes no longer end as `checks` (the tails' CRCs, by path) says, was changed outside scdflow:
/// the error names it.
pub fn recover(files: &[Appended], checks: &[(std::path::PathBuf, u32)]) -> Result<()> {
    for file in files {
        let len = match std::fs::metadata(&file.path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && file.len == 0 => continue,
            Err(e) => {
                return Err(Error::new(
                    ErrorKind::State,
                    format!(
                        "cannot read this output, which holds {} committed bytes ({e}); it was \
                         moved or removed outside scdflow: restore it ({REBUILD})",
                        file.len
                    ),
                )
                .in_file(&file.path))
            }
        };
        if len < file.len {
            return Err(Error::new(
                ErrorKind::State,
                format!(
                    "this output has {len} bytes but {} were committed; it was changed outside \
                     scdflow: restore it ({REBUILD})",
                    file.len
                ),
            )
            .in_file(&file.path));
        }
        let expected = Checks::of(checks, &file.path);
        if expected.is_some_and(|crc| tail_crc(&file.path, file.len).ok() != Some(crc)) {
            return Err(Error::new(
                ErrorKind::State,
                format!(
                    "the {} committed bytes of this output were changed outside scdflow (by \
                     another program, or a run without this --state into the same --out): \
                     restore it ({REBUILD})",
                    file.len
                ),
            )
            .in_file(&file.path));
        }
        if len > file.len {
            let f = OpenOptions::new()
                .write(true)
                .open(&file.path)
                .map_err(|e| Error::write(&file.path, &e))?;
            f.set_len(file.len)
                .and_then(|()| f.sync_all())
                .map_err(|e| Error::write(&file.path, &e))?;
        }
    }
    Ok(())
}

/// Appends `bytes` to `path` (created, with its directory, if missing), syncs it, and returns its
/// new length.
pub fn append(path: &Path, bytes: &[u8]) -> Result<u64> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, &e))?;
    }
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::write(path, &e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::write(path, &e))?;
    let len = f.metadata().map_err(|e| Error::read(path, &e))?.len();
    if bytes.is_empty() {
        return Ok(len);
    }
    super::frames::sync_parent(path)?;
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncommitted_bytes_are_cut_and_missing_bytes_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out/feed.csv");
        let len = append(&path, b"a\nb\n").unwrap();
        assert_eq!(len, 4);
        append(&path, b"c\n").unwrap();
        let committed = [Appended {
            path: path.clone(),
            len,
        }];
        recover(&committed, &[]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a\nb\n");
        std::fs::write(&path, b"a\n").unwrap();
        let e = recover(&committed, &[]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::State);
        assert!(e.to_string().contains("feed.csv"), "{e}");
        std::fs::remove_file(&path).unwrap();
        assert!(recover(&committed, &[]).is_err());
        recover(&[Appended { path, len: 0 }], &[]).unwrap();
    }

    /// Issue 13, item 5: a file rewritten outside scdflow, as long as the committed length or
    /// longer, is refused instead of cut to a length that ends no commit.
    #[test]
    fn committed_bytes_rewritten_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("feed.csv");
        let len = append(&path, b"h\n1,a\n2,b\n").unwrap();
        let committed = [Appended {
            path: path.clone(),
            len,
        }];
        let checks = [(path.clone(), tail_crc(&path, len).unwrap())];
        append(&path, b"3,c").unwrap();
        recover(&committed, &checks).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"h\n1,a\n2,b\n");
        std::fs::write(&path, b"h\n9,z\n8,y\n7,x\n").unwrap();
        let e = recover(&committed, &checks).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::State);
        assert!(e.to_string().contains("changed outside scdflow"), "{e}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"h\n9,z\n8,y\n7,x\n",
            "nothing cut"
        );
    }
}

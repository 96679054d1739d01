//! Moves a run's staged files into place as a group: all of them, or none. A staged directory
//! (a Delta table) moves as one entry and replaces a directory.
//!
//! A plain run stages every output file beside `--out`; moving them in is one rename each, and
//! a rename can fail part-way through the group (a directory in the way, a folder inside `--out`
//! on another file system, a full disk). [`swap_in`] keeps the group together:
//!
//! 1. Nothing moves while a destination is a directory: that is found first.
//! 2. The moves are written to a journal ([`JOURNAL`]) in the staging directory, synced, before
//!    the first rename: the staged files are complete, so the group is decided.
//! 3. Each destination's old file is moved aside into the staging directory, then the new one
//!    in. When a rename fails, the moves made so far are undone in reverse order, the journal is
//!    removed, and the error is returned: the destination is as it was.
//! 4. A process that dies between 2 and the end leaves the journal; [`finish_swap`] (run by the
//!    next run into the same directory, under its lock) completes the group.
//!
//! Limits: a reader listing the directory while the renames run (microseconds per file) can see
//! some files new and others old; a crash in that window is completed only by the next run into
//! the same directory. An undo that itself fails (the file system failing under us) is
//! reported with both errors.

use crate::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The journal's file name in the staging directory.
pub const JOURNAL: &str = "SWAP.json";

/// Where the destinations' old files wait, inside the staging directory.
const ASIDE: &str = ".replaced";

/// One move of the group.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Move {
    from: PathBuf,
    to: PathBuf,
    /// Where `to`'s old file is moved aside.
    aside: PathBuf,
}

/// Moves each staged file `from` to `to`, as a group (see the module docs); `stage` is the
/// staging directory the journal and the replaced files go to.
pub fn swap_in(stage: &Path, moves: &[(PathBuf, PathBuf)]) -> Result<()> {
    for (from, to) in moves {
        if to.is_dir() && !from.is_dir() {
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "{}: a directory is where the output file goes; nothing was replaced",
                    to.display()
                ),
            ));
        }
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::write(parent, &e))?;
        }
    }
    let aside = stage.join(ASIDE);
    std::fs::create_dir_all(&aside).map_err(|e| Error::write(&aside, &e))?;
    let moves: Vec<Move> = moves
        .iter()
        .enumerate()
        .map(|(i, (from, to))| Move {
            from: from.clone(),
            to: to.clone(),
            // A directory (a Delta table) is staged beside its destination, maybe on another
            // file system than the group's stage: its old one goes aside beside it.
            aside: match from.is_dir() {
                true => from.with_file_name("replaced"),
                false => aside.join(i.to_string()),
            },
        })
        .collect();
    let journal = stage.join(JOURNAL);
    let text = serde_json::to_vec(&moves)
        .map_err(|e| Error::new(ErrorKind::Internal, format!("the swap journal: {e}")))?;
    super::replace_file(&journal, &text)?;
    crate::persist::frames::sync_dir(stage)?;
    let result = apply(&moves);
    if result.is_err() {
        let _ = std::fs::remove_file(&journal);
    }
    result
}

/// Completes a group whose process died while moving it: the moves of the journal in `stage`
/// not made yet. Without a journal, nothing to do.
pub fn finish_swap(stage: &Path) -> Result<()> {
    let journal = stage.join(JOURNAL);
    let text = match std::fs::read(&journal) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::read(&journal, &e)),
    };
    let moves: Vec<Move> = serde_json::from_slice(&text).map_err(|e| {
        Error::new(
            ErrorKind::State,
            format!(
                "{}: a damaged swap journal ({e}); move its files in by hand or remove it",
                journal.display()
            ),
        )
    })?;
    for m in &moves {
        if m.from.exists() {
            if m.to.exists() && !m.aside.exists() {
                rename(&m.to, &m.aside)?;
            }
            rename(&m.from, &m.to)?;
        }
    }
    std::fs::remove_file(&journal).map_err(|e| Error::write(&journal, &e))
}

/// Makes the moves in order; on a failure, undoes the ones made.
fn apply(moves: &[Move]) -> Result<()> {
    // Per move: whether its old file was moved aside, and whether the new one is in.
    let mut done: Vec<(bool, bool)> = Vec::with_capacity(moves.len());
    for m in moves {
        let mut step = (false, false);
        let mut made = || -> Result<()> {
            if m.to.exists() {
                rename(&m.to, &m.aside)?;
                step.0 = true;
            }
            rename(&m.from, &m.to)?;
            step.1 = true;
            Ok(())
        };
        let result = made();
        done.push(step);
        if let Err(e) = result {
            return match undo(moves, &done) {
                Ok(()) => Err(e),
                Err(undo) => Err(Error::new(
                    e.kind(),
                    format!("{e}; undoing the files moved before it failed too: {undo}"),
                )),
            };
        }
    }
    Ok(())
}

/// Undoes `done` (per move: aside, in), last first.
fn undo(moves: &[Move], done: &[(bool, bool)]) -> Result<()> {
    for (m, &(aside, moved_in)) in moves.iter().zip(done).rev() {
        if moved_in {
            rename(&m.to, &m.from)?;
        }
        if aside {
            rename(&m.aside, &m.to)?;
        }
    }
    Ok(())
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!(
                "{}: cannot move {} there: {e}",
                to.display(),
                from.file_name().unwrap_or_default().to_string_lossy()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn a_group_moves_in_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (stage, out) = (dir.path().join("stage"), dir.path().join("out"));
        write(&out.join("a"), "old a");
        write(&stage.join("a"), "new a");
        write(&stage.join("q/b"), "new b");
        let moves = [
            (stage.join("a"), out.join("a")),
            (stage.join("q/b"), out.join("q/b")),
        ];
        swap_in(&stage, &moves).unwrap();
        assert_eq!(read(&out.join("a")), "new a");
        assert_eq!(read(&out.join("q/b")), "new b");
    }

    /// A move that fails after others were made leaves every destination as it was.
    #[test]
    fn a_failed_move_undoes_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let (stage, out) = (dir.path().join("stage"), dir.path().join("out"));
        write(&out.join("a"), "old a");
        write(&out.join("c"), "old c");
        write(&stage.join("a"), "new a");
        write(&stage.join("b"), "new b");
        // `c` was never staged: its move fails after two were made.
        let moves = [
            (stage.join("a"), out.join("a")),
            (stage.join("b"), out.join("b")),
            (stage.join("c"), out.join("c")),
        ];
        let e = swap_in(&stage, &moves).unwrap_err();
        assert!(e.to_string().contains("cannot move c there"), "{e}");
        assert_eq!(read(&out.join("a")), "old a");
        assert!(!out.join("b").exists());
        assert_eq!(read(&out.join("c")), "old c");
        assert_eq!(read(&stage.join("a")), "new a");
        assert!(!stage.join(JOURNAL).exists());
    }

    #[test]
    fn a_directory_in_the_way_moves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (stage, out) = (dir.path().join("stage"), dir.path().join("out"));
        write(&out.join("a"), "old a");
        std::fs::create_dir_all(out.join("b")).unwrap();
        write(&stage.join("a"), "new a");
        write(&stage.join("b"), "new b");
        let moves = [
            (stage.join("a"), out.join("a")),
            (stage.join("b"), out.join("b")),
        ];
        let e = swap_in(&stage, &moves).unwrap_err();
        assert!(e.to_string().contains("a directory is where"), "{e}");
        assert_eq!(read(&out.join("a")), "old a");
    }

    /// A process that died after the journal was written: the next run completes the group.
    #[test]
    fn a_journal_left_behind_is_completed() {
        let dir = tempfile::tempdir().unwrap();
        let (stage, out) = (dir.path().join("stage"), dir.path().join("out"));
        write(&out.join("a"), "old a");
        write(&out.join("b"), "old b");
        write(&stage.join("b"), "new b");
        // The first move was made (its old file aside), the second not.
        write(&out.join("a"), "new a");
        write(&stage.join(ASIDE).join("0"), "old a");
        let moves = vec![
            Move {
                from: stage.join("a"),
                to: out.join("a"),
                aside: stage.join(ASIDE).join("0"),
            },
            Move {
                from: stage.join("b"),
                to: out.join("b"),
                aside: stage.join(ASIDE).join("1"),
            },
        ];
        std::fs::write(stage.join(JOURNAL), serde_json::to_vec(&moves).unwrap()).unwrap();
        finish_swap(&stage).unwrap();
        assert_eq!(read(&out.join("a")), "new a");
        assert_eq!(read(&out.join("b")), "new b");
        assert!(!stage.join(JOURNAL).exists());
        finish_swap(&stage).unwrap();
    }
}

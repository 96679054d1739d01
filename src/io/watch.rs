//! Waking a follower (`scdflow run --follow`) as soon as one of its input directories changes,
//! instead of at its next poll.
//!
//! [`DirWatch`] watches directories, not recursively, through the `notify` crate: inotify on Linux,
//! FSEvents on macOS, kqueue on the BSDs, ReadDirectoryChangesW on Windows. It is the crate Rust's
//! file watchers are built on (watchexec, rust-analyzer's file system layer), and on Linux it
//! brings only the `inotify` bindings; a hand-written inotify loop would be Linux-only and the same
//! code. A watch only says *when to look*: the follower's listing still decides what is new, so an
//! event that is spurious (a file that is no input, a file being written), coalesced or lost costs
//! at most one listing or waits for the next poll. Polling stays the fallback for what cannot be
//! watched: a directory whose watch failed (the system's watch limit, a file system without events,
//! such as one another machine writes over NFS) or that was removed and made again after the watch
//! began.
//!
//! Invariant: [`DirWatch::wait`] returns `true` as soon as anything but a read happened in a
//! watched directory since it last returned `true`, and takes every event pending then, so a
//! burst of events (a file written in many blocks) wakes the follower about once; an event that
//! comes while the follower lists is kept for the next `wait`, never lost.

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Watched directories, and the events their changes send.
pub struct DirWatch {
    /// Kept for its threads and watches; `None` when no watcher could be made.
    _watcher: Option<RecommendedWatcher>,
    events: Receiver<notify::Result<Event>>,
    watched: Vec<PathBuf>,
    unwatched: Vec<(PathBuf, String)>,
}

impl DirWatch {
    /// Watches each of `dirs`; one that cannot be watched is listed by
    /// [`DirWatch::unwatched`] with the reason, and changes there are seen at the next poll.
    pub fn new(dirs: impl IntoIterator<Item = PathBuf>) -> DirWatch {
        let (sender, events) = std::sync::mpsc::channel();
        let mut watched = Vec::new();
        let mut unwatched = Vec::new();
        let watcher = match notify::recommended_watcher(sender) {
            Ok(mut watcher) => {
                for dir in dirs {
                    match watcher.watch(&dir, RecursiveMode::NonRecursive) {
                        Ok(()) => watched.push(dir),
                        Err(e) => unwatched.push((dir, e.to_string())),
                    }
                }
                Some(watcher)
            }
            Err(e) => {
                let reason = e.to_string();
                unwatched.extend(dirs.into_iter().map(|dir| (dir, reason.clone())));
                None
            }
        };
        DirWatch {
            _watcher: watcher,
            events,
            watched,
            unwatched,
        }
    }

    /// The directories watched.
    pub fn watched(&self) -> &[PathBuf] {
        &self.watched
    }

    /// The directories that could not be watched, each with why.
    pub fn unwatched(&self) -> &[(PathBuf, String)] {
        &self.unwatched
    }

    /// Waits up to `timeout` for a change in a watched directory: `true` as soon as one comes
    /// (see the module docs), `false` when the time passed without one.
    pub fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(event) if changes(&event) => break,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => return false,
                // Without a watcher the sender is gone at once: wait out the time as a poll
                // does.
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(left);
                    return false;
                }
            }
        }
        // The rest of the burst: one listing will see what they did.
        while self.events.try_recv().is_ok() {}
        true
    }
}

/// Whether `event` may have changed what a listing finds: anything but a file being opened or
/// read (the follower's own reads of its input). A watcher's error (an overflowing event
/// queue) may hide changes, so it counts as one.
fn changes(event: &notify::Result<Event>) -> bool {
    !matches!(
        event,
        Ok(Event {
            kind: EventKind::Access(_),
            ..
        })
    )
}

/// The directory to watch for `path`, a file or a directory of files: the directory itself, or
/// the file's (where a new file replacing it by rename, or lines appended to it, show).
pub fn dir_of(path: &Path) -> PathBuf {
    match path.is_dir() {
        true => path.to_path_buf(),
        false => match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits (a minute at most) for a change; the watch delivers it long before.
    fn woken(watch: &DirWatch) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if watch.wait(Duration::from_millis(100)) {
                return true;
            }
        }
        false
    }

    /// Takes the events of what was just done: its last ones may still be on their way.
    fn settle(watch: &DirWatch) {
        while watch.wait(Duration::from_millis(100)) {}
    }

    #[test]
    fn a_new_file_an_append_and_a_rename_wake_it_and_a_read_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let watch = DirWatch::new([dir.path().to_path_buf()]);
        assert_eq!(watch.watched(), [dir.path().to_path_buf()]);
        assert!(watch.unwatched().is_empty());
        assert!(!watch.wait(Duration::from_millis(10)));
        let file = dir.path().join("a.csv");
        std::fs::write(&file, "k\n1\n").unwrap();
        assert!(woken(&watch));
        settle(&watch);
        std::fs::read(&file).unwrap();
        assert!(!watch.wait(Duration::from_millis(100)));
        let mut append = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        std::io::Write::write_all(&mut append, b"2\n").unwrap();
        drop(append);
        assert!(woken(&watch));
        let hidden = dir.path().join(".incoming");
        std::fs::write(&hidden, "k\n3\n").unwrap();
        settle(&watch);
        std::fs::rename(&hidden, dir.path().join("b.csv")).unwrap();
        assert!(woken(&watch));
    }

    #[test]
    fn a_directory_that_cannot_be_watched_is_named_and_waited_out() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let watch = DirWatch::new([missing.clone()]);
        assert!(watch.watched().is_empty());
        assert_eq!(watch.unwatched().len(), 1);
        assert_eq!(watch.unwatched()[0].0, missing);
        let started = Instant::now();
        assert!(!watch.wait(Duration::from_millis(30)));
        assert!(started.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn the_directory_of_a_file_or_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.csv");
        std::fs::write(&file, "").unwrap();
        assert_eq!(dir_of(&file), dir.path());
        assert_eq!(dir_of(dir.path()), dir.path());
        assert_eq!(dir_of(Path::new("f.csv")), Path::new("."));
    }
}

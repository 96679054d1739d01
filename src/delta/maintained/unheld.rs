//! The merges whose files no published version holds yet, and when each began, so that a
//! vacuum running beside the writer keeps their files.
//!
//! A vacuum with a retention of 0 deletes every file the version it vacuums does not hold,
//! except those last modified since a time it is told (the writer's step began, see
//! [`crate::delta::upkeep`]). A merge ahead writes files that only a later version takes in,
//! and it may have begun before that step: a merge runs beside as many versions as it takes,
//! and a following session starts one while it waits for input. So each merge is noted here
//! when it is planned, and gets the version that takes its files in once one does; a vacuum
//! after version `v` keeps every file last modified since the earliest merge that `v` does not
//! hold began ([`Unheld::since`]).
//!
//! Invariant: a merge is noted before it writes a file, and stays noted until a version
//! holding its files is published, its files are deleted, or its table is dropped (which
//! deletes them). Limits: one list per table, shared with its [`super::TableLog`]; it holds
//! the merges of a few versions at a time.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

/// The noted merges of one table; clones share them.
#[derive(Clone, Debug, Default)]
pub(super) struct Unheld(Arc<Mutex<List>>);

#[derive(Debug, Default)]
struct List {
    /// The next merge's number.
    next: u64,
    noted: Vec<Noted>,
}

/// One merge: when it began, its number, and the version that holds its files, once one does.
#[derive(Clone, Copy, Debug)]
struct Noted {
    began: SystemTime,
    merge: u64,
    held_by: Option<u64>,
}

impl Unheld {
    fn list(&self) -> std::sync::MutexGuard<'_, List> {
        // The list stays consistent whatever panicked while holding it: every change is one
        // push, one retain or one field.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes a merge beginning now; returns its number.
    pub(super) fn began(&self) -> u64 {
        let mut list = self.list();
        let merge = list.next;
        list.next += 1;
        list.noted.push(Noted {
            began: SystemTime::now(),
            merge,
            held_by: None,
        });
        merge
    }

    /// Version `version` holds the files of every noted merge not held yet, except `running`
    /// (still writing).
    pub(super) fn held_by(&self, version: u64, running: Option<u64>) {
        for n in self.list().noted.iter_mut() {
            if n.held_by.is_none() && Some(n.merge) != running {
                n.held_by = Some(version);
            }
        }
    }

    /// Merge `merge`'s files are deleted: it is forgotten.
    pub(super) fn dropped(&self, merge: u64) {
        self.list().noted.retain(|n| n.merge != merge);
    }

    /// Every merge no version holds is forgotten (its table deleted its files).
    pub(super) fn forget_unheld(&self) {
        self.list().noted.retain(|n| n.held_by.is_some());
    }

    /// Version `version` is published: the merges it (or an earlier one) holds are forgotten.
    pub(super) fn published(&self, version: u64) {
        self.list()
            .noted
            .retain(|n| n.held_by.is_none_or(|v| v > version));
    }

    /// When the earliest merge that version `version` does not hold began, if one is noted.
    pub(super) fn since(&self, version: u64) -> Option<SystemTime> {
        (self.list().noted.iter())
            .filter(|n| n.held_by.is_none_or(|v| v > version))
            .map(|n| n.began)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::Unheld;

    /// A merge counts until a version holding it is published; one still running when a
    /// version is prepared is held by a later one; a dropped merge stops counting at once.
    #[test]
    fn a_merge_counts_until_a_published_version_holds_it() {
        let unheld = Unheld::default();
        assert_eq!(unheld.since(1), None);
        let first = unheld.began();
        let began = unheld.since(1).expect("noted");
        let running = unheld.began();
        unheld.held_by(5, Some(running));
        assert_eq!(unheld.since(4), Some(began), "version 4 holds neither");
        assert!(
            unheld.since(5).is_some_and(|t| t >= began),
            "version 5 holds only the first"
        );
        unheld.published(5);
        assert!(
            unheld.since(4).is_some_and(|t| t >= began),
            "only the running one is left"
        );
        unheld.dropped(running);
        assert_eq!(unheld.since(4), None);
        let other = unheld.began();
        assert_ne!(other, first);
        unheld.forget_unheld();
        assert_eq!(unheld.since(0), None);
    }
}

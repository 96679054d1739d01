//! Typed SCD type 2: each key's changes by sequence; its versions derived from them.
//!
//! A version starts at an upsert whose predecessor is not an upsert of the same version (a
//! delete, nothing, or an image that differs in what the state tracks), and ends at the next
//! change that does not continue it; its image is the run's latest (SPEC 3.3). Whether an
//! upsert starts a version depends only on it and its predecessor, so a commit that stores
//! changes at sequences `lo..=hi` of a key changes only the versions starting from the run open
//! just before `lo` through the first change after `hi`: those are derived before and after the
//! commit and their difference emitted. In-order changes (the common case) land after the last
//! stored one: the window is the open run and the history grows by a push.
//!
//! Costs: O(log h) to find the window plus the changes of the runs in it (a long run of
//! unchanged upserts is walked), and an insert's shift of the later changes (histories are
//! vectors: short, and mostly appended to).

use super::{by_key, warm, Change, Op, TypedMap, TypedState, Version};
use crate::engine::heap::table_bytes;
use std::hash::Hash;

/// The SCD2 table of the keys one worker owns, over keys `K`, sequences `S` and images `I`.
///
/// ```
/// use scdflow::engine::typed::{Change, TypedScd2State, TypedState, Version};
///
/// let mut state = TypedScd2State::<u64, u64, char>::default();
/// let mut out = Vec::new();
/// state.apply(&mut vec![(7, Change::upsert(1, 'a')), (7, Change::upsert(5, 'c'))], &mut out);
/// out.clear();
/// // A late change between the two splits the first version.
/// state.apply(&mut vec![(7, Change::upsert(3, 'b'))], &mut out);
/// let v = |start, end, image| (7, Version { start, end, image });
/// assert_eq!(
///     out,
///     vec![(v(1, Some(3), 'a'), 1), (v(1, Some(5), 'a'), -1), (v(3, Some(5), 'b'), 1)]
/// );
/// ```
#[derive(Debug)]
pub struct TypedScd2State<K, S, I> {
    histories: TypedMap<K, Vec<(S, Op<I>)>>,
    /// Whether two consecutive upserts' images belong to one version (TRACK HISTORY).
    same_version: fn(&I, &I) -> bool,
    /// Buffers reused by every key of every commit.
    group: Vec<Change<S, I>>,
    before: Vec<Version<S, I>>,
    after: Vec<Version<S, I>>,
}

impl<K, S, I: PartialEq> Default for TypedScd2State<K, S, I> {
    /// Every change of the image opens a version.
    fn default() -> Self {
        Self::tracking(|a, b| a == b)
    }
}

impl<K, S, I> TypedScd2State<K, S, I> {
    /// A state where an upsert continues the open version when `same_version(open, new)`:
    /// history tracked on part of the image (`TRACK HISTORY ON`); the version shows the run's
    /// latest image.
    pub fn tracking(same_version: fn(&I, &I) -> bool) -> Self {
        TypedScd2State {
            histories: TypedMap::default(),
            same_version,
            group: Vec::new(),
            before: Vec::new(),
            after: Vec::new(),
        }
    }
}

impl<K, S, I> TypedState<K, Change<S, I>> for TypedScd2State<K, S, I>
where
    K: Hash + Ord + Clone + 'static,
    S: Ord + Clone + 'static,
    I: Ord + Clone + 'static,
{
    type Row = (K, Version<S, I>);

    fn apply(
        &mut self,
        changes: &mut Vec<(K, Change<S, I>)>,
        out: &mut Vec<((K, Version<S, I>), isize)>,
    ) {
        by_key(changes);
        warm(&self.histories, changes, |h, c| {
            h.last().is_some_and(|(s, _)| *s < c.seq)
        });
        let mut changes = changes.drain(..).peekable();
        while let Some((key, first)) = changes.next() {
            self.group.clear();
            self.group.push(first);
            while let Some((_, change)) = changes.next_if(|(k, _)| *k == key) {
                // In order, ties last: the last change at a sequence is its winner.
                match self.group.last_mut() {
                    Some(last) if last.seq == change.seq => *last = change,
                    _ => self.group.push(change),
                }
            }
            let history = match self.histories.get_mut(&key) {
                Some(history) => history,
                None => self.histories.entry(key.clone()).or_default(),
            };
            let same = self.same_version;
            let (lo, hi) = (&self.group[0].seq, &self.group[self.group.len() - 1].seq);
            // In order: after the last stored change, found without a search.
            let at = match history.last() {
                Some((last, _)) if last >= lo => history.partition_point(|(s, _)| s < lo),
                _ => history.len(),
            };
            let from = match at.checked_sub(1) {
                Some(i) if matches!(history[i].1, Op::Upsert(_)) => run_start(history, i, same),
                _ => at,
            };
            let last = match at == history.len() {
                true => at,
                false => history.partition_point(|(s, _)| s <= hi),
            };
            versions(history, from, last, same, &mut self.before);
            let added = store(history, at, &mut self.group);
            versions(history, from, last + added, same, &mut self.after);
            emit(&key, &mut self.before, &mut self.after, out);
        }
    }

    fn keys(&self) -> usize {
        self.histories.len()
    }

    fn rows(&self, out: &mut Vec<(K, Version<S, I>)>) {
        let mut versions_of = Vec::new();
        for (key, history) in &self.histories {
            versions(
                history,
                0,
                history.len(),
                self.same_version,
                &mut versions_of,
            );
            out.extend(versions_of.drain(..).map(|v| (key.clone(), v)));
        }
    }

    fn heap_bytes(&self) -> usize {
        let events: usize = self.histories.values().map(Vec::capacity).sum();
        table_bytes::<(K, Vec<(S, Op<I>)>)>(self.histories.capacity())
            + events * std::mem::size_of::<(S, Op<I>)>()
    }
}

/// Whether the upsert at `i` continues the version of the one before it.
fn continues<S, I>(history: &[(S, Op<I>)], i: usize, same: fn(&I, &I) -> bool) -> bool {
    match (i.checked_sub(1).map(|p| &history[p].1), &history[i].1) {
        (Some(Op::Upsert(before)), Op::Upsert(image)) => same(before, image),
        _ => false,
    }
}

/// Where the version holding the upsert at `i` starts.
fn run_start<S, I>(history: &[(S, Op<I>)], mut i: usize, same: fn(&I, &I) -> bool) -> usize {
    while continues(history, i, same) {
        i -= 1;
    }
    i
}

/// Replaces `out` with the versions that start at `from..=last` (`last` may be past the end).
fn versions<S: Clone, I: Clone>(
    history: &[(S, Op<I>)],
    from: usize,
    last: usize,
    same: fn(&I, &I) -> bool,
    out: &mut Vec<Version<S, I>>,
) {
    out.clear();
    let end = history.len().min(last + 1);
    let mut i = from;
    while i < end {
        if matches!(history[i].1, Op::Delete) || continues(history, i, same) {
            i += 1;
            continue;
        }
        let mut next = i + 1;
        while next < history.len() && continues(history, next, same) {
            next += 1;
        }
        let Op::Upsert(image) = &history[next - 1].1 else {
            unreachable!("a run is upserts")
        };
        out.push(Version {
            start: history[i].0.clone(),
            end: history.get(next).map(|(s, _)| s.clone()),
            image: image.clone(),
        });
        i = next;
    }
}

/// Stores a key's changes of one commit (in sequence order, one per sequence) from position
/// `at` on, where the first belongs; a change at a stored sequence replaces the stored one if
/// it wins the tie (D2). Returns how many positions the history grew by.
fn store<S: Ord, I: Ord>(
    history: &mut Vec<(S, Op<I>)>,
    mut at: usize,
    group: &mut Vec<Change<S, I>>,
) -> usize {
    let len = history.len();
    if at == len {
        history.extend(group.drain(..).map(|c| (c.seq, c.op)));
        return history.len() - len;
    }
    for change in group.drain(..) {
        at += history[at..].partition_point(|(s, _)| *s < change.seq);
        match history.get_mut(at) {
            Some((seq, op)) if *seq == change.seq => {
                if change.op > *op {
                    *op = change.op;
                }
            }
            _ => history.insert(at, (change.seq, change.op)),
        }
    }
    history.len() - len
}

/// Appends to `out` the difference from `before` to `after` (both by start, so a merge), for
/// `key`; both are left empty.
fn emit<K: Clone, S: Ord, I: Ord>(
    key: &K,
    before: &mut Vec<Version<S, I>>,
    after: &mut Vec<Version<S, I>>,
    out: &mut Vec<((K, Version<S, I>), isize)>,
) {
    let mut before = before.drain(..).peekable();
    let mut after = after.drain(..).peekable();
    loop {
        let retract = match (before.peek(), after.peek()) {
            (None, None) => return,
            (Some(b), Some(a)) if b == a => {
                before.next();
                after.next();
                continue;
            }
            (Some(b), Some(a)) => b < a,
            (b, _) => b.is_some(),
        };
        if retract {
            out.extend(before.next().map(|v| ((key.clone(), v), -1)));
        } else {
            out.extend(after.next().map(|v| ((key.clone(), v), 1)));
        }
    }
}

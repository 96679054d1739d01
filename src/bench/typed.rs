//! The typed systems: the workload's events as a research dataflow holds them — `u64` keys and
//! sequences, images of [`WIDTH`] `u64`s (a string becomes its rank among the run's strings) —
//! through the typed operators on timely workers ([`System::Typed`](super::System::Typed),
//! driven like the `dd reduce` baseline) or the typed states in one thread
//! ([`System::TypedLoop`](super::System::TypedLoop), the plain sequential loop over the same
//! types).
//!
//! Limits: SCD1 and SCD2 flows whose events are whole upserts and deletes of non-negative
//! integer keys and sequences, with at most [`WIDTH`] payload columns (the typed states have no
//! partial upserts or truncates). Converting happens before the timed run.

use super::drive::Run;
use super::source::{self, Commits, Share};
use super::{Feed, StateSize};
use crate::engine::typed::{Change, TypedScd1State, TypedScd2State, TypedState};
use crate::event::{Event, EventKind};
use crate::plan::{ScdType, Target};
use crate::value::{Datum, Value};
use crate::{Error, ErrorKind, Result};
use std::collections::HashMap;
use std::time::Instant;

/// A fixed-seed fast hash map, as the engine's.
type KeyMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// The payload columns an image holds.
pub const WIDTH: usize = 2;

/// A change of the typed instance: a `u64` key, a `u64` sequence, a fixed-width image.
pub type TypedChange = (u64, Change<u64, [u64; WIDTH]>);

/// Whether the typed systems measure flows into `target`'s kind of table.
pub(super) fn measures(scd: ScdType) -> bool {
    matches!(scd, ScdType::Type1 | ScdType::Type2)
}

/// The typed changes of `commits`, dealt to `workers` shares round-robin, as the runtime deals
/// events.
///
/// # Errors
///
/// When the target or its events are beyond the typed instance (module docs).
pub(super) fn deal(target: &Target, commits: Commits, workers: usize) -> Result<Vec<Share>> {
    let commits = convert(target, commits)?;
    let workers = workers.max(1);
    Ok(source::split(commits, workers, |i, _| i % workers)
        .into_iter()
        .map(|s| Share::Typed(s.into_iter()))
        .collect())
}

fn convert(target: &Target, commits: Commits) -> Result<Vec<Vec<TypedChange>>> {
    let beyond = |what: String| {
        Err(Error::new(
            ErrorKind::Validation,
            format!("bench: the typed systems measure {what}"),
        ))
    };
    if !measures(target.scd) {
        return beyond(format!("SCD1 and SCD2 flows, not {}", target.name));
    }
    if target.keys.len() != 1 || target.image_len - 1 > WIDTH {
        return beyond(format!(
            "one key column and at most {WIDTH} payload columns"
        ));
    }
    let Commits::Events(commits) = commits else {
        return beyond("AUTO CDC flows, not snapshots".into());
    };
    // Strings become their rank among the run's strings, so images order as the rows do (the
    // tie rule compares images); NULL, lowest, is 0.
    let mut strings: Vec<&str> = (commits.iter().flatten())
        .flat_map(|e| e.image.iter().skip(1))
        .filter_map(|d| match d {
            Datum::Str(s) => Some(s),
            _ => None,
        })
        .collect();
    strings.sort_unstable();
    strings.dedup();
    let ranks: KeyMap<&str, u64> = (strings.iter().enumerate())
        .map(|(r, s)| (*s, r as u64 + 1))
        .collect();
    let rank = |s: &str| ranks.get(s).copied();
    let change = |e: &Event| -> Option<TypedChange> {
        let key = match e.key.get(0)? {
            Datum::Int(k) => u64::try_from(k).ok()?,
            _ => return None,
        };
        let seq = match *e.seq.to_value() {
            Value::Int(s) => u64::try_from(s).ok()?,
            _ => return None,
        };
        let op = match e.kind {
            EventKind::Upsert if e.authored.is_none() => {
                let mut image = [0; WIDTH];
                for (slot, datum) in image.iter_mut().zip(e.image.iter().skip(1)) {
                    *slot = match datum {
                        Datum::Null => 0,
                        Datum::Str(s) => rank(s)?,
                        _ => return None,
                    };
                }
                Change::upsert(seq, image)
            }
            EventKind::Delete => Change::delete(seq),
            _ => return None,
        };
        Some((key, op))
    };
    let typed: Option<Vec<Vec<TypedChange>>> = (commits.iter())
        .map(|commit| commit.iter().map(change).collect())
        .collect();
    match typed {
        Some(typed) => Ok(typed),
        None => beyond(
            "whole upserts and deletes of non-negative integer keys and sequences with STRING \
             payloads (no partial upserts or truncates)"
                .into(),
        ),
    }
}

/// Applies `commits` to the typed state of `target`'s kind in this thread, commit by commit, as
/// the state loop does (the same pacing and budget), and sizes the state left.
pub(super) fn run_loop(target: &Target, commits: Commits, feed: Feed) -> Result<Run> {
    let n = commits.len();
    let mut share = deal(target, commits, 1)?
        .pop()
        .expect("one share for one worker");
    // A row's raw width, as `StateSize` counts the SQL rows': its values at their natural
    // width (the image's unused slots and an open version's end count nothing).
    let image = 8 * (target.image_len as u64 - 1);
    Ok(match target.scd {
        ScdType::Type1 => apply_all(TypedScd1State::default(), &mut share, n, feed, |_| {
            8 + image
        }),
        _ => apply_all(TypedScd2State::default(), &mut share, n, feed, |(_, v)| {
            8 + image + 8 + v.end.map_or(0, |_| 8)
        }),
    })
}

fn apply_all<St: TypedState<u64, Change<u64, [u64; WIDTH]>>>(
    mut state: St,
    share: &mut Share,
    n: usize,
    feed: Feed,
    raw_width: impl Fn(&St::Row) -> u64,
) -> Run {
    let mut latencies = Vec::with_capacity(n);
    let (mut rows, mut out) = (0i64, Vec::new());
    let start = Instant::now();
    for i in 0..n {
        let due = feed.pacing.due(start, i);
        let at = due.unwrap_or_else(Instant::now);
        if (feed.budget).is_some_and(|b| at.saturating_duration_since(start) >= b) {
            break;
        }
        if let Some(wait) = due.and_then(|d| d.checked_duration_since(Instant::now())) {
            std::thread::sleep(wait);
        }
        let Some(source::Batch::Typed(mut changes)) = share.next() else {
            unreachable!("a typed share has a typed batch per commit")
        };
        let handed = Instant::now();
        out.clear();
        state.apply(&mut changes, &mut out);
        latencies.push(due.unwrap_or(handed).elapsed());
        rows += out.iter().map(|(_, diff)| *diff as i64).sum::<i64>();
    }
    let total = start.elapsed();
    let mut table = Vec::new();
    state.rows(&mut table);
    Run {
        latencies,
        total,
        rows,
        state: Some(StateSize {
            bytes: state.heap_bytes() as u64,
            rows: table.len() as u64,
            raw: table.iter().map(raw_width).sum(),
        }),
    }
}

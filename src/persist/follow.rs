//! `scdflow run --follow`: a durable session kept up to date as its input grows.
//!
//! A step starts as soon as a watched input directory changes ([`DirWatch`]), and at the
//! latest every poll: the poll is the fallback for what cannot be watched (see
//! [`crate::io::watch`]), so a default poll of a second costs a watched pipeline no latency.
//! Both only say when to list the input; the listing ([`Session::new_input`]) decides what is
//! new, so a spurious wake costs one listing and a missed event one poll.

use super::{DurableRun, Session};
use crate::io::watch::DirWatch;
use crate::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a waiting follower looks at `stop` and at the tables due.
const SLICE: Duration = Duration::from_millis(20);

/// Keeps `session` up to date until `stop` is set (a signal handler sets it; the step under way
/// finishes and commits first): steps whenever new input appears, looking when `watch` says its
/// directories changed and every `poll`, and hands each run to `on_run`. The change feeds and
/// the metrics log are appended at every step; the tables and `metrics.json`, whose rewrite
/// costs O(table), at most every `tables_every` (and after the last step, before returning).
/// `follow` lists the input before it first waits, so a change made before the call is found
/// whenever `watch` began.
pub fn follow(
    session: &mut Session,
    watch: &DirWatch,
    poll: Duration,
    tables_every: Duration,
    stop: &AtomicBool,
    mut on_run: impl FnMut(&DurableRun) -> Result<()>,
) -> Result<()> {
    let mut tables_written = Instant::now();
    let mut behind = false;
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        let new = session.new_input()?;
        if !new.is_empty() {
            let due = tables_written.elapsed() >= tables_every;
            let run = session.step_on(new, started, None, due)?;
            behind = !due;
            if due {
                tables_written = Instant::now();
            }
            on_run(&run)?;
            continue;
        }
        // Waiting, the tables merge: the next commit's version does not make the merges due.
        session.merge_ahead()?;
        let idle = Instant::now();
        while !stop.load(Ordering::SeqCst) {
            let left = poll.saturating_sub(idle.elapsed());
            if left.is_zero() {
                break;
            }
            if behind && tables_written.elapsed() >= tables_every {
                session.write_tables()?;
                (behind, tables_written) = (false, Instant::now());
            }
            if watch.wait(SLICE.min(left)) {
                break;
            }
        }
    }
    if behind {
        session.write_tables()?;
    }
    Ok(())
}

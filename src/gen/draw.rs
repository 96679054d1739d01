//! The events' contents, drawn in sequence order (the rules are in the module docs of `gen`).
//!
//! Draws per event, in this order: the kind (`f64`), then for upserts and deletes the key
//! (`u64`), then for upserts the payload. Only fixed-width types are drawn, so the output does
//! not depend on the platform's `usize`.

use super::Workload;
use crate::event::EventKind;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// ChaCha streams of one seed: one per independent part of the workload, so that changing the
/// order knobs never changes the events' contents.
#[derive(Clone, Copy)]
pub(super) enum Stream {
    Contents = 0,
    Displacement = 1,
    Stragglers = 2,
    SystemTime = 3,
}

/// The generator of `stream` under `seed`.
pub(super) fn rng(seed: u64, stream: Stream) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream as u64);
    rng
}

/// Payload values are `v000000` .. `v999999` ([`value_text`]): a fixed width, and so many that
/// almost every upsert changes its key's values (each SCD2 upsert opens a version).
const VALUES: u32 = 1_000_000;

/// The text of payload value `n`.
pub(super) fn value_text(n: u32) -> String {
    format!("v{n:06}")
}

/// One generated event.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Change {
    /// The event's index in sequence order, which is its sequence value.
    pub seq: u64,
    pub kind: EventKind,
    /// The key (meaningless for truncates).
    pub key: u64,
    /// Upserts: one entry per payload column, `None` where a partial upsert does not set it.
    /// Empty for deletes and truncates. Numbers, not text ([`value_text`]), so that a large
    /// workload fits in memory until its rows are made commit by commit.
    pub payload: Vec<Option<u32>>,
    /// The system time ([`super::order::SystemClock`]): 0 until the arrival order assigns it.
    pub system: u64,
}

/// Every event of `w`, in sequence order.
pub(super) fn changes(w: &Workload) -> Vec<Change> {
    let mut rng = rng(w.seed, Stream::Contents);
    (0..w.events).map(|seq| change(w, seq, &mut rng)).collect()
}

fn change(w: &Workload, seq: u64, rng: &mut ChaCha8Rng) -> Change {
    let u: f64 = rng.random();
    let mut change = Change {
        seq,
        kind: EventKind::Upsert,
        key: 0,
        payload: Vec::new(),
        system: 0,
    };
    if u < w.truncates {
        change.kind = EventKind::Truncate;
        return change;
    }
    change.key = rng.random_range(0..w.keys);
    if u < w.truncates + w.deletes {
        change.kind = EventKind::Delete;
        return change;
    }
    change.payload = (0..w.width)
        .map(|_| Some(rng.random_range(0..VALUES)))
        .collect();
    if u < w.truncates + w.deletes + w.partial {
        let mut set: Vec<bool> = (0..w.width).map(|_| rng.random()).collect();
        if !set.contains(&true) {
            // `width >= 1` is validated for partial workloads; u64 keeps the draw portable.
            set[rng.random_range(0..w.width as u64) as usize] = true;
        }
        for (value, set) in change.payload.iter_mut().zip(set) {
            if !set {
                *value = None;
            }
        }
    }
    change
}

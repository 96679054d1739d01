//! The arrival order: displacement, then stragglers, and the system times that follow from it
//! (the model is in the module docs of `gen`).
//!
//! Positions and sequence indices are `u64` so that the draws are portable; they index vectors
//! that hold every event, so they also fit in `usize`.

use super::draw::{rng, Stream};
use super::Workload;
use rand::rngs::ChaCha8Rng;
use rand::RngExt;

/// `order[p]` is the sequence index of the event that arrives `p`-th.
pub(super) fn arrival(w: &Workload) -> Vec<u64> {
    let mut order = displaced(
        w.events,
        w.displacement,
        &mut rng(w.seed, Stream::Displacement),
    );
    if w.stragglers > 0.0 {
        order = straggle(
            order,
            w.stragglers,
            w.straggler_distance,
            &mut rng(w.seed, Stream::Stragglers),
        );
    }
    order
}

/// The system times of the events in arrival order: the event at position `p` gets `p`, or, if it
/// is late in system time, `p` minus a lag uniform in `1 ..= lag` (clamped at 0).
pub(super) struct SystemClock {
    late: f64,
    lag: u64,
    /// `None` when no event is late: no draws at all.
    rng: Option<ChaCha8Rng>,
    /// The next arrival position.
    position: u64,
}

impl SystemClock {
    pub(super) fn new(w: &Workload) -> Self {
        SystemClock {
            late: w.system_late,
            lag: w.system_lag,
            rng: (w.system_late > 0.0).then(|| rng(w.seed, Stream::SystemTime)),
            position: 0,
        }
    }

    /// The system time of the event at the next arrival position. Draws, per position: an
    /// `f64` (late iff below `late`), then for late events the lag (`u64`).
    pub(super) fn next(&mut self) -> u64 {
        let p = self.position;
        self.position += 1;
        let Some(rng) = &mut self.rng else {
            return p;
        };
        if rng.random::<f64>() < self.late {
            p.saturating_sub(rng.random_range(1..=self.lag))
        } else {
            p
        }
    }
}

/// Sequence order with each event displaced by at most `d` positions, or a uniform shuffle
/// when `d >= n`.
fn displaced(n: u64, d: u64, rng: &mut ChaCha8Rng) -> Vec<u64> {
    if d >= n {
        let mut order: Vec<u64> = (0..n).collect();
        for i in (1..n).rev() {
            let j = rng.random_range(0..=i);
            order.swap(i as usize, j as usize);
        }
        return order;
    }
    // Draws in sequence order; `i + d < 2n` cannot overflow, as `n` events are in memory.
    let mut keyed: Vec<(u64, u64)> = (0..n)
        .map(|i| {
            (
                if d == 0 {
                    i
                } else {
                    i + rng.random_range(0..=d)
                },
                i,
            )
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// Makes each event, with probability `fraction`, a straggler late by `distance`.
fn straggle(order: Vec<u64>, fraction: f64, distance: u64, rng: &mut ChaCha8Rng) -> Vec<u64> {
    move_late(order, distance, |_| rng.random::<f64>() < fraction)
}

/// Moves each event for which `late(p)` holds (`p` its position, asked in increasing order) to
/// just after the event `distance` positions later, or to the end.
fn move_late(order: Vec<u64>, distance: u64, mut late: impl FnMut(u64) -> bool) -> Vec<u64> {
    let last = (order.len() as u64).saturating_sub(1);
    let mut keyed: Vec<(u64, bool, u64, u64)> = order
        .into_iter()
        .zip(0u64..)
        .map(|(seq, p)| {
            let late = late(p);
            let slot = if late {
                p.saturating_add(distance).min(last)
            } else {
                p
            };
            // At one slot: the event that arrived there, then its stragglers in arrival order.
            (slot, late, p, seq)
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, _, _, seq)| seq).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn displacement_zero_is_sequence_order_and_large_is_a_permutation() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert_eq!(displaced(5, 0, &mut rng), vec![0, 1, 2, 3, 4]);
        let mut shuffled = displaced(1000, 1000, &mut rng);
        assert_ne!(shuffled, (0..1000).collect::<Vec<_>>());
        shuffled.sort_unstable();
        assert_eq!(shuffled, (0..1000).collect::<Vec<_>>());
        assert!(displaced(0, 0, &mut rng).is_empty());
    }

    #[test]
    fn system_times_are_arrival_positions_except_late_ones() {
        let w = Workload {
            events: 10_000,
            system_late: 0.1,
            system_lag: 50,
            ..Workload::default()
        };
        let mut clock = SystemClock::new(&w);
        let times: Vec<u64> = (0..w.events).map(|_| clock.next()).collect();
        let mut late = 0;
        for (p, &st) in (0u64..).zip(&times) {
            if st != p {
                late += 1;
                assert!(st < p && p - st <= 50, "{p}: {st}");
            }
        }
        assert!((900..1100).contains(&late), "{late}");
        assert_eq!(times[0], 0, "position 0 cannot be late");
        let mut on_time = SystemClock::new(&Workload::default());
        assert_eq!(
            (0..5).map(|_| on_time.next()).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
    }

    #[test]
    fn a_straggler_moves_the_distance_or_to_the_end() {
        let order: Vec<u64> = (10..16).collect();
        assert_eq!(
            move_late(order.clone(), 3, |p| p == 1),
            vec![10, 12, 13, 14, 11, 15]
        );
        assert_eq!(
            move_late(order.clone(), 100, |p| p == 1),
            vec![10, 12, 13, 14, 15, 11]
        );
        // Two stragglers behind one event keep their order; distance 0 moves nothing.
        assert_eq!(
            move_late(order.clone(), 100, |p| p == 1 || p == 2),
            vec![10, 13, 14, 15, 11, 12]
        );
        assert_eq!(move_late(order.clone(), 0, |_| true), order);
    }
}

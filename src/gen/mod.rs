//! The seeded workload generator: change feeds with deletes, truncates, partial updates and a
//! controlled amount of reordering, for tests, benchmarks and `scdflow generate`.
//!
//! A [`Workload`] describes `events` change events over `keys` keys. They come out two ways,
//! which carry the same events:
//!
//! - [`rows`] (or lazily [`commit_rows`]): source rows in [`schema`] (`k BIGINT, c0 STRING,
//!   ..., op STRING, seq BIGINT, st BIGINT, cols STRING`), per commit in arrival order, ready
//!   for [`crate::io::write_rows`] into [`EVENTS_DIR`] and the pipelines of [`pipeline`] (SCD1,
//!   SCD2 and bitemporal all read the same files);
//! - [`events`]: the same commits as engine input ([`CommitEvents`]) for a target shaped like
//!   [`target`], so benchmarks and tests feed the engine without SQL. Reading the files of
//!   [`rows`] through [`pipeline`]'s SQL yields exactly these events, commit by commit (only
//!   the commit timestamps differ: [`events`] uses 0, a run uses the wall clock); the unit tests
//!   check it row by row through [`crate::prepare::to_event`].
//!
//! # The events, in sequence order
//!
//! Event `i` (`0 <= i < events`) has sequence `seq = i`, so sequences are unique and there are
//! no ties. Independently per event, a uniform draw `u` in `[0, 1)` picks its kind: a TRUNCATE
//! if `u < truncates`, else a DELETE if `u < truncates + deletes`, else a partial UPSERT if
//! `u < truncates + deletes + partial`, else a full UPSERT. Keys are uniform in `0..keys`.
//!
//! - A full upsert sets every payload column `c0 .. c{width-1}` to a random `vNNNNNN` string
//!   (one of a million), and `cols` lists all of them (`c0,c1`).
//! - A partial upsert sets each payload column with probability 1/2 (if the coins set none, one
//!   column drawn uniformly), leaves the others NULL, and `cols` lists the ones it sets. A NULL `cols` would mean "no column" (D7), which is why full upserts list all.
//! - A delete has its key, NULL payload and NULL `cols`; a truncate has NULL key, payload and
//!   `cols`.
//!
//! # Arrival order
//!
//! With displacement `D`:
//!
//! - `D = 0`: events arrive in sequence order.
//! - `0 < D < events`: event `i` gets the sort key `i + r_i`, `r_i` uniform in `0..=D`, and the
//!   events arrive by `(i + r_i, i)`. Every event then arrives at most `D` positions away from
//!   position `i`: events `j < i - D` have smaller keys and `j > i + D` greater ones. That bound
//!   is rarely reached: event `i` is passed by about `r_i^2 / 2D` later events and passes about
//!   `(D - r_i)^2 / 2D` earlier ones, so (away from the first and last `D` events) it arrives
//!   about `r_i - D/2` positions away: displacements spread roughly uniformly over
//!   `-D/2 ..= D/2`.
//! - `D >= events`: a uniform random permutation (Fisher–Yates), "fully shuffled".
//!
//! Then, if `stragglers > 0`, each event independently (probability `stragglers`) becomes a
//! straggler: the straggler that arrived at position `p` is moved to just after the event that
//! arrived at position `min(p + straggler_distance, events - 1)`, so it arrives about
//! `straggler_distance` positions later than it would have (at the end, for the last ones).
//! Stragglers moved behind one event keep their relative order.
//!
//! Finally the arrival order is cut into `commits` consecutive commits of equal size (sizes
//! differ by at most one; with more commits than events some are empty).
//!
//! # System time (bitemporal targets)
//!
//! Every event also carries a system time `st`, the `SYSTEM SEQUENCE BY` column of the
//! bitemporal pipeline (the SCD1 and SCD2 pipelines leave the column out, and [`events`] fills
//! [`Event::system`] only for bitemporal targets). It models a commit-log position: the event
//! that arrives at position `p` (0-based, counted over all commits) has `st = p`, so system time
//! normally grows with arrival, while business time (`seq`) is out of order by the displacement
//! and the stragglers above. Independently per position, with probability `system_late`, the
//! event is instead *late in system time*: `st = p - l` with `l` uniform in `1 ..= system_lag`,
//! clamped at 0, so it reaches the engine after up to `l` events with greater system times
//! (about `l / (events / commits)` commits back). A late event can share its system time with
//! the event that arrived at position `st` and with other late events; events with equal system
//! time are applied together (D15).
//!
//! System times belong to positions, not to events: the order knobs (`displacement`,
//! `stragglers`) put other events at the positions, and so give them other system times.
//!
//! # Determinism
//!
//! All randomness comes from ChaCha8 seeded with [`Workload::seed`], drawing only fixed-width
//! integers and `f64`s (never `usize`), so a workload gives byte-identical rows on every
//! platform for the pinned `rand` / `chacha20` versions. Contents, displacement, stragglers and
//! system times use four separate ChaCha streams of the seed: changing `displacement`,
//! `stragglers` or `commits` reorders or regroups the *same* events, which lets a benchmark
//! compare reordering depths on one event set, and the system-time knobs change only `st`. The
//! system-time stream draws, per arrival position, an `f64` (late iff below `system_late`) and,
//! for a late event, its lag (`u64`); with `system_late = 0` it draws nothing.
//!
//! # Limits
//!
//! The whole event set is drawn up front and held compactly (about 70 bytes plus 8 per payload
//! column per event; `scdflow generate` of 1M events in 100 commits peaks near 110 MB), because
//! the arrival order needs all of it; rows are made commit by commit ([`commit_rows`]). Keys must
//! fit a BIGINT (`keys <= i64::MAX`).

mod draw;
mod order;
mod pipeline;

#[cfg(test)]
mod tests;

pub use pipeline::{pipeline, EVENTS_DIR};

use crate::event::{Event, EventKind};
use crate::plan::{ScdType, Target, TargetKind, DEFAULT_TOMBSTONE_GC_SECONDS};
use crate::runtime::CommitEvents;
use crate::value::{DataType, Datum, Packer, Row, Schema, Seq, Value};
use crate::{Error, ErrorKind, Result};
use draw::{value_text, Change};
use std::fmt;

/// What to generate. Fractions are probabilities applied to each event independently, so the
/// counts are close to, not exactly, `fraction * events`.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// Number of events.
    pub events: u64,
    /// Number of distinct keys (`0 .. keys`), at least 1.
    pub keys: u64,
    /// Fraction of DELETE events.
    pub deletes: f64,
    /// Fraction of TRUNCATE events (SCD1 only; the SCD2 and bitemporal pipelines filter them
    /// out).
    pub truncates: f64,
    /// Fraction of partial upserts (`COLUMNS TO UPDATE`; `IGNORE NULL UPDATES` for bitemporal
    /// targets, which is the same for these rows).
    pub partial: f64,
    /// Number of STRING payload columns `c0 .. c{width-1}`.
    pub width: usize,
    /// D: each event arrives up to D positions away from its sequence order; 0 = in order;
    /// `>= events` = a uniform shuffle.
    pub displacement: u64,
    /// Fraction of events that are stragglers, late by `straggler_distance` positions.
    pub stragglers: f64,
    /// How much later a straggler arrives, in positions.
    pub straggler_distance: u64,
    /// Fraction of events late in system time (bitemporal targets): `st` below the arrival
    /// position by a lag uniform in `1 ..= system_lag`.
    pub system_late: f64,
    /// The largest lag of an event late in system time, in arrival positions; at least 1 when
    /// `system_late > 0`.
    pub system_lag: u64,
    /// Number of commits the arrival order is cut into (equal sizes), at least 1.
    pub commits: u64,
    /// The seed of every random draw.
    pub seed: u64,
}

impl Default for Workload {
    /// 100,000 events over 10,000 keys, 10% deletes, no truncates or partial updates, two
    /// payload columns, displacement 1,000, no stragglers (distance 100,000 if enabled), no
    /// events late in system time (lag up to 10,000 positions if enabled), 100 commits of 1,000
    /// events, seed 42.
    fn default() -> Self {
        let (events, displacement) = (100_000, 1_000);
        Workload {
            events,
            keys: 10_000,
            deletes: 0.1,
            truncates: 0.0,
            partial: 0.0,
            width: 2,
            displacement,
            stragglers: 0.0,
            straggler_distance: Workload::default_straggler_distance(events, displacement),
            system_late: 0.0,
            system_lag: 10_000,
            commits: 100,
            seed: 42,
        }
    }
}

impl Workload {
    /// The default straggler distance: `100 * D`, far beyond the displacement, or `events / 10`
    /// when events are otherwise in order (`D = 0`).
    pub fn default_straggler_distance(events: u64, displacement: u64) -> u64 {
        if displacement == 0 {
            events / 10
        } else {
            displacement.saturating_mul(100)
        }
    }

    /// Checks the workload: every fraction in `[0, 1]`, deletes + truncates + partial at most 1,
    /// `keys >= 1`, `commits >= 1`, `width >= 1` when there are partial upserts and
    /// `system_lag >= 1` when events are late in system time. [`rows`] and [`events`] require a
    /// valid workload.
    pub fn validate(&self) -> Result<()> {
        let invalid = |message: String| Err(Error::new(ErrorKind::Validation, message));
        for (name, f) in [
            ("deletes", self.deletes),
            ("truncates", self.truncates),
            ("partial", self.partial),
            ("stragglers", self.stragglers),
            ("system_late", self.system_late),
        ] {
            if !(0.0..=1.0).contains(&f) {
                return invalid(format!("{name} must be a fraction in [0, 1], got {f}"));
            }
        }
        let sum = self.deletes + self.truncates + self.partial;
        // Tolerates rounding in sums like 0.1 + 0.2 + 0.7.
        if sum > 1.0 + 1e-9 {
            return invalid(format!(
                "deletes + truncates + partial must be at most 1, got {sum}"
            ));
        }
        if self.keys == 0 || self.keys > i64::MAX as u64 {
            return invalid(format!(
                "keys must be in 1 ..= {}, got {}",
                i64::MAX,
                self.keys
            ));
        }
        if self.commits == 0 {
            return invalid("commits must be at least 1".into());
        }
        if self.partial > 0.0 && self.width == 0 {
            return invalid("partial updates need at least one payload column (width >= 1)".into());
        }
        if self.system_late > 0.0 && self.system_lag == 0 {
            return invalid(
                "system_lag must be at least 1 when events are late in system time (system_late > 0)"
                    .into(),
            );
        }
        Ok(())
    }

    fn assert_valid(&self) {
        if let Err(e) = self.validate() {
            panic!("invalid workload: {e}");
        }
    }
}

impl fmt::Display for Workload {
    /// One line naming every knob.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "events {}, keys {}, deletes {}, truncates {}, partial {}, width {}, \
             displacement {}, stragglers {}, straggler distance {}, system late {}, \
             system lag {}, commits {}, seed {}",
            self.events,
            self.keys,
            self.deletes,
            self.truncates,
            self.partial,
            self.width,
            self.displacement,
            self.stragglers,
            self.straggler_distance,
            self.system_late,
            self.system_lag,
            self.commits,
            self.seed
        )
    }
}

/// The source rows' schema: `k BIGINT, c0 STRING, ..., c{width-1} STRING, op STRING,
/// seq BIGINT, st BIGINT, cols STRING`.
pub fn schema(w: &Workload) -> Schema {
    let mut columns = vec![("k".to_string(), DataType::BigInt)];
    columns.extend((0..w.width).map(|j| (format!("c{j}"), DataType::String)));
    columns.push(("op".to_string(), DataType::String));
    columns.push(("seq".to_string(), DataType::BigInt));
    columns.push(("st".to_string(), DataType::BigInt));
    columns.push(("cols".to_string(), DataType::String));
    Schema::new(columns)
}

/// The target [`pipeline`] declares for `scd`: named `scd1` / `scd2` / `bitemporal`, image
/// `k, c0, ...`, key `k`, BIGINT sequence (and BIGINT system sequence for bitemporal), every
/// column tracked, partial iff the workload has partial upserts.
pub fn target(w: &Workload, scd: ScdType) -> Target {
    let mut columns = vec![("k".to_string(), DataType::BigInt)];
    columns.extend((0..w.width).map(|j| (format!("c{j}"), DataType::String)));
    let image_len = columns.len();
    if scd.has_history() {
        columns.push(("__START_AT".to_string(), DataType::BigInt));
        columns.push(("__END_AT".to_string(), DataType::BigInt));
    }
    if scd == ScdType::Bitemporal {
        columns.push(("__SYSTEM_START_AT".to_string(), DataType::BigInt));
        columns.push(("__SYSTEM_END_AT".to_string(), DataType::BigInt));
    }
    Target {
        name: target_name(scd).to_string(),
        kind: TargetKind::AutoCdc,
        schema: Schema::new(columns),
        image_len,
        keys: vec![0],
        scd,
        sequence_type: DataType::BigInt,
        system_sequence_type: (scd == ScdType::Bitemporal).then_some(DataType::BigInt),
        tracked: vec![true; image_len],
        partial: w.partial > 0.0,
        tombstone_gc_seconds: DEFAULT_TOMBSTONE_GC_SECONDS,
        replace_where: None,
        view_of: None,
        properties: Default::default(),
        line: 1,
    }
}

/// The target's name in [`target`] and [`pipeline`].
fn target_name(scd: ScdType) -> &'static str {
    match scd {
        ScdType::Type1 => "scd1",
        ScdType::Type2 => "scd2",
        ScdType::Bitemporal => "bitemporal",
    }
}

/// Per commit, in arrival order, the source rows (in [`schema`]).
///
/// # Panics
///
/// If the workload is invalid ([`Workload::validate`]).
pub fn rows(w: &Workload) -> Vec<Vec<Row>> {
    commit_rows(w).collect()
}

/// [`rows`], one commit at a time: only the compact events are held, each commit's rows are
/// made when it is taken (what `scdflow generate` uses for large workloads).
///
/// # Panics
///
/// If the workload is invalid ([`Workload::validate`]).
pub fn commit_rows(w: &Workload) -> impl Iterator<Item = Vec<Row>> {
    let width = w.width;
    commits(w).map(move |commit| commit.into_iter().map(|c| c.into_row(width)).collect())
}

/// Per commit, in arrival order, the events a flow into `target` gets from [`rows`]: whole
/// images unless `target.partial`, in which case every upsert carries its `authored` mask (full
/// upserts author everything, as their `cols` lists every column). For SCD2 and bitemporal
/// targets, truncates are left out, as [`pipeline`]'s filter leaves them out; for bitemporal
/// targets [`Event::system`] is the system time `st` (module docs), for the others NULL. Commit
/// timestamps are all 0 (tombstones never expire).
///
/// # Panics
///
/// If the workload is invalid, or `target`'s image is not `k, c0 .. c{width-1}`.
pub fn events(w: &Workload, target: &Target) -> Vec<CommitEvents> {
    assert_eq!(
        target.image_len,
        1 + w.width,
        "the target's image must be k, c0 .. c{{width-1}}"
    );
    let keep_truncates = target.scd == ScdType::Type1;
    let bitemporal = target.scd == ScdType::Bitemporal;
    commits(w)
        .map(|commit| CommitEvents {
            events: vec![commit
                .into_iter()
                .filter(|c| keep_truncates || c.kind != EventKind::Truncate)
                .map(|c| c.into_event(target.partial, bitemporal))
                .collect()],
            timestamp: 0,
            ..CommitEvents::default()
        })
        .collect()
}

/// All events, commit by commit, in arrival order, with their system times.
fn commits(w: &Workload) -> impl Iterator<Item = Vec<Change>> {
    w.assert_valid();
    let mut changes: Vec<Option<Change>> = draw::changes(w).into_iter().map(Some).collect();
    let arrival = order::arrival(w);
    let mut clock = order::SystemClock::new(w);
    let n = arrival.len() as u128;
    let c = u128::from(w.commits);
    (0..c).map(move |i| {
        // `n * i / c` is at most `n`, an in-memory length, so it fits in usize.
        let (start, end) = ((n * i / c) as usize, (n * (i + 1) / c) as usize);
        arrival[start..end]
            .iter()
            .map(|&seq| {
                let mut change = changes[seq as usize]
                    .take()
                    .expect("each event arrives once");
                change.system = clock.next();
                change
            })
            .collect()
    })
}

impl Change {
    /// The source row: `k, c0 .., op, seq, st, cols`.
    fn into_row(self, width: usize) -> Row {
        let key = match self.kind {
            EventKind::Truncate => Value::Null,
            _ => key_value(self.key),
        };
        let cols = (self.kind == EventKind::Upsert).then(|| {
            let set: Vec<String> = (0..self.payload.len())
                .filter(|&j| self.payload[j].is_some())
                .map(|j| format!("c{j}"))
                .collect();
            Value::Str(set.join(","))
        });
        let op = match self.kind {
            EventKind::Upsert => "UPSERT",
            EventKind::Delete => "DELETE",
            EventKind::Truncate => "TRUNCATE",
        };
        let mut row = Vec::with_capacity(width + 5);
        row.push(key);
        if self.payload.is_empty() {
            row.extend(std::iter::repeat_n(Value::Null, width));
        } else {
            row.extend(
                self.payload
                    .into_iter()
                    .map(|v| v.map_or(Value::Null, |n| Value::Str(value_text(n)))),
            );
        }
        row.push(Value::Str(op.to_string()));
        row.push(seq_value(self.seq));
        row.push(seq_value(self.system));
        row.push(cols.unwrap_or(Value::Null));
        row.into()
    }

    /// The engine event (src/event.rs conventions: deletes and truncates have empty images,
    /// truncates an empty key; `authored` only for `partial` targets, keys always authored;
    /// `system` only for `bitemporal` targets, which never see truncates).
    fn into_event(self, partial: bool, bitemporal: bool) -> Event {
        let seq = Seq::from(seq_value(self.seq));
        let system = bitemporal.then(|| Seq::from(seq_value(self.system)));
        match self.kind {
            EventKind::Truncate => Event {
                seq,
                kind: EventKind::Truncate,
                key: Row::new(),
                image: Row::new(),
                authored: None,
                system: None,
            },
            EventKind::Delete => Event {
                seq,
                kind: EventKind::Delete,
                key: Row::from([key_value(self.key)]),
                image: Row::new(),
                authored: None,
                system,
            },
            EventKind::Upsert => {
                let authored = partial.then(|| {
                    std::iter::once(true)
                        .chain(self.payload.iter().map(Option::is_some))
                        .collect()
                });
                let mut image = Packer::new();
                image.push(&key_value(self.key));
                for v in self.payload {
                    match v {
                        Some(n) => image.push_datum(Datum::Str(&value_text(n))),
                        None => image.push_datum(Datum::Null),
                    };
                }
                let image = image.finish();
                Event {
                    seq,
                    kind: EventKind::Upsert,
                    key: Row::from([key_value(self.key)]),
                    image,
                    authored,
                    system,
                }
            }
        }
    }
}

// Keys are below `keys <= i64::MAX` (validated), sequences and system times below `events`,
// whose events all fit in memory: all fit in a BIGINT.
fn key_value(k: u64) -> Value {
    Value::Int(k as i64)
}

fn seq_value(seq: u64) -> Value {
    Value::Int(seq as i64)
}

//! As-of point reads of a bitemporal table: the product-lattice arrangement
//! (`scdflow::operators::AsOf`) versus interval stabbing over the flat rows
//! (`scdflow::query::visible`), and what each costs to set up.
//!
//! Command: `cargo bench --bench as_of [-- KEYS VERSIONS QUERIES]` (defaults 100000 4 1000).
//! Workload (seed 42): per key, VERSIONS upserts at business times spread over 0..1000 (one per
//! quarter-ish slot), each learned at a random system time in 0..1000, and for one key in five a
//! delete at business 990; BIGINT intervals. The reference model computes the bitemporal table
//! (its time is reported, not compared). Reads at QUERIES random points `(s, b)` (one in ten at
//! the current belief):
//! - single key: `WHERE k = ...` — a seek in the index; a full scan for plain stabbing; a binary
//!   search for stabbing rows kept sorted by key (what the engine's outputs are);
//! - whole table: every key's row at the point (20 points).
//!
//! Set-up: the index is built by one worker from the rows at one commit (four corner updates
//! per row, arranged); the flat rows need nothing. Every index answer is checked against
//! stabbing. Machines here have 2 noisy cores: compare the ratios printed in one run.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use differential_dataflow::input::Input;
use hdrhistogram::Histogram;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use scdflow::event::{Event, EventKind};
use scdflow::operators::AsOf;
use scdflow::plan::AsOfLayout;
use scdflow::plan::{ScdType, Target, TargetKind};
use scdflow::query::visible;
use scdflow::value::{DataType, Datum, Row, Schema, Seq, Value};
use std::time::{Duration, Instant};

const SEED: u64 = 42;
const WHOLE_TABLE_READS: usize = 20;
/// Plain stabbing scans every row per read: a few hundred reads are enough for percentiles.
const SCAN_READS: usize = 200;

/// A read point: system (`None`: current belief), business, key.
type Point = (Option<Value>, Value, Row);

fn target() -> Target {
    let bigint = |name: &str| (name.to_string(), DataType::BigInt);
    Target {
        name: "bt".into(),
        kind: TargetKind::AutoCdc,
        schema: Schema::new([
            bigint("k"),
            ("v".to_string(), DataType::String),
            bigint("__START_AT"),
            bigint("__END_AT"),
            bigint("__SYSTEM_START_AT"),
            bigint("__SYSTEM_END_AT"),
        ]),
        image_len: 2,
        keys: vec![0],
        scd: ScdType::Bitemporal,
        sequence_type: DataType::BigInt,
        system_sequence_type: Some(DataType::BigInt),
        tracked: vec![true, true],
        partial: false,
        tombstone_gc_seconds: 0,
        replace_where: None,
        view_of: None,
        properties: Default::default(),
        line: 1,
    }
}

fn events(keys: i64, versions: i64, rng: &mut ChaCha8Rng) -> Vec<Event> {
    let slot = 980 / versions.max(1);
    let mut out = Vec::new();
    for k in 0..keys {
        let event = |seq: i64, kind: EventKind, image: Vec<Value>, system: i64| Event {
            seq: Seq::from(seq),
            kind,
            key: Row::from([Value::Int(k)]),
            image: Row::from(image),
            authored: None,
            system: Some(Seq::from(system)),
        };
        for j in 0..versions {
            let image = vec![
                Value::Int(k),
                Value::Str(format!("v{}", rng.random_range(0..1000))),
            ];
            let seq = j * slot + rng.random_range(0..slot);
            out.push(event(
                seq,
                EventKind::Upsert,
                image,
                rng.random_range(0..1000),
            ));
        }
        if rng.random_range(0..5) == 0 {
            out.push(event(
                990,
                EventKind::Delete,
                vec![],
                rng.random_range(0..1000),
            ));
        }
    }
    out
}

fn points(n: usize, keys: i64, rng: &mut ChaCha8Rng) -> Vec<Point> {
    (0..n)
        .map(|_| {
            let s = (rng.random_range(0..10) > 0).then(|| Value::Int(rng.random_range(0..1000)));
            let b = Value::Int(rng.random_range(0..1000));
            (s, b, Row::from([Value::Int(rng.random_range(0..keys))]))
        })
        .collect()
}

fn images(rows: Vec<Row>) -> Vec<Row> {
    let mut images: Vec<Row> = rows
        .into_iter()
        .map(|r| r.iter().take(2).collect())
        .collect();
    images.sort();
    images
}

/// Latencies of one kind of read.
struct Reads {
    histogram: Histogram<u64>,
    total: Duration,
    count: usize,
}

impl Reads {
    fn new() -> Self {
        Reads {
            histogram: Histogram::new(3).expect("histogram"),
            total: Duration::ZERO,
            count: 0,
        }
    }

    fn time<T>(&mut self, read: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = read();
        let elapsed = started.elapsed();
        self.histogram
            .record(elapsed.as_nanos().max(1) as u64)
            .expect("record");
        self.total += elapsed;
        self.count += 1;
        out
    }

    fn mean_us(&self) -> f64 {
        self.total.as_secs_f64() * 1e6 / self.count.max(1) as f64
    }

    fn line(&self, name: &str, baseline: Option<(&str, &Reads)>) {
        let us = |q: f64| self.histogram.value_at_quantile(q) as f64 / 1000.0;
        let ratio = baseline.map_or(String::new(), |(other, b)| {
            format!("  {:.1}x faster than {other}", b.mean_us() / self.mean_us())
        });
        println!(
            "  {name:<34} n={:<5} mean {:>10.1} µs  p50 {:>10.1}  p99 {:>10.1}  max {:>10.1}{ratio}",
            self.count,
            self.mean_us(),
            us(0.5),
            us(0.99),
            us(1.0),
        );
    }
}

/// The rows of `sorted` (sorted by key) with key `key`: a binary search.
fn key_range<'a>(sorted: &'a [Row], key: Datum<'_>) -> &'a [Row] {
    fn first(r: &Row) -> Datum<'_> {
        r.get(0).expect("a row has a key")
    }
    let start = sorted.partition_point(|r| first(r) < key);
    let end = start + sorted[start..].partition_point(|r| first(r) == key);
    &sorted[start..end]
}

/// Index results: build time, then single-key and whole-table reads (answers returned for the
/// cross-check).
struct IndexRun {
    build: Duration,
    single: Reads,
    whole: Reads,
    answers: Vec<Vec<Row>>,
    whole_answers: Vec<Vec<Row>>,
}

fn run_index(layout: AsOfLayout, rows: Vec<Row>, points: Vec<Point>) -> IndexRun {
    timely::execute_directly(move |worker| {
        let started = Instant::now();
        let (mut input, mut index) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, rows) = scope.new_collection::<Row, isize>();
            (input, rows.arrange_as_of(&layout))
        });
        for row in rows {
            input.insert(row);
        }
        input.advance_to(1);
        input.flush();
        while !index.is_complete(0) {
            worker.step();
        }
        index.compact();
        let build = started.elapsed();
        let mut single = Reads::new();
        let answers = points
            .iter()
            .map(|(s, b, key)| single.time(|| index.as_of(s.as_ref(), b, Some(key)).expect("read")))
            .collect();
        let mut whole = Reads::new();
        let whole_answers = points[..WHOLE_TABLE_READS]
            .iter()
            .map(|(s, b, _)| whole.time(|| index.as_of(s.as_ref(), b, None).expect("read")))
            .collect();
        IndexRun {
            build,
            single,
            whole,
            answers,
            whole_answers,
        }
    })
}

fn main() {
    let args: Vec<i64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let keys = args.first().copied().unwrap_or(100_000).max(1);
    let versions = args.get(1).copied().unwrap_or(4).max(1);
    let queries = (args
        .get(2)
        .copied()
        .unwrap_or(1000)
        .max(WHOLE_TABLE_READS as i64)) as usize;
    println!("command: cargo bench --bench as_of -- {keys} {versions} {queries}");
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let target = target();
    let layout = AsOfLayout::of(&target).expect("bitemporal");
    let events = events(keys, versions, &mut rng);
    let started = Instant::now();
    let rows = scdflow::model::bitemporal(&target, &events);
    println!(
        "workload: {keys} keys x {versions} business versions, random system times; {} events -> {} bitemporal rows (reference model: {:.2} s)",
        events.len(),
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    let points = points(queries, keys, &mut rng);

    let mut scan = Reads::new();
    let scanned: Vec<Vec<Row>> = points[..SCAN_READS.min(queries)]
        .iter()
        .map(|(s, b, key)| {
            scan.time(|| visible(&rows, &layout, s.as_ref(), Some(b), &[(0, key.value(0))]))
        })
        .collect();
    let mut search = Reads::new();
    let searched: Vec<Vec<Row>> = points
        .iter()
        .map(|(s, b, key)| {
            let key = key.get(0).expect("a point has a key");
            search.time(|| visible(key_range(&rows, key), &layout, s.as_ref(), Some(b), &[]))
        })
        .collect();
    let mut whole_stab = Reads::new();
    let stabbed_whole: Vec<Vec<Row>> = points[..WHOLE_TABLE_READS]
        .iter()
        .map(|(s, b, _)| whole_stab.time(|| visible(&rows, &layout, s.as_ref(), Some(b), &[])))
        .collect();

    let index = run_index(layout.clone(), rows.clone(), points.clone());
    for (i, (answer, stabbed)) in index.answers.iter().zip(&searched).enumerate() {
        assert_eq!(
            answer,
            &images(stabbed.clone()),
            "single-key read {i} at {:?}",
            points[i]
        );
    }
    for (s, (a, b)) in scanned.iter().zip(&searched).enumerate() {
        assert_eq!(a, b, "scan vs binary search at read {s}");
    }
    for (i, (answer, stabbed)) in index.whole_answers.iter().zip(&stabbed_whole).enumerate() {
        assert_eq!(answer, &images(stabbed.clone()), "whole-table read {i}");
    }
    let mean_whole = stabbed_whole.iter().map(Vec::len).sum::<usize>() / WHOLE_TABLE_READS;

    println!("set-up (1 worker):");
    println!(
        "  index build (4 corners per row, arranged): {:>9.1} ms",
        index.build.as_secs_f64() * 1e3
    );
    println!("  flat rows:                                     none (already in memory)");
    println!("single-key reads (all answers checked against stabbing):");
    scan.line("stabbing, full scan", None);
    search.line(
        "stabbing, binary search by key",
        Some(("the full scan", &scan)),
    );
    index
        .single
        .line("index seek", Some(("the full scan", &scan)));
    println!("whole-table reads ({mean_whole} rows visible on average):");
    whole_stab.line("stabbing", None);
    index
        .whole
        .line("index scan", Some(("stabbing", &whole_stab)));
    println!(
        "ratios: index build = {:.0} whole-table stabs = {:.0} full-scan key reads; a one-shot read should stab",
        index.build.as_secs_f64() / (whole_stab.mean_us() / 1e6),
        index.build.as_secs_f64() / (scan.mean_us() / 1e6),
    );
}

//! Restart cost of a durable SCD2 pipeline (`scdflow run --state DIR`): loading the persisted
//! operator state against replaying the whole input, in the same run.
//!
//! Command: `cargo bench --bench durable [-- EVENTS KEYS COMMITS]` (defaults 1000000 100000 100).
//! Workload (`scdflow::gen`, seed 42, as `scdflow generate` writes it): EVENTS events over KEYS
//! keys (10% deletes, sequences displaced by up to 1,000 positions), as COMMITS CSV files, and
//! the generator's SCD2 pipeline over them. Steps, each a `persist::run` on 1 worker:
//! 1. replay: a plain run (no state) over all files but the last: what a restart without
//!    persisted state costs;
//! 2. first durable run over the same files: the same work plus saving the state;
//! 3. restart with nothing new: open the state, restore every operator's state, read and
//!    rewrite the target files;
//! 4. restart with the last file new: as 3, plus one commit and saving the state.
//!
//! Printed: wall time of each step, split into execution (commits + save) and output writing
//! (the restore runs on the workers meanwhile; reading the tables waits for it, so it shows
//! there), the checkpoint's size, and restart / replay ratios. Machines here have 2 noisy
//! cores: compare ratios, not absolute figures, across runs.

// The binary's allocator, so the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use scdflow::driver::Options;
use scdflow::gen::{self, Workload};
use scdflow::io::OutputFormat;
use scdflow::output::Layout;
use scdflow::persist::{self, Durability, DurableRun};
use scdflow::plan::ScdType;
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(1_000_000);
    let keys = args.get(1).copied().unwrap_or(100_000);
    let commits = args.get(2).copied().unwrap_or(100).max(2);
    println!("command: cargo bench --bench durable -- {n} {keys} {commits}");
    println!(
        "workload: SCD2, {n} events over {keys} keys, 10% deletes, displacement <= 1000, \
         {commits} CSV files; 1 worker"
    );
    let workload = Workload {
        events: n,
        keys,
        deletes: 0.1,
        displacement: 1000,
        commits,
        ..Workload::default()
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let events = dir.path().join(gen::EVENTS_DIR);
    std::fs::create_dir_all(&events).expect("events directory");
    let schema = gen::schema(&workload);
    let mut last = None;
    for (i, rows) in gen::commit_rows(&workload).enumerate() {
        let path = events.join(format!("commit_{:06}.csv", i + 1));
        if i as u64 + 1 == commits {
            last = Some((path, rows));
        } else {
            scdflow::io::write_rows(&path, OutputFormat::Csv, &schema, &rows).expect("write");
        }
    }
    let sql = dir.path().join("scd2.sql");
    std::fs::write(
        &sql,
        gen::pipeline(&workload, ScdType::Type2, OutputFormat::Csv),
    )
    .expect("pipeline");
    let pipeline = scdflow::sql::load(&sql).expect("pipeline loads");
    let options = Options {
        workers: 1,
        ..Options::default()
    };

    let started = Instant::now();
    let layout = Layout::new(&dir.path().join("plain"), OutputFormat::Csv);
    let replay = scdflow::output::run(&pipeline, &options, layout, None).expect("replay");
    let replay_time = started.elapsed();
    let rows = replay.tables[0].1;
    println!(
        "1. replay (no state), {} commits: {:>8.2} s  ({rows} rows)",
        commits - 1,
        replay_time.as_secs_f64()
    );

    let durability = Durability {
        state: dir.path().join("state"),
        out: dir.path().join("out"),
        format: OutputFormat::Csv,
        full_refresh: false,
        published: Vec::new(),
    };
    let first = timed(&pipeline, &options, &durability);
    report("2. first durable run", &first);
    println!(
        "   checkpoint: {} bytes ({:.0} bytes per table row)",
        first.0.state_bytes,
        first.0.state_bytes as f64 / rows.max(1) as f64
    );
    let file = format!("{}.csv", pipeline.targets[0].name);
    let read = |d: &Path| std::fs::read(d.join(&file)).expect("table");
    assert!(
        read(&dir.path().join("plain")) == read(&durability.out),
        "the durable run's table differs from the plain run's"
    );
    let idle = timed(&pipeline, &options, &durability);
    report("3. restart, nothing new", &idle);
    let (path, rows_last) = last.expect("the last commit");
    scdflow::io::write_rows(&path, OutputFormat::Csv, &schema, &rows_last).expect("write");
    let one = timed(&pipeline, &options, &durability);
    report("4. restart + 1 new commit", &one);
    let ratio = |d: Duration| d.as_secs_f64() / replay_time.as_secs_f64();
    println!(
        "restart / replay: nothing new {:.3}x, one new commit {:.3}x; execution only: {:.3}x, {:.3}x",
        ratio(idle.1),
        ratio(one.1),
        ratio(idle.0.execute_time),
        ratio(one.0.execute_time)
    );
}

fn timed(
    pipeline: &scdflow::plan::Pipeline,
    options: &Options,
    durability: &Durability,
) -> (DurableRun, Duration) {
    let started = Instant::now();
    let run = persist::run(pipeline, options, durability, None).expect("durable run");
    (run, started.elapsed())
}

fn report(what: &str, (run, total): &(DurableRun, Duration)) {
    let rest = total.saturating_sub(run.prepare_time + run.execute_time);
    println!(
        "{what}: {:>8.2} s  (find input {:.2} s, execute {:.2} s, write outputs {:.2} s; {} new commits)",
        total.as_secs_f64(),
        run.prepare_time.as_secs_f64(),
        run.execute_time.as_secs_f64(),
        rest.as_secs_f64(),
        run.commits
    );
}

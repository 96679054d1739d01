//! `scdflow run PIPELINE.sql`: execute and write outputs.

use super::args::RunArgs;
use super::progress::Progress;
use scdflow::persist::{Durability, DurableRun, Session};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let cluster = super::cluster::cluster(
        args.processes,
        args.process,
        args.hostfile.as_deref(),
        args.connect_timeout,
        args.peer_timeout,
    )?;
    let pipeline = super::evaluate::load(&args.pipeline, &args.warehouse)?;
    // Following, the driver waits for the workers between commits; otherwise it reads ahead
    // while they apply, and pinning pays only where a core is left for it (see the option).
    let pin = args.follow || usize::from(args.workers) < scdflow::runtime::cores::count();
    if pin {
        super::pin_threads();
    }
    let options = scdflow::driver::Options {
        workers: usize::from(args.workers),
        on_invalid: args.on_invalid.into(),
        tombstone_gc_seconds: args.tombstone_gc_seconds,
        cluster: cluster.clone(),
        partitioned_output: args.partitioned_output,
        split_bytes: args.split_files_over,
        read_halves_over: args.read_halves_over,
        pin_workers: pin,
    };
    if cluster.is_some() {
        super::cluster::quiet_network_panics();
    }
    if let Some(state) = &args.state {
        return run_durable(&pipeline, &options, state, &args);
    }
    let process = cluster.as_ref().map_or(0, |c| c.process);
    let format = args.format.into();
    let mut layout = match args.partitioned_output {
        true => scdflow::output::Layout::part(&args.out, format, process),
        false => scdflow::output::Layout::new(&args.out, format),
    };
    if let Some(warehouse) = args.warehouse.open()? {
        if args.partitioned_output {
            anyhow::bail!(
                "--partitioned-output writes each process's share as files; targets published \
                 in a --warehouse are written whole by process 0 (drop --partitioned-output)"
            );
        }
        layout = layout.publish(warehouse.published_dirs(&pipeline)?);
    }
    let progress = Progress::start();
    let written = scdflow::output::run(
        &pipeline,
        &options,
        layout,
        progress.as_ref().map(Progress::reporter),
    )?;
    if let Some(p) = &progress {
        p.finish(written.events);
    }
    super::evaluate::report(&written.warnings, &written.quarantined);
    if let Some(c) = cluster
        .as_ref()
        .filter(|c| !c.gathers() && !args.partitioned_output)
    {
        println!(
            "process {} of {}: done; process 0 writes the outputs",
            c.process,
            c.addresses.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let part = match args.partitioned_output {
        true => format!(" (partition {process})"),
        false => String::new(),
    };
    let mut stdout = std::io::stdout().lock();
    for (table, (path, rows)) in pipeline.published().iter().zip(&written.tables) {
        writeln!(
            stdout,
            "{}: {rows} rows{part} -> {}",
            table.name,
            path.display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_durable(
    pipeline: &scdflow::plan::Pipeline,
    options: &scdflow::driver::Options,
    state: &Path,
    args: &RunArgs,
) -> anyhow::Result<ExitCode> {
    let published = match args.warehouse.open()? {
        Some(warehouse) => warehouse.published_dirs(pipeline)?,
        None => Vec::new(),
    };
    let publishes = !published.is_empty();
    let durability = Durability {
        state: state.to_path_buf(),
        out: args.out.clone(),
        format: args.format.into(),
        full_refresh: args.full_refresh,
        published,
    };
    // Registered before the first run, so that a signal at any point lets the commit under way
    // finish; without --follow the default (immediate exit) is kept, which durability allows.
    let stop = Arc::new(AtomicBool::new(false));
    if args.follow {
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(signal, Arc::clone(&stop))?;
        }
    }
    let mut session = Session::open(pipeline, options, &durability)?;
    let run = super::evaluate::step(&mut session)?;
    print_run(pipeline, &run, state)?;
    if args.follow && !stop.load(Ordering::SeqCst) {
        let seconds = |value: f64, name: &str| {
            Duration::try_from_secs_f64(value)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| anyhow::anyhow!("{name} must be a positive number of seconds"))
        };
        let poll = seconds(args.poll, "--poll")?;
        let tables_every = Duration::try_from_secs_f64(args.tables_every)
            .map_err(|_| anyhow::anyhow!("--tables-every must be a number of seconds"))?;
        let watch = session.watch_input();
        for (dir, why) in watch.unwatched() {
            eprintln!(
                "warning: cannot watch {} ({why}): new input there is found by polling",
                dir.display()
            );
        }
        eprintln!(
            "following new input ({} watched, polled every {}s; tables rewritten at most every \
             {}s); SIGINT or SIGTERM stops after the current commit",
            match watch.watched().len() {
                1 => "1 directory".to_string(),
                n => format!("{n} directories"),
            },
            args.poll,
            args.tables_every
        );
        scdflow::persist::follow(&mut session, &watch, poll, tables_every, &stop, |run| {
            super::evaluate::report(&run.warnings, &run.quarantined);
            print_step(run, publishes)
                .map_err(|e| scdflow::Error::new(scdflow::ErrorKind::Io, e.to_string()))
        })?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per `--follow` step: its commits, events, latencies and checkpoint bytes. A
/// commit's latency ends when its change feeds are synced, or, for a run that publishes
/// Delta tables (whose change data feeds they are), when its versions' files are written.
fn print_step(run: &DurableRun, publishes: bool) -> std::io::Result<()> {
    let last = run.base + run.commits;
    let commits = match run.commits {
        1 => format!("commit {last}"),
        _ => format!("commits {}..={last}", run.base + 1),
    };
    let mut ms: Vec<f64> = run.latencies.iter().map(|l| l.latency_ms).collect();
    ms.sort_by(f64::total_cmp);
    let latency = match (ms.first(), ms.last()) {
        (Some(min), Some(max)) if ms.len() > 1 => format!("latency {min:.1}..{max:.1} ms"),
        (Some(one), _) => format!("latency {one:.1} ms"),
        _ => String::new(),
    };
    let saved = match run.saved {
        (bytes, true) => format!("saved {bytes} bytes (delta)"),
        (bytes, false) => format!("saved {bytes} bytes (whole checkpoint)"),
    };
    let tables = match run.tables.is_empty() {
        true => "tables later",
        false => "tables written",
    };
    let ends = match publishes {
        true => "input to Delta versions written",
        false => "input to change feed synced",
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "{commits}: {} events, {latency} ({ends}), {saved}; {tables}",
        run.events
    )?;
    stdout.flush()
}

/// One line per published table (the targets, then the streaming tables), then the state's
/// line.
fn print_run(
    pipeline: &scdflow::plan::Pipeline,
    run: &DurableRun,
    state: &Path,
) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    for (table, (path, rows)) in pipeline.published().iter().zip(&run.tables) {
        writeln!(stdout, "{}: {rows} rows -> {}", table.name, path.display())?;
    }
    let last = run.base + run.commits;
    let new = match run.commits {
        0 => "no new input".to_string(),
        1 => format!("commit {last} is new"),
        _ => format!("commits {}..={last} are new", run.base + 1),
    };
    let saved = match run.saved {
        (0, _) => String::new(),
        (bytes, true) => format!("; saved {bytes} bytes (the keys this run changed)"),
        (bytes, false) => format!("; saved {bytes} bytes (a whole checkpoint)"),
    };
    writeln!(
        stdout,
        "state: {last} commits ({new}); {} bytes in {}{saved}",
        run.state_bytes,
        state.display()
    )?;
    stdout.flush()
}

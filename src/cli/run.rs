//! `scdflow run PIPELINE.sql`: execute and write outputs.

use super::args::RunArgs;
use std::io::Write;
use std::process::ExitCode;

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let cluster = super::cluster::cluster(args.processes, args.process, args.hostfile.as_deref())?;
    let pipeline = super::evaluate::load(&args.pipeline)?;
    let options = scdflow::driver::Options {
        workers: usize::from(args.workers),
        on_invalid: args.on_invalid.into(),
        tombstone_gc_seconds: args.tombstone_gc_seconds,
        cluster: cluster.clone(),
    };
    if let Some(state) = &args.state {
        return run_durable(&pipeline, &options, state, &args);
    }
    let evaluation = super::evaluate::evaluate(&pipeline, &options)?;
    if let Some(c) = cluster.as_ref().filter(|c| !c.gathers()) {
        println!(
            "process {} of {}: done; process 0 writes the outputs",
            c.process,
            c.addresses.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let format: scdflow::io::OutputFormat = args.format.into();
    scdflow::output::write_all(&pipeline, &evaluation, &args.out, format)?;
    let mut stdout = std::io::stdout().lock();
    for (target, result) in pipeline.targets.iter().zip(&evaluation.targets) {
        let path = args
            .out
            .join(format!("{}.{}", target.name, format.extension()));
        writeln!(
            stdout,
            "{}: {} rows -> {}",
            target.name,
            result.rows.len(),
            path.display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_durable(
    pipeline: &scdflow::plan::Pipeline,
    options: &scdflow::driver::Options,
    state: &std::path::Path,
    args: &RunArgs,
) -> anyhow::Result<ExitCode> {
    let durability = scdflow::durable::Durability {
        state: state.to_path_buf(),
        out: args.out.clone(),
        format: args.format.into(),
        full_refresh: args.full_refresh,
    };
    let run = super::evaluate::evaluate_durably(pipeline, options, &durability)?;
    let mut stdout = std::io::stdout().lock();
    let ext = durability.format.extension();
    for (target, result) in pipeline.targets.iter().zip(&run.evaluation.targets) {
        let path = args.out.join(format!("{}.{ext}", target.name));
        writeln!(
            stdout,
            "{}: {} rows -> {}",
            target.name,
            result.rows.len(),
            path.display()
        )?;
    }
    let last = run.base + run.commits;
    let new = match run.commits {
        0 => "no new input".to_string(),
        1 => format!("commit {last} is new"),
        _ => format!("commits {}..={last} are new", run.base + 1),
    };
    writeln!(
        stdout,
        "state: {last} commits ({new}); {} bytes in {}",
        run.state_bytes,
        state.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

//! What `run` and `query` share: load a pipeline, run it with a progress line, and report its
//! warnings and set-aside rows on stderr.

use super::progress::Progress;
use scdflow::driver::{Evaluation, Options};
use scdflow::durable::{Durability, DurableRun};
use scdflow::plan::Pipeline;
use std::path::Path;

/// Loads the pipeline file, printing its warnings.
pub fn load(path: &Path) -> anyhow::Result<Pipeline> {
    let pipeline = scdflow::sql::load(path)?;
    for warning in &pipeline.warnings {
        eprintln!("warning: {warning}");
    }
    Ok(pipeline)
}

/// Runs `pipeline`, then prints the run's warnings and quarantined rows.
pub fn evaluate(pipeline: &Pipeline, options: &Options) -> anyhow::Result<Evaluation> {
    let progress = Progress::start();
    let evaluation =
        scdflow::driver::evaluate(pipeline, options, progress.as_ref().map(Progress::reporter))?;
    if let Some(p) = &progress {
        p.finish(evaluation.events);
    }
    report(&evaluation);
    Ok(evaluation)
}

/// As [`evaluate`], durably (`--state`).
pub fn evaluate_durably(
    pipeline: &Pipeline,
    options: &Options,
    durability: &Durability,
) -> anyhow::Result<DurableRun> {
    let progress = Progress::start();
    let run = scdflow::durable::run(
        pipeline,
        options,
        durability,
        progress.as_ref().map(Progress::reporter),
    )?;
    if let Some(p) = &progress {
        p.finish(run.evaluation.events);
    }
    report(&run.evaluation);
    Ok(run)
}

/// Prints a run's warnings and quarantined rows on stderr.
fn report(evaluation: &Evaluation) {
    for warning in &evaluation.warnings {
        eprintln!("warning: {warning}");
    }
    for q in &evaluation.quarantined {
        eprintln!(
            "warning: quarantined {}",
            q.error.clone().into_error(&q.file)
        );
    }
}

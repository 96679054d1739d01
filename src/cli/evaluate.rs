//! What `run` and `query` share: load a pipeline, run it with a progress line, and report its
//! warnings and set-aside rows on stderr.

use super::args::WarehouseArgs;
use super::progress::Progress;
use scdflow::driver::{Evaluation, Options, Quarantined};
use scdflow::persist::{DurableRun, Session};
use scdflow::plan::Pipeline;
use std::path::Path;

/// Loads the pipeline file (its tables may read tables of `warehouse`), printing its warnings.
pub fn load(path: &Path, warehouse: &WarehouseArgs) -> anyhow::Result<Pipeline> {
    let pipeline = scdflow::sql::load_in(path, warehouse.open()?.as_ref())?;
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
    report(&evaluation.warnings, &evaluation.quarantined);
    Ok(evaluation)
}

/// One durable run of `session` (`--state`), as [`evaluate`].
pub fn step(session: &mut Session) -> anyhow::Result<DurableRun> {
    let progress = Progress::start();
    let run = session.step(progress.as_ref().map(Progress::reporter))?;
    if let Some(p) = &progress {
        p.finish(run.events);
    }
    report(&run.warnings, &run.quarantined);
    Ok(run)
}

/// Prints a run's warnings and quarantined rows on stderr.
pub fn report(warnings: &[String], quarantined: &[Quarantined]) {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    for q in quarantined {
        eprintln!(
            "warning: quarantined {}",
            q.error.clone().into_error(&q.file)
        );
    }
}

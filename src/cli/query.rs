//! `scdflow query PIPELINE.sql "SELECT ..."`: run the pipeline, print one target's visible rows.

use super::args::QueryArgs;
use super::progress::Progress;
use std::io::Write;
use std::process::ExitCode;

pub fn query(args: QueryArgs) -> anyhow::Result<ExitCode> {
    let pipeline = scdflow::sql::load(&args.pipeline)?;
    for warning in &pipeline.warnings {
        eprintln!("warning: {warning}");
    }
    // Resolve the query first: a typo should not wait for the whole pipeline to run.
    let prepared = scdflow::query::prepare(&pipeline, &args.query)?;
    let progress = Progress::start();
    let options = scdflow::driver::Options {
        workers: usize::from(args.workers),
        on_invalid: args.on_invalid.into(),
        tombstone_gc_seconds: None,
        cluster: None,
    };
    let evaluation = scdflow::driver::evaluate(
        &pipeline,
        &options,
        progress.as_ref().map(Progress::reporter),
    )?;
    if let Some(p) = &progress {
        p.finish(evaluation.events);
    }
    for warning in &evaluation.warnings {
        eprintln!("warning: {warning}");
    }
    for q in &evaluation.quarantined {
        eprintln!(
            "warning: quarantined {}",
            q.error.clone().into_error(&q.file)
        );
    }
    let rows = prepared.read(&pipeline, &evaluation);
    let schema = &pipeline.targets[prepared.target()].schema;
    let text = scdflow::io::render_rows(args.format.into(), schema, &rows)?;
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

//! `scdflow query PIPELINE.sql "SELECT ..."`: run the pipeline, print one target's visible rows.

use super::args::QueryArgs;
use std::io::Write;
use std::process::ExitCode;

pub fn query(args: QueryArgs) -> anyhow::Result<ExitCode> {
    let pipeline = super::evaluate::load(&args.pipeline, &args.warehouse)?;
    // Resolve the query first: a typo should not wait for the whole pipeline to run.
    let prepared = scdflow::query::prepare(&pipeline, &args.query)?;
    let options = scdflow::driver::Options {
        workers: usize::from(args.workers),
        on_invalid: args.on_invalid.into(),
        tombstone_gc_seconds: None,
        cluster: None,
        partitioned_output: false,
        split_bytes: 0,
        read_halves_over: super::args::READ_HALVES_OVER,
        pin_workers: false,
    };
    let evaluation = super::evaluate::evaluate(&pipeline, &options)?;
    let rows = prepared.read(&pipeline, &evaluation);
    let schema = prepared.schema(&pipeline);
    let text = scdflow::io::render_rows(args.format.into(), &schema, &rows)?;
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

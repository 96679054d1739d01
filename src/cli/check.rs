//! `scdflow check PIPELINE.sql`: validate and print the plan.

use super::args::CheckArgs;
use std::io::Write;
use std::process::ExitCode;

pub fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let pipeline = scdflow::sql::load_in(&args.pipeline, args.warehouse.open()?.as_ref())?;
    let mut out = std::io::stdout().lock();
    for warning in &pipeline.warnings {
        eprintln!("warning: {warning}");
    }
    out.write_all(scdflow::sql::describe(&pipeline).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

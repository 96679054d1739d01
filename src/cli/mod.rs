//! Command-line front end: the only place that knows clap and anyhow.

mod args;
mod bench;
mod check;
mod cluster;
mod evaluate;
mod generate;
mod machine;
mod peers;
mod plot;
mod progress;
mod query;
mod report;
mod rewind;
mod run;
mod sql;

pub use args::parse;

use args::{Args, Command};
use std::process::ExitCode;

/// Pins the threads started from now on to cores (`scdflow::runtime::cores`), unless
/// `SCDFLOW_PIN=0`: for runs whose driver mostly waits for its workers and helpers, before any
/// of them starts.
fn pin_threads() {
    if std::env::var_os("SCDFLOW_PIN").is_none_or(|v| v != "0") {
        scdflow::runtime::cores::pin_threads();
    }
}

/// Runs one subcommand.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Run(a) => run::run(a),
        Command::Check(a) => check::check(a),
        Command::Query(a) => query::query(a),
        Command::Generate(a) => generate::generate(a),
        Command::Bench(a) => bench::bench(a),
        Command::Sql(a) => sql::sql(a),
        Command::Rewind(a) => rewind::rewind(a),
    }
}

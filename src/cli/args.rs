//! clap definitions; validation only, no I/O.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// scdflow: correct SCD type 1 / type 2 tables from late, out-of-order change feeds.
#[derive(Debug, Parser)]
#[command(name = "scdflow", version, about)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a pipeline and write its targets, change feeds and metrics.
    Run(RunArgs),
    /// Validate a pipeline and print its plan.
    Check(CheckArgs),
}

/// `scdflow run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The pipeline file (SQL).
    pub pipeline: PathBuf,
    /// Output directory.
    #[arg(long, default_value = "out")]
    pub out: PathBuf,
    /// Worker threads.
    #[arg(short = 'w', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub workers: u16,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Csv)]
    pub format: FormatArg,
    /// What to do with invalid input rows.
    #[arg(long, value_enum, default_value_t = OnInvalidArg::Fail)]
    pub on_invalid: OnInvalidArg,
    /// Keep delete tombstones this many seconds of commit time (0 = forever); overrides every
    /// target's `pipelines.cdc.tombstoneGCThresholdInSeconds`.
    #[arg(long, value_name = "SECONDS")]
    pub tombstone_gc_seconds: Option<u64>,
}

/// `scdflow check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The pipeline file (SQL).
    pub pipeline: PathBuf,
}

/// `--format`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FormatArg {
    /// CSV with a header line.
    Csv,
    /// JSON lines.
    Jsonl,
}

/// `--on-invalid`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OnInvalidArg {
    /// Stop with an error naming the file, line and column.
    Fail,
    /// Write invalid rows to `OUT/_quarantine/<flow>.jsonl` and go on.
    Quarantine,
}

impl From<FormatArg> for scdflow::io::OutputFormat {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Csv => scdflow::io::OutputFormat::Csv,
            FormatArg::Jsonl => scdflow::io::OutputFormat::Jsonl,
        }
    }
}

impl From<OnInvalidArg> for scdflow::driver::OnInvalid {
    fn from(o: OnInvalidArg) -> Self {
        match o {
            OnInvalidArg::Fail => scdflow::driver::OnInvalid::Fail,
            OnInvalidArg::Quarantine => scdflow::driver::OnInvalid::Quarantine,
        }
    }
}

/// Parses the process arguments (exits with usage on error, as clap does).
pub fn parse() -> Args {
    Args::parse()
}

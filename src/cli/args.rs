//! clap definitions; validation only, no I/O.

use clap::{Parser, Subcommand, ValueEnum};
use scdflow::gen::Workload;
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
    /// Run a pipeline and print the rows of one target visible at a point in time (no files
    /// are written).
    Query(QueryArgs),
    /// Write a seeded change-feed workload (one file per commit) and SCD1 / SCD2 pipelines
    /// over it.
    Generate(GenerateArgs),
}

/// `scdflow run`. `-h` is timely's hostfile option, so help is `--help` only.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct RunArgs {
    /// The pipeline file (SQL).
    pub pipeline: PathBuf,
    /// Output directory.
    #[arg(long, default_value = "out")]
    pub out: PathBuf,
    /// Worker threads (per process).
    #[arg(short = 'w', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub workers: u16,
    /// Number of processes running the pipeline together (timely's cluster mode).
    #[arg(short = 'n', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub processes: u16,
    /// This process's index, from 0; process 0 writes the outputs.
    #[arg(short = 'p', long, default_value_t = 0)]
    pub process: u16,
    /// A file of `host:port` lines, one per process (the first `--processes` are used);
    /// default `localhost:2101`, `localhost:2102`, ...
    #[arg(short = 'h', long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
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

/// `scdflow query`.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// The pipeline file (SQL).
    pub pipeline: PathBuf,
    /// `SELECT * FROM target [FOR SYSTEM_TIME AS OF '...'] [FOR BUSINESS_TIME AS OF '...']
    /// [WHERE column = literal [AND ...]]`.
    pub query: String,
    /// Worker threads.
    #[arg(short = 'w', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub workers: u16,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Csv)]
    pub format: FormatArg,
    /// What to do with invalid input rows.
    #[arg(long, value_enum, default_value_t = OnInvalidArg::Fail)]
    pub on_invalid: OnInvalidArg,
}

/// `scdflow check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The pipeline file (SQL).
    pub pipeline: PathBuf,
}

/// `scdflow generate`; the knobs of `scdflow::gen::Workload`, whose docs give the exact model.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// Output directory: `events/commit_NNNNNN.<ext>`, `scd1.sql`, `scd2.sql`, `bitemporal.sql`.
    #[arg(long)]
    pub out: PathBuf,
    /// Number of events.
    #[arg(long, default_value_t = Workload::default().events)]
    pub events: u64,
    /// Number of distinct keys.
    #[arg(long, default_value_t = Workload::default().keys)]
    pub keys: u64,
    /// Fraction of DELETE events.
    #[arg(long, value_name = "FRACTION", default_value_t = Workload::default().deletes)]
    pub deletes: f64,
    /// Fraction of TRUNCATE events (SCD1; scd2.sql filters them out).
    #[arg(long, value_name = "FRACTION", default_value_t = Workload::default().truncates)]
    pub truncates: f64,
    /// Fraction of partial upserts (`COLUMNS TO UPDATE`).
    #[arg(long, value_name = "FRACTION", default_value_t = Workload::default().partial)]
    pub partial: f64,
    /// Number of STRING payload columns.
    #[arg(long, default_value_t = Workload::default().width)]
    pub width: usize,
    /// D: each event arrives up to D positions away from sequence order (0 = in order,
    /// >= events = shuffled).
    #[arg(long, value_name = "D", default_value_t = Workload::default().displacement)]
    pub displacement: u64,
    /// Fraction of stragglers, events late by --straggler-distance positions.
    #[arg(long, value_name = "FRACTION", default_value_t = Workload::default().stragglers)]
    pub stragglers: f64,
    /// How late a straggler arrives, in positions [default: 100 * D, or events / 10 if D = 0].
    #[arg(long, value_name = "POSITIONS")]
    pub straggler_distance: Option<u64>,
    /// Fraction of events late in system time (bitemporal.sql): their system time `st` is
    /// their arrival position minus a lag uniform in 1..=--system-lag.
    #[arg(long, value_name = "FRACTION", default_value_t = Workload::default().system_late)]
    pub system_late: f64,
    /// The largest lag of an event late in system time, in arrival positions.
    #[arg(long, value_name = "POSITIONS", default_value_t = Workload::default().system_lag)]
    pub system_lag: u64,
    /// Number of commits (files) the arrival order is cut into.
    #[arg(long, default_value_t = Workload::default().commits)]
    pub commits: u64,
    /// Seed of every random draw.
    #[arg(long, default_value_t = Workload::default().seed)]
    pub seed: u64,
    /// Format of the commit files.
    #[arg(long, value_enum, default_value_t = FormatArg::Csv)]
    pub format: FormatArg,
}

impl GenerateArgs {
    /// The workload these arguments describe (not yet validated).
    pub fn workload(&self) -> Workload {
        Workload {
            events: self.events,
            keys: self.keys,
            deletes: self.deletes,
            truncates: self.truncates,
            partial: self.partial,
            width: self.width,
            displacement: self.displacement,
            stragglers: self.stragglers,
            straggler_distance: self.straggler_distance.unwrap_or_else(|| {
                Workload::default_straggler_distance(self.events, self.displacement)
            }),
            system_late: self.system_late,
            system_lag: self.system_lag,
            commits: self.commits,
            seed: self.seed,
        }
    }
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

//! clap definitions; validation only, no I/O.

use clap::{Parser, Subcommand, ValueEnum};
use scdflow::bench::Flow;
use scdflow::gen::Workload;
use std::path::PathBuf;

/// `--read-halves-over`'s default: a few thousand records, about where a second thread starts to
/// pay for its start and the scan for the split (a 10,000-event commit of the generated workload,
/// 440 KB, reads about half a millisecond faster in halves).
pub const READ_HALVES_OVER: u64 = 256 << 10;

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
    /// Return a durable pipeline's state, change feeds, tables and published targets to an
    /// earlier commit; the next run reprocesses the input consumed after it.
    Rewind(RewindArgs),
    /// Run SQL statements against a warehouse of Delta tables (CREATE SCHEMA, CREATE TABLE,
    /// INSERT, DROP TABLE, SELECT).
    Sql(SqlArgs),
    /// Measure per-commit latency under reordering (scdflow against a sequential state loop
    /// and a differential `reduce`, in the same run) and optionally write a report with plots.
    Bench(BenchArgs),
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
    #[command(flatten)]
    pub warehouse: WarehouseArgs,
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
    /// Each process writes its partition of every table and change feed (the keys its workers
    /// own) as `<target>.part-<process>.<ext>`, instead of process 0 writing them whole.
    #[arg(long, conflicts_with = "state")]
    pub partitioned_output: bool,
    /// With several processes: an input file of at least this many bytes is split, each process
    /// parsing the records in its share of it (0 = never split).
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    pub split_files_over: u64,
    /// In one process: a commit's file of at least this many bytes, read while the workers wait
    /// for it (a `--follow` step, a run's first commit), is parsed by two threads, each taking
    /// half its records (0 = never).
    #[arg(long, value_name = "BYTES", default_value_t = READ_HALVES_OVER)]
    pub read_halves_over: u64,
    /// With several processes: give up (exit 2) when the processes are not all connected and
    /// agreed within this many seconds (0 = wait forever).
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    pub connect_timeout: f64,
    /// With several processes: a process that says nothing for this many seconds — not
    /// answering the handshake, or sending no heartbeat during the run (stopped, hung,
    /// unreachable) — is lost, and every other process exits 2 (0 = wait forever).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub peer_timeout: f64,
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
    /// Keep the pipeline's state in DIR: a later run with the same DIR processes only new input
    /// (new files, appended lines, new snapshots) and continues the change feeds.
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// With --state: forget the saved state and reprocess all input (ONCE flows run again).
    #[arg(long, requires = "state")]
    pub full_refresh: bool,
    /// With --state: keep running, committing new files and appended lines as they appear;
    /// SIGINT or SIGTERM finishes the current commit and exits 0.
    #[arg(long, requires = "state")]
    pub follow: bool,
    /// With --follow: how often to look for new input, in seconds, besides when a watched
    /// input directory changes (new files, appended lines and new Delta versions are taken at
    /// once; the poll finds what a watch misses, such as files another machine writes).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 1.0,
        requires = "follow"
    )]
    pub poll: f64,
    /// With --follow: rewrite the target files and metrics.json at most this often, in
    /// seconds (each rewrite costs time proportional to the tables; change feeds are appended
    /// at every commit), and once more when stopping.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 10.0,
        requires = "follow"
    )]
    pub tables_every: f64,
}

/// `scdflow rewind`.
#[derive(Debug, clap::Args)]
pub struct RewindArgs {
    /// The pipeline file (SQL) the state was written by.
    pub pipeline: PathBuf,
    /// The state directory.
    #[arg(long, value_name = "DIR")]
    pub state: PathBuf,
    /// The commit to return to (one the state still retains; see `scdflow run`'s state line).
    #[arg(long, value_name = "VERSION")]
    pub to: u64,
    /// Output directory, as the runs gave it.
    #[arg(long, default_value = "out")]
    pub out: PathBuf,
    #[command(flatten)]
    pub warehouse: WarehouseArgs,
    /// Output format, as the runs gave it.
    #[arg(long, value_enum, default_value_t = FormatArg::Csv)]
    pub format: FormatArg,
}

/// `scdflow query`.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// The pipeline file (SQL).
    pub pipeline: PathBuf,
    /// `SELECT * FROM target [FOR SYSTEM_TIME AS OF '...'] [FOR BUSINESS_TIME AS OF '...']
    /// [WHERE column = literal [AND ...]]`.
    pub query: String,
    #[command(flatten)]
    pub warehouse: WarehouseArgs,
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

/// `scdflow sql`.
#[derive(Debug, clap::Args)]
pub struct SqlArgs {
    /// The statements, separated by `;` (or give --file).
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    pub statements: Option<String>,
    /// Read the statements from this file.
    #[arg(short = 'f', long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub warehouse: WarehouseArgs,
    /// How query results are printed.
    #[arg(long, value_enum, default_value_t = ResultFormat::Table)]
    pub format: ResultFormat,
    /// How long a statement on a pipeline's target waits for a run that is writing it, in
    /// seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = scdflow::warehouse::LOCK_WAIT.as_secs())]
    pub lock_wait: u64,
}

/// Where warehouse tables are, and the defaults for short names.
#[derive(Debug, clap::Args)]
pub struct WarehouseArgs {
    /// The warehouse directory: `catalog.schema.table` is DIR/catalog/schema/table, a Delta
    /// table.
    #[arg(long, value_name = "DIR")]
    pub warehouse: Option<PathBuf>,
    /// The catalog of one- and two-part names.
    #[arg(long, default_value = scdflow::warehouse::DEFAULT_CATALOG)]
    pub catalog: String,
    /// The schema of one-part names.
    #[arg(long, default_value = scdflow::warehouse::DEFAULT_SCHEMA)]
    pub schema: String,
}

impl WarehouseArgs {
    /// The warehouse, when `--warehouse` is given.
    pub fn open(&self) -> scdflow::Result<Option<scdflow::warehouse::Warehouse>> {
        let Some(dir) = &self.warehouse else {
            return Ok(None);
        };
        scdflow::warehouse::Warehouse::open(dir, Some(&self.catalog), Some(&self.schema)).map(Some)
    }
}

/// `scdflow sql --format`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ResultFormat {
    /// Aligned columns with a header.
    Table,
    /// CSV with a header line.
    Csv,
    /// JSON lines.
    Jsonl,
}

/// `scdflow check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The pipeline file (SQL).
    pub pipeline: PathBuf,
    #[command(flatten)]
    pub warehouse: WarehouseArgs,
}

/// The generator knobs that `generate` and `bench` share (see `scdflow::gen::Workload`).
#[derive(Debug, clap::Args)]
pub struct ContentArgs {
    /// Fraction of DELETE events.
    #[arg(long, value_name = "FRACTION", default_value_t = Workload::default().deletes)]
    pub deletes: f64,
    /// Fraction of TRUNCATE events (SCD1 only: SCD2 and bitemporal pipelines leave them out).
    #[arg(long, value_name = "FRACTION", default_value_t = Workload::default().truncates)]
    pub truncates: f64,
    /// Fraction of partial upserts (`COLUMNS TO UPDATE`).
    #[arg(long, value_name = "FRACTION", default_value_t = Workload::default().partial)]
    pub partial: f64,
    /// Number of STRING payload columns.
    #[arg(long, default_value_t = Workload::default().width)]
    pub width: usize,
    /// Fraction of stragglers, events late by --straggler-distance positions.
    #[arg(long, value_name = "FRACTION", default_value_t = Workload::default().stragglers)]
    pub stragglers: f64,
    /// How late a straggler arrives, in positions [default: 100 * D, or events / 10 if D = 0].
    #[arg(long, value_name = "POSITIONS")]
    pub straggler_distance: Option<u64>,
    /// Seed of every random draw.
    #[arg(long, default_value_t = Workload::default().seed)]
    pub seed: u64,
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
    /// The events' contents and stragglers.
    #[command(flatten)]
    pub content: ContentArgs,
    /// D: each event arrives up to D positions away from sequence order (0 = in order,
    /// >= events = shuffled).
    #[arg(long, value_name = "D", default_value_t = Workload::default().displacement)]
    pub displacement: u64,
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
    /// Format of the commit files.
    #[arg(long, value_enum, default_value_t = FormatArg::Csv)]
    pub format: FormatArg,
}

impl GenerateArgs {
    /// The workload these arguments describe (not yet validated).
    pub fn workload(&self) -> Workload {
        let c = &self.content;
        Workload {
            events: self.events,
            keys: self.keys,
            deletes: c.deletes,
            truncates: c.truncates,
            partial: c.partial,
            width: c.width,
            displacement: self.displacement,
            stragglers: c.stragglers,
            straggler_distance: c.straggler_distance.unwrap_or_else(|| {
                Workload::default_straggler_distance(self.events, self.displacement)
            }),
            system_late: self.system_late,
            system_lag: self.system_lag,
            commits: self.commits,
            seed: c.seed,
        }
    }
}

/// `scdflow bench`: the generator's knobs (see `scdflow::gen::Workload`), the sweeps and the
/// feeding; `scdflow::bench` documents what is measured.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Number of events of every workload.
    #[arg(long, default_value_t = 200_000)]
    pub events: u64,
    /// The numbers of keys K of the history sweep (history length events/K per key); the
    /// displacement sweep runs at the largest.
    #[arg(long, value_name = "K,...", value_delimiter = ',', default_values_t = [100, 1_000, 10_000, 100_000])]
    pub keys: Vec<u64>,
    /// The displacements D of the displacement sweep; the history sweep runs at their median.
    #[arg(long, value_name = "D,...", value_delimiter = ',', default_values_t = [0, 1_000, 100_000])]
    pub displacement: Vec<u64>,
    /// B: events per commit.
    #[arg(long, value_name = "B", default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: u64,
    /// R: offer R events per second in an open loop (commit i due at i*B/R seconds; latency
    /// counted from the due time); without it, a closed loop.
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
    /// Worker threads of the dataflow systems (the state loop uses one).
    #[arg(short = 'w', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub workers: u16,
    /// Flow kinds to measure.
    #[arg(long, value_name = "FLOW,...", value_enum, value_delimiter = ',', default_values_t = [FlowArg::Scd1, FlowArg::Scd2, FlowArg::Bitemporal, FlowArg::Snapshot])]
    pub flows: Vec<FlowArg>,
    /// Systems to measure, in this order.
    #[arg(long, value_name = "SYSTEM,...", value_enum, value_delimiter = ',', default_values_t = [SystemArg::Scdflow, SystemArg::StateLoop, SystemArg::DdReduce])]
    pub systems: Vec<SystemArg>,
    /// The events' contents and stragglers.
    #[command(flatten)]
    pub content: ContentArgs,
    /// Fraction of events late in system time (bitemporal only).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.01)]
    pub system_late: f64,
    /// The largest lag of an event late in system time, in positions [default: 10 * B, ten
    /// commits].
    #[arg(long, value_name = "POSITIONS")]
    pub system_lag: Option<u64>,
    /// Stop handing commits to a system once its run has taken this many seconds (0: no
    /// limit); its figures then cover the first commits only, which the table marks. This
    /// bounds the dd reduce baseline, whose commits grow slower with every event of history.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub budget: f64,
    /// Feed this many commits first without counting their latencies: the percentiles are
    /// then those of commits on a history of at least WARMUP * B events (the DuckDB peer
    /// bulk-loads them, untimed, with its --preload).
    #[arg(long, value_name = "COMMITS", default_value_t = 0)]
    pub warmup: u64,
    /// Write DIR/report.md (every figure, the command, the machine) and SVG plots of latency
    /// percentiles against D and against history length per key.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Also run the peers on the same workloads written as CSV files: DuckDB
    /// (benches/peers/duckdb_incremental.py, SCD1 and SCD2; needs python3 with the duckdb
    /// package) and Apache Flink (benches/peers/flink_dedup.py, SCD1 throughput; needs the
    /// apache-flink package and Java). A peer that cannot run is skipped with a note.
    #[arg(long)]
    pub peers: bool,
    /// The DuckDB peer's script [default: benches/peers/duckdb_incremental.py of the source
    /// tree, else of the working directory].
    #[arg(long, value_name = "FILE")]
    pub peer_script: Option<PathBuf>,
    /// The Flink peer's script [default: benches/peers/flink_dedup.py, found likewise].
    #[arg(long, value_name = "FILE")]
    pub flink_script: Option<PathBuf>,
    /// The Python that runs the Flink peer (where apache-flink is installed, e.g. a virtual
    /// environment's bin/python).
    #[arg(long, value_name = "PYTHON", default_value = "python3")]
    pub flink_python: String,
}

impl BenchArgs {
    /// The suite these arguments describe (not yet validated).
    pub fn suite(&self) -> scdflow::bench::Suite {
        let base = Workload::default();
        let c = &self.content;
        let workload = Workload {
            events: self.events,
            deletes: c.deletes,
            truncates: c.truncates,
            partial: c.partial,
            width: c.width,
            stragglers: c.stragglers,
            straggler_distance: c.straggler_distance.unwrap_or(base.straggler_distance),
            system_late: self.system_late,
            system_lag: self
                .system_lag
                .unwrap_or_else(|| self.batch.saturating_mul(10)),
            seed: c.seed,
            ..base
        };
        let mut flows = Vec::new();
        for f in &self.flows {
            let flow = Flow::from(*f);
            if !flows.contains(&flow) {
                flows.push(flow);
            }
        }
        let mut systems = Vec::new();
        for s in &self.systems {
            let system = scdflow::bench::System::from(*s);
            if !systems.contains(&system) {
                systems.push(system);
            }
        }
        scdflow::bench::Suite {
            workload,
            default_straggler_distance: c.straggler_distance.is_none(),
            batch: self.batch,
            displacements: self.displacement.clone(),
            keys: self.keys.clone(),
            flows,
            systems,
            workers: usize::from(self.workers),
            rate: self.rate,
            budget: (self.budget != 0.0).then(|| {
                std::time::Duration::try_from_secs_f64(self.budget)
                    .unwrap_or(std::time::Duration::ZERO)
            }),
            warmup: self.warmup,
        }
    }
}

/// `--flows`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FlowArg {
    /// SCD type 1.
    Scd1,
    /// SCD type 2.
    Scd2,
    /// Bitemporal.
    Bitemporal,
    /// AUTO CDC FROM SNAPSHOT into SCD type 2: each commit a full snapshot of the source
    /// table after the commit's events.
    Snapshot,
}

impl From<FlowArg> for Flow {
    fn from(f: FlowArg) -> Self {
        match f {
            FlowArg::Scd1 => Flow::Scd1,
            FlowArg::Scd2 => Flow::Scd2,
            FlowArg::Bitemporal => Flow::Bitemporal,
            FlowArg::Snapshot => Flow::Snapshot,
        }
    }
}

/// `--systems`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SystemArg {
    /// The engine.
    Scdflow,
    /// The engine's state machines in one thread, without timely.
    StateLoop,
    /// A differential `reduce` per key over the reference model.
    DdReduce,
    /// The typed operators for embedders (`u64` keys, fixed-width images; SCD1 and SCD2).
    Typed,
    /// The typed states in one thread, without timely.
    TypedLoop,
}

impl From<SystemArg> for scdflow::bench::System {
    fn from(s: SystemArg) -> Self {
        match s {
            SystemArg::Scdflow => scdflow::bench::System::Scdflow,
            SystemArg::StateLoop => scdflow::bench::System::StateLoop,
            SystemArg::DdReduce => scdflow::bench::System::DdReduce,
            SystemArg::Typed => scdflow::bench::System::Typed,
            SystemArg::TypedLoop => scdflow::bench::System::TypedLoop,
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

/// Parses the process arguments. Help and version go to stdout (exit 0); an error is one line
/// on stderr with exit status 2, like every other error of the binary.
pub fn parse() -> Args {
    match Args::try_parse() {
        Ok(args) => args,
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            e.exit()
        }
        Err(e) => {
            eprintln!("{}", one_line(&e.render().to_string()));
            std::process::exit(2)
        }
    }
}

/// clap's error text as one line: the `error:` line with the indented lines that follow it
/// (the missing arguments), its `tip:`s, and where to find help.
fn one_line(text: &str) -> String {
    let mut line = String::new();
    let mut details = Vec::new();
    let mut tips = Vec::new();
    let mut after_error = false;
    for raw in text.lines() {
        let l = raw.trim();
        if l.starts_with("error:") && line.is_empty() {
            line = l.to_string();
            after_error = true;
            continue;
        }
        after_error &= raw.starts_with(char::is_whitespace) && !l.is_empty();
        if after_error {
            details.push(l);
        } else if let Some(tip) = l.strip_prefix("tip:") {
            tips.push(tip.trim());
        }
    }
    if !details.is_empty() {
        line = format!("{line} {}", details.join(", "));
    }
    if line.is_empty() {
        line = format!(
            "error: {}",
            text.lines().next().unwrap_or("invalid arguments")
        );
    }
    if !tips.is_empty() {
        line = format!("{line} ({})", tips.join("; "));
    }
    format!("{line}; see --help")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_errors_become_one_line() {
        let e = Args::try_parse_from(["scdflow", "bench", "--evnts", "3"]).unwrap_err();
        let line = one_line(&e.render().to_string());
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(
            line.starts_with("error: unexpected argument '--evnts'"),
            "{line}"
        );
        assert!(line.contains("--events"), "the tip survives: {line}");
    }

    /// Issue 13, item 12: the missing argument is named.
    #[test]
    fn missing_arguments_are_named() {
        for (args, missing) in [
            (&["scdflow", "run"][..], "<PIPELINE>"),
            (&["scdflow", "query", "p.sql"][..], "<QUERY>"),
            (
                &["scdflow", "run", "p.sql", "--follow"][..],
                "--state <DIR>",
            ),
        ] {
            let e = Args::try_parse_from(args).unwrap_err();
            let line = one_line(&e.render().to_string());
            assert_eq!(line.lines().count(), 1, "{line}");
            assert!(
                line.starts_with("error: the following required arguments were not provided: ")
                    && line.contains(missing),
                "{args:?}: {line}"
            );
        }
    }

    #[test]
    fn bench_defaults_describe_both_sweeps() {
        let args = Args::try_parse_from(["scdflow", "bench"]).unwrap();
        let Command::Bench(b) = args.command else {
            panic!("bench")
        };
        let suite = b.suite();
        suite.validate().unwrap();
        assert_eq!(suite.points().len(), 6);
        assert_eq!(suite.workload.system_lag, 10_000);
        assert_eq!(suite.rate, None);
    }
}

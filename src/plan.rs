//! The validated pipeline: what the SQL front end produces and the runtime executes.
//!
//! Everything here is resolved: column references are indices, types are known, input paths are
//! joined to the pipeline file's directory. Building a `Pipeline` is where every user error is found; executing one never
//! fails on the pipeline's shape, only on data.

use crate::expr::Expr;
use crate::value::{DataType, Row, Schema};
use serde::Serialize;
use std::path::PathBuf;

/// Default tombstone retention (two days), SPEC 2.8.
pub const DEFAULT_TOMBSTONE_GC_SECONDS: u64 = 172_800;

/// A whole pipeline file.
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// The pipeline file.
    pub file: PathBuf,
    /// Append-only streaming tables (read from files or from other such tables), in dependency
    /// order: a table only reads tables before it.
    pub tables: Vec<SourceTable>,
    /// Tables maintained by AUTO CDC flows.
    pub targets: Vec<Target>,
    /// AUTO CDC flows, in declaration order.
    pub flows: Vec<CdcFlow>,
    /// AUTO CDC FROM SNAPSHOT flows, in declaration order.
    pub snapshot_flows: Vec<SnapshotFlow>,
    /// REPLACE USING flows, in declaration order.
    pub replace_flows: Vec<ReplaceFlow>,
    /// Problems that do not stop the pipeline (e.g. D9), each `file:line: message`.
    pub warnings: Vec<String>,
}

impl Pipeline {
    /// The targets whose change data feeds table `t`'s rows come from, directly or through
    /// the tables it reads (none for a table of files, values or warehouse tables).
    pub fn feeding_targets(&self, t: usize) -> Vec<usize> {
        let mut feeding = Vec::new();
        let mut todo = vec![t];
        while let Some(table) = todo.pop() {
            match &self.tables[table].input {
                SourceInput::TargetFeed(target) if !feeding.contains(target) => {
                    feeding.push(*target)
                }
                input => todo.extend_from_slice(input.parents()),
            }
        }
        feeding.sort_unstable();
        feeding
    }

    /// The published tables (targets and streaming tables) whose rows come from target `t`'s
    /// change data feed in this pipeline, directly or through other tables and targets.
    pub fn feed_readers(&self, t: usize) -> Vec<&str> {
        let mut sources: Vec<(usize, usize)> = Vec::new();
        sources.extend(self.flows.iter().map(|f| (f.target, f.source)));
        sources.extend(self.replace_flows.iter().map(|f| (f.target, f.source)));
        let mut readers: Vec<usize> = vec![t];
        let mut grew = true;
        while grew {
            grew = false;
            for &(target, source) in &sources {
                let fed = self.feeding_targets(source);
                if !readers.contains(&target) && fed.iter().any(|f| readers.contains(f)) {
                    readers.push(target);
                    grew = true;
                }
            }
        }
        let feeds = |table: usize| self.feeding_targets(table);
        let targets = readers[1..].iter().map(|&r| self.targets[r].name.as_str());
        let tables = (self.tables.iter().enumerate())
            .filter(|(i, table)| {
                table.published.is_some() && feeds(*i).iter().any(|f| readers.contains(f))
            })
            .map(|(_, table)| table.name.as_str());
        targets.chain(tables).collect()
    }

    /// The tables a run publishes in a warehouse, in the order runs, states and their
    /// manifests list them: every target, then every streaming table the pipeline declares
    /// ([`SourceTable::published`]), whose Delta table gets each commit's rows appended.
    pub fn published(&self) -> Vec<PublishedTable<'_>> {
        let targets = self
            .targets
            .iter()
            .enumerate()
            .map(|(t, target)| PublishedTable {
                name: &target.name,
                schema: &target.schema,
                properties: &target.properties,
                of: Publishes::Target(t),
            });
        let tables = self.tables.iter().enumerate().filter_map(|(t, table)| {
            Some(PublishedTable {
                name: &table.name,
                schema: &table.schema,
                properties: table.published.as_ref()?,
                of: Publishes::Table(t),
            })
        });
        targets.chain(tables).collect()
    }

    /// Per target, the stage of a commit in which it is applied: 0 for a target whose flows
    /// read no target's change data feed, else one more than the latest stage of the targets
    /// feeding it. A commit applies its stages in order, each stage's changes feeding the
    /// later ones' flows in the same commit. The SQL front end refuses cycles; a cycle here
    /// (a pipeline built by hand) leaves its targets at the number of targets.
    ///
    /// ```
    /// use scdflow::driver::{evaluate, Options};
    /// use scdflow::value::{Row, Value};
    ///
    /// // `latest` keeps, per key, the version of `hist` that began last, from `hist`'s change
    /// // data feed in the same commit.
    /// let sql = "
    ///   CREATE STREAMING TABLE src AS SELECT * FROM VALUES (1, 'a', 1), (1, 'b', 2), (2, 'c', 1)
    ///     AS t(k, v, s);
    ///   CREATE STREAMING TABLE hist;
    ///   CREATE FLOW h AS AUTO CDC INTO hist FROM STREAM(src) KEYS (k) SEQUENCE BY s
    ///     COLUMNS * EXCEPT (s) STORED AS SCD TYPE 2;
    ///   CREATE STREAMING TABLE began AS SELECT k, v, __START_AT AS at
    ///     FROM STREAM(hist) WITH (readChangeFeed = true) WHERE _change_type = 'insert';
    ///   CREATE STREAMING TABLE latest;
    ///   CREATE FLOW l AS AUTO CDC INTO latest FROM STREAM(began) KEYS (k) SEQUENCE BY at
    ///     STORED AS SCD TYPE 1;";
    /// let pipeline = scdflow::sql::parse(sql, std::path::Path::new("example.sql")).unwrap();
    /// assert_eq!(pipeline.stages(), vec![0, 1]);
    /// let run = evaluate(&pipeline, &Options { workers: 2, ..Options::default() }, None).unwrap();
    /// let row = |k, v: &str, at| Row::from([Value::Int(k), Value::Str(v.into()), Value::Int(at)]);
    /// assert_eq!(run.targets[1].rows, vec![row(1, "b", 2), row(2, "c", 1)]);
    /// ```
    pub fn stages(&self) -> Vec<usize> {
        let n = self.targets.len();
        let mut sources: Vec<Vec<usize>> = vec![Vec::new(); n];
        for f in &self.flows {
            sources[f.target].push(f.source);
        }
        for f in &self.replace_flows {
            sources[f.target].push(f.source);
        }
        for f in &self.snapshot_flows {
            if let SnapshotSource::Table { table } = f.source {
                sources[f.target].push(table);
            }
        }
        let feeding: Vec<Vec<usize>> = (sources.iter())
            .map(|tables| {
                tables
                    .iter()
                    .flat_map(|&t| self.feeding_targets(t))
                    .collect()
            })
            .collect();
        let mut stages = vec![0; n];
        // Longest paths in an acyclic graph of n nodes settle within n rounds.
        for _ in 0..n {
            let mut changed = false;
            for t in 0..n {
                let stage = (feeding[t].iter())
                    .map(|&u| stages[u] + 1)
                    .max()
                    .unwrap_or(0)
                    .min(n);
                changed |= stage != stages[t];
                stages[t] = stage;
            }
            if !changed {
                break;
            }
        }
        stages
    }
}

/// A table a run publishes ([`Pipeline::published`]).
#[derive(Clone, Copy, Debug)]
pub struct PublishedTable<'p> {
    /// Its name in the pipeline (as declared: qualified names are full).
    pub name: &'p str,
    /// Its columns.
    pub schema: &'p Schema,
    /// The `TBLPROPERTIES` its Delta table takes.
    pub properties: &'p std::collections::BTreeMap<String, String>,
    /// What it holds.
    pub of: Publishes,
}

/// What a published table holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Publishes {
    /// Target `t`'s rows, maintained from its change feed.
    Target(usize),
    /// Source table `t`'s rows: each commit's appended.
    Table(usize),
}

/// Input file format of `read_files`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Format {
    /// RFC 4180 CSV; an empty unquoted field is NULL.
    Csv,
    /// JSON lines: one object per line; `null` is NULL.
    Json,
    /// Apache Parquet: read whole (a file is one commit, never a growing one), columns by name.
    Parquet,
}

/// Where a streaming table's rows come from.
#[derive(Clone, Debug)]
pub enum SourceInput {
    /// `read_files(path, ...)`: a file, or a directory whose files are read in name order.
    Files {
        /// The path, joined to the pipeline file's directory.
        path: PathBuf,
        /// File format.
        format: Format,
        /// CSV only: whether the first line is a header (default true).
        header: bool,
        /// The schema of the files (declared with `schema => ...` or inferred, D17).
        file_schema: Schema,
        /// Whether `file_schema` was declared (true) or inferred (false).
        declared: bool,
    },
    /// `FROM STREAM(other)`: index into [`Pipeline::tables`].
    Table(usize),
    /// The rows of several tables (indices into [`Pipeline::tables`]), already in this
    /// table's schema: the append flows into one streaming table, each an implicit table.
    Union(Vec<usize>),
    /// `VALUES` rows written in the pipeline: one commit, read once.
    Values {
        /// The rows, laid out as `schema`.
        rows: Vec<Row>,
        /// Their columns: the alias's names, each typed by the values it holds.
        schema: Schema,
    },
    /// `STREAM(t) WITH (readChangeFeed = true)` of target `t` (index into
    /// [`Pipeline::targets`]) of this pipeline: each commit's changes of the target, in the same
    /// commit, as the target's columns followed by `_change_type`, `_commit_version` (the
    /// commit) and `_commit_timestamp` (its time). See [`Pipeline::stages`].
    TargetFeed(usize),
    /// A Delta table of the warehouse, read as `read` says.
    Delta {
        /// The table's directory.
        dir: PathBuf,
        /// Its full name, as messages give it.
        table: String,
        /// How its versions become commits.
        read: DeltaRead,
    },
}

/// How a pipeline reads a Delta table of the warehouse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeltaRead {
    /// A stream (`FROM STREAM(catalog.schema.table)`): each version from `starting_version`
    /// (0 without one) that adds rows is a commit. A version that removes rows is an error, as
    /// in Spark's stream, unless `skip_change_commits` passes over it.
    Appends {
        /// `startingVersion`.
        starting_version: Option<u64>,
        /// `skipChangeCommits`.
        skip_change_commits: bool,
    },
    /// A snapshot flow's query (`FROM SNAPSHOT (SELECT ... FROM catalog.schema.table)`): a
    /// run's commit is the table's latest version, whole, when it is newer than the last one
    /// read.
    Snapshots,
    /// The change data feed (`STREAM(t) WITH (readChangeFeed = true)`): each version's
    /// changes are a commit, the table's columns followed by `_change_type`,
    /// `_commit_version` and `_commit_timestamp`. From `starting_version`, or, as Spark does
    /// without one, first the latest version whole as `insert`s, then each later version.
    ChangeFeed {
        /// `startingVersion`.
        starting_version: Option<u64>,
    },
}

impl DeltaRead {
    /// The version a stream starts at when nothing was read yet.
    pub fn starting_version(self) -> Option<u64> {
        match self {
            DeltaRead::Appends {
                starting_version, ..
            }
            | DeltaRead::ChangeFeed { starting_version } => starting_version,
            DeltaRead::Snapshots => None,
        }
    }
}

impl SourceInput {
    /// The tables whose rows this input reads (none for files, values and Delta tables).
    pub fn parents(&self) -> &[usize] {
        match self {
            SourceInput::Table(p) => std::slice::from_ref(p),
            SourceInput::Union(ps) => ps,
            _ => &[],
        }
    }
}

/// An append-only streaming table.
#[derive(Clone, Debug)]
pub struct SourceTable {
    /// Table name.
    pub name: String,
    /// Schema of the rows this table holds (after projection).
    pub schema: Schema,
    /// Where the rows come from.
    pub input: SourceInput,
    /// `SELECT` list compiled against the input's schema; `None` for `SELECT *`.
    pub projection: Option<Vec<Expr>>,
    /// `WHERE` predicate compiled against the input's schema.
    pub filter: Option<Expr>,
    /// An `INSERT INTO ONCE` flow's table: read only until a durable state has committed.
    pub once: bool,
    /// For a streaming table the pipeline declares, planned with a warehouse: the
    /// `TBLPROPERTIES` of the Delta table a run publishes it as, each commit's rows appended
    /// ([`Pipeline::published`]). `None` without a warehouse, and for views and the implicit
    /// tables planning adds.
    pub published: Option<std::collections::BTreeMap<String, String>>,
    /// `CONSTRAINT ... EXPECT` on the table, compiled against [`SourceTable::schema`] and
    /// checked on every row after projection.
    pub expectations: Vec<Expectation>,
    /// Line of the defining statement in the pipeline file.
    pub line: u64,
}

/// What a violated expectation does (SPEC 2.6, issue "expectations").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum OnViolation {
    /// Keep the row and count the violation (the default).
    Warn,
    /// Remove the row before any CDC logic; it sets no sequence floor.
    DropRow,
    /// Fail the commit with the constraint's name and the row; nothing of it is applied.
    FailUpdate,
}

/// `CONSTRAINT name EXPECT (expr) [ON VIOLATION ...]`.
#[derive(Clone, Debug)]
pub struct Expectation {
    /// Constraint name.
    pub name: String,
    /// The condition, compiled against the schema of the rows it checks; a row violates the
    /// expectation unless the condition is TRUE.
    pub condition: Expr,
    /// What a violation does.
    pub action: OnViolation,
    /// Line of the constraint in the pipeline file.
    pub line: u64,
}

/// Which kind of flow maintains a target (a target has flows of one kind only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum TargetKind {
    /// `AUTO CDC` change-feed flows ([`CdcFlow`]).
    #[default]
    AutoCdc,
    /// One `AUTO CDC FROM SNAPSHOT` flow ([`SnapshotFlow`]); the sequence is the snapshot
    /// version (BIGINT). Also a REPLACE WHERE flow's target ([`Target::replace_where`]),
    /// whose flow is a [`SnapshotFlow`] reading its table whole at each new version.
    Snapshot,
    /// One `REPLACE USING` flow ([`ReplaceFlow`]); `keys` are the replace keys, `scd` is
    /// `Type1`, and rows are whole source rows (several per key).
    ReplaceUsing {
        /// The `SEQUENCE BY` column, as an index into the target's schema (the same as
        /// [`ReplaceFlow::sequence`]).
        sequence: usize,
    },
}

/// SCD type of a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ScdType {
    /// One row per live key.
    Type1,
    /// One row per version of each key, with `__START_AT` / `__END_AT`.
    Type2,
    /// `STORED AS BITEMPORAL`: the system-time versioning of the key's SCD2 history, with
    /// `__START_AT`, `__END_AT`, `__SYSTEM_START_AT` and `__SYSTEM_END_AT` (SPEC 3.11, D15).
    Bitemporal,
}

impl ScdType {
    /// Whether rows carry the business interval `__START_AT`, `__END_AT` (SCD2 and bitemporal).
    pub fn has_history(self) -> bool {
        self != ScdType::Type1
    }
}

/// A table maintained by one or more AUTO CDC flows (D16: same keys, sequence type, SCD type and
/// columns for all of them).
#[derive(Clone, Debug)]
pub struct Target {
    /// Table name.
    pub name: String,
    /// The kind of flow that maintains it.
    pub kind: TargetKind,
    /// Output schema: the image columns, then `__START_AT`, `__END_AT` for SCD2 and bitemporal
    /// targets, then `__SYSTEM_START_AT`, `__SYSTEM_END_AT` for bitemporal ones.
    pub schema: Schema,
    /// Number of image columns (the schema's prefix that flows write).
    pub image_len: usize,
    /// Indices of the key columns within the image.
    pub keys: Vec<usize>,
    /// SCD type.
    pub scd: ScdType,
    /// Type of the sequence (and so of `__START_AT` / `__END_AT`).
    pub sequence_type: DataType,
    /// Bitemporal targets: type of `SYSTEM SEQUENCE BY` (and so of `__SYSTEM_START_AT` /
    /// `__SYSTEM_END_AT`); `None` otherwise.
    pub system_sequence_type: Option<DataType>,
    /// SCD2: per image column, whether a change opens a new version.
    pub tracked: Vec<bool>,
    /// Whether any flow into this target writes partial images (D6 field-level semantics).
    pub partial: bool,
    /// `pipelines.cdc.tombstoneGCThresholdInSeconds` (0 = never collect).
    pub tombstone_gc_seconds: u64,
    /// A REPLACE WHERE flow's target (kind [`TargetKind::Snapshot`]): the condition choosing
    /// the rows each update replaces. Its rows are a multiset (`keys` are all image columns,
    /// and equal rows may repeat).
    pub replace_where: Option<ReplaceWhere>,
    /// A materialized view over a target of the pipeline (`CREATE MATERIALIZED VIEW v AS
    /// SELECT ... FROM t`): `t`'s name. Its flow reads `t`'s change data feed; the view takes
    /// no DML.
    pub view_of: Option<String>,
    /// The `TBLPROPERTIES` a published Delta table of the target takes (Delta's own, such as
    /// `delta.checkpointInterval`, and scdflow's `scdflow.vacuumInterval`).
    pub properties: std::collections::BTreeMap<String, String>,
    /// Line of the defining statement.
    pub line: u64,
}

/// How an upsert says which image columns it sets (SPEC 3.5, D6, D7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartialUpdates {
    /// Every upsert sets the whole image.
    Off,
    /// `IGNORE NULL UPDATES [ON ...]`: per image column, whether a NULL leaves the stored value.
    IgnoreNull(Vec<bool>),
    /// `COLUMNS TO UPDATE col`: the source column (index) listing the columns each event sets.
    ColumnsToUpdate(usize),
}

/// One `AUTO CDC` flow.
#[derive(Clone, Debug)]
pub struct CdcFlow {
    /// Flow name.
    pub name: String,
    /// Index into [`Pipeline::targets`].
    pub target: usize,
    /// Index into [`Pipeline::tables`].
    pub source: usize,
    /// Key columns as indices into the source schema, in `KEYS` order.
    pub keys: Vec<usize>,
    /// `SEQUENCE BY`, compiled against the source schema.
    pub sequence: Expr,
    /// `SYSTEM SEQUENCE BY` (bitemporal targets only), compiled against the source schema.
    pub system_sequence: Option<Expr>,
    /// `APPLY AS DELETE WHEN`.
    pub delete_when: Option<Expr>,
    /// `APPLY AS TRUNCATE WHEN`.
    pub truncate_when: Option<Expr>,
    /// Selected source columns (indices, in source order): the image.
    pub columns: Vec<usize>,
    /// Partial update mode.
    pub partial: PartialUpdates,
    /// `AUTO CDC ONCE`.
    pub once: bool,
    /// The target's expectations, compiled against the source schema; checked on every source
    /// row before it becomes an event.
    pub expectations: Vec<Expectation>,
    /// Line of the defining statement.
    pub line: u64,
}

/// Where a snapshot flow's snapshots come from (SPEC 2.3, 2.4, D12).
#[derive(Clone, Debug)]
pub enum SnapshotSource {
    /// `FROM SNAPSHOT read_files('dir', ..., version => 'regex')`: each file whose name matches
    /// the pattern is a full snapshot; the first capture group, as BIGINT, is its version.
    /// Files that do not match are ignored.
    Files {
        /// The directory (or file), joined to the pipeline file's directory.
        path: PathBuf,
        /// The `version` regular expression as written.
        version_pattern: String,
        /// The same, anchored to match whole file names ([`crate::io::version_regex`]).
        version: regex::Regex,
        /// File format.
        format: Format,
        /// CSV only: whether the first line is a header.
        header: bool,
        /// The files' schema (declared or inferred).
        file_schema: Schema,
    },
    /// `FROM SNAPSHOT (SELECT ... FROM table [WHERE ...])`: every commit of `table` is a full
    /// snapshot, versioned by the commit number (periodic snapshots, D12).
    Table {
        /// Index into [`Pipeline::tables`].
        table: usize,
    },
    /// `FROM SNAPSHOT (query) WITH VERSION (version query)`: the version query says which
    /// version comes next, the snapshot query reads it (SPEC 2.4).
    Versioned(Box<VersionedSnapshots>),
}

/// The two queries of a `WITH VERSION` snapshot flow, evaluated between commits (SPEC 2.4).
///
/// Before each snapshot the version query runs with `last_snapshot_version()` returning the
/// last committed version (no row before the first); no row means nothing new. Otherwise the
/// snapshot query runs with `current_snapshot_version()` returning that version, and its rows
/// are the snapshot. Both are kept as parsed, since their subqueries take values only then.
#[derive(Clone)]
pub struct VersionedSnapshots {
    /// The version query.
    pub version_query: sqlparser::ast::Query,
    /// Its one column's name, which the version functions' one column also has.
    pub version_column: String,
    /// What the snapshot query reads.
    pub input: VersionedInput,
    /// The rows the snapshot query reads: the input's columns, then, for files, the
    /// `_metadata` fields ([`METADATA_COLUMNS`]).
    pub input_schema: Schema,
    /// The snapshot query's `SELECT` list over `input_schema`: one expression per column of
    /// [`SnapshotFlow::schema`].
    pub select: Vec<sqlparser::ast::Expr>,
    /// Its `WHERE` over `input_schema`.
    pub filter: Option<sqlparser::ast::Expr>,
    /// Where the queries' names resolve.
    pub names: QueryNames,
}

/// The queries as SQL text, not as syntax trees: a tree's `Debug` holds source positions, and
/// cluster processes compare definitions by their `Debug` text, which layout must not change.
impl std::fmt::Debug for VersionedSnapshots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let select: Vec<String> = self.select.iter().map(ToString::to_string).collect();
        f.debug_struct("VersionedSnapshots")
            .field("version_query", &self.version_query.to_string())
            .field("version_column", &self.version_column)
            .field("input", &self.input)
            .field("input_schema", &self.input_schema)
            .field("select", &select)
            .field("filter", &self.filter.as_ref().map(ToString::to_string))
            .field("names", &self.names)
            .finish()
    }
}

/// The `_metadata` fields a file read gives its rows (as Spark's hidden column): each file's
/// path (as the query wrote it), name, size and modification time.
pub const METADATA_COLUMNS: [(&str, DataType); 4] = [
    ("_metadata.file_path", DataType::String),
    ("_metadata.file_name", DataType::String),
    ("_metadata.file_size", DataType::BigInt),
    ("_metadata.file_modification_time", DataType::Timestamp),
];

/// What a `WITH VERSION` snapshot query reads, whole, each time it runs.
#[derive(Clone, Debug)]
pub enum VersionedInput {
    /// `read_files(path, ...)`: every file there (a `WHERE` on `_metadata` picks them).
    Files {
        /// The directory (or file), resolved.
        path: PathBuf,
        /// The path as the query wrote it: `_metadata.file_path` is under it.
        written: String,
        /// File format.
        format: Format,
        /// CSV only: whether the first line is a header.
        header: bool,
        /// The files' schema (declared or inferred).
        file_schema: Schema,
    },
    /// A Delta table of the warehouse: its latest version.
    Delta {
        /// The table's directory.
        dir: PathBuf,
        /// Its full name.
        table: String,
    },
}

/// Where the names of queries a pipeline runs between commits resolve: the warehouse (its
/// directory and default catalog and schema) and the pipeline file's directory.
#[derive(Clone, Debug, Default)]
pub struct QueryNames {
    /// `(directory, catalog, schema)` of the run's warehouse.
    pub warehouse: Option<(PathBuf, String, String)>,
    /// The pipeline file's directory, which relative paths start from.
    pub base: PathBuf,
}

/// One `AUTO CDC FROM SNAPSHOT` flow.
#[derive(Clone, Debug)]
pub struct SnapshotFlow {
    /// Flow name.
    pub name: String,
    /// Index into [`Pipeline::targets`].
    pub target: usize,
    /// Where snapshots come from.
    pub source: SnapshotSource,
    /// The `SELECT` list of a `Table` source, compiled against the table's schema; `None` for
    /// `SELECT *` and always for `Files` and `Versioned` sources (the files' rows, or the
    /// queries' own).
    pub projection: Option<Vec<Expr>>,
    /// `WHERE` of a `Table` source, compiled like `projection`.
    pub filter: Option<Expr>,
    /// Schema of a snapshot's rows (after projection): the target's image.
    pub schema: Schema,
    /// Key columns as indices into `schema`, in `KEYS` order.
    pub keys: Vec<usize>,
    /// The target's expectations, compiled against `schema`.
    pub expectations: Vec<Expectation>,
    /// `AUTO CDC ONCE`.
    pub once: bool,
    /// Line of the defining statement.
    pub line: u64,
}

/// One `REPLACE USING` flow (SPEC 2.6, 3.12).
#[derive(Clone, Debug)]
pub struct ReplaceFlow {
    /// Flow name.
    pub name: String,
    /// Index into [`Pipeline::targets`].
    pub target: usize,
    /// Index into [`Pipeline::tables`] (`FROM STREAM(src)`).
    pub source: usize,
    /// The `SELECT` list compiled against the source schema (`None` for `SELECT *`); its output
    /// is matched to the target's columns by name (`BY NAME`).
    pub projection: Option<Vec<Expr>>,
    /// `WHERE`, compiled against the source schema.
    pub filter: Option<Expr>,
    /// Replace-key columns as indices into the target's schema.
    pub keys: Vec<usize>,
    /// The `SEQUENCE BY` column as an index into the target's schema.
    pub sequence: usize,
    /// The target's expectations, compiled against the target's schema; checked on every
    /// projected row before per-key deduplication.
    pub expectations: Vec<Expectation>,
    /// `INSERT ONCE`.
    pub once: bool,
    /// Line of the defining statement.
    pub line: u64,
}

/// The condition of a REPLACE WHERE flow (`INSERT INTO t BY NAME REPLACE WHERE condition
/// SELECT ...`): at each update, the target's rows for which it holds are replaced by the
/// query's rows for which it holds; the other rows stay.
///
/// Kept as parsed and compiled at each update's instant ([`ReplaceWhere::at`]), since
/// `CURRENT_DATE()` and `CURRENT_TIMESTAMP()` take that instant's value.
#[derive(Clone)]
pub struct ReplaceWhere {
    /// The condition (`TRUE` for a materialized view).
    pub condition: sqlparser::ast::Expr,
    /// A materialized view's (`CREATE MATERIALIZED VIEW v AS SELECT ...`): its query's rows
    /// replace the whole table at each update.
    pub materialized_view: bool,
    /// The rows it is evaluated on: the target's image.
    pub schema: Schema,
}

impl ReplaceWhere {
    /// The condition compiled for the update at `now` (microseconds since the epoch). It
    /// compiled when the pipeline was planned; an error now (a date out of range at this
    /// instant) is the caller's to treat as a condition that holds for no row.
    pub fn at(&self, now: i64) -> crate::Result<Expr> {
        crate::expr::compile_at(&self.condition, &self.schema, now)
    }

    /// The condition compiled once, when it does not read the clock (no `CURRENT_DATE()`):
    /// then it holds for the same rows at every instant.
    pub fn timeless(&self) -> Option<Expr> {
        crate::expr::compile(&self.condition, &self.schema).ok()
    }
}

/// The condition as SQL text: a syntax tree's `Debug` holds source positions, which cluster
/// processes comparing definitions must not see.
impl std::fmt::Debug for ReplaceWhere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplaceWhere")
            .field("condition", &self.condition.to_string())
            .field("materialized_view", &self.materialized_view)
            .field("schema", &self.schema)
            .finish()
    }
}

/// Where the key, image and interval columns of a table's rows are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsOfLayout {
    /// Key columns (indices into the row, within the image), in `KEYS` order.
    pub keys: Vec<usize>,
    /// Number of image columns: the row's prefix that flows write.
    pub image_len: usize,
    /// `__START_AT`, `__END_AT`.
    pub business: (usize, usize),
    /// `__SYSTEM_START_AT`, `__SYSTEM_END_AT`; `None` for SCD2 tables, whose every row counts as
    /// believed since the beginning of system time and forever (only business time applies).
    pub system: Option<(usize, usize)>,
}

impl AsOfLayout {
    /// The layout of `target`'s rows; `None` for SCD type 1 targets, which have no business
    /// time.
    pub fn of(target: &Target) -> Option<Self> {
        let n = target.image_len;
        let system = match target.scd {
            ScdType::Type1 => return None,
            ScdType::Type2 => None,
            ScdType::Bitemporal => Some((n + 2, n + 3)),
        };
        Some(AsOfLayout {
            keys: target.keys.clone(),
            image_len: n,
            business: (n, n + 1),
            system,
        })
    }

    /// The key values of `row`, in `KEYS` order.
    pub fn key(&self, row: &Row) -> Row {
        row.project(&self.keys)
    }
}

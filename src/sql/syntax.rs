//! The pipeline file as parsed, before any name or type is resolved: what the statement parser
//! produces and the validator consumes. Every piece keeps the line it was written on.

use super::cursor::Name;
use crate::plan::{DeltaRead, OnViolation, ScdType};
use crate::value::DataType;
use sqlparser::ast;

/// A value and the line of the clause (or token) that introduced it.
#[derive(Clone, Debug)]
pub(crate) struct Located<T> {
    pub(crate) value: T,
    pub(crate) line: u64,
}

/// One statement of the file.
#[derive(Debug)]
pub(crate) enum Statement {
    Table(Box<TableStmt>),
    Flow(Box<FlowStmt>),
}

/// `CREATE [OR REFRESH] STREAMING TABLE`.
#[derive(Debug)]
pub(crate) struct TableStmt {
    pub(crate) name: Name,
    pub(crate) line: u64,
    /// A streaming table or a view.
    pub(crate) kind: TableKind,
    /// The declared columns; `None` when the parenthesised list declares none (it may hold
    /// only constraints).
    pub(crate) columns: Option<Vec<ColumnDecl>>,
    /// `CONSTRAINT ... EXPECT` items of the parenthesised list, in order, names unique.
    pub(crate) constraints: Vec<ConstraintDecl>,
    /// `TBLPROPERTIES` as `(key, value, line)`.
    pub(crate) properties: Vec<(String, String, u64)>,
    /// `AS SELECT ...` (or its one append flow's query): the table is an append-only source.
    pub(crate) query: Option<Query>,
    /// Whether the query runs once (an `INSERT INTO ONCE` flow): only until a durable state
    /// has committed.
    pub(crate) once: bool,
    /// The append flow whose query this is, as messages name it (`` flow `f` into `t` ``):
    /// its columns meet the declared ones by name (`BY NAME`), not in order.
    pub(crate) append_flow: Option<String>,
    /// The implicit tables of the append flows into this table, when there are several: its
    /// rows are theirs ([`super::append_flows`]).
    pub(crate) appended: Vec<Name>,
    /// `FLOW AUTO CDC ...` or `FLOW REPLACE USING ...`: the table is a target with one flow of
    /// the same name.
    pub(crate) flow: Option<FlowBody>,
}

/// What a `CREATE` statement declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableKind {
    /// `CREATE STREAMING TABLE`: published in a warehouse, a source's rows as they come.
    StreamingTable,
    /// A table planning adds (an append flow's, a warehouse table's, a target feed's): read by
    /// the pipeline's flows, never published.
    Implicit,
    /// `CREATE [TEMPORARY] VIEW v AS SELECT ...`: a query the pipeline's flows read, never
    /// written by a flow; `temporary` as written (neither kind is published yet).
    View { temporary: bool },
}

impl TableKind {
    /// How messages say that a table with a query is defined by it.
    pub(crate) fn defined_by(self) -> &'static str {
        match self {
            TableKind::StreamingTable | TableKind::Implicit => "defined by its AS SELECT query",
            TableKind::View { .. } => "a view, defined by its query",
        }
    }
}

/// `CONSTRAINT name EXPECT (expr) [ON VIOLATION DROP ROW | ON VIOLATION FAIL UPDATE]`.
#[derive(Debug)]
pub(crate) struct ConstraintDecl {
    pub(crate) name: Name,
    /// The condition; its line is the `CONSTRAINT` keyword's.
    pub(crate) condition: Located<ast::Expr>,
    pub(crate) action: OnViolation,
}

impl TableStmt {
    /// A table planning adds ([`TableKind::Implicit`]), named `name`, whose rows are `query`'s.
    pub(crate) fn implicit(name: Name, query: Query) -> TableStmt {
        TableStmt {
            line: name.line,
            name,
            kind: TableKind::Implicit,
            columns: None,
            constraints: Vec::new(),
            properties: Vec::new(),
            query: Some(query),
            once: false,
            append_flow: None,
            appended: Vec::new(),
            flow: None,
        }
    }

    /// Whether the table is an append-only source (its rows come from a query or append
    /// flows), not a target of AUTO CDC or REPLACE USING flows.
    pub(crate) fn is_source(&self) -> bool {
        self.query.is_some() || !self.appended.is_empty()
    }
}

/// A declared column.
#[derive(Clone, Debug)]
pub(crate) struct ColumnDecl {
    pub(crate) name: Name,
    pub(crate) ty: DataType,
}

/// `SELECT <projection> FROM <from> [WHERE <filter>]`.
#[derive(Debug)]
pub(crate) struct Query {
    /// `None` for `SELECT *`.
    pub(crate) projection: Option<Vec<SelectItem>>,
    pub(crate) from: From,
    /// Whether `from` was written inside `STREAM` (`STREAM(x)` or `STREAM x`).
    pub(crate) streamed: bool,
    /// `WITH (...)` after the streamed table.
    pub(crate) options: ReadOptions,
    pub(crate) filter: Option<Located<ast::Expr>>,
}

/// Spark's reader options after a stream of a table: `STREAM(t) WITH (readChangeFeed = true,
/// startingVersion = 3, skipChangeCommits = true)`. Only a Delta table of the warehouse takes
/// them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReadOptions {
    /// `readChangeFeed`: read the table's change data feed instead of its appends.
    pub(crate) change_feed: bool,
    /// `startingVersion`: the first version read.
    pub(crate) starting_version: Option<u64>,
    /// `skipChangeCommits`: a stream of appends passes over versions that remove rows.
    pub(crate) skip_change_commits: bool,
    /// Where `WITH` is, 0 when no option was given.
    pub(crate) line: u64,
}

/// One item of a SELECT list.
#[derive(Debug)]
pub(crate) enum SelectItem {
    /// `*` among other items: every input column.
    Wildcard { line: u64 },
    Expr {
        expr: Box<ast::Expr>,
        alias: Option<Name>,
        line: u64,
    },
}

/// What a query reads.
#[derive(Debug)]
pub(crate) enum From {
    ReadFiles(ReadFiles),
    Table(Name),
    /// A Delta table of the warehouse (`name` its full name), which an implicit source table
    /// reads ([`super::warehouse_tables`]); never written by the user.
    Warehouse {
        name: String,
        dir: std::path::PathBuf,
        read: DeltaRead,
    },
    /// The change data feed of target `name` of the pipeline, which an implicit source table
    /// reads ([`super::target_feeds`]); never written by the user.
    Feed(Name),
    /// `VALUES (...), (...) [AS] t(a, b, ...)`: rows written in the pipeline.
    Values {
        rows: Vec<Vec<ast::Expr>>,
        /// The alias's column names (`col1`, `col2`, ... when none).
        columns: Vec<Name>,
        line: u64,
    },
}

/// `read_files('path', format => ..., header => ..., schema => ...)`.
#[derive(Debug)]
pub(crate) struct ReadFiles {
    pub(crate) path: String,
    pub(crate) format: Option<String>,
    pub(crate) header: Option<bool>,
    pub(crate) schema: Option<String>,
    /// `version => 'regex'`: only in `AUTO CDC FROM SNAPSHOT read_files(...)`.
    pub(crate) version: Option<String>,
    pub(crate) line: u64,
}

/// `CREATE FLOW name AS AUTO CDC INTO target ...` or `... AS INSERT INTO target ...`.
#[derive(Debug)]
pub(crate) struct FlowStmt {
    pub(crate) name: Name,
    pub(crate) line: u64,
    pub(crate) target: Name,
    pub(crate) body: FlowBody,
}

/// What a flow does.
#[derive(Debug)]
pub(crate) enum FlowBody {
    /// `AUTO CDC`: a change feed (`FROM src`) or snapshots (`FROM SNAPSHOT ...`).
    AutoCdc(Box<CdcClauses>),
    /// `INSERT INTO t BY NAME REPLACE USING (...) SEQUENCE BY s SELECT ...`.
    Replace(Box<ReplaceUsing>),
    /// `INSERT [ONCE] INTO t BY NAME SELECT ...`: an append flow.
    Append(Box<Append>),
    /// `INSERT INTO t BY NAME REPLACE WHERE condition SELECT ...`.
    ReplaceWhere(Box<ReplaceWhere>),
}

/// The pieces of a REPLACE WHERE flow, or of a materialized view's implicit flow (its condition
/// `TRUE`: every update replaces the whole table).
#[derive(Debug)]
pub(crate) struct ReplaceWhere {
    pub(crate) once: bool,
    /// A `CREATE MATERIALIZED VIEW`'s flow.
    pub(crate) view: bool,
    /// The condition; the line is the clause's.
    pub(crate) condition: Located<ast::Expr>,
    pub(crate) query: Query,
}

/// An append flow: its query's rows are appended to a streaming table.
#[derive(Debug)]
pub(crate) struct Append {
    pub(crate) once: bool,
    pub(crate) query: Query,
}

/// The pieces of a REPLACE USING flow.
#[derive(Debug)]
pub(crate) struct ReplaceUsing {
    pub(crate) once: bool,
    /// `REPLACE USING (k, ...)`; the line is the clause's.
    pub(crate) keys: Located<Vec<Name>>,
    /// `SEQUENCE BY`: must turn out to be one column name.
    pub(crate) sequence: Located<ast::Expr>,
    pub(crate) query: Query,
}

/// A column selection: `*`, `(cols)` or `* EXCEPT (cols)`.
#[derive(Clone, Debug)]
pub(crate) enum Selection {
    All,
    Only(Vec<Name>),
    Except(Vec<Name>),
}

/// The clauses of one AUTO CDC flow, each at most once.
#[derive(Debug, Default)]
pub(crate) struct CdcClauses {
    pub(crate) once: bool,
    /// `FROM src` (a change feed).
    pub(crate) source: Option<Name>,
    /// `WITH (...)` after `FROM STREAM(src)`.
    pub(crate) source_options: ReadOptions,
    /// `FROM SNAPSHOT ...` as a query: `FROM SNAPSHOT t` is `SELECT * FROM t`, `FROM SNAPSHOT
    /// read_files(...)` is `SELECT * FROM read_files(...)`. Excludes `source`.
    pub(crate) snapshot: Option<Located<Query>>,
    /// `WITH VERSION (query)` of a snapshot flow.
    pub(crate) version: Option<Located<ast::Query>>,
    pub(crate) keys: Option<Located<Vec<Name>>>,
    pub(crate) ignore_null_updates: Option<Located<Selection>>,
    pub(crate) delete_when: Option<Located<ast::Expr>>,
    pub(crate) truncate_when: Option<Located<ast::Expr>>,
    pub(crate) sequence_by: Option<Located<ast::Expr>>,
    pub(crate) columns: Option<Located<Selection>>,
    pub(crate) stored_as: Option<Located<ScdType>>,
    pub(crate) track_history: Option<Located<Selection>>,
    pub(crate) columns_to_update: Option<Name>,
    /// `SYSTEM SEQUENCE BY` (bitemporal flows).
    pub(crate) system_sequence_by: Option<Located<ast::Expr>>,
    /// The flow of a materialized view over this target of the pipeline, read from its change
    /// data feed ([`super::target_views`]); never written by the user.
    pub(crate) view_of: Option<String>,
}

//! Delta Lake tables on the local file system: created, appended to and read with delta-rs (the
//! `deltalake` crate), their data in Parquet files.
//!
//! Why delta-rs: it is the Rust implementation the Delta ecosystem maintains (the Python
//! `deltalake` package and Polars read and write through it), so its log handling, protocol
//! checks and Parquet statistics are what other readers expect. Only the parts that need no query
//! engine are used (no `datafusion` feature, a much larger build): `CreateBuilder`, the
//! `RecordBatchWriter` (Parquet files with statistics, as `add` actions), the log store (a
//! version's actions; put-if-absent commits, see `commit` for why not `CommitBuilder`),
//! checkpoints, log cleanup and the VACUUM planner (`upkeep`). The
//! crate is async; a [`Table`] drives it on its own current-thread tokio runtime, so callers
//! stay synchronous.
//!
//! What we write: tables of `scdflow sql`: protocol reader 1 / writer 2 (writer 4 when the
//! table property `delta.enableChangeDataFeed` is set), no table features; unpartitioned
//! tables, one Parquet file per append; `UPDATE`, `DELETE` and `TRUNCATE` rewrite the files
//! they touch (`rewrite`); `CREATE OR REPLACE` of a table with the change data feed is ours
//! (`replace`). Published targets ([`MaintainedTable`]): reader 3 / writer 7 with
//! deletion vectors and the change data feed, checkpointed and vacuumed on the schedule their
//! properties set (`upkeep`). Types as in [`batch`].
//!
//! What we read: unpartitioned tables without column mapping (the reader feature a plain file
//! read would get wrong), deletion vectors applied; anything else is refused with its name. A
//! version's new rows are the files its `add` actions bring with `dataChange`; a version that
//! removes data (`remove` with `dataChange`) is not an append, and readers of a stream say so.

pub mod batch;
mod changes;
mod commit;
mod dv;
mod files;
mod log;
mod maintained;
mod parquet_file;
mod properties;
mod replace;
mod restore;
mod rewrite;
mod row_index;
mod table;
mod upkeep;

pub use changes::FEED_PROPERTY;
pub use log::{Log, VersionRows};
pub use maintained::{
    roll_forward, Kept, MaintainedTable, Notes, Prepared, TableLog, Written, COLD_FANOUT,
    COMMIT_INPUT, FANOUT, FLOW_PROGRESS,
};
pub use parquet_file::{parquet_file_schema, read_parquet_file};
pub use properties::{target_property, TargetProperty};
pub use restore::{Restore, Restored};
pub use rewrite::{Fate, Rewrite, Rewritten};
pub use table::Table;
pub use upkeep::VACUUM_PROPERTY;

#[cfg(test)]
mod tests;

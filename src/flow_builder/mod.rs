//! AUTO CDC flows for embedders: Python's `create_auto_cdc_flow` keyword arguments as a Rust
//! builder, for people who build their own dataflows instead of writing a pipeline file.
//!
//! [`AutoCdcFlow`] collects the options, [`AutoCdcFlow::build`] validates them into a
//! [`BuiltFlow`] (the resolved [`Target`](crate::plan::Target) and
//! [`CdcFlow`](crate::plan::CdcFlow)), and [`AutoCdc::auto_cdc`] turns a collection of source
//! rows into the target table plus the rows that could not become events.
//!
//! Approach: `build` lowers the options to the SQL front end's own statements (a source table, a
//! target table and a `CREATE FLOW ... AS AUTO CDC` whose clauses are exactly the SQL clauses the
//! options mirror, SPEC 2.1/2.2) and validates them with the same functions that validate a
//! pipeline file (`sql::targets::build_targets`, which calls `sql::flows::build_flow`). So there
//! is one copy of every rule. Lowering to the AST rather than to SQL text means names never need
//! quoting or escaping (a key may be called anything) and expression text cannot spill into the
//! neighbouring clauses: each expression is parsed on its own and must be consumed whole.
//!
//! Invariants:
//! - an option set is accepted exactly when the equivalent SQL flow is, and a rejection is the
//!   same [`Error`](crate::Error) kind and message (with the same "did you mean" hints); options
//!   that map to one SQL clause (`column_list` and `except_column_list`, the two track-history
//!   lists, the three ignore-null-updates forms) conflict like a clause given twice;
//! - errors carry no location: there is no file, and line numbers of the synthesised statements
//!   would mean nothing to the caller.
//!
//! Limits: one flow per target (several flows into one target need a pipeline file); the target
//! gets no declared column list (its table properties, such as the tombstone retention, are set
//! with [`AutoCdcFlow::table_property`]); source rows are checked for width, not for value types,
//! which the caller's schema is trusted to describe.

mod builder;
mod built;
mod dataflow;
mod lower;

#[cfg(test)]
mod tests;

pub use builder::AutoCdcFlow;
pub use built::BuiltFlow;
pub use dataflow::AutoCdc;

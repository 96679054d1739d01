//! scdflow: AUTO CDC (SCD type 1 and 2) on differential dataflow.
//!
//! A pipeline file (SQL, the dialect of Lakeflow's `AUTO CDC`) declares append-only source
//! tables and CDC flows into target tables. The layers, in the order data flows through them:
//!
//! - [`sql`] parses and validates a pipeline into a [`plan::Pipeline`] (all user errors are
//!   found here), compiling expressions with [`expr`];
//! - [`io`] reads CSV / JSON-lines sources into typed rows and writes outputs; [`ingest`] turns
//!   input files into commits and [`prepare`] source rows into [`event::Event`]s;
//! - [`operators`] are the differential-dataflow operators ([`operators::Scd1`],
//!   [`operators::Scd2`]) over the per-key state machines of [`engine`]; [`runtime`] runs them on
//!   long-lived timely workers, one timely time per commit, fed one commit at a time;
//! - [`driver`] reads a pipeline's commits lazily and streams each commit's results to a sink,
//!   [`engine::changefeed`] labels a commit's updates as change-feed rows and [`output`] writes the
//!   CLI's files (staged, then moved into place);
//! - [`persist`] runs a pipeline against a state directory, so that each run processes only new
//!   input and a crash loses and duplicates nothing;
//! - [`model`] is the reference model: the specification as plain functions of the event set;
//! - [`gen`] generates seeded workloads, and [`bench`](mod@bench) measures per-commit latency
//!   under reordering against baselines (`scdflow bench`).
//!
//! Every target is a function of the set of events it has seen, never of their arrival order,
//! commit split or number of workers; the integration tests check that against [`model`].

#![deny(missing_docs)]

pub mod bench;
pub mod delta;
pub mod driver;
pub mod engine;
pub mod error;
pub mod event;
pub mod expr;
pub mod flow_builder;
pub mod gen;
pub mod ingest;
pub mod io;
pub mod model;
pub mod operators;
pub mod output;
pub mod persist;
pub mod plan;
pub mod prepare;
pub mod query;
pub mod runtime;
pub mod sql;
pub mod temporal;
pub mod value;
pub mod warehouse;

pub use error::{Error, ErrorKind, Result};

/// The README's code blocks, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

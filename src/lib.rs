//! scdflow: AUTO CDC (SCD type 1 and 2) on differential dataflow.

pub mod changefeed;
pub mod driver;
pub mod engine;
pub mod error;
pub mod event;
pub mod expr;
pub mod ingest;
pub mod io;
pub mod model;
pub mod operators;
pub mod output;
pub mod plan;
pub mod prepare;
pub mod runtime;
pub mod sql;
pub mod temporal;
pub mod value;

pub use error::{Error, ErrorKind, Result};

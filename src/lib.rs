//! scdflow: AUTO CDC (SCD type 1 and 2) on differential dataflow.

pub mod error;
pub mod event;
pub mod expr;
pub mod io;
pub mod plan;
pub mod value;

pub use error::{Error, ErrorKind, Result};

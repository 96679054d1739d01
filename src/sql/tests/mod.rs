//! Front-end tests: the seed pipelines, every validation error class, the accepted syntax
//! variants, snapshot and REPLACE USING flows, expectations, and the `check` description.

mod bitemporal;
mod describe;
mod errors;
mod expectations;
mod replace;
mod seeds;
mod snapshots;
mod syntax;
mod views;

use super::parse;
use crate::plan::Pipeline;
use crate::{Error, ErrorKind};
use std::path::Path;

/// The pipeline file every test pretends to parse.
const FILE: &str = "/p/pipeline.sql";

/// Line 1: the users change feed of the seeds (SPEC T0).
const USERS: &str = "CREATE STREAMING TABLE users_cdf AS SELECT * FROM STREAM read_files('data/users.csv', \
format => 'csv', schema => 'userId INT, name STRING, city STRING, operation STRING, sequenceNum INT');\n";

fn parse_ok(sql: &str) -> Pipeline {
    parse(sql, Path::new(FILE)).unwrap_or_else(|e| panic!("{e}\n--- in ---\n{sql}"))
}

fn parse_err(sql: &str) -> Error {
    match parse(sql, Path::new(FILE)) {
        Ok(_) => panic!("expected an error from\n{sql}"),
        Err(e) => e,
    }
}

/// Asserts the error's kind, line, file and that its message contains `needle`.
#[track_caller]
fn assert_error(sql: &str, kind: ErrorKind, line: u64, needle: &str) {
    let e = parse_err(sql);
    assert!(
        e.message().contains(needle),
        "message {:?} lacks {needle:?}",
        e.message()
    );
    assert_eq!(e.kind(), kind, "kind of {e}");
    assert_eq!(e.location().line, Some(line), "line of {e}");
    assert_eq!(
        e.location().file.as_deref(),
        Some(Path::new(FILE)),
        "file of {e}"
    );
}

/// USERS, then a target `t` (line 2), then `flow` starting on line 3.
fn users_flow(flow: &str) -> String {
    format!("{USERS}CREATE STREAMING TABLE t;\n{flow}")
}

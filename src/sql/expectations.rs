//! `CONSTRAINT name EXPECT (condition) [ON VIOLATION DROP ROW | FAIL UPDATE]`, compiled against
//! the rows it checks. A source table's constraints check its own rows (its output schema); a
//! target's constraints are compiled into each of its flows, against the rows that flow checks
//! (the source rows of a change-feed flow, a snapshot's rows, or REPLACE USING's projected rows),
//! so one constraint can resolve in one flow and fail in another.
//!
//! Invariant: every condition is BOOLEAN and refers only to columns of the schema it was
//! compiled against. Names are unique per table (checked by the parser).

use super::sources::predicate;
use super::syntax::ConstraintDecl;
use crate::plan::Expectation;
use crate::value::Schema;
use crate::{Error, Result};

/// Compiles `constraints` against `schema`; `rows` says which rows they check, for messages
/// ("the rows of source `s`").
pub(crate) fn compile_expectations(
    constraints: &[ConstraintDecl],
    schema: &Schema,
    rows: &str,
) -> Result<Vec<Expectation>> {
    constraints
        .iter()
        .map(|c| {
            let clause = format!("CONSTRAINT {}", c.name.text);
            let condition = predicate(&clause, &c.condition, schema)
                .map_err(|e| with_rows(e, rows, c.condition.line))?;
            Ok(Expectation {
                name: c.name.text.clone(),
                condition,
                action: c.action,
                line: c.condition.line,
            })
        })
        .collect()
}

/// Appends which rows the constraint checks, since a target's constraint is compiled once per
/// flow and the columns it may use differ between flows.
fn with_rows(e: Error, rows: &str, line: u64) -> Error {
    let message = format!("{} (the constraint checks {rows})", e.message());
    Error::new(e.kind(), message).at_line(e.location().line.unwrap_or(line))
}

//! Checking rows against expectations (`CONSTRAINT ... EXPECT`): a row violates an expectation
//! unless its condition is TRUE (FALSE, NULL and evaluation errors all violate it).

use crate::plan::{Expectation, OnViolation};
use crate::value::Row;
use serde::{Deserialize, Serialize};

/// Passed and failed counts of one expectation in one commit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectationCount {
    /// Constraint name.
    pub name: String,
    /// Rows that met it.
    pub passed: u64,
    /// Rows that violated it.
    pub failed: u64,
}

/// Adds `other`'s counts to `mine`, constraint by constraint (by name).
pub fn add_counts(mine: &mut Vec<ExpectationCount>, other: &[ExpectationCount]) {
    for count in other {
        match mine.iter_mut().find(|m| m.name == count.name) {
            Some(m) => {
                m.passed += count.passed;
                m.failed += count.failed;
            }
            None => mine.push(count.clone()),
        }
    }
}

/// Zeroed counts for `expectations`.
pub fn counts(expectations: &[Expectation]) -> Vec<ExpectationCount> {
    expectations
        .iter()
        .map(|e| ExpectationCount {
            name: e.name.clone(),
            ..Default::default()
        })
        .collect()
}

/// What to do with a row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Keep it (it met every expectation, or only `warn` ones failed).
    Keep,
    /// Remove it before any further processing.
    Drop,
    /// Fail the commit: the named `FAIL UPDATE` expectation was violated.
    Fail(String),
}

/// Checks `row` against every expectation, counting into `counts` (same order).
pub fn check(expectations: &[Expectation], row: &Row, counts: &mut [ExpectationCount]) -> Verdict {
    let mut verdict = Verdict::Keep;
    if expectations.is_empty() {
        return verdict;
    }
    let row = row.unpack();
    for (e, count) in expectations.iter().zip(counts) {
        if e.condition.eval_predicate(&row) == Ok(true) {
            count.passed += 1;
            continue;
        }
        count.failed += 1;
        match e.action {
            OnViolation::Warn => {}
            OnViolation::DropRow if verdict == Verdict::Keep => verdict = Verdict::Drop,
            OnViolation::DropRow => {}
            OnViolation::FailUpdate if !matches!(verdict, Verdict::Fail(_)) => {
                verdict = Verdict::Fail(e.name.clone());
            }
            OnViolation::FailUpdate => {}
        }
    }
    verdict
}

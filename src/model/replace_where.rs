//! REPLACE WHERE reference: each update replaces the condition's slice of the table (see the
//! rules in the [module docs](super)).

use crate::expr::Expr;
use crate::value::Row;

/// The table of a REPLACE WHERE target after `updates`, in order. Each update is `(condition,
/// rows)`: the condition as compiled at the update's instant, and every row the flow's query
/// returned then (already through the expectations). Sorted as whole rows.
pub fn replace_where(updates: &[(Expr, Vec<Row>)]) -> Vec<Row> {
    let holds =
        |condition: &Expr, row: &Row| condition.eval_predicate(&row.unpack()).unwrap_or(false);
    let mut table: Vec<Row> = Vec::new();
    for (condition, rows) in updates {
        table.retain(|row| !holds(condition, row));
        table.extend(rows.iter().filter(|row| holds(condition, row)).cloned());
    }
    table.sort();
    table
}

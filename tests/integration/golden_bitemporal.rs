//! Bitemporal golden tests: T8 (each of its four steps, all 24 arrival orders of its events,
//! any commit grouping, 1, 2 and 4 workers) and T9, with the exact tables of SPEC section 4.

use crate::golden::{seed_case, seed_cases, sorted, table_json, Case};
use serde_json::{json, Value as Json};

/// Seed timestamps are written `2025-07-18T10:01:00.000Z`; the engine writes
/// `2025-07-18T10:01:00`. Same instant, one spelling.
fn normalized(rows: &[Json]) -> Vec<Json> {
    let fix = |v: &Json| match v.as_str().and_then(scdflow::temporal::parse_timestamp) {
        Some(t) => json!(scdflow::temporal::format_timestamp(t)),
        None => v.clone(),
    };
    let rows = rows
        .iter()
        .map(|r| {
            let fields = r.as_object().expect("rows are objects");
            Json::Object(fields.iter().map(|(k, v)| (k.clone(), fix(v))).collect())
        })
        .collect();
    sorted(rows)
}

fn seed(name: &str) -> Json {
    seed_cases()
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no seed vector {name}"))
}

/// The seed's pipeline over `batches` (one JSON-lines file, so one commit, each), written into a
/// fresh directory; returns the table after the last commit with `workers`.
fn run(v: &Json, batches: &[Vec<Json>], workers: usize) -> Vec<Json> {
    let case = Case {
        batches: batches.to_vec(),
        ..seed_case(v)
    };
    let dir = tempfile::tempdir().unwrap();
    normalized(&table_json(&case.pipeline(dir.path()), workers, None))
}

fn batches(v: &Json) -> Vec<Vec<Json>> {
    seed_case(v).batches
}

#[test]
fn t8_each_step() {
    let v = seed("T8_bitemporal_four_steps");
    let batches = batches(&v);
    for step in v["expected_intermediate"].as_array().unwrap() {
        let after = step["after_batch"].as_u64().unwrap() as usize;
        let expected = normalized(step["rows"].as_array().unwrap());
        assert_eq!(
            run(&v, &batches[..after], 1),
            expected,
            "T8 after step {after}"
        );
    }
    let expected = normalized(v["expected_final"]["rows"].as_array().unwrap());
    for workers in [1, 2, 4] {
        assert_eq!(
            run(&v, &batches, workers),
            expected,
            "T8 with {workers} workers"
        );
    }
}

/// SPEC T8 "Order-independence": the four events in any arrival order, one commit each, give
/// the step-4 table; so do the same orders cut into two commits.
#[test]
fn t8_any_arrival_order() {
    let v = seed("T8_bitemporal_four_steps");
    let events: Vec<Json> = batches(&v).into_iter().flatten().collect();
    let expected = normalized(v["expected_final"]["rows"].as_array().unwrap());
    let orders = permutations(&events);
    assert_eq!(orders.len(), 24);
    for (n, order) in orders.iter().enumerate() {
        let one_each: Vec<Vec<Json>> = order.iter().map(|e| vec![e.clone()]).collect();
        let workers = [1, 2, 4][n % 3];
        assert_eq!(run(&v, &one_each, workers), expected, "order {order:?}");
        let cut = 1 + n % 3;
        let two = vec![order[..cut].to_vec(), order[cut..].to_vec()];
        assert_eq!(
            run(&v, &two, 1),
            expected,
            "order {order:?} cut after {cut}"
        );
    }
}

#[test]
fn t9_two_rows() {
    let v = seed("T9_bitemporal_two_rows");
    let expected = normalized(v["expected_final"]["rows"].as_array().unwrap());
    for workers in [1, 2, 4] {
        assert_eq!(
            run(&v, &batches(&v), workers),
            expected,
            "T9 with {workers} workers"
        );
    }
}

/// Every ordering of `items`.
fn permutations(items: &[Json]) -> Vec<Vec<Json>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut tail in permutations(&rest) {
            tail.insert(0, first.clone());
            out.push(tail);
        }
    }
    out
}

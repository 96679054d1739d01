//! Builders shared by the integration tests.

use proptest::prelude::*;
use scdflow::plan::{ScdType, Target, TargetKind};
use scdflow::value::{DataType, Row, Schema};
use std::collections::BTreeMap;

/// A target with an INT key `k` and `values` STRING columns, sequenced by INT (bitemporal
/// targets: system-sequenced by INT too).
pub fn target(scd: ScdType, values: usize, tracked: Vec<bool>, partial: bool) -> Target {
    let mut cols = vec![("k".to_string(), DataType::Int)];
    cols.extend((0..values).map(|i| (format!("c{i}"), DataType::String)));
    let image_len = cols.len();
    if scd.has_history() {
        cols.push(("__START_AT".to_string(), DataType::Int));
        cols.push(("__END_AT".to_string(), DataType::Int));
    }
    let bitemporal = scd == ScdType::Bitemporal;
    if bitemporal {
        cols.push(("__SYSTEM_START_AT".to_string(), DataType::Int));
        cols.push(("__SYSTEM_END_AT".to_string(), DataType::Int));
    }
    Target {
        kind: TargetKind::AutoCdc,
        name: "t".into(),
        schema: Schema::new(cols),
        image_len,
        keys: vec![0],
        scd,
        sequence_type: DataType::Int,
        system_sequence_type: bitemporal.then_some(DataType::Int),
        tracked,
        partial,
        tombstone_gc_seconds: 0,
        replace_where: None,
        view_of: None,
        properties: Default::default(),
        line: 1,
    }
}

/// The table after commits `..=version` of consolidated updates, sorted like the model's.
pub fn table_at(target: &Target, updates: &[(Row, u64, isize)], version: u64) -> Vec<Row> {
    let mut counts: BTreeMap<&Row, isize> = BTreeMap::new();
    for (row, time, diff) in updates {
        if *time <= version {
            *counts.entry(row).or_default() += diff;
        }
    }
    let mut rows = Vec::new();
    for (row, n) in counts {
        assert!((0..=1).contains(&n), "row {row:?} has multiplicity {n}");
        if n == 1 {
            rows.push(row.clone());
        }
    }
    scdflow::driver::sort_rows(target, &mut rows);
    rows
}

/// The table after commits `..=version` as a multiset (rows repeated by multiplicity), sorted by
/// key columns, then the whole row.
pub fn multiset_at(target: &Target, updates: &[(Row, u64, isize)], version: u64) -> Vec<Row> {
    let mut counts: BTreeMap<&Row, isize> = BTreeMap::new();
    for (row, time, diff) in updates {
        if *time <= version {
            *counts.entry(row).or_default() += diff;
        }
    }
    let mut rows = Vec::new();
    for (row, n) in counts {
        assert!(n >= 0, "row {row:?} has multiplicity {n}");
        rows.extend(std::iter::repeat_n(row.clone(), n as usize));
    }
    scdflow::driver::sort_rows(target, &mut rows);
    rows
}

/// `metrics.json`'s text without its per-commit latencies (wall-clock measurements), for
/// comparing the metrics of two runs.
pub fn metrics_without_latency(bytes: &[u8]) -> serde_json::Value {
    let mut json: serde_json::Value = serde_json::from_slice(bytes).expect("metrics.json parses");
    let latency = json.as_object_mut().and_then(|o| o.remove("latency"));
    assert!(latency.is_some(), "metrics.json has per-commit latencies");
    json
}

/// Random arrivals of `items`: a few replayed (to exercise D1), in a random order, with commit
/// cuts (positions in that order) and 1, 2 or 4 workers.
pub fn arrivals<T: Clone + std::fmt::Debug + 'static>(
    items: Vec<T>,
) -> impl Strategy<Value = (Vec<T>, Vec<usize>, usize)> {
    let n = items.len();
    let with_replays = (
        Just(items.clone()),
        proptest::sample::subsequence(items, 0..=n.min(5)),
    )
        .prop_map(|(mut items, replays)| {
            items.extend(replays);
            items
        });
    with_replays.prop_flat_map(|items| {
        let n = items.len();
        (
            Just(items).prop_shuffle(),
            proptest::collection::vec(0..n, 0..6),
            prop_oneof![Just(1usize), Just(2), Just(4)],
        )
    })
}

/// The reference model's check of a run's `updates`: each commit emits a row at most once
/// (its updates are consolidated), and after commit `c` (at time `c + 1`) the table equals the
/// model's table of the first `prefixes[c]` of `events`. `run` names the run in a failure.
pub fn equals_the_model_after_every_commit(
    target: &Target,
    events: &[scdflow::event::Event],
    updates: &[(Row, u64, isize)],
    prefixes: &[usize],
    run: &str,
) -> Result<(), TestCaseError> {
    let mut seen = std::collections::BTreeSet::new();
    for (row, version, _) in updates {
        prop_assert!(
            seen.insert((row, *version)),
            "{:?} twice in commit {} of {}",
            row,
            version,
            run
        );
    }
    for (c, prefix) in prefixes.iter().enumerate() {
        let expected = scdflow::model::evaluate(target, &events[..*prefix]);
        let actual = table_at(target, updates, c as u64 + 1);
        prop_assert_eq!(actual, expected, "after commit {} of {}", c + 1, run);
    }
    Ok(())
}

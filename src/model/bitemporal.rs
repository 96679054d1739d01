//! Bitemporal reference (SPEC 3.11, D15): the system-time versioning of each key's SCD2
//! history (see the rules in the [module docs](super)).

use super::{by_key, scd2, sort_rows};
use crate::event::Event;
use crate::plan::Target;
use crate::value::{Row, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The bitemporal table of `target` after `events`: image rows followed by `__START_AT`,
/// `__END_AT`, `__SYSTEM_START_AT` and `__SYSTEM_END_AT` (NULL ends are open), sorted by the key
/// columns, then `__START_AT`, then `__SYSTEM_START_AT`.
pub fn bitemporal(target: &Target, events: &[Event]) -> Vec<Row> {
    let mut rows = Vec::new();
    for group in by_key(events).values() {
        let group: Vec<Event> = group.iter().map(|&e| e.clone()).collect();
        versions(target, &group, &mut rows);
    }
    let start = target.image_len;
    sort_rows(target, &mut rows, &[start, start + 2]);
    rows
}

/// One key: for each of its system times `s` in order, `H(s)` is the SCD2 history of the
/// events with system time `<= s`; a business row of `H` that appears opens a system interval
/// at `s`, one that disappears closes its interval at `s`.
fn versions(target: &Target, events: &[Event], out: &mut Vec<Row>) {
    // Values, as the table shows them (a bitemporal event always has a system time).
    let system = |e: &Event| {
        e.system
            .as_ref()
            .map_or(Value::Null, |s| s.to_value().into_owned())
    };
    let times: BTreeSet<Value> = events.iter().map(system).collect();
    // Business row → the system time since which it has been believed.
    let mut believed: BTreeMap<Row, Value> = BTreeMap::new();
    for s in times {
        let known: Vec<Event> = events.iter().filter(|e| system(e) <= s).cloned().collect();
        let now: BTreeSet<Row> = scd2(target, &known).into_iter().collect();
        let gone: Vec<Row> = believed
            .keys()
            .filter(|r| !now.contains(*r))
            .cloned()
            .collect();
        for row in gone {
            let since = believed.remove(&row).expect("listed from the map");
            out.push(interval(row, since, s.clone()));
        }
        for row in now {
            believed.entry(row).or_insert_with(|| s.clone());
        }
    }
    for (row, since) in believed {
        out.push(interval(row, since, Value::Null));
    }
}

fn interval(mut business: Row, start: Value, end: Value) -> Row {
    business.push(start);
    business.push(end);
    business
}

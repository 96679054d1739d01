//! Tombstone retention (D11) through the dataflow: within the retention a delete blocks older
//! upserts; after it, the key is forgotten and a late older upsert re-creates it.

use crate::util::{table_at, target};
use scdflow::event::{Event, EventKind};
use scdflow::plan::ScdType;
use scdflow::runtime::{execute, CommitEvents};
use scdflow::value::{Row, Seq, Value};

const SECOND: i64 = 1_000_000;

fn ev(kind: EventKind, k: i64, v: &str, seq: i64) -> Event {
    let key = Row::from([Value::Int(k)]);
    let image = match kind {
        EventKind::Upsert => Row::from(vec![Value::Int(k), Value::Str(v.into())]),
        _ => Row::new(),
    };
    Event {
        seq: Seq::from(seq),
        kind,
        key,
        image,
        authored: None,
        system: None,
    }
}

fn row(scd: ScdType, k: i64, v: &str, start: i64, end: Option<i64>) -> Vec<Value> {
    let mut row = vec![Value::Int(k), Value::Str(v.into())];
    if scd == ScdType::Type2 {
        row.extend([Value::Int(start), end.map_or(Value::Null, Value::Int)]);
    }
    row
}

#[test]
fn late_upserts_recreate_keys_only_after_the_retention() {
    for scd in [ScdType::Type1, ScdType::Type2] {
        for workers in [1, 4] {
            let mut t = target(scd, 1, vec![true, true], false);
            t.tombstone_gc_seconds = 10;
            let commit = |events, seconds| CommitEvents {
                events: vec![events],
                timestamp: seconds * SECOND,
                ..CommitEvents::default()
            };
            let commits = vec![
                commit(
                    vec![
                        ev(EventKind::Delete, 1, "", 5),
                        ev(EventKind::Delete, 2, "", 5),
                    ],
                    0,
                ),
                // Within the retention: SCD1 ignores the older upsert; SCD2 opens [2, 5), which
                // the delete closes (so that delete is history now, not a tombstone).
                commit(vec![ev(EventKind::Upsert, 1, "early", 2)], 10),
                // Past it: key 2's delete is forgotten and the older upsert re-creates the key.
                commit(vec![ev(EventKind::Upsert, 2, "late", 2)], 11),
            ];
            let updates = execute(std::slice::from_ref(&t), commits, workers, None).unwrap();
            let mut expected = vec![row(scd, 2, "late", 2, None)];
            if scd == ScdType::Type2 {
                expected.insert(0, row(scd, 1, "early", 2, Some(5)));
            }
            assert_eq!(
                table_at(&t, &updates.rows[0], 3),
                expected,
                "{scd:?} with {workers} workers"
            );
            // Collection is lazy: a worker forgets expired tombstones at its next commit with
            // data, so only with one worker is every expiry counted within this run.
            if workers == 1 {
                let collected: u64 = updates.stats[0]
                    .values()
                    .map(|s| s.tombstones_collected)
                    .sum();
                assert_eq!(
                    collected,
                    if scd == ScdType::Type1 { 2 } else { 1 },
                    "{scd:?}"
                );
            }
        }
    }
}

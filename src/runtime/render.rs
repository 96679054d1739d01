//! One target's operators on one worker: the keyed SCD operator (after the snapshot diff for
//! snapshot targets) or the REPLACE USING operator, over the states this worker holds.

use super::held::{Held, Scd};
use crate::engine::CommitStats;
use crate::event::Event;
use crate::operators::keyed::keyed_cdc;
use crate::operators::replace_using::replace_using_shared;
use crate::value::Row;
use differential_dataflow::VecCollection;
use std::rc::Rc;

/// Target `t`'s row updates from its events (AUTO CDC and snapshot targets) or its rows
/// (REPLACE USING targets). `clock` gives a commit's time; `on_stats` sees each commit's
/// counters on this worker.
pub(super) fn render<'s>(
    held: &Held,
    events: VecCollection<'s, u64, Event>,
    rows: VecCollection<'s, u64, Row>,
    clock: impl Fn(&u64) -> i64 + Clone + 'static,
    on_stats: impl FnMut(&u64, CommitStats) + 'static,
) -> VecCollection<'s, u64, Row> {
    let scd = match held {
        Held::Replace(state) => return replace_using_shared(rows, Rc::clone(state)),
        Held::Cdc(scd) | Held::Snapshot(_, scd) => scd,
    };
    match scd {
        Scd::Type1(state) => keyed_cdc(events, "Scd1", Rc::clone(state), clock, on_stats),
        Scd::Type2(state) => keyed_cdc(events, "Scd2", Rc::clone(state), clock, on_stats),
        Scd::Bitemporal(state) => {
            keyed_cdc(events, "Bitemporal", Rc::clone(state), clock, on_stats)
        }
    }
}

//! The operator states one worker holds for one target, shared with the operators so that the
//! runtime can restore them before the first commit, save them between commits and read the
//! target's table from them.
//!
//! A checkpoint is a base (every key) and deltas (what changed since the save before), restored
//! in order ([`crate::engine::Durable`] says how a delta applies).
//!
//! A target's parts: its SCD state (`scd1`, `scd2` or `bitemporal`), preceded for snapshot
//! targets by the previous snapshot (`snapshot`); REPLACE USING targets have one part
//! (`replace`). Each part is saved as one shard per worker. A restore on as many workers as
//! wrote the shards reads its own shard; on any other number it reads every shard and keeps the
//! keys that the operators' exchange routes to it ([`worker_of`]; the test below holds timely's
//! routing to it).

use super::shards::{shard_name, ShardFiles};
use super::tables::{RenderedTable, Rendering};
use super::Checkpoint;
use crate::engine::worker_of;
use crate::operators::TargetState;
use crate::value::Row;
use crate::Result;
use std::path::Path;

/// What one worker holds for one target: its operators' states, which it restores, saves and
/// reads the table from.
pub(super) trait Held {
    /// The target's rows this worker holds (the table of the keys it owns), in no order.
    fn rows(&self) -> Vec<Row>;
    /// The same rows rendered key by key, keys ascending (target `t`), in up to `ranges`
    /// ranges of keys side by side ([`RenderedTable::render`]).
    fn render_table(
        &self,
        t: usize,
        rendering: &Rendering,
        ranges: usize,
    ) -> Result<Vec<RenderedTable>>;
    /// Starts recording changed keys in every part, for [`Held::save`] with `changes`.
    fn track_changes(&self);
    /// Restores target `t`'s parts from `checkpoint`: its base shards, then each delta's in
    /// order, all written by `checkpoint.workers` workers, as worker `index` of `peers`.
    fn restore(
        &self,
        files: &dyn ShardFiles,
        t: usize,
        checkpoint: &Checkpoint,
        index: usize,
        peers: usize,
    ) -> Result<()>;
    /// Saves target `t`'s parts into `dir`, as worker `index`: everything, or (`changes`) what
    /// changed since the last save.
    fn save(
        &self,
        files: &dyn ShardFiles,
        t: usize,
        dir: &Path,
        index: usize,
        changes: bool,
    ) -> Result<()>;
}

impl Held for TargetState {
    fn rows(&self) -> Vec<Row> {
        let mut counted = Vec::new();
        self.table().borrow().rows(&mut counted);
        counted
            .into_iter()
            .flat_map(|(row, n)| std::iter::repeat_n(row, n.max(0) as usize))
            .collect()
    }

    fn render_table(
        &self,
        t: usize,
        rendering: &Rendering,
        ranges: usize,
    ) -> Result<Vec<RenderedTable>> {
        let table = self.table();
        let state = table.borrow();
        let state = &*state;
        let rows_of = |key: &Row, out: &mut Vec<(Row, isize)>| state.key_rows(key, out);
        RenderedTable::render(state.table_keys(), rows_of, t, rendering, ranges)
    }

    fn track_changes(&self) {
        for (_, state) in self.parts() {
            state.borrow_mut().track_changes();
        }
    }

    fn restore(
        &self,
        files: &dyn ShardFiles,
        t: usize,
        checkpoint: &Checkpoint,
        index: usize,
        peers: usize,
    ) -> Result<()> {
        let writers = checkpoint.workers;
        // As many workers as wrote the shards: each reads its own, whose keys it owns.
        let (shards, mine): (Vec<usize>, &dyn Fn(&Row) -> bool) = if writers == peers {
            (vec![index], &|_| true)
        } else {
            ((0..writers).collect(), &|key| {
                worker_of(key, peers) == index
            })
        };
        let dirs = std::iter::once((&checkpoint.base, false))
            .chain(checkpoint.deltas.iter().map(|d| (d, true)));
        for (dir, delta) in dirs {
            for (part, state) in self.parts() {
                let mut state = state.borrow_mut();
                for &w in &shards {
                    let path = dir.join(shard_name(t, part, w));
                    let mut input = files.open(&path, delta)?;
                    let wrote = |key: &Row| writers == peers || worker_of(key, writers) == w;
                    let restored = match delta {
                        true => state.restore_changes(&mut *input, mine, &wrote),
                        false => state.restore(&mut *input, mine),
                    };
                    restored.map_err(|e| e.in_file(&path))?;
                }
            }
        }
        Ok(())
    }

    fn save(
        &self,
        files: &dyn ShardFiles,
        t: usize,
        dir: &Path,
        index: usize,
        changes: bool,
    ) -> Result<()> {
        for (part, state) in self.parts() {
            let mut out = files.create(&dir.join(shard_name(t, part, index)), changes)?;
            let mut state = state.borrow_mut();
            match changes {
                true => state.save_changes(&mut *out)?,
                false => state.save(&mut *out)?,
            }
            out.finish()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::worker_of;
    use crate::value::{Row, Value};
    use differential_dataflow::Hashable;
    use std::sync::{Arc, Mutex};
    use timely::dataflow::channels::pact::Exchange;
    use timely::dataflow::operators::generic::Operator;
    use timely::dataflow::operators::ToStream;

    #[test]
    fn ownership_is_where_the_exchange_routes_keys() {
        for peers in [1usize, 2, 3, 4] {
            let seen: Arc<Mutex<Vec<(usize, Row)>>> = Arc::new(Mutex::new(Vec::new()));
            let sink = Arc::clone(&seen);
            timely::execute(timely::Config::process(peers), move |worker| {
                let index = worker.index();
                let sink = Arc::clone(&sink);
                worker.dataflow::<u64, _, _>(|scope| {
                    let keys: Vec<Row> = if index == 0 {
                        (0..200)
                            .map(|i| Row::from(vec![Value::Int(i), Value::Str(format!("k{i}"))]))
                            .collect()
                    } else {
                        Vec::new()
                    };
                    keys.to_stream(scope).sink(
                        Exchange::new(|k: &Row| k.hashed()),
                        "Route",
                        move |(input, _)| {
                            input.for_each(|_, data| {
                                sink.lock()
                                    .unwrap()
                                    .extend(data.drain(..).map(|k| (index, k)));
                            });
                        },
                    );
                });
            })
            .unwrap()
            .join();
            let seen = seen.lock().unwrap();
            assert_eq!(seen.len(), 200);
            for (worker, key) in seen.iter() {
                assert_eq!(worker_of(key, peers), *worker, "peers {peers}: {key:?}");
            }
        }
    }
}

//! A plan target as operators: the one place where a [`Target`] becomes operator states and the
//! operators over them. The runtime renders every target of a pipeline through
//! [`TargetState::render`] (and so does `scdflow bench`, which drives the runtime), and
//! [`crate::flow_builder`] renders its flows through [`ScdState::render`].
//!
//! The states are shared (`Rc<RefCell<_>>`) with the caller, who may restore them before the
//! first time, save them between times and read the table from them ([`Durable`]); each
//! operator goes on from the state it is given and never emits a restored table again.
//!
//! Limits: those of the operators (insert-only inputs, totally ordered times).

use super::{
    Bitemporal, BitemporalConfig, ReplaceConfig, ReplaceUsing, Scd1, Scd1Config, Scd2, Scd2Config,
    SnapshotDiff,
};
use crate::engine::{
    BitemporalState, CommitStats, Durable, Editable, ReplaceState, Scd1State, Scd2State,
    SnapshotState,
};
use crate::event::Event;
use crate::plan::{ScdType, Target, TargetKind};
use crate::value::Row;
use differential_dataflow::VecCollection;
use std::cell::RefCell;
use std::rc::Rc;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

/// One worker's state of a target's SCD operator.
#[derive(Clone)]
pub enum ScdState {
    /// SCD type 1.
    Type1(Rc<RefCell<Scd1State>>),
    /// SCD type 2.
    Type2(Rc<RefCell<Scd2State>>),
    /// Bitemporal.
    Bitemporal(Rc<RefCell<BitemporalState>>),
}

impl ScdState {
    /// An empty state of `target`'s SCD type and shape.
    pub fn new(target: &Target) -> ScdState {
        match target.scd {
            ScdType::Type1 => {
                let state = Scd1Config::from(target).state();
                ScdState::Type1(shared(match target.replace_where {
                    Some(_) => state.with_equal_images(),
                    None => state,
                }))
            }
            ScdType::Type2 => ScdState::Type2(shared(Scd2Config::from(target).state())),
            ScdType::Bitemporal => {
                ScdState::Bitemporal(shared(BitemporalConfig::from(target).state()))
            }
        }
    }

    /// The SCD operator over `events` and this state: `clock` gives a time's commit time in
    /// microseconds, `on_stats` sees each completed time's counters on this worker.
    pub fn render<'s, T, C, F>(
        &self,
        events: VecCollection<'s, T, Event>,
        clock: C,
        on_stats: F,
    ) -> VecCollection<'s, T, Row>
    where
        T: Timestamp + TotalOrder + timely::ExchangeData,
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static,
    {
        match self {
            ScdState::Type1(s) => events.scd1_core(Rc::clone(s), clock, on_stats),
            ScdState::Type2(s) => events.scd2_core(Rc::clone(s), clock, on_stats),
            ScdState::Bitemporal(s) => events.bitemporal_core(Rc::clone(s), clock, on_stats),
        }
    }

    /// The state's name (the part of a target it is) and the state itself, to save or restore.
    pub fn part(&self) -> (&'static str, Rc<RefCell<dyn Durable>>) {
        match self {
            ScdState::Type1(s) => ("scd1", Rc::clone(s) as Rc<RefCell<dyn Durable>>),
            ScdState::Type2(s) => ("scd2", Rc::clone(s) as Rc<RefCell<dyn Durable>>),
            ScdState::Bitemporal(s) => ("bitemporal", Rc::clone(s) as Rc<RefCell<dyn Durable>>),
        }
    }
}

fn shared<S>(state: S) -> Rc<RefCell<S>> {
    Rc::new(RefCell::new(state))
}

/// One worker's states of one target.
#[derive(Clone)]
pub enum TargetState {
    /// An AUTO CDC target: its SCD operator.
    Cdc(ScdState),
    /// A snapshot target: the previous snapshot, then the SCD operator.
    Snapshot(Rc<RefCell<SnapshotState>>, ScdState),
    /// A REPLACE USING target.
    Replace(Rc<RefCell<ReplaceState>>),
}

/// A target's inputs; each kind of target reads its own and ignores the others.
pub struct TargetInputs<'s, T: Timestamp> {
    /// Events of an AUTO CDC target.
    pub events: VecCollection<'s, T, Event>,
    /// `(key, row)`s of a snapshot target's snapshots.
    pub snapshot: VecCollection<'s, T, (Row, Row)>,
    /// A snapshot target's versions, one per time that has a snapshot.
    pub versions: VecCollection<'s, T, i64>,
    /// Incoming rows of a REPLACE USING target.
    pub rows: VecCollection<'s, T, Row>,
}

impl TargetState {
    /// Empty states of `target`.
    pub fn new(target: &Target) -> TargetState {
        match target.kind {
            TargetKind::AutoCdc => TargetState::Cdc(ScdState::new(target)),
            TargetKind::Snapshot => {
                let previous = match &target.replace_where {
                    Some(condition) => SnapshotState::replacing(condition.clone()),
                    None => SnapshotState::new(),
                };
                TargetState::Snapshot(shared(previous), ScdState::new(target))
            }
            TargetKind::ReplaceUsing { sequence } => {
                let config = ReplaceConfig {
                    keys: target.keys.clone(),
                    sequence,
                };
                TargetState::Replace(shared(ReplaceState::new(config)))
            }
        }
    }

    /// The target's operators over `inputs` and these states: its table's updates. `clock` and
    /// `on_stats` are the SCD operator's ([`ScdState::render`]; a REPLACE USING target uses no
    /// clock and reports no counters).
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use scdflow::engine::Durable;
    /// use scdflow::event::{Event, EventKind};
    /// use scdflow::flow_builder::AutoCdcFlow;
    /// use scdflow::operators::{TargetInputs, TargetState};
    /// use scdflow::value::{DataType, Row, Schema, Seq, Value};
    ///
    /// let schema = Schema::new([
    ///     ("id".to_string(), DataType::Int),
    ///     ("city".to_string(), DataType::String),
    ///     ("seq".to_string(), DataType::Int),
    /// ]);
    /// let flow = AutoCdcFlow::new("cities", schema, ["id"], "seq")
    ///     .except_column_list(["seq"])
    ///     .build()?;
    /// let target = flow.target().clone();
    /// let rows = timely::execute_directly(move |worker| {
    ///     let state = TargetState::new(&target);
    ///     let mut events = worker.dataflow::<u64, _, _>(|scope| {
    ///         let (events, event_collection) = scope.new_collection();
    ///         let inputs = TargetInputs {
    ///             events: event_collection,
    ///             snapshot: scope.new_collection().1,
    ///             versions: scope.new_collection().1,
    ///             rows: scope.new_collection().1,
    ///         };
    ///         state.render(inputs, |_| 0, |_, _| {});
    ///         events
    ///     });
    ///     events.insert(Event {
    ///         seq: Seq::from(1),
    ///         kind: EventKind::Upsert,
    ///         key: Row::from([Value::Int(7)]),
    ///         image: Row::from([Value::Int(7), Value::Str("Oaxaca".into())]),
    ///         authored: None,
    ///         system: None,
    ///     });
    ///     events.close();
    ///     while worker.step() {}
    ///     // The caller reads the table from the state it shares with the operator.
    ///     let mut rows = Vec::new();
    ///     state.table().borrow().rows(&mut rows);
    ///     rows
    /// });
    /// assert_eq!(rows, vec![(Row::from([Value::Int(7), Value::Str("Oaxaca".into())]), 1)]);
    /// # Ok::<(), scdflow::Error>(())
    /// ```
    pub fn render<'s, T, C, F>(
        &self,
        inputs: TargetInputs<'s, T>,
        clock: C,
        on_stats: F,
    ) -> VecCollection<'s, T, Row>
    where
        T: Timestamp + TotalOrder + timely::ExchangeData,
        C: Fn(&T) -> i64 + 'static,
        F: FnMut(&T, CommitStats) + 'static,
    {
        match self {
            TargetState::Cdc(scd) => scd.render(inputs.events, clock, on_stats),
            TargetState::Snapshot(previous, scd) => {
                let clock = Rc::new(clock);
                let diff_clock = Rc::clone(&clock);
                let events = inputs.snapshot.snapshot_diff_core(
                    inputs.versions,
                    Rc::clone(previous),
                    move |t| diff_clock(t),
                );
                scd.render(events, move |t| clock(t), on_stats)
            }
            TargetState::Replace(state) => inputs.rows.replace_using_core(Rc::clone(state)),
        }
    }

    /// Every state of the target with its part name, in the order they are saved.
    pub fn parts(&self) -> Vec<(&'static str, Rc<RefCell<dyn Durable>>)> {
        match self {
            TargetState::Cdc(scd) => vec![scd.part()],
            TargetState::Snapshot(previous, scd) => vec![
                ("snapshot", Rc::clone(previous) as Rc<RefCell<dyn Durable>>),
                scd.part(),
            ],
            TargetState::Replace(s) => vec![("replace", Rc::clone(s) as Rc<RefCell<dyn Durable>>)],
        }
    }

    /// The state that holds the target's table when its rows can be set by hand (SCD type 1
    /// and 2 states; see [`crate::engine::edit`]).
    pub fn editable(&self) -> Option<Rc<RefCell<dyn Editable>>> {
        match self {
            TargetState::Cdc(scd) | TargetState::Snapshot(_, scd) => match scd {
                ScdState::Type1(s) => Some(Rc::clone(s) as Rc<RefCell<dyn Editable>>),
                ScdState::Type2(s) => Some(Rc::clone(s) as Rc<RefCell<dyn Editable>>),
                ScdState::Bitemporal(_) => None,
            },
            TargetState::Replace(_) => None,
        }
    }

    /// The state that holds the target's table.
    pub fn table(&self) -> Rc<RefCell<dyn Durable>> {
        match self {
            TargetState::Cdc(scd) | TargetState::Snapshot(_, scd) => scd.part().1,
            TargetState::Replace(s) => Rc::clone(s) as Rc<RefCell<dyn Durable>>,
        }
    }
}

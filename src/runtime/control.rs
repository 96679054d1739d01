//! Collective steps between workers that are not the targets' data: announcing each commit's
//! timestamp (or a process's failure to read it) to every worker, and gathering counters,
//! reports and rows to worker 0 (in process 0).
//!
//! Both streams live in one dataflow whose time is a round counter, not a commit version:
//! every worker takes part in the same rounds in the same order (one announcement and one
//! gathering per commit in a cluster, one gathering per table read), so a round is complete
//! once every worker has advanced past it. A round also counts what it collects: every worker
//! ends its notes or announcements of a round with an end mark, and a round returns only once
//! it holds every worker's mark for that round. (Without the count, worker 0 of a two-process cluster
//! was seen, about once in fifteen runs under load, to finish a round that read the tables
//! with only its own rows; the count makes the round complete whatever the probe says.)

use crate::engine::CommitStats;
use crate::value::Row;
use differential_dataflow::input::{Input, InputSession};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::{Exchange, Probe};
use timely::dataflow::ProbeHandle;
use timely::worker::Worker;

/// What a process says about a commit: its timestamp (the process read it, or a share of it),
/// or why it could not read it.
pub(super) type Announcement = (u64, Result<i64, String>);

/// What travels to worker 0.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(super) enum Note {
    /// A worker's counters of one target in the commit.
    Stats(usize, CommitStats),
    /// A worker's change-feed rows of one target in the commit: `(upserted, deleted)`.
    Changed(usize, u64, u64),
    /// A process's report of the commit (the driver's, opaque here).
    Report(String),
    /// A row of one target's table.
    Row(usize, Row),
    /// The last note of a worker in a round.
    End,
}

/// The control dataflow of one worker.
pub(super) struct Control {
    /// Announcements by round; `None` is a worker's end mark.
    announce: InputSession<u64, (u64, Option<Announcement>), isize>,
    heard: Rc<RefCell<Vec<(u64, Option<Announcement>)>>>,
    notes: InputSession<u64, (u64, Note), isize>,
    /// Notes collected (on worker 0), with the round they were sent in.
    noted: Rc<RefCell<Vec<(u64, Note)>>>,
    probe: ProbeHandle<u64>,
    round: u64,
}

impl Control {
    pub(super) fn new(worker: &mut Worker) -> Control {
        let heard = Rc::new(RefCell::new(Vec::new()));
        let noted = Rc::new(RefCell::new(Vec::new()));
        let probe: ProbeHandle<u64> = ProbeHandle::new();
        let (announce, notes) = worker.dataflow::<u64, _, _>(|scope| {
            let (announce, announced) =
                scope.new_collection::<(u64, Option<Announcement>), isize>();
            let (notes, noted_stream) = scope.new_collection::<(u64, Note), isize>();
            collect(announced.inner.broadcast(), &probe, &heard);
            collect(noted_stream.inner.exchange(|_| 0), &probe, &noted);
            (announce, notes)
        });
        Control {
            announce,
            heard,
            notes,
            noted,
            probe,
            round: 0,
        }
    }

    /// The probe of both streams.
    pub(super) fn probe(&self) -> ProbeHandle<u64> {
        self.probe.clone()
    }

    /// Every worker's announcements of this round, on every worker (collective).
    pub(super) fn announce(
        &mut self,
        worker: &mut Worker,
        mine: Option<Announcement>,
    ) -> Vec<Announcement> {
        let round = self.round;
        if let Some(said) = mine {
            self.announce.insert((round, Some(said)));
        }
        self.announce.insert((round, None));
        self.finish_round(worker);
        let peers = worker.peers();
        let ended = |heard: &[(u64, Option<Announcement>)]| {
            let ends = heard.iter().filter(|(r, a)| *r == round && a.is_none());
            ends.count() == peers
        };
        while !ended(&self.heard.borrow()) {
            worker.step_or_park(None);
        }
        let (this, later): (Vec<_>, Vec<_>) = self
            .heard
            .take()
            .into_iter()
            .partition(|(r, _)| *r == round);
        *self.heard.borrow_mut() = later;
        this.into_iter().filter_map(|(_, said)| said).collect()
    }

    /// Every worker's notes of this round, on worker 0; nothing elsewhere (collective).
    pub(super) fn gather(&mut self, worker: &mut Worker, mine: Vec<Note>) -> Vec<Note> {
        let round = self.round;
        for note in mine.into_iter().chain([Note::End]) {
            self.notes.insert((round, note));
        }
        self.finish_round(worker);
        if worker.index() != 0 {
            return Vec::new();
        }
        let peers = worker.peers();
        let ended = |noted: &[(u64, Note)]| {
            let ends = noted.iter().filter(|(r, n)| *r == round && *n == Note::End);
            ends.count() == peers
        };
        while !ended(&self.noted.borrow()) {
            worker.step_or_park(None);
        }
        let (this, later): (Vec<_>, Vec<_>) = self
            .noted
            .take()
            .into_iter()
            .partition(|(r, _)| *r == round);
        *self.noted.borrow_mut() = later;
        this.into_iter()
            .map(|(_, note)| note)
            .filter(|note| *note != Note::End)
            .collect()
    }

    fn finish_round(&mut self, worker: &mut Worker) {
        self.round += 1;
        self.announce.advance_to(self.round);
        self.announce.flush();
        self.notes.advance_to(self.round);
        self.notes.flush();
        while self.probe.less_than(&self.round) {
            worker.step_or_park(None);
        }
    }
}

/// Collects the records of `stream` into `into`, behind `probe`: the probe follows the
/// collecting operator, so a round the probe has passed is wholly collected.
fn collect<'s, D: timely::ExchangeData>(
    stream: timely::dataflow::StreamVec<'s, u64, (D, u64, isize)>,
    probe: &ProbeHandle<u64>,
    into: &Rc<RefCell<Vec<D>>>,
) {
    let into = Rc::clone(into);
    stream
        .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(Pipeline, "Collect", move |_, _| {
            move |input, _output| {
                input.for_each(|_, records| {
                    into.borrow_mut()
                        .extend(records.drain(..).map(|(record, _, _)| record));
                });
            }
        })
        .probe_with(probe);
}

/// Every worker's `records`, on every worker (collective; builds a dataflow, so for rare steps
/// only, such as agreeing that every worker restored its state).
pub(super) fn tell_everyone<D: differential_dataflow::ExchangeData>(
    worker: &mut Worker,
    records: Vec<D>,
) -> Vec<D> {
    let heard: Rc<RefCell<Vec<D>>> = Rc::new(RefCell::new(Vec::new()));
    let probe: ProbeHandle<u64> = ProbeHandle::new();
    let mut announce = worker.dataflow::<u64, _, _>(|scope| {
        let (input, announced) = scope.new_collection::<D, isize>();
        collect(announced.inner.broadcast(), &probe, &heard);
        input
    });
    for record in records {
        announce.insert(record);
    }
    drop(announce);
    while !probe.done() {
        worker.step_or_park(None);
    }
    heard.take()
}

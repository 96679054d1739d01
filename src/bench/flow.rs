//! The flow kinds the benchmark measures, and the target each one maintains.

use crate::gen::{self, Workload};
use crate::plan::{ScdType, Target};
use std::fmt;

/// A flow kind: AUTO CDC into an SCD1, SCD2 or bitemporal target, or AUTO CDC FROM SNAPSHOT
/// into an SCD2 target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Flow {
    /// AUTO CDC, SCD type 1.
    Scd1,
    /// AUTO CDC, SCD type 2.
    Scd2,
    /// AUTO CDC, bitemporal.
    Bitemporal,
    /// AUTO CDC FROM SNAPSHOT, SCD type 2: each commit is a full snapshot of the source table
    /// after the commit's events ([`super::Commits::snapshots`]).
    Snapshot,
}

impl Flow {
    /// Every flow kind.
    pub const ALL: [Flow; 4] = [Flow::Scd1, Flow::Scd2, Flow::Bitemporal, Flow::Snapshot];

    /// The name in tables and plots: `scd1`, `scd2`, `bitemporal`, `snapshot`.
    pub fn label(self) -> &'static str {
        match self {
            Flow::Scd1 => "scd1",
            Flow::Scd2 => "scd2",
            Flow::Bitemporal => "bitemporal",
            Flow::Snapshot => "snapshot",
        }
    }

    /// The kind of table the flow maintains.
    pub fn scd(self) -> ScdType {
        match self {
            Flow::Scd1 => ScdType::Type1,
            Flow::Scd2 | Flow::Snapshot => ScdType::Type2,
            Flow::Bitemporal => ScdType::Bitemporal,
        }
    }

    /// The flow's target over `w`: [`gen::target`], except that a snapshot target is named
    /// `snapshot` and never partial (a snapshot carries whole rows).
    pub fn target(self, w: &Workload) -> Target {
        let mut target = gen::target(w, self.scd());
        if self == Flow::Snapshot {
            target.name = self.label().to_string();
            target.partial = false;
        }
        target
    }
}

impl fmt::Display for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

//! `BuiltFlow`: a validated flow, its target and the schema of its source rows.

use crate::event::Event;
use crate::plan::{CdcFlow, Target};
use crate::prepare::{to_event, InvalidRow};
use crate::value::{Datum, Row, Schema, Value};

/// A flow that passed validation ([`AutoCdcFlow::build`](super::AutoCdcFlow::build)): what a
/// pipeline file's front end would have produced for it. Feed it source rows with
/// [`AutoCdc::auto_cdc`](super::AutoCdc::auto_cdc), or turn rows into events one at a time
/// with [`BuiltFlow::to_event`].
#[derive(Clone, Debug)]
pub struct BuiltFlow {
    target: Target,
    flow: CdcFlow,
    source_schema: Schema,
    warnings: Vec<String>,
}

impl BuiltFlow {
    pub(super) fn new(
        target: Target,
        flow: CdcFlow,
        source_schema: Schema,
        warnings: Vec<String>,
    ) -> Self {
        BuiltFlow {
            target,
            flow,
            source_schema,
            warnings,
        }
    }

    /// The target table: schema, keys, SCD type, tracked columns, partial updates.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The resolved flow. Its `target` and `source` indices are 0 (the only target and source)
    /// and its `line` is 0 (there is no file).
    pub fn flow(&self) -> &CdcFlow {
        &self.flow
    }

    /// The schema source rows must have.
    pub fn source_schema(&self) -> &Schema {
        &self.source_schema
    }

    /// Problems that did not stop the build, e.g. a tracked column that is not in the target
    /// (D9); the same messages a pipeline file would get as warnings.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The event a source row stands for (SPEC 3.1), or why it stands for none. A row whose
    /// width differs from the source schema's is invalid too: the flow's column indices would
    /// not fit it.
    pub fn to_event(&self, row: &[Value]) -> Result<Event, InvalidRow> {
        self.event_of(&Row::from(row).unpack())
    }

    /// [`BuiltFlow::to_event`] of a row already packed, as a dataflow's rows are.
    pub(crate) fn event_of(&self, row: &[Datum<'_>]) -> Result<Event, InvalidRow> {
        if row.len() != self.source_schema.len() {
            return Err(InvalidRow {
                column: "row".to_string(),
                reason: format!(
                    "expected {} values (the source schema: {}), found {}",
                    self.source_schema.len(),
                    self.source_schema,
                    row.len()
                ),
            });
        }
        to_event(&self.flow, &self.target, &self.source_schema, row)
    }
}

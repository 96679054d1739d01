//! Every flow of a pipeline, of any kind, in one list: the order metrics and quarantine files use.

use crate::plan::Pipeline;

/// Which kind of flow, and its index in the pipeline's list of that kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowKind {
    /// Index into [`Pipeline::flows`].
    AutoCdc(usize),
    /// Index into [`Pipeline::snapshot_flows`].
    Snapshot(usize),
    /// Index into [`Pipeline::replace_flows`].
    ReplaceUsing(usize),
}

/// A flow of any kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowRef {
    /// Flow name.
    pub name: String,
    /// Index into [`Pipeline::targets`].
    pub target: usize,
    /// Kind and index.
    pub kind: FlowKind,
}

/// AUTO CDC flows, then snapshot flows, then REPLACE USING flows, each in declaration order.
pub fn all(pipeline: &Pipeline) -> Vec<FlowRef> {
    let cdc = pipeline.flows.iter().enumerate().map(|(i, f)| FlowRef {
        name: f.name.clone(),
        target: f.target,
        kind: FlowKind::AutoCdc(i),
    });
    let snapshot = pipeline
        .snapshot_flows
        .iter()
        .enumerate()
        .map(|(i, f)| FlowRef {
            name: f.name.clone(),
            target: f.target,
            kind: FlowKind::Snapshot(i),
        });
    let replace = pipeline
        .replace_flows
        .iter()
        .enumerate()
        .map(|(i, f)| FlowRef {
            name: f.name.clone(),
            target: f.target,
            kind: FlowKind::ReplaceUsing(i),
        });
    cdc.chain(snapshot).chain(replace).collect()
}

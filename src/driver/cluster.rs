//! What the processes of a cluster agree on before they run: the terms the engine's handshake
//! compares ([`terms`]: the pipeline's definitions and the options that shape results) and, at
//! the start of every [`Driver::apply`](super::Driver::apply), the commits process 0 listed
//! ([`agree_on_commits`]), so a file that lands between the starts of two processes can neither
//! be applied twice nor be skipped.
//!
//! A definition's term is a CRC-32 of its parsed form (`Debug`, without the pipeline-file line
//! numbers it carries for messages), not of the SQL text: comments and layout may differ
//! between processes, meaning may not. Input files are not hashed: every
//! process reads the file a commit names (the cluster assumes shared storage), and only process
//! 0's listing counts.

use super::commit::CommitSource;
use super::Options;
use crate::plan::Pipeline;
use crate::runtime::Engine;
use crate::{Error, ErrorKind, Result};
use std::fmt::Debug;

/// The terms every process of the cluster must share, as `(name, value)`.
pub(super) fn terms(pipeline: &Pipeline, options: &Options) -> Vec<(String, String)> {
    let mut terms = vec![(
        "the pipeline's tables and flows".to_string(),
        names(pipeline).join(", "),
    )];
    let lines = regex::Regex::new(r"\bline: \d+").expect("a valid pattern");
    let mut define = |what: &str, name: &str, definition: &dyn Debug| {
        let text = format!("{definition:?}");
        let text = lines.replace_all(&text, "line: _");
        terms.push((
            format!("the definition of {what} `{name}`"),
            format!("{:08x}", crc32fast::hash(text.as_bytes())),
        ));
    };
    for t in &pipeline.tables {
        define("table", &t.name, t);
    }
    for t in &pipeline.targets {
        define("target", &t.name, t);
    }
    for f in &pipeline.flows {
        define("flow", &f.name, f);
    }
    for f in &pipeline.snapshot_flows {
        define("flow", &f.name, f);
    }
    for f in &pipeline.replace_flows {
        define("flow", &f.name, f);
    }
    let on_invalid = format!("{:?}", options.on_invalid).to_lowercase();
    let gc = options
        .tombstone_gc_seconds
        .map_or_else(|| "(each target's own)".to_string(), |s| s.to_string());
    terms.extend([
        ("--on-invalid".to_string(), on_invalid),
        ("--tombstone-gc-seconds".to_string(), gc),
        (
            "--split-files-over".to_string(),
            options.split_bytes.to_string(),
        ),
    ]);
    terms
}

fn names(pipeline: &Pipeline) -> Vec<&str> {
    let tables = pipeline.tables.iter().map(|t| t.name.as_str());
    let targets = pipeline.targets.iter().map(|t| t.name.as_str());
    let flows = pipeline.flows.iter().map(|f| f.name.as_str());
    let snapshots = pipeline.snapshot_flows.iter().map(|f| f.name.as_str());
    let replaces = pipeline.replace_flows.iter().map(|f| f.name.as_str());
    tables
        .chain(targets)
        .chain(flows)
        .chain(snapshots)
        .chain(replaces)
        .collect()
}

/// Process 0's `sources`, in every process (collective).
pub(super) fn agree_on_commits(
    engine: &mut Engine,
    sources: &[CommitSource],
) -> Result<Vec<CommitSource>> {
    let mine = postcard::to_stdvec(sources).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("cannot send the commit list to the cluster: {e}"),
        )
    })?;
    let agreed = engine.agree(Some(mine))?;
    postcard::from_bytes(&agreed).map_err(|e| {
        Error::new(
            ErrorKind::Internal,
            format!("process 0's commit list does not decode: {e}"),
        )
    })
}

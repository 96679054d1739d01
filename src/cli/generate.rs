//! `scdflow generate --out DIR`: a seeded workload as commit files, and the pipelines over them.
//!
//! Layout: `DIR/events/commit_000001.<csv|jsonl>`, ... (one file per commit, numbered from 1,
//! zero-padded to at least six digits so that name order, which is the order a pipeline reads
//! them in, is commit order), `DIR/scd1.sql`, `DIR/scd2.sql` and `DIR/bitemporal.sql`.
//! `DIR/events` must be absent or empty: a pipeline reads every file in it, so commits left by
//! an earlier, larger workload would silently join the feed.

use super::args::GenerateArgs;
use anyhow::Context;
use scdflow::gen;
use scdflow::io::OutputFormat;
use scdflow::plan::ScdType;
use std::path::Path;
use std::process::ExitCode;

pub fn generate(args: GenerateArgs) -> anyhow::Result<ExitCode> {
    let workload = args.workload();
    workload.validate().context("invalid workload")?;
    let format: OutputFormat = args.format.into();
    let events_dir = args.out.join(gen::EVENTS_DIR);
    ensure_empty(&events_dir)?;
    let schema = gen::schema(&workload);
    let digits = workload.commits.to_string().len().max(6);
    for (i, rows) in gen::commit_rows(&workload).enumerate() {
        let name = format!("commit_{:0digits$}.{}", i + 1, format.extension());
        scdflow::io::write_rows(&events_dir.join(name), format, &schema, &rows)?;
    }
    let mut pipelines = Vec::new();
    for (scd, file) in [
        (ScdType::Type1, "scd1.sql"),
        (ScdType::Type2, "scd2.sql"),
        (ScdType::Bitemporal, "bitemporal.sql"),
    ] {
        let path = args.out.join(file);
        std::fs::write(&path, gen::pipeline(&workload, scd, format))
            .with_context(|| format!("{}: cannot write", path.display()))?;
        pipelines.push(path.display().to_string());
    }
    println!(
        "{} events in {} commit{} -> {}/, pipelines {}",
        workload.events,
        workload.commits,
        if workload.commits == 1 { "" } else { "s" },
        events_dir.display(),
        pipelines.join(", ")
    );
    Ok(ExitCode::SUCCESS)
}

/// Fails unless `dir` is missing or an empty directory.
fn ensure_empty(dir: &Path) -> anyhow::Result<()> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                anyhow::bail!(
                    "{}: not empty; a pipeline reads every file there, so remove it or choose another --out",
                    dir.display()
                );
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("{}: cannot read", dir.display())),
    }
}

//! `scdflow rewind PIPELINE.sql --state DIR --to VERSION`.

use super::args::RewindArgs;
use scdflow::persist::{Durability, Session};
use std::io::Write;
use std::process::ExitCode;

pub fn rewind(args: RewindArgs) -> anyhow::Result<ExitCode> {
    let pipeline = super::evaluate::load(&args.pipeline, &args.warehouse)?;
    let options = scdflow::driver::Options {
        workers: 1,
        on_invalid: scdflow::driver::OnInvalid::Fail,
        tombstone_gc_seconds: None,
        cluster: None,
        partitioned_output: false,
        split_bytes: 0,
        read_halves_over: super::args::READ_HALVES_OVER,
        pin_workers: false,
    };
    let published = match args.warehouse.open()? {
        Some(warehouse) => warehouse.published_dirs(&pipeline)?,
        None => Vec::new(),
    };
    let durability = Durability {
        state: args.state.clone(),
        out: args.out.clone(),
        format: args.format.into(),
        full_refresh: false,
        published,
    };
    let mut session = Session::open_for_rewind(&pipeline, &options, &durability)?;
    let rewound = session.rewind(args.to)?;
    let mut stdout = std::io::stdout().lock();
    let tables = pipeline.published();
    for (table, restored) in tables.iter().zip(&rewound.restored) {
        if let Some(r) = restored {
            writeln!(
                stdout,
                "{}: Delta version {} returns it to commit {} ({} rows deleted, {} inserted)",
                table.name, r.version, rewound.to, r.deleted, r.inserted
            )?;
        }
    }
    for (table, (path, rows)) in tables.iter().zip(&rewound.tables) {
        writeln!(stdout, "{}: {rows} rows -> {}", table.name, path.display())?;
    }
    for path in &rewound.cut {
        writeln!(stdout, "cut back: {}", path.display())?;
    }
    let new = match rewound.from - rewound.to {
        0 => "it was there".to_string(),
        1 => "1 commit undone".to_string(),
        n => format!("{n} commits undone"),
    };
    writeln!(
        stdout,
        "state: at commit {} ({new}); the next run reprocesses the input consumed after it",
        rewound.to
    )?;
    Ok(ExitCode::SUCCESS)
}

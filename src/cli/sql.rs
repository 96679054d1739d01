//! `scdflow sql [--warehouse DIR] (-f FILE | "STATEMENTS")`: run statements against a warehouse,
//! printing each statement's outcome as it completes.

use super::args::{ResultFormat, SqlArgs};
use scdflow::io::{format_value_text, render_rows, OutputFormat};
use scdflow::warehouse::select::Relation;
use scdflow::warehouse::statements::{self, Outcome};
use std::io::Write;
use std::process::ExitCode;

pub fn sql(args: SqlArgs) -> anyhow::Result<ExitCode> {
    let Some(warehouse) = args.warehouse.open()? else {
        anyhow::bail!("scdflow sql needs --warehouse DIR: the directory its tables are in");
    };
    let warehouse = warehouse.with_lock_wait(std::time::Duration::from_secs(args.lock_wait));
    // clap requires one of the two.
    let text = match &args.file {
        Some(file) => std::fs::read_to_string(file).map_err(|e| scdflow::Error::read(file, &e))?,
        None => args.statements.clone().unwrap_or_default(),
    };
    let format = args.format;
    let mut stdout = std::io::stdout().lock();
    let result = statements::run(&warehouse, &text, &mut |outcome| {
        let printed = match outcome {
            Outcome::Done(message) => writeln!(stdout, "{message}"),
            Outcome::Rows(relation) => print_rows(&mut stdout, format, &relation)?,
        };
        printed.map_err(|e| scdflow::Error::new(scdflow::ErrorKind::Io, format!("stdout: {e}")))
    });
    match (result, &args.file) {
        (Ok(()), _) => Ok(ExitCode::SUCCESS),
        (Err(e), Some(file)) => Err(e.in_file(file).into()),
        (Err(e), None) => Err(e.into()),
    }
}

fn print_rows(
    out: &mut impl Write,
    format: ResultFormat,
    relation: &Relation,
) -> scdflow::Result<std::io::Result<()>> {
    let (schema, rows) = (&relation.schema, &relation.rows);
    let text = match format {
        ResultFormat::Csv => render_rows(OutputFormat::Csv, schema, rows)?,
        ResultFormat::Jsonl => render_rows(OutputFormat::Jsonl, schema, rows)?,
        ResultFormat::Table => aligned(relation),
    };
    Ok(out.write_all(text.as_bytes()))
}

/// Columns padded to their widest cell, NULL shown as `NULL`, and the row count below.
fn aligned(relation: &Relation) -> String {
    let columns = &relation.schema.columns;
    let cells: Vec<Vec<String>> = (relation.rows.iter())
        .map(|row| {
            columns
                .iter()
                .enumerate()
                .map(|(i, c)| match row.value(i) {
                    v if v.is_null() => "NULL".to_string(),
                    v => format_value_text(&v, &c.ty),
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = (columns.iter().enumerate())
        .map(|(i, c)| {
            let widest = cells
                .iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0);
            widest.max(c.name.chars().count())
        })
        .collect();
    let line = |values: &mut dyn Iterator<Item = &str>| -> String {
        let padded: Vec<String> = values
            .zip(&widths)
            .map(|(v, w)| format!("{v:<w$}"))
            .collect();
        format!("{}\n", padded.join(" | ").trim_end())
    };
    let mut text = line(&mut columns.iter().map(|c| c.name.as_str()));
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    text.push_str(&format!("{}\n", rule.join("-+-")));
    for row in &cells {
        text.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    let count = relation.rows.len();
    text.push_str(&format!(
        "({count} row{})\n",
        if count == 1 { "" } else { "s" }
    ));
    text
}

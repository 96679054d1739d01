//! Query results as text, byte for byte as [`crate::io::write_rows`] writes a target's file.
//!
//! `write_rows` only writes files; this renders to a string for stdout. The CSV rules are
//! repeated here (a test pins them to `write_rows`'s output) until `io::write` exposes its
//! renderer.

use crate::io::format::{format_value_text, write_json, write_json_string};
use crate::io::OutputFormat;
use crate::value::{Row, Schema};

/// `rows` as CSV (a header line, then one line per row) or JSON lines.
pub fn render(format: OutputFormat, schema: &Schema, rows: &[Row]) -> String {
    let mut out = String::new();
    match format {
        OutputFormat::Csv => {
            csv_line(&mut out, schema.names().map(Some));
            for row in rows {
                let cells: Vec<Option<String>> = row
                    .iter()
                    .zip(&schema.columns)
                    .map(|(v, c)| (!v.is_null()).then(|| format_value_text(v, &c.ty)))
                    .collect();
                csv_line(&mut out, cells.iter().map(Option::as_deref));
            }
        }
        OutputFormat::Jsonl => {
            for row in rows {
                out.push('{');
                for (i, (column, v)) in schema.columns.iter().zip(row).enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_json_string(&mut out, &column.name);
                    out.push(':');
                    write_json(&mut out, v, &column.ty);
                }
                out.push_str("}\n");
            }
        }
    }
    out
}

/// One CSV line; `None` is NULL (an empty unquoted field).
fn csv_line<'a>(out: &mut String, cells: impl Iterator<Item = Option<&'a str>>) {
    for (i, cell) in cells.enumerate() {
        if i > 0 {
            out.push(',');
        }
        match cell {
            None => {}
            Some(text) if needs_quotes(text) => {
                out.push('"');
                out.push_str(&text.replace('"', "\"\""));
                out.push('"');
            }
            Some(text) => out.push_str(text),
        }
    }
    out.push('\n');
}

fn needs_quotes(text: &str) -> bool {
    let blank = |c: char| c == ' ' || c == '\t';
    text.is_empty()
        || text.contains([',', '"', '\r', '\n'])
        || text.starts_with(blank)
        || text.ends_with(blank)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::write_rows;
    use crate::value::{DataType, Value, F64};

    #[test]
    fn renders_exactly_what_write_rows_writes() {
        let schema = Schema::new([
            ("s".to_string(), DataType::String),
            ("n".to_string(), DataType::Int),
            ("d".to_string(), DataType::Double),
            ("t".to_string(), DataType::Timestamp),
            (
                "st".to_string(),
                DataType::Struct(vec![("a".into(), DataType::BigInt)]),
            ),
        ]);
        let texts = [
            "",
            " lead",
            "trail\t",
            "a,b",
            "say \"hi\"",
            "two\nlines",
            "plain",
        ];
        let rows: Vec<Row> = texts
            .iter()
            .enumerate()
            .map(|(i, s)| {
                vec![
                    Value::Str(s.to_string()),
                    if i % 2 == 0 {
                        Value::Null
                    } else {
                        Value::Int(i as i64 - 3)
                    },
                    Value::Double(F64(if i == 3 { f64::NAN } else { i as f64 / 4.0 })),
                    Value::Timestamp(1_752_832_920_000_000 + i as i64),
                    Value::Struct(vec![Value::Int(i as i64)]),
                ]
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        for format in [OutputFormat::Csv, OutputFormat::Jsonl] {
            let path = dir.path().join(format!("t.{}", format.extension()));
            write_rows(&path, format, &schema, &rows).unwrap();
            let written = std::fs::read_to_string(&path).unwrap();
            assert_eq!(render(format, &schema, &rows), written, "{format:?}");
        }
    }
}

//! `read_files(..., format => 'parquet')`: Parquet files as a source, each read whole as one
//! commit, give the target and change feed their CSV twins give; a durable run reads each file
//! once and refuses one rewritten after it was read; a file that is not Parquet is an error
//! naming it, with nothing written.

use crate::durable::{scdflow, stderr, succeed};
use deltalake::parquet::arrow::ArrowWriter;
use scdflow::delta::batch::{arrow_schema, to_batch};
use scdflow::value::{DataType, Packer, Row, Schema, Value};
use std::path::Path;

/// One event: key, city (NULL for a delete), operation, sequence.
type Event = (i64, Option<&'static str>, &'static str, i64);

fn schema() -> Schema {
    Schema::new([
        ("k".to_string(), DataType::BigInt),
        ("city".to_string(), DataType::String),
        ("op".to_string(), DataType::String),
        ("seq".to_string(), DataType::BigInt),
    ])
}

/// Writes `events` as the Parquet file `path` and as the CSV file `csv`.
fn write(path: &Path, csv: &Path, events: &[Event]) {
    let rows: Vec<Row> = events
        .iter()
        .map(|(k, city, op, seq)| {
            let mut packer = Packer::new();
            packer
                .push(&Value::Int(*k))
                .push(&city.map_or(Value::Null, |c| Value::Str(c.to_string())))
                .push(&Value::Str(op.to_string()))
                .push(&Value::Int(*seq));
            packer.finish()
        })
        .collect();
    let arrow = arrow_schema(&schema()).unwrap();
    let batch = to_batch(&schema(), &arrow, &rows).unwrap();
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(path).unwrap(), arrow, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let mut text = String::from("k,city,op,seq\n");
    for (k, city, op, seq) in events {
        text.push_str(&format!("{k},{},{op},{seq}\n", city.unwrap_or("")));
    }
    std::fs::write(csv, text).unwrap();
}

/// The SCD2 pipeline over `dir`'s files in `format`.
fn pipeline(dir: &str, format: &str) -> String {
    let schema = match format {
        "csv" => ", schema => 'k BIGINT, city STRING, op STRING, seq BIGINT'",
        _ => "",
    };
    format!(
        "CREATE OR REFRESH STREAMING TABLE events AS SELECT * FROM STREAM \
         read_files('{dir}', format => '{format}'{schema});\n\
         CREATE OR REFRESH STREAMING TABLE cities;\n\
         CREATE FLOW f AS AUTO CDC INTO cities FROM STREAM(events) KEYS (k)\n\
         APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq)\n\
         STORED AS SCD TYPE 2;\n"
    )
}

const FILES: [&[Event]; 3] = [
    &[
        (1, Some("Oaxaca"), "UPSERT", 3),
        (2, Some("Tijuana"), "UPSERT", 1),
    ],
    &[
        (1, Some("Puebla"), "UPSERT", 5),
        (1, Some("Merida"), "UPSERT", 4),
    ],
    &[
        (2, None, "DELETE", 6),
        (3, Some("Cancun"), "UPSERT", 2),
        (1, Some("Leon"), "UPSERT", 1),
    ],
];

fn setup(files: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["pq", "csv"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    for (i, events) in FILES.iter().take(files).enumerate() {
        let name = format!("commit_{}", i + 1);
        write(
            &dir.path().join(format!("pq/{name}.parquet")),
            &dir.path().join(format!("csv/{name}.csv")),
            events,
        );
    }
    std::fs::write(dir.path().join("pq.sql"), pipeline("pq", "parquet")).unwrap();
    std::fs::write(dir.path().join("csv.sql"), pipeline("csv", "csv")).unwrap();
    dir
}

/// The target and its change feed without `_commit_timestamp` (the last column: when it ran).
fn outputs(dir: &Path, out: &str) -> (String, String) {
    let read = |name: &str| std::fs::read_to_string(dir.join(out).join(name)).unwrap();
    let feed = read("cities.changes.csv")
        .lines()
        .map(|l| l.rsplit_once(',').map_or(l, |(rest, _)| rest).to_string() + "\n")
        .collect();
    (read("cities.csv"), feed)
}

#[test]
fn parquet_files_give_what_their_csv_twins_give() {
    let dir = setup(3);
    succeed(dir.path(), &["run", "pq.sql", "--out", "o_pq"]);
    succeed(dir.path(), &["run", "csv.sql", "--out", "o_csv"]);
    let (table, feed) = outputs(dir.path(), "o_pq");
    assert_eq!((table.clone(), feed), outputs(dir.path(), "o_csv"));
    assert!(table.contains("1,Puebla,5,\n"), "{table}");
    // The schema was the file's own: `check` shows it.
    let described = succeed(dir.path(), &["check", "pq.sql"]);
    assert!(described.contains("(parquet)"), "{described}");
    assert!(
        described.contains("k BIGINT, city STRING, op STRING, seq BIGINT"),
        "{described}"
    );
}

#[test]
fn a_durable_run_reads_each_parquet_file_once_and_refuses_a_rewritten_one() {
    let dir = setup(2);
    let durable = ["run", "pq.sql", "--state", "st", "--out", "o"];
    succeed(dir.path(), &durable);
    let again = succeed(dir.path(), &durable);
    assert!(again.contains("no new input"), "{again}");
    write(
        &dir.path().join("pq/commit_3.parquet"),
        &dir.path().join("csv/commit_3.csv"),
        FILES[2],
    );
    let third = succeed(dir.path(), &durable);
    assert!(third.contains("commit 3 is new"), "{third}");
    succeed(dir.path(), &["run", "csv.sql", "--out", "o_csv"]);
    assert_eq!(outputs(dir.path(), "o"), outputs(dir.path(), "o_csv"));
    // A file read before, rewritten (here with one more event), is refused; outputs stay.
    let mut more = FILES[0].to_vec();
    more.push((9, Some("Colima"), "UPSERT", 9));
    write(
        &dir.path().join("pq/commit_1.parquet"),
        &dir.path().join("csv/commit_1.csv"),
        &more,
    );
    let out = scdflow(dir.path(), &durable);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("commit_1.parquet"), "{err}");
    assert!(
        err.contains("changed after a run read") || err.contains("changed"),
        "{err}"
    );
    assert_eq!(outputs(dir.path(), "o"), outputs(dir.path(), "o_csv"));
}

#[test]
fn a_file_that_is_not_parquet_is_an_error_naming_it() {
    let dir = setup(1);
    std::fs::write(dir.path().join("pq/commit_2.parquet"), "k,city\n1,x\n").unwrap();
    let out = scdflow(dir.path(), &["run", "pq.sql", "--out", "o"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("commit_2.parquet"), "{err}");
    assert!(err.contains("not a readable Parquet file"), "{err}");
    assert!(!dir.path().join("o").exists());
}

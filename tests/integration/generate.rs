//! `scdflow generate` end to end: its files, run through its pipelines (SCD1, SCD2 and
//! bitemporal) by `scdflow run` on two workers, give the tables the reference model computes from
//! `gen::events` of the same workload.

use scdflow::gen::{self, Workload};
use scdflow::plan::{Format, ScdType};
use scdflow::value::Row;
use std::path::Path;
use std::process::{Command, Output};

fn scdflow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scdflow"))
        .args(args)
        .output()
        .expect("run scdflow")
}

fn succeed(args: &[&str]) -> String {
    let out = scdflow(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Generates `w` with the CLI's flags, runs the three pipelines and compares with the model.
fn generate_run_and_compare(w: &Workload, format: &str) {
    let dir = tempfile::tempdir().unwrap();
    let numbers = [
        ("--events", w.events.to_string()),
        ("--keys", w.keys.to_string()),
        ("--deletes", w.deletes.to_string()),
        ("--truncates", w.truncates.to_string()),
        ("--partial", w.partial.to_string()),
        ("--width", w.width.to_string()),
        ("--displacement", w.displacement.to_string()),
        ("--stragglers", w.stragglers.to_string()),
        ("--straggler-distance", w.straggler_distance.to_string()),
        ("--system-late", w.system_late.to_string()),
        ("--system-lag", w.system_lag.to_string()),
        ("--commits", w.commits.to_string()),
        ("--seed", w.seed.to_string()),
    ];
    let mut args = vec!["generate", "--out", path(dir.path()), "--format", format];
    for (flag, value) in &numbers {
        args.extend([*flag, value.as_str()]);
    }
    let summary = succeed(&args);
    assert!(
        summary.starts_with(&format!("{} events in {} commits", w.events, w.commits)),
        "{summary}"
    );
    let files = std::fs::read_dir(dir.path().join("events"))
        .unwrap()
        .count();
    assert_eq!(files as u64, w.commits);

    for (scd, sql) in [
        (ScdType::Type1, "scd1.sql"),
        (ScdType::Type2, "scd2.sql"),
        (ScdType::Bitemporal, "bitemporal.sql"),
    ] {
        let out = dir.path().join(format!("out_{sql}"));
        let pipeline = dir.path().join(sql);
        succeed(&[
            "run",
            path(&pipeline),
            "--out",
            path(&out),
            "--workers",
            "2",
        ]);

        let target = gen::target(w, scd);
        let events: Vec<_> = gen::events(w, &target)
            .into_iter()
            .flat_map(|c| c.events.into_iter().flatten())
            .collect();
        let expected = scdflow::model::evaluate(&target, &events);
        let written = out.join(format!("{}.csv", target.name));
        let got: Vec<Row> = scdflow::io::read_file(&written, Format::Csv, true, &target.schema)
            .unwrap()
            .into_iter()
            .map(|r| r.unwrap().row)
            .collect();
        assert!(!expected.is_empty(), "{sql}: a trivial table proves little");
        assert_eq!(got, expected, "{sql} over {format} files");
    }
}

#[test]
fn generated_csv_pipelines_give_the_model_tables() {
    let w = Workload {
        events: 2_000,
        keys: 100,
        deletes: 0.1,
        partial: 0.05,
        displacement: 200,
        system_late: 0.05,
        system_lag: 500,
        commits: 10,
        ..Workload::default()
    };
    generate_run_and_compare(&w, "csv");
}

#[test]
fn generated_jsonl_with_truncates_and_stragglers_gives_the_model_tables() {
    let w = Workload {
        events: 1_000,
        keys: 50,
        deletes: 0.1,
        truncates: 0.002,
        partial: 0.3,
        width: 3,
        displacement: 1_000,
        stragglers: 0.05,
        straggler_distance: 300,
        system_late: 0.02,
        system_lag: 400,
        commits: 7,
        seed: 3,
    };
    generate_run_and_compare(&w, "jsonl");
}

#[test]
fn invalid_knobs_and_a_used_directory_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = path(dir.path());
    for (flag, value, needle) in [
        ("--deletes", "1.5", "deletes must be a fraction in [0, 1]"),
        ("--partial", "0.95", "at most 1"),
        ("--keys", "0", "keys must be"),
        ("--commits", "0", "commits must be at least 1"),
        ("--system-late", "2", "system_late must be a fraction"),
    ] {
        let result = scdflow(&["generate", "--out", out, flag, value]);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(2), "{flag} {value}");
        assert!(stderr.contains(needle), "{flag} {value}: {stderr}");
    }
    succeed(&["generate", "--out", out, "--events", "10", "--commits", "2"]);
    let again = scdflow(&["generate", "--out", out, "--events", "10"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("not empty"));
}

//! `scdflow bench`: a tiny run's table, report and plots; the open loop; the DuckDB peer's
//! plumbing (with a fake script); bad arguments.

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

/// The rows of the figures table (`| flow | ...` excluded) for `system`.
fn table_rows<'a>(stdout: &'a str, system: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .filter(|l| l.starts_with("| ") && l.split(" | ").nth(4) == Some(system))
        .collect()
}

fn assert_svg(path: &Path) {
    let svg = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let start = svg.trim_start();
    assert!(
        start.starts_with("<svg") || start.starts_with("<?xml"),
        "{}: {}",
        path.display(),
        &svg[..svg.len().min(80)]
    );
    assert!(svg.trim_end().ends_with("</svg>"), "{}", path.display());
    assert!(svg.contains("<text"), "{}: labels", path.display());
}

#[test]
fn tiny_run_prints_the_table_and_writes_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    let report = report.to_str().unwrap();
    let args = [
        "bench", "--events", "2000", "--keys", "100", "--batch", "100", "--report", report,
    ];
    let stdout = succeed(&args);
    assert!(stdout.starts_with("command: "), "{stdout}");
    assert!(
        stdout.contains("bench --events 2000 --keys 100 --batch 100 --report"),
        "{stdout}"
    );
    assert!(stdout.contains("machine: "), "{stdout}");
    assert!(
        stdout.contains("workload: events 2000, keys 100"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "| system | commits | events/s | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs |"
        ),
        "{stdout}"
    );
    // 3 displacements x 4 flows, each for every system.
    for system in ["scdflow", "state loop", "dd reduce"] {
        let rows = table_rows(&stdout, system);
        assert_eq!(rows.len(), 12, "{system}: {stdout}");
        assert!(
            rows.iter().all(|r| r.contains("| 20 |")),
            "20 commits each: {rows:?}"
        );
    }
    assert!(stdout.contains("throughput vs state loop"), "{stdout}");

    let dir = Path::new(report);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for part in [
        "## Machine",
        "CPU:",
        "## Settings",
        "## Figures",
        "## Ratios",
        "## Plots",
    ] {
        assert!(md.contains(part), "{part}: {md}");
    }
    assert!(
        md.contains("bench --events 2000 --keys 100 --batch 100 --report"),
        "{md}"
    );
    assert_eq!(md.matches("| dd reduce |").count(), 12, "{md}");
    for svg in ["latency_vs_displacement.svg", "latency_vs_history.svg"] {
        assert!(md.contains(svg), "{md}");
        assert_svg(&dir.join(svg));
    }
}

#[test]
fn rate_runs_an_open_loop() {
    let args = [
        "bench",
        "--events",
        "1000",
        "--keys",
        "50",
        "--batch",
        "100",
        "--displacement",
        "300",
        "--flows",
        "scd2",
        "--rate",
        "20000",
    ];
    let stdout = succeed(&args);
    assert!(
        stdout.contains("open loop, a commit due every 5.000 ms"),
        "{stdout}"
    );
    for system in ["scdflow", "state loop", "dd reduce"] {
        let rows = table_rows(&stdout, system);
        assert_eq!(rows.len(), 1, "{system}: {stdout}");
        // 1,000 events offered at 20,000/s take at least 45 ms: at most ~22,000 events/s.
        let rate: f64 = rows[0].split(" | ").nth(6).unwrap().parse().unwrap();
        assert!(rate < 22_500.0, "{system}: {rate} events/s: {stdout}");
    }
}

/// `--peers` with a fake peer script: its figures join the table when python3 can import
/// duckdb; otherwise the run says how to install it and goes on.
#[test]
fn peers_join_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fake_peer.py");
    std::fs::write(
        &script,
        r#"import json, os, sys
events_dir, scd = sys.argv[2], int(sys.argv[4])
commits = len(os.listdir(events_dir))
print(json.dumps({"peer": "duckdb", "scd": scd, "events": 1000, "commits": commits,
                  "seconds": 0.5, "p50_us": 100, "p90_us": 200, "p99_us": 300, "p999_us": 400,
                  "max_us": 500}))
"#,
    )
    .unwrap();
    let args = [
        "bench",
        "--events",
        "1000",
        "--keys",
        "50",
        "--batch",
        "100",
        "--displacement",
        "0",
        "--systems",
        "scdflow",
        "--peers",
        "--peer-script",
        script.to_str().unwrap(),
    ];
    let out = scdflow(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let duckdb = Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if duckdb {
        let rows = table_rows(&stdout, "duckdb");
        assert_eq!(rows.len(), 2, "SCD1 and SCD2: {stdout}");
        assert!(
            rows.iter()
                .all(|r| r.contains("| 10 | 2000 | 100 | 200 | 300 | 400 | 500 |")),
            "{rows:?}"
        );
        assert!(stdout.contains("throughput vs duckdb"), "{stdout}");
    } else {
        assert!(stderr.contains("python3 -m pip install duckdb"), "{stderr}");
        assert!(table_rows(&stdout, "duckdb").is_empty(), "{stdout}");
    }
}

#[test]
fn bad_arguments_fail_in_one_line() {
    for (args, expected) in [
        (
            vec!["bench", "--rate", "0"],
            "rate must be a positive number",
        ),
        (vec!["bench", "--keys", "10,0"], "keys must be in"),
        (
            vec!["bench", "--deletes", "1.5"],
            "deletes must be a fraction",
        ),
        (vec!["bench", "--batch", "0"], "--batch"),
        (vec!["bench", "--events", "many"], "--events"),
        (vec!["bench", "--flows", "scd3"], "scd3"),
        (vec!["bench", "--evnts", "5"], "--evnts"),
    ] {
        let out = scdflow(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing measured");
    }
}

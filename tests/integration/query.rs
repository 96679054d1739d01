//! `scdflow query`: point-in-time reads of the bundled SCD1 / SCD2 examples, their output
//! formats and their errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn dataflows() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("dataflows")
}

/// Runs `scdflow query dataflows/<pipeline> <sql> <extra...>`.
fn query(pipeline: &str, sql: &str, extra: &[&str]) -> Output {
    let path = dataflows().join(pipeline);
    Command::new(env!("CARGO_BIN_EXE_scdflow"))
        .arg("query")
        .arg(&path)
        .arg(sql)
        .args(extra)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run scdflow")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The one-line error and exit status 2 of a failed query.
fn error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
}

const HEADER: &str = "userId,name,city,__START_AT,__END_AT\n";

#[test]
fn business_time_as_of_gives_each_key_its_version_then() {
    let sql = "SELECT * FROM users_history FOR BUSINESS_TIME AS OF 5";
    let expected = format!(
        "{HEADER}123,Isabel,Chihuahua,5,6\n124,Raul,Oaxaca,1,\n125,Mercedes,Mexicali,5,6\n126,Lily,Cancun,2,\n"
    );
    assert_eq!(stdout(&query("t3_scd2.sql", sql, &[])), expected);
    assert_eq!(
        stdout(&query("t3_scd2.sql", sql, &["--workers", "2"])),
        expected
    );
    // At 6 the delete has ended key 123.
    assert_eq!(
        stdout(&query(
            "t3_scd2.sql",
            "select * from USERS_HISTORY for business_time as of 6 where city = 'Guadalajara' and userId = 125",
            &[]
        )),
        format!("{HEADER}125,Mercedes,Guadalajara,6,\n")
    );
}

#[test]
fn system_time_is_commit_time_for_scd_targets() {
    // Before the first commit nothing was known; far in the future, everything is.
    let before = "SELECT * FROM users_history FOR SYSTEM_TIME AS OF '2000-01-01 00:00:00'";
    assert_eq!(stdout(&query("t3_scd2.sql", before, &[])), HEADER);
    let after =
        "SELECT * FROM users_history FOR SYSTEM_TIME AS OF TIMESTAMP '2999-01-01T00:00:00Z' \
                 FOR BUSINESS_TIME AS OF 3 WHERE userId = 125";
    assert_eq!(
        stdout(&query("t3_scd2.sql", after, &[])),
        format!("{HEADER}125,Mercedes,Tijuana,2,5\n")
    );
    let scd1 = "SELECT * FROM users_current FOR SYSTEM_TIME AS OF '2999-01-01 00:00:00'";
    assert_eq!(
        stdout(&query("t1_scd1.sql", scd1, &["--format", "jsonl"])),
        "{\"userId\":124,\"name\":\"Raul\",\"city\":\"Oaxaca\"}\n\
         {\"userId\":125,\"name\":\"Mercedes\",\"city\":\"Guadalajara\"}\n\
         {\"userId\":126,\"name\":\"Lily\",\"city\":\"Cancun\"}\n"
    );
}

#[test]
fn errors_are_one_line_with_exit_status_2() {
    let cases = [
        (
            "t3_scd2.sql",
            "SELECT * FROM users_histroy",
            "error: query: FROM: unknown table `users_histroy` (did you mean `users_history`?)\n",
        ),
        (
            "t1_scd1.sql",
            "SELECT * FROM users_current FOR BUSINESS_TIME AS OF 3",
            "error: query: FOR BUSINESS_TIME AS OF: `users_current` is an SCD type 1 table and has no business time\n",
        ),
        (
            "t3_scd2.sql",
            "SELECT * FROM users_history WHERE town = 'Cancun'",
            "error: query: WHERE: unknown column `town` in `users_history`\n",
        ),
        (
            "t3_scd2.sql",
            "SELECT * FROM users_history FOR BUSINESS_TIME AS OF 'five'",
            "error: query: FOR BUSINESS_TIME AS OF: `five` is not a valid INT\n",
        ),
        (
            "t3_scd2.sql",
            "SELECT userId FROM users_history",
            "error: query: SELECT: expected `*` (only SELECT * is supported), found `userId`\n",
        ),
    ];
    for (pipeline, sql, message) in cases {
        assert_eq!(error(&query(pipeline, sql, &[])), message, "{sql}");
    }
}

/// SPEC T8's point-in-time checks on the bundled bitemporal example.
#[test]
fn t8_point_in_time_checks() {
    let checks = [
        ("10:06:00", "13:00:00", Some("XFv1")),
        ("12:22:00", "12:10:00", Some("XFv1")),
        ("12:22:00", "13:00:00", Some("XFv2")),
        ("12:26:00", "12:10:00", Some("XFv3")),
        ("12:31:00", "12:40:00", None),
        ("12:31:00", "12:20:00", Some("XFv2")),
    ];
    for (system, business, seen) in checks {
        let sql = format!(
            "SELECT * FROM company_bitemporal FOR SYSTEM_TIME AS OF '2025-07-18 {system}' \
             FOR BUSINESS_TIME AS OF '2025-07-18T{business}' WHERE id = 'A'"
        );
        let out = stdout(&query("t8_bitemporal.sql", &sql, &["--format", "jsonl"]));
        let values: Vec<String> = out
            .lines()
            .map(|l| {
                let row: serde_json::Value = serde_json::from_str(l).unwrap();
                row["value"].as_str().unwrap().to_string()
            })
            .collect();
        let expected: Vec<String> = seen.into_iter().map(String::from).collect();
        assert_eq!(
            values, expected,
            "as of system {system}, business {business}"
        );
    }
}

#[test]
fn t8_current_belief_without_clauses() {
    let sql = "SELECT * FROM company_bitemporal FOR BUSINESS_TIME AS OF '2025-07-18 12:10:00'";
    assert_eq!(
        stdout(&query("t8_bitemporal.sql", sql, &[])),
        "id,value,__START_AT,__END_AT,__SYSTEM_START_AT,__SYSTEM_END_AT\n\
         A,XFv3,2025-07-18T12:05:00,2025-07-18T12:15:43,2025-07-18T12:25:00,\n"
    );
}

/// `table_changes` reads a target's change data feed of a range of commits, as Delta's
/// function reads a published table's; `WHERE` filters on the feed's columns too.
#[test]
fn table_changes_reads_the_change_feed_of_a_range_of_commits() {
    let all = stdout(&query(
        "t3_scd2.sql",
        "SELECT * FROM table_changes('users_history', 1)",
        &[],
    ));
    let header = "userId,name,city,__START_AT,__END_AT,_change_type,_commit_version,\
                  _commit_timestamp\n";
    assert!(all.starts_with(header), "{all}");
    assert_eq!(all.lines().count(), 1 + 11, "{all}");
    let second = stdout(&query(
        "t3_scd2.sql",
        "SELECT * FROM table_changes('users_history', 2, 2) WHERE _change_type = 'update_postimage'",
        &["--format", "jsonl"],
    ));
    let keys: Vec<&str> = (second.lines())
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(keys, ["{\"userId\":123", "{\"userId\":125"], "{second}");
    assert!(second.contains("\"__END_AT\":5"), "{second}");
    let none = stdout(&query(
        "t3_scd2.sql",
        "SELECT * FROM table_changes('users_history', 3)",
        &[],
    ));
    assert_eq!(none.lines().count(), 1, "{none}");
    let err = error(&query(
        "t3_scd2.sql",
        "SELECT * FROM table_changes('users_history', 1) WHERE nope = 1",
        &[],
    ));
    assert!(err.contains("unknown column `nope`"), "{err}");
}

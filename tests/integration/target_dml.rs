//! DML on published AUTO CDC targets (seed 003): `INSERT` (the seed's row with `__START_AT` 5),
//! a GDPR erasure of one key's history, a manual fix of one version and a `MERGE` through
//! `scdflow sql`; a durable run takes them into its state, and later events — in order and late
//! — apply on top, also in a `--follow` run between its steps. Statements that would break the history are
//! refused, naming the key and why, and change nothing. The event log is read from the
//! published versions.

use crate::durable::{logged, scdflow, stderr, stop_following, succeed, wait_for};
use crate::warehouse::{sql, warehouse, SEED_SCD2};
use std::path::Path;

/// A durable run of `pipeline` over the seed's schema, its state and outputs named after it.
fn durable_run(cwd: &Path, pipeline: &str) -> String {
    let (state, out) = (format!("{pipeline}.state"), format!("{pipeline}.out"));
    let args = [
        "run",
        pipeline,
        "--warehouse",
        "w",
        "--schema",
        "cdc_tutorial",
        "--out",
        &out,
        "--state",
        &state,
    ];
    succeed(cwd, &args)
}

/// `scdflow sql` that must fail; its error.
fn refused(cwd: &Path, statement: &str) -> String {
    let out = scdflow(cwd, &["sql", "--warehouse", "w", statement]);
    assert_eq!(out.status.code(), Some(2), "{statement}: {}", stderr(&out));
    stderr(&out)
}

const HISTORY: &str = "SELECT * FROM main.cdc_tutorial.users_history \
                       ORDER BY userId, __START_AT";

#[test]
fn edits_of_an_scd2_target_stay_under_later_events() {
    let dir = warehouse();
    let cwd = dir.path();
    durable_run(cwd, "scd2.sql");
    assert_eq!(sql(cwd, HISTORY), SEED_SCD2);
    // Seed 003's statement, for this table: an open version starting at 5.
    sql(
        cwd,
        "INSERT INTO main.cdc_tutorial.users_history (userId, name, __START_AT, __END_AT) \
         VALUES (127, 'John Doe', 5, NULL)",
    );
    // A GDPR erasure of one key's whole history, and a manual fix of one version.
    sql(
        cwd,
        "DELETE FROM main.cdc_tutorial.users_history WHERE userId = 123",
    );
    sql(
        cwd,
        "UPDATE main.cdc_tutorial.users_history SET city = 'Ciudad Juarez' \
         WHERE userId = 125 AND __START_AT = 5",
    );
    let edited = "userId,name,city,__START_AT,__END_AT\n\
                  124,Raul,Oaxaca,1,\n\
                  125,Mercedes,Tijuana,2,5\n\
                  125,Mercedes,Ciudad Juarez,5,6\n\
                  125,Mercedes,Guadalajara,6,\n\
                  126,Lily,Cancun,2,\n\
                  127,John Doe,,5,\n";
    assert_eq!(sql(cwd, HISTORY), edited);

    // What would break the history is refused, naming the key and why, and changes nothing.
    for (statement, why) in [
        (
            "INSERT INTO main.cdc_tutorial.users_history VALUES (124, 'Raul', 'Puebla', 3, NULL)",
            "key (userId = 124): the version starting at 1 is open (__END_AT NULL) but a later \
             one starts at 3",
        ),
        (
            "UPDATE main.cdc_tutorial.users_history SET __END_AT = 7 \
             WHERE userId = 125 AND __START_AT = 5",
            "key (userId = 125): the versions starting at 5 and 6 overlap (the first ends at 7)",
        ),
        (
            "UPDATE main.cdc_tutorial.users_history SET __END_AT = 2 WHERE userId = 126",
            "key (userId = 126): the version starting at 2 ends at 2, not after it starts",
        ),
        (
            "UPDATE main.cdc_tutorial.users_history SET city = 'Tijuana' \
             WHERE userId = 125 AND __START_AT = 5",
            "the versions starting at 2 and 5 touch and differ in no tracked column",
        ),
        (
            "INSERT INTO main.cdc_tutorial.users_history VALUES (128, 'Ana', 'Leon', NULL, NULL)",
            "key (userId = 128): a version has no __START_AT",
        ),
    ] {
        let error = refused(cwd, statement);
        assert!(error.contains(why), "{statement}: {error}");
        assert!(error.contains("nothing was changed"), "{error}");
    }
    assert_eq!(sql(cwd, HISTORY), edited);

    // A run with nothing new takes the edits and commits nothing; the next one takes them
    // again with its events: in order for 127 and 126, late for 125 (splitting Tijuana), and
    // late for the erased 123, which starts afresh.
    durable_run(cwd, "scd2.sql");
    assert_eq!(sql(cwd, HISTORY), edited);
    sql(
        cwd,
        "INSERT INTO main.cdc_tutorial.users_cdf VALUES \
         (127, 'John Doe', 'Merida', 'UPDATE', 7), \
         (126, 'Lily', NULL, 'DELETE', 8), \
         (125, 'Mercedes', 'Leon', 'UPDATE', 3), \
         (123, 'Isabel', 'Puebla', 'UPDATE', 4)",
    );
    durable_run(cwd, "scd2.sql");
    let after = "userId,name,city,__START_AT,__END_AT\n\
                 123,Isabel,Puebla,4,\n\
                 124,Raul,Oaxaca,1,\n\
                 125,Mercedes,Tijuana,2,3\n\
                 125,Mercedes,Leon,3,5\n\
                 125,Mercedes,Ciudad Juarez,5,6\n\
                 125,Mercedes,Guadalajara,6,\n\
                 126,Lily,Cancun,2,8\n\
                 127,John Doe,,5,7\n\
                 127,John Doe,Merida,7,\n";
    assert_eq!(sql(cwd, HISTORY), after);
    // The run's version holds exactly its changes, after the three edits' versions.
    let feed = sql(
        cwd,
        "SELECT userId, city, __START_AT, __END_AT, _change_type, _commit_version \
         FROM table_changes('main.cdc_tutorial.users_history', 5) \
         ORDER BY _commit_version, userId, _change_type, __START_AT",
    );
    assert_eq!(
        feed,
        "userId,city,__START_AT,__END_AT,_change_type,_commit_version\n\
         123,Puebla,4,,insert,5\n\
         125,Leon,3,5,insert,5\n\
         125,Tijuana,2,3,update_postimage,5\n\
         125,Tijuana,2,5,update_preimage,5\n\
         126,Cancun,2,8,update_postimage,5\n\
         126,Cancun,2,,update_preimage,5\n\
         127,Merida,7,,insert,5\n\
         127,,5,7,update_postimage,5\n\
         127,,5,,update_preimage,5\n",
        "{feed}"
    );
    // Nothing is taken twice: another run with nothing new leaves the table as it is.
    durable_run(cwd, "scd2.sql");
    assert_eq!(sql(cwd, HISTORY), after);
}

#[test]
fn merge_into_an_scd2_target_is_checked_and_taken_into_the_state() {
    let dir = warehouse();
    let cwd = dir.path();
    durable_run(cwd, "scd2.sql");
    // A fix of one version and a new key, from a source table, in one statement.
    let out = sql(
        cwd,
        "MERGE INTO main.cdc_tutorial.users_history t \
         USING (SELECT * FROM VALUES (125, 'Mercedes', 'Colima', 2), (128, 'Ana', 'Leon', 3) \
                AS v(userId, name, city, since)) s \
         ON t.userId = s.userId AND t.__START_AT = s.since \
         WHEN MATCHED THEN UPDATE SET city = s.city \
         WHEN NOT MATCHED THEN INSERT (userId, name, city, __START_AT) \
              VALUES (s.userId, s.name, s.city, s.since)",
    );
    assert!(
        out.contains("1 rows updated, 0 deleted, 1 inserted"),
        "{out}"
    );
    // One that would end a version of 126 before it starts is refused whole: its valid
    // change of 124 is not made either.
    let error = refused(
        cwd,
        "MERGE INTO main.cdc_tutorial.users_history t \
         USING (SELECT 124 AS userId) s ON t.userId = s.userId AND t.__END_AT IS NULL \
         WHEN MATCHED THEN UPDATE SET __START_AT = 0, __END_AT = 9 \
         WHEN NOT MATCHED BY SOURCE AND t.userId = 126 THEN UPDATE SET __END_AT = 1",
    );
    assert!(
        error.contains("key (userId = 126): the version starting at 2 ends at 1"),
        "{error}"
    );
    sql(
        cwd,
        "INSERT INTO main.cdc_tutorial.users_cdf VALUES (128, 'Ana', 'Morelia', 'UPDATE', 4)",
    );
    durable_run(cwd, "scd2.sql");
    let rows = sql(
        cwd,
        "SELECT userId, city, __START_AT, __END_AT FROM main.cdc_tutorial.users_history \
         WHERE userId IN (124, 125, 128) ORDER BY userId, __START_AT",
    );
    assert_eq!(
        rows,
        "userId,city,__START_AT,__END_AT\n124,Oaxaca,1,\n125,Colima,2,5\n125,Mexicali,5,6\n\
         125,Guadalajara,6,\n128,Leon,3,4\n128,Morelia,4,\n"
    );
}

#[test]
fn edits_of_an_scd1_target_keep_the_keys_sequence() {
    let dir = warehouse();
    let cwd = dir.path();
    durable_run(cwd, "scd1.sql");
    let table = "SELECT * FROM main.cdc_tutorial.users_current ORDER BY userId";
    assert_eq!(
        sql(cwd, table),
        "userId,name,city\n124,Raul,Oaxaca\n125,Mercedes,Guadalajara\n126,Lily,Cancun\n"
    );
    sql(
        cwd,
        "UPDATE main.cdc_tutorial.users_current SET city = 'Cancún' WHERE userId = 126; \
         DELETE FROM main.cdc_tutorial.users_current WHERE userId = 124; \
         INSERT INTO main.cdc_tutorial.users_current VALUES (130, 'Ana', 'Leon')",
    );
    let error = refused(
        cwd,
        "INSERT INTO main.cdc_tutorial.users_current VALUES (125, 'Mercedes', 'Colima')",
    );
    assert!(
        error.contains("key (userId = 125) would have 2 rows"),
        "{error}"
    );
    // Events older than a key's sequence lose to the edit, newer ones win; a key set by hand
    // has no sequence, so any event wins over it; an erased key stays erased for older events.
    sql(
        cwd,
        "INSERT INTO main.cdc_tutorial.users_cdf VALUES \
         (126, 'Lily', 'Tulum', 'UPDATE', 1), \
         (124, 'Raul', 'Puebla', 'UPDATE', 0), \
         (130, 'Ana', 'Morelia', 'UPDATE', 0)",
    );
    durable_run(cwd, "scd1.sql");
    assert_eq!(
        sql(cwd, table),
        "userId,name,city\n125,Mercedes,Guadalajara\n126,Lily,Cancún\n130,Ana,Morelia\n"
    );
}

#[test]
fn edits_under_partial_updates_keep_each_columns_sequence() {
    let dir = warehouse();
    let cwd = dir.path();
    std::fs::write(
        cwd.join("partial.sql"),
        "CREATE OR REFRESH STREAMING TABLE users_partial;\n\
         CREATE FLOW f AS AUTO CDC INTO users_partial FROM STREAM(main.cdc_tutorial.users_cdf)\n\
         KEYS (userId) IGNORE NULL UPDATES APPLY AS DELETE WHEN operation = 'DELETE'\n\
         SEQUENCE BY sequenceNum COLUMNS * EXCEPT (operation, sequenceNum)\n\
         STORED AS SCD TYPE 1;\n",
    )
    .unwrap();
    durable_run(cwd, "partial.sql");
    let table = "SELECT * FROM main.cdc_tutorial.users_partial ORDER BY userId";
    assert_eq!(
        sql(cwd, table),
        "userId,name,city\n124,Raul,Oaxaca\n125,Mercedes,Guadalajara\n126,Lily,Cancun\n"
    );
    // 125's city by hand (its author: sequence 6), 123 (deleted at 6) back by hand, 126 gone.
    sql(
        cwd,
        "UPDATE main.cdc_tutorial.users_partial SET city = 'Colima' WHERE userId = 125; \
         INSERT INTO main.cdc_tutorial.users_partial VALUES (123, 'Isabel', 'Leon'); \
         DELETE FROM main.cdc_tutorial.users_partial WHERE userId = 126",
    );
    // Events: a newer one leaving 125's city (NULL) keeps the edit, an older one setting it
    // loses; 123's older event loses to the row set at its delete's sequence, its newer one
    // setting only the name wins that column; 126's event older than the hand delete loses.
    sql(
        cwd,
        "INSERT INTO main.cdc_tutorial.users_cdf VALUES \
         (125, 'Mercy', NULL, 'UPDATE', 7), (125, 'Mercedes', 'Tepic', 'UPDATE', 5), \
         (123, 'Isa', 'Merida', 'UPDATE', 4), (123, 'Isabela', NULL, 'UPDATE', 8), \
         (126, 'Lily', 'Tulum', 'UPDATE', 1)",
    );
    durable_run(cwd, "partial.sql");
    assert_eq!(
        sql(cwd, table),
        "userId,name,city\n123,Isabela,Leon\n124,Raul,Oaxaca\n125,Mercy,Colima\n"
    );
}

#[test]
fn targets_that_take_no_edits_refuse_dml_and_a_running_pipeline_holds_its_tables() {
    let dir = warehouse();
    let cwd = dir.path();
    std::fs::write(
        cwd.join("bitemporal.sql"),
        "CREATE OR REFRESH STREAMING TABLE users_bi;\n\
         CREATE FLOW f AS AUTO CDC INTO users_bi FROM STREAM(main.cdc_tutorial.users_cdf)\n\
         KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' SEQUENCE BY sequenceNum\n\
         SYSTEM SEQUENCE BY sequenceNum COLUMNS * EXCEPT (operation, sequenceNum)\n\
         STORED AS BITEMPORAL;\n",
    )
    .unwrap();
    durable_run(cwd, "bitemporal.sql");
    let error = refused(
        cwd,
        "DELETE FROM main.cdc_tutorial.users_bi WHERE userId = 124",
    );
    assert!(
        error.contains("is target `users_bi` of a pipeline, which takes no DML: it is bitemporal"),
        "{error}"
    );
    // While a run holds a table (its lock), a statement on it waits (`--lock-wait`, seconds),
    // then is refused, never interleaved.
    durable_run(cwd, "scd2.sql");
    let lock = cwd.join("w/main/cdc_tutorial/.users_history.scdflow-lock");
    let held = std::fs::File::open(&lock).unwrap();
    held.try_lock().unwrap();
    let delete = "DELETE FROM main.cdc_tutorial.users_history WHERE userId = 124";
    let out = scdflow(
        cwd,
        &["sql", "--warehouse", "w", "--lock-wait", "0", delete],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a pipeline run is writing it"),
        "{}",
        stderr(&out)
    );
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(held);
    });
    let waited = std::time::Instant::now();
    sql(cwd, delete);
    assert!(waited.elapsed() >= std::time::Duration::from_millis(250));
    release.join().unwrap();
    assert!(!sql(cwd, HISTORY).contains("\n124,"));
}

#[test]
fn event_log_lists_each_commits_flow_progress_from_the_tables_log() {
    let dir = warehouse();
    let cwd = dir.path();
    durable_run(cwd, "scd2.sql");
    sql(
        cwd,
        "INSERT INTO main.cdc_tutorial.users_cdf VALUES (126, 'Lily', NULL, 'DELETE', 8)",
    );
    // An edit between the runs is a version of the table, not an event of the pipeline.
    sql(
        cwd,
        "DELETE FROM main.cdc_tutorial.users_history WHERE userId = 124",
    );
    durable_run(cwd, "scd2.sql");
    let log = sql(
        cwd,
        "SELECT event_type, flow_name, dataset_name, commit_version, delta_version, \
         num_input_rows, num_upserted_rows, num_deleted_rows, message \
         FROM event_log(TABLE(main.cdc_tutorial.users_history)) ORDER BY commit_version",
    );
    assert_eq!(
        log,
        "event_type,flow_name,dataset_name,commit_version,delta_version,num_input_rows,\
         num_upserted_rows,num_deleted_rows,message\n\
         flow_progress,apply_cdc,users_history,1,1,8,7,0,Flow 'apply_cdc' has completed commit 1.\n\
         flow_progress,apply_cdc,users_history,2,3,1,1,0,Flow 'apply_cdc' has completed commit 2.\n"
    );
    // Its details are the event as Databricks nests it; the name may be given as text.
    let details = sql(
        cwd,
        "SELECT details FROM event_log('main.cdc_tutorial.users_history') \
         WHERE commit_version = 2",
    );
    assert!(
        details.contains(r#"{""flow_progress"":{""metrics"":{"#)
            && details.contains(r#"""num_upserted_rows"":1"#),
        "{details}"
    );
    let error = refused(
        cwd,
        "SELECT * FROM event_log(TABLE(main.cdc_tutorial.users_cdf))",
    );
    assert!(error.contains("is not a pipeline's target"), "{error}");
}

#[test]
fn a_following_run_takes_an_edit_made_between_its_steps() {
    let dir = warehouse();
    let cwd = dir.path();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_scdflow"))
        .args([
            "run",
            "scd2.sql",
            "--warehouse",
            "w",
            "--schema",
            "cdc_tutorial",
        ])
        .args(["--state", "st", "--out", "o", "--follow", "--poll", "0.05"])
        .current_dir(cwd)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let log = cwd.join("w/main/cdc_tutorial/users_history/_delta_log");
    wait_for("commit 1", logged(&log, 1));
    // The step that published version 1 may still hold the table: the statement waits for it.
    sql(
        cwd,
        "DELETE FROM main.cdc_tutorial.users_history WHERE userId = 124",
    );
    sql(
        cwd,
        "INSERT INTO main.cdc_tutorial.users_cdf VALUES \
         (125, 'Mercedes', 'Colima', 'UPDATE', 9), (124, 'Raul', 'Puebla', 'UPDATE', 0)",
    );
    // Commit 2 is version 3, after the edit's version 2.
    wait_for("commit 2", logged(&log, 3));
    stop_following(child);
    // 124's history was erased, so its late event starts it afresh; 125 goes on.
    let rows = sql(
        cwd,
        "SELECT userId, city, __START_AT, __END_AT FROM main.cdc_tutorial.users_history \
         WHERE userId IN (124, 125) ORDER BY userId, __START_AT",
    );
    assert_eq!(
        rows,
        "userId,city,__START_AT,__END_AT\n124,Puebla,0,\n125,Tijuana,2,5\n\
         125,Mexicali,5,6\n125,Guadalajara,6,9\n125,Colima,9,\n"
    );
}

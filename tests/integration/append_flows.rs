//! Append flows through the binary: seed 003's bitemporal example verbatim (an `INSERT INTO
//! ONCE ... BY NAME SELECT * FROM VALUES ... AS t(cols)` source), `ONCE` reading only until the
//! state has committed while a plain append flow keeps reading, declared columns met by name,
//! and several flows into one table: a backfill of values plus a live feed of files.

use crate::durable::succeed;
use std::path::Path;

const SEED: &str = include_str!("../../dataflows/bitemporal_values.sql");

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn the_seeds_bitemporal_source_of_values_runs_verbatim_and_once() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "p.sql", SEED);
    let table = "id,x,y,bt,st,__START_AT,__END_AT,__SYSTEM_START_AT,__SYSTEM_END_AT\n\
        1,x10,y10,10,100,10,,100,200\n\
        1,x10,y10,10,100,10,20,200,\n\
        1,x20,y20,20,200,20,,200,\n";
    succeed(dir.path(), &["run", "p.sql", "--out", "plain"]);
    assert_eq!(read(dir.path(), "plain/target_bitemporal_sql.csv"), table);
    let durable = ["run", "p.sql", "--out", "o", "--state", "st"];
    succeed(dir.path(), &durable);
    let out = succeed(dir.path(), &durable);
    assert!(out.contains("no new input"), "{out}");
    assert_eq!(read(dir.path(), "o/target_bitemporal_sql.csv"), table);
    assert_eq!(
        read(dir.path(), "o/target_bitemporal_sql.changes.csv")
            .lines()
            .count(),
        read(dir.path(), "plain/target_bitemporal_sql.changes.csv")
            .lines()
            .count()
    );
}

#[test]
fn a_once_flow_reads_until_the_state_has_committed_and_a_plain_one_keeps_reading() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = "\
CREATE OR REFRESH STREAMING TABLE backfill;
CREATE FLOW load AS INSERT INTO ONCE backfill BY NAME
SELECT id, city FROM STREAM read_files('old/', format => 'csv');
CREATE OR REFRESH STREAMING TABLE live (city STRING, id INT);
CREATE FLOW feed AS INSERT INTO live BY NAME
SELECT * FROM STREAM read_files('new/', format => 'csv') WHERE id > 0;
CREATE OR REFRESH STREAMING TABLE old_cities;
CREATE FLOW a AS AUTO CDC INTO old_cities FROM STREAM(backfill) KEYS (id) SEQUENCE BY id;
CREATE OR REFRESH STREAMING TABLE new_cities;
CREATE FLOW b AS AUTO CDC INTO new_cities FROM STREAM(live) KEYS (id) SEQUENCE BY id;
";
    write(dir.path(), "p.sql", pipeline);
    write(dir.path(), "old/1.csv", "id,city\n1,Oaxaca\n");
    write(dir.path(), "new/1.csv", "id,city\n2,Cancun\n0,Nowhere\n");
    let durable = ["run", "p.sql", "--out", "o", "--state", "st"];
    succeed(dir.path(), &durable);
    write(dir.path(), "old/2.csv", "id,city\n3,Tijuana\n");
    write(dir.path(), "new/2.csv", "id,city\n4,Merida\n");
    succeed(dir.path(), &durable);
    assert_eq!(read(dir.path(), "o/old_cities.csv"), "id,city\n1,Oaxaca\n");
    // BY NAME: the declared order (city, id), whatever order the files have.
    assert_eq!(
        read(dir.path(), "o/new_cities.csv"),
        "city,id\nCancun,2\nMerida,4\n"
    );
    // A plain run reads everything, the ONCE flow's files included.
    succeed(dir.path(), &["run", "p.sql", "--out", "plain"]);
    assert_eq!(
        read(dir.path(), "plain/old_cities.csv"),
        "id,city\n1,Oaxaca\n3,Tijuana\n"
    );
}

#[test]
fn several_append_flows_fill_one_table_a_backfill_and_a_live_feed() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = "\
CREATE OR REFRESH STREAMING TABLE events (id INT, city STRING, seq INT,
  CONSTRAINT known EXPECT (city IS NOT NULL) ON VIOLATION DROP ROW);
CREATE FLOW backfill AS INSERT INTO ONCE events BY NAME
SELECT * FROM VALUES (1, 'Oaxaca', 1), (2, 'Cancun', 1), (4, NULL, 1) AS v(id, city, seq);
CREATE FLOW live AS INSERT INTO events BY NAME
SELECT city, seq, id FROM STREAM read_files('in/', format => 'csv');
CREATE OR REFRESH STREAMING TABLE cities;
CREATE FLOW c AS AUTO CDC INTO cities FROM STREAM(events) KEYS (id) SEQUENCE BY seq;
";
    write(dir.path(), "p.sql", pipeline);
    write(
        dir.path(),
        "in/1.csv",
        "id,city,seq\n2,Merida,2\n3,Tijuana,1\n",
    );
    let durable = ["run", "p.sql", "--out", "o", "--state", "st"];
    succeed(dir.path(), &durable);
    assert_eq!(
        read(dir.path(), "o/cities.csv"),
        "id,city,seq\n1,Oaxaca,1\n2,Merida,2\n3,Tijuana,1\n"
    );
    write(dir.path(), "in/2.csv", "id,city,seq\n1,Chihuahua,5\n");
    succeed(dir.path(), &durable);
    let last = "id,city,seq\n1,Chihuahua,5\n2,Merida,2\n3,Tijuana,1\n";
    assert_eq!(read(dir.path(), "o/cities.csv"), last);
    succeed(dir.path(), &["run", "p.sql", "--out", "plain"]);
    assert_eq!(read(dir.path(), "plain/cities.csv"), last);
    // The table's constraint counted the row it dropped (the NULL city of the backfill).
    let metrics = read(dir.path(), "plain/metrics.json");
    assert!(metrics.contains("\"known\""), "{metrics}");
}

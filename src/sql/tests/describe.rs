//! The `scdflow check` text.

use super::{parse_ok, USERS};
use crate::sql::describe;

#[test]
fn describes_sources_targets_flows_and_warnings() {
    let sql = format!(
        "{USERS}CREATE STREAMING TABLE hist;\n\
CREATE FLOW f AS AUTO CDC INTO hist FROM STREAM(users_cdf) KEYS (userId)\n\
APPLY AS DELETE WHEN operation = \"DELETE\" SEQUENCE BY sequenceNum COLUMNS * EXCEPT (operation, sequenceNum)\n\
STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (city, zip) IGNORE NULL UPDATES ON (city);\n\
CREATE STREAMING TABLE loud AS SELECT upper(name) AS name, userId FROM users_cdf WHERE userId > 0;"
    );
    let p = parse_ok(&sql);
    let expected = r#"pipeline /p/pipeline.sql

source users_cdf (line 1)
  input: read_files data/users.csv (csv with header)
  file schema (declared): userId INT, name STRING, city STRING, operation STRING, sequenceNum INT
  schema: userId INT, name STRING, city STRING, operation STRING, sequenceNum INT

source loud (line 6)
  input: stream of users_cdf
  select: upper(name) AS name, userId
  where: userId > 0
  schema: name STRING, userId INT

target hist (line 2)
  maintained by: AUTO CDC
  stored as: SCD TYPE 2
  schema: userId INT, name STRING, city STRING, __START_AT INT, __END_AT INT
  keys: userId
  sequence type: INT
  tracked columns: name
  partial updates: yes
  tombstone GC: 172800 s

flow f (line 3): users_cdf -> hist
  keys: userId
  sequence by: sequenceNum (INT)
  delete when: operation = "DELETE"
  columns: userId, name, city
  partial updates: IGNORE NULL UPDATES ON (city)

warnings
  /p/pipeline.sql:5: TRACK HISTORY: `zip` is not a column of the target (selected from `users_cdf`); ignored
"#;
    assert_eq!(describe(&p), expected);
}

#[test]
fn describes_snapshot_and_replace_flows_with_expectations() {
    let sql = format!(
        "{USERS}CREATE STREAMING TABLE hist (CONSTRAINT known_city EXPECT (city <> '?') ON VIOLATION DROP ROW);\n\
CREATE FLOW files AS AUTO CDC ONCE INTO hist FROM SNAPSHOT read_files('snapshots/', format => 'csv',\n\
  schema => 'userId INT, city STRING', version => 'snapshot_([0-9]+)[.]csv')\n\
KEYS (userId) STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (city);\n\
CREATE STREAMING TABLE cities FLOW AUTO CDC FROM SNAPSHOT\n\
  (SELECT userId, upper(city) AS city FROM users_cdf WHERE userId > 0) KEYS (userId);\n\
CREATE STREAMING TABLE latest (CONSTRAINT positive EXPECT (userId > 0) ON VIOLATION FAIL UPDATE)\n\
FLOW REPLACE USING (userId) SEQUENCE BY seq BY NAME SELECT userId, sequenceNum AS seq FROM STREAM(users_cdf);"
    );
    let text = describe(&parse_ok(&sql));
    let expected = r#"
target hist (line 2)
  maintained by: AUTO CDC FROM SNAPSHOT
  stored as: SCD TYPE 2
  schema: userId INT, city STRING, __START_AT BIGINT, __END_AT BIGINT
  keys: userId
  sequence type: BIGINT
  tracked columns: (none)
  tombstone GC: 172800 s

target cities (line 6)
  maintained by: AUTO CDC FROM SNAPSHOT
  stored as: SCD TYPE 1
  schema: userId INT, city STRING
  keys: userId
  sequence type: BIGINT
  tombstone GC: 172800 s

target latest (line 8)
  maintained by: REPLACE USING (rows replaced per key)
  schema: userId INT, seq INT
  keys: userId
  sequence type: INT

snapshot flow files (line 3) (once): snapshots -> hist
  snapshots: files named 'snapshot_([0-9]+)[.]csv' (csv with header), versioned by the first capture group
  file schema: userId INT, city STRING
  schema: userId INT, city STRING
  keys: userId
  stored as: SCD TYPE 2
  tracked columns: (none)
  expect known_city: city <> '?' (on violation: drop row)

snapshot flow cities (line 6): users_cdf -> cities
  snapshots: every commit of users_cdf (periodic, versioned by commit number)
  select: userId, upper(city) AS city
  where: userId > 0
  schema: userId INT, city STRING
  keys: userId
  stored as: SCD TYPE 1

replace flow latest (line 8): users_cdf -> latest
  replace using: userId
  sequence by: seq (INT)
  select: userId, sequenceNum AS seq
  expect positive: userId > 0 (on violation: fail update)
"#;
    assert!(text.ends_with(expected), "{text}");
}

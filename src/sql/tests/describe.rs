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

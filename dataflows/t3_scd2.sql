-- T3 (SPEC section 4): SCD type 2 history of the users change feed.
-- Input:  data/users_cdf/ (the seq-5 updates arrive after seq 6 and are spliced into history)
-- Output: users_history (userId, name, city, __START_AT, __END_AT): one row per version.
CREATE OR REFRESH STREAMING TABLE users_cdf
AS SELECT * FROM STREAM read_files(
  'data/users_cdf',
  format => 'csv',
  header => true,
  schema => 'userId INT, name STRING, city STRING, operation STRING, sequenceNum INT'
);

CREATE OR REFRESH STREAMING TABLE users_history;

CREATE FLOW apply_cdc AS AUTO CDC INTO users_history
FROM STREAM(users_cdf)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 2;

-- T4 (SPEC section 4): SCD type 2 that versions only on name changes; city is overwritten in place.
-- Input:  data/users_cdf/
-- Output: users_history (userId, name, city, __START_AT, __END_AT).
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
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (city);

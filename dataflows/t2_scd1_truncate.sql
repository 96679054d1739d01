-- T2 (SPEC section 4): SCD type 1 with a TRUNCATE event at sequence 3 (arriving late).
-- Input:  data/users_cdf_truncate/ (T1's feed plus a truncate row with NULL key)
-- Output: users_current (userId, name, city): only what is newer than the truncate survives.
CREATE OR REFRESH STREAMING TABLE users_cdf
AS SELECT * FROM STREAM read_files(
  'data/users_cdf_truncate',
  format => 'csv',
  header => true,
  schema => 'userId INT, name STRING, city STRING, operation STRING, sequenceNum INT'
);

CREATE OR REFRESH STREAMING TABLE users_current;

CREATE FLOW apply_cdc AS AUTO CDC INTO users_current
FROM STREAM(users_cdf)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
APPLY AS TRUNCATE WHEN operation = "TRUNCATE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 1;

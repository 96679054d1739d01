-- T1 (SPEC section 4): SCD type 1 from the users change feed.
-- Input:  data/users_cdf/ (two commits; the second holds the seq-5 events that arrive late)
--         key userId, sequence sequenceNum, operation = 'DELETE' marks deletes.
-- Output: users_current (userId, name, city): one row per live user.
CREATE OR REFRESH STREAMING TABLE users_cdf
AS SELECT * FROM STREAM read_files(
  'data/users_cdf',
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

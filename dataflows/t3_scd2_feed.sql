-- T3's SCD2 history, and a table kept from the history's change data feed in the same pipeline,
-- in the same commit: each version of a user, keyed by when it began, with the commit that last
-- changed it. (STREAM(t) WITH (readChangeFeed = true) of a target the pipeline maintains.)
-- Output: users_history as T3, and versions (userId, name, city, valid_from, valid_to,
-- changed_in): the same rows, valid_from/valid_to being __START_AT/__END_AT.
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

-- The feed's preimages are dropped: an SCD1 flow keyed by the version takes each commit's
-- new image (an insert or a postimage) and applies its deletes.
CREATE OR REFRESH STREAMING TABLE history_changes AS
SELECT userId, name, city, __START_AT AS valid_from, __END_AT AS valid_to, _change_type,
       _commit_version AS changed_in
FROM STREAM(users_history) WITH (readChangeFeed = true)
WHERE _change_type <> 'update_preimage';

CREATE OR REFRESH STREAMING TABLE versions;

CREATE FLOW keep_versions AS AUTO CDC INTO versions
FROM STREAM(history_changes)
KEYS (userId, valid_from)
APPLY AS DELETE WHEN _change_type = 'delete'
SEQUENCE BY changed_in
COLUMNS * EXCEPT (_change_type)
STORED AS SCD TYPE 1;

-- T5 (SPEC section 4): AUTO CDC FROM SNAPSHOT, two full snapshots of the users table as versioned
-- files; the version is the number in the file name (snapshot_0.csv, snapshot_1.csv).
-- Input:  data/t5_snapshots/snapshot_<version>.csv (userId, city), key userId.
-- Output: target (userId, city, __START_AT, __END_AT BIGINT): keys missing from version 1 are
--         closed at 1, changed ones closed and reopened at 1, new ones opened at 1.
CREATE OR REFRESH STREAMING TABLE target;

CREATE FLOW target_snapshot_flow AS AUTO CDC INTO target
FROM SNAPSHOT read_files(
  'data/t5_snapshots',
  format => 'csv',
  header => true,
  schema => 'userId INT, city STRING',
  version => 'snapshot_([0-9]+)[.]csv'
)
KEYS (userId)
STORED AS SCD TYPE 2;

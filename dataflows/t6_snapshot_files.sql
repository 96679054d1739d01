-- T6 (SPEC section 4): snapshots as files in a volume, processed in version order in one run.
-- Input:  data/t6_snapshots/snapshot_1.csv, snapshot_2.csv (userId, city), key userId.
-- Output: target (userId, city, __START_AT, __END_AT BIGINT).
CREATE OR REFRESH STREAMING TABLE target
FLOW AUTO CDC
FROM SNAPSHOT read_files(
  'data/t6_snapshots',
  format => 'csv',
  header => true,
  schema => 'userId INT, city STRING',
  version => 'snapshot_([0-9]+)[.]csv'
)
KEYS (userId)
STORED AS SCD TYPE 2;

-- Seed 000, periodic snapshots, step 2: the SCD type 2 flow, verbatim. Its WITH VERSION query
-- reads the version table, so the snapshots are versioned 0, 1, ... as the seed's tables show.
-- scdflow run dataflows/warehouse/snapshot_scd2.sql --warehouse DIR --schema cdc_tutorial --state ST

CREATE OR REFRESH STREAMING TABLE target;

CREATE FLOW target_snapshot_flow AS
AUTO CDC INTO target
FROM SNAPSHOT (
  SELECT userId, city
  FROM main.cdc_tutorial.snapshot
)
WITH VERSION (
  SELECT version
  FROM main.cdc_tutorial.snapshot_version
  WHERE (
    NOT EXISTS (SELECT 1 FROM last_snapshot_version())
    OR version > (SELECT version FROM last_snapshot_version())
  )
)
KEYS (userId)
STORED AS SCD TYPE 2;

-- Seed 000, periodic snapshots, step 2: the SCD type 2 flow, without its WITH VERSION clause
-- (not supported yet): each run that finds a newer version of the table takes it as the next
-- snapshot, versioned by scdflow's commit number (1, 2, ...; the seed's version table says 0, 1).
-- scdflow run dataflows/warehouse/snapshot_scd2.sql --warehouse DIR --schema cdc_tutorial --state ST

CREATE OR REFRESH STREAMING TABLE target;

CREATE FLOW target_snapshot_flow AS
AUTO CDC INTO target
FROM SNAPSHOT (
  SELECT userId, city
  FROM main.cdc_tutorial.snapshot
)
KEYS (userId)
STORED AS SCD TYPE 2;

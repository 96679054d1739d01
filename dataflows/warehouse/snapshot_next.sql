-- Seed 000, periodic snapshots, step 3: a new snapshot arrives, verbatim.
-- scdflow sql --warehouse DIR -f dataflows/warehouse/snapshot_next.sql

TRUNCATE TABLE main.cdc_tutorial.snapshot;

INSERT INTO main.cdc_tutorial.snapshot VALUES
  (2, 'Carmel'),
  (3, 'Los Angeles'),
  (4, 'Death Valley'),
  (6, 'Kings Canyon');

UPDATE main.cdc_tutorial.snapshot_version SET version = 1;

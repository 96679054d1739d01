-- Stand-ins for the tables seed 003's statements name but do not create: a change feed of
-- people for the targets my_streaming_table, my_scd2_target_table and my_mv
-- (standin_003_targets.sql), and cdc_source for the COLUMNS TO UPDATE example.
CREATE SCHEMA main.default;
CREATE TABLE main.default.people_cdf (id INT, name STRING, op STRING, seq INT);
INSERT INTO main.default.people_cdf VALUES
  (1, 'Alice', 'UPSERT', 1),
  (2, 'Bob', 'UPSERT', 1),
  (2, 'Bobby', 'UPSERT', 3),
  (1, NULL, 'DELETE', 4);
CREATE TABLE main.default.cdc_source (
  id INT, name STRING, city STRING, columnsToUpdate ARRAY<STRING>, sequenceNum INT);
INSERT INTO main.default.cdc_source VALUES
  (1, 'Ann', 'Paris', array('name', 'city'), 1),
  (1, NULL, 'Lyon', array('city'), 2),
  (2, 'Ben', 'Rome', array('name', 'city'), 1),
  (2, NULL, NULL, array('city'), 3),
  (2, 'Benno', 'Oslo', array('name'), 2);

-- A Debezium-style customer feed in JSON lines, spread over three files (three commits); the third
-- file carries an update that belongs between the first two (it arrives late) and a second event of
-- the same transaction as an earlier one.
-- Input:  data/customers/*.jsonl (id, name, email, tier, op in c/u/d, lsn, idx, ts)
--         sequence = STRUCT(lsn, idx): log position, then position inside the transaction.
-- Outputs:
--   customers_current (SCD1): the latest row per customer; a NULL email never erases a known one.
--   customers_history (SCD2): a version per tier change; name/email edits are made in place.
CREATE OR REFRESH STREAMING TABLE raw_customer_events
AS SELECT * FROM STREAM read_files(
  'data/customers',
  format => 'json',
  schema => 'id BIGINT, name STRING, email STRING, tier STRING, op STRING, lsn BIGINT, idx INT, ts TIMESTAMP'
);

-- Drop heartbeats and normalise e-mail addresses before CDC.
CREATE OR REFRESH STREAMING TABLE customer_events
AS SELECT id, name, LOWER(email) AS email, tier, op, lsn, idx, ts
FROM STREAM(raw_customer_events)
WHERE op IN ('c', 'u', 'd');

CREATE OR REFRESH STREAMING TABLE customers_current;
CREATE OR REFRESH STREAMING TABLE customers_history;

CREATE FLOW customers_current_flow AS AUTO CDC INTO customers_current
FROM STREAM(customer_events)
KEYS (id)
IGNORE NULL UPDATES ON (email)
APPLY AS DELETE WHEN op = 'd'
SEQUENCE BY STRUCT(lsn, idx)
COLUMNS * EXCEPT (op, lsn, idx)
STORED AS SCD TYPE 1;

CREATE FLOW customers_history_flow AS AUTO CDC INTO customers_history
FROM STREAM(customer_events)
KEYS (id)
APPLY AS DELETE WHEN op = 'd'
SEQUENCE BY STRUCT(lsn, idx)
COLUMNS * EXCEPT (op, lsn, idx, ts)
STORED AS SCD TYPE 2
TRACK HISTORY ON (tier);

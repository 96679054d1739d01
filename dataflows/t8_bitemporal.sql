-- T8 (SPEC section 4): bitemporal history of one company's value.
-- Input:  data/t8_company_events/ (four files, one commit each: insert, update, an update that is
--         earlier in business time but later in system time, delete)
-- Output: company_bitemporal (id, value, __START_AT, __END_AT, __SYSTEM_START_AT,
--         __SYSTEM_END_AT): business validity x the system time during which it was believed.
CREATE OR REFRESH STREAMING TABLE company_events
AS SELECT * FROM STREAM read_files(
  'data/t8_company_events',
  format => 'csv',
  header => true,
  schema => 'id STRING, value STRING, op STRING, bt TIMESTAMP, st TIMESTAMP'
);

CREATE OR REFRESH STREAMING TABLE company_bitemporal;

CREATE FLOW company_bt AS AUTO CDC INTO company_bitemporal
FROM STREAM(company_events)
KEYS (id)
APPLY AS DELETE WHEN op = 'DELETE'
SEQUENCE BY bt
SYSTEM SEQUENCE BY st
COLUMNS * EXCEPT (op, bt, st)
STORED AS BITEMPORAL;

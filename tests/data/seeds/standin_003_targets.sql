-- Publishes the targets seed 003's statements name: my_streaming_table and
-- my_scd2_target_table (SCD type 2), and my_mv (SCD type 1, standing in for a materialized
-- view, which scdflow does not have yet).
CREATE OR REFRESH STREAMING TABLE my_streaming_table;
CREATE FLOW f_streaming AS AUTO CDC INTO my_streaming_table
FROM STREAM(main.default.people_cdf)
KEYS (id) APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq
COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE 2;

CREATE OR REFRESH STREAMING TABLE my_scd2_target_table;
CREATE FLOW f_scd2 AS AUTO CDC INTO my_scd2_target_table
FROM STREAM(main.default.people_cdf)
KEYS (id) APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq
COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE 2;

CREATE OR REFRESH STREAMING TABLE my_mv;
CREATE FLOW f_mv AS AUTO CDC INTO my_mv
FROM STREAM(main.default.people_cdf)
KEYS (id) APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq
COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE 1;

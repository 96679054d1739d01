-- T7 (SPEC section 4): REPLACE USING partial snapshots of events per region, in two commits.
-- Input:  data/t7_regions/batch_*.csv (region_id, device_type, event_type, seq).
-- Output: region_events: for each region, the rows of its highest sequence; regions absent from
--         a commit are untouched. The constraint drops the malformed row of batch 2 (event_type
--         'bad', seq 9) before deduplication, so it sets no sequence floor for region 2.
CREATE OR REFRESH STREAMING TABLE region_changes
AS SELECT * FROM STREAM read_files(
  'data/t7_regions',
  format => 'csv',
  header => true,
  schema => 'region_id INT, device_type STRING, event_type STRING, seq INT'
);

CREATE OR REFRESH STREAMING TABLE region_events (
  CONSTRAINT known_event EXPECT (event_type IN ('click', 'conversion')) ON VIOLATION DROP ROW
)
FLOW REPLACE USING (region_id) SEQUENCE BY seq BY NAME
SELECT * FROM STREAM(region_changes);

-- Stand-ins for Databricks' samples.wanderbricks tables, which seed 002's REPLACE USING
-- examples read (the seed gives no data): one batch of payments and booking updates.
CREATE SCHEMA samples.wanderbricks;
CREATE SCHEMA main.wanderbricks;
CREATE SCHEMA main.wanderbricks_long;
CREATE TABLE samples.wanderbricks.payments (
  payment_id BIGINT, booking_id BIGINT, amount DOUBLE, payment_method STRING,
  status STRING, payment_date TIMESTAMP);
CREATE TABLE samples.wanderbricks.booking_updates (
  booking_update_id BIGINT, booking_id BIGINT, user_id BIGINT, property_id BIGINT,
  total_amount DOUBLE, status STRING, updated_at TIMESTAMP);
INSERT INTO samples.wanderbricks.payments VALUES
  (1, 100, 50.0, 'card', 'completed', '2025-01-02 10:00:00'),
  (1, 100, 50.0, 'card', 'pending', '2025-01-01 10:00:00'),
  (2, 101, 70.0, 'paypal', 'pending', '2025-01-01 11:00:00');
INSERT INTO samples.wanderbricks.booking_updates VALUES
  (11, 100, 7, 500, 300.0, 'confirmed', '2025-01-02 00:00:00'),
  (10, 100, 7, 500, 300.0, 'pending', '2025-01-01 00:00:00'),
  (20, 101, 8, 501, 150.0, 'pending', '2025-01-01 00:00:00'),
  (30, 101, 8, 502, 90.0, 'pending', '2025-01-01 00:00:00');
-- The "how it works" table's events (seed 002), its first batch.
CREATE TABLE main.wanderbricks.region_events (
  region_id INT, device_type STRING, event_type STRING, seq INT);
INSERT INTO main.wanderbricks.region_events VALUES
  (1, 'iOS', 'click', 1), (1, 'Android', 'conversion', 1),
  (2, 'iOS', 'click', 1), (2, 'desktop', 'click', 1);

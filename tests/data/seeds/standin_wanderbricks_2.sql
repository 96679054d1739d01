-- The stand-ins' second batch: a late payment (lower payment_date), a stale booking update
-- (lower booking_update_id), new keys, and the region events' second batch.
INSERT INTO samples.wanderbricks.payments VALUES
  (1, 100, 50.0, 'card', 'refunded', '2025-01-01 12:00:00'),
  (2, 101, 70.0, 'paypal', 'completed', '2025-01-03 09:00:00'),
  (3, 102, 20.0, 'card', 'pending', '2025-01-03 09:00:00');
INSERT INTO samples.wanderbricks.booking_updates VALUES
  (12, 100, 7, 500, 0.0, 'cancelled', '2025-01-03 00:00:00'),
  (5, 101, 8, 501, 999.0, 'stale', '2024-12-31 00:00:00'),
  (40, 103, 9, 503, 80.0, 'confirmed', '2025-01-03 00:00:00');
INSERT INTO main.wanderbricks.region_events VALUES
  (1, 'iOS', 'click', 2), (1, 'Android', 'conversion', 2), (1, 'desktop', 'click', 2),
  (3, 'iOS', 'click', 1), (3, 'desktop', 'click', 2);

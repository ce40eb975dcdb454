-- No query reads the log by `event_id` (issue 28: no index should go unread). Every id is drawn
-- by PostgreSQL (`gen_random_uuid()`, 122 random bits; no writer supplies one and the log is
-- append-only), so this unique index only ever guarded against a collision of random uuids,
-- while each append wrote a random leaf of it: on a log of 657,000 events it doubled an
-- append's execution and wrote 3 to 7 times its WAL in full-page images after each checkpoint
-- (`EXPLAIN (ANALYZE, WAL)` of 2,000 events; BENCHMARKS.md, twelfth round). Consumers still
-- de-duplicate by `event_id`.
DROP INDEX IF EXISTS events_event_id;

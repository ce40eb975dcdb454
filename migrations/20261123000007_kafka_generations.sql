-- Fencing for Kafka-fed projectors: a member that takes a partition bumps its generation (under
-- the row's lock, after any apply in flight) and reads the next offset after the bump; every
-- apply checks the generation it was given under the same lock. A former owner that still
-- applies a message it fetched before it lost the partition (its session broke, a rebalance)
-- finds the generation moved and applies nothing, so it can never move the offset past messages
-- the new owner has not applied.
ALTER TABLE kafka_offsets ADD COLUMN generation bigint NOT NULL DEFAULT 0;

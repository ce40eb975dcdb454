-- Projectors fed from Kafka (`relations project --source kafka`), as one consumer group.
--
-- The next offset of each partition a consumer has applied, written in the same transaction
-- as the read-model rows: a message below it was applied already (a rebalance or a restart
-- handed it out again) and is skipped.
CREATE TABLE kafka_offsets
(
    consumer    text    NOT NULL,
    topic       text    NOT NULL,
    partition   integer NOT NULL,
    next_offset bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (consumer, topic, partition)
);

-- The last version of each stream a consumer applied. The relay publishes at least once (it
-- re-sends what the broker acknowledged but it had not checkpointed), so a topic may hold an
-- event twice; an event not above its stream's last version is a duplicate and is skipped.
CREATE TABLE kafka_stream_versions
(
    consumer text   NOT NULL,
    stream   text   NOT NULL,
    version  bigint NOT NULL,
    PRIMARY KEY (consumer, stream)
);

-- Where each stream's last applied event sat in its partition: a consumer that meets an event
-- ahead of a missing one of its stream reads the partition again from just after that offset
-- (the missing event is there), applying only what its stream's version has not seen.
ALTER TABLE kafka_stream_versions ADD COLUMN last_offset bigint NOT NULL DEFAULT -1;

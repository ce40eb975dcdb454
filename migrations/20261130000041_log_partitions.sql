-- Issue 48, item 4: the log is partitioned, so that its oldest part can leave it whole.
--
-- `events` becomes a table partitioned by range of `transaction_id`, the first key of the
-- log's order: a partition holds every event of a range of transactions, so the partitions in
-- order are the log in order, and the log below a partition's upper bound (once that bound is
-- below the horizon) is a prefix of the log that no transaction will ever add to. The table
-- as it was becomes the first partition, `events_0` (every transaction before the bound this
-- migration sets), attached with one scan that checks its rows and no copy.
--
-- A stream's events may now lie in several partitions. PostgreSQL has no index across
-- partitions, so the primary key (aggregate_type, aggregate_id, sequence) becomes each
-- partition's own unique index `<partition>_stream` (the first keeps its rows' index, renamed):
-- two appends of one version into one partition still conflict there, as before. Across
-- partitions, the stream's lock is the authority: every writer of this service locks the
-- streams it appends to before it loads them (an account's unlock, which appends to the pair
-- streams of its pending requests without locking each pair, holds its user exclusively, so
-- no other writer of those pairs runs beside it; store/src/settings.rs).
--
-- Partitions are made ahead of the transactions that need them, by `log_partitions_keep()`:
-- this migration, and every `serve` and `project` at start and each minute, call it. A
-- partition is made as a table of its own and attached (SHARE UPDATE EXCLUSIVE on `events`:
-- appends and reads go on), and only for transactions not begun yet, so no statement planned
-- before the attach can need it. `log_partitions` lists them.

CREATE TABLE log_partitioning
(
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    -- how many transaction ids a partition spans (2^26: at 1,000 writing transactions a
    -- second, about 18 hours; at this service's usual rates, weeks)
    xids  bigint  NOT NULL CHECK (xids >= 1),
    -- how many partitions are kept made beyond the one the next transaction falls in
    ahead integer NOT NULL CHECK (ahead >= 1)
);
INSERT INTO log_partitioning (xids, ahead) VALUES (67108864, 1);

-- Each partition of the log: its name and its range of transaction ids [low, high) (the first
-- one's low is 0: it holds every transaction before its high).
CREATE TABLE log_partitions
(
    name text   PRIMARY KEY,
    low  bigint NOT NULL UNIQUE CHECK (low >= 0),
    high bigint NOT NULL UNIQUE CHECK (high > low)
);

-- The table as it was becomes the first partition: its name, its indexes' and its constraint's
-- names, and its triggers go (they are made again on the partitioned table, which gives them to
-- every partition).
ALTER TABLE events RENAME TO events_0;
ALTER INDEX events_pkey RENAME TO events_0_stream;
ALTER INDEX events_log_order RENAME TO events_0_log_order;
ALTER INDEX events_occurred_at RENAME TO events_0_occurred_at;
DROP TRIGGER events_append_only ON events_0;
DROP TRIGGER events_append_only_truncate ON events_0;
DROP TRIGGER events_follow_edges ON events_0;

-- PostgreSQL 15 has no identity column on a partitioned table: the position comes from a plain
-- sequence, which goes on from where the identity's stopped.
DO $$
DECLARE
    identity_sequence text := pg_get_serial_sequence('events_0', 'global_position');
    last_drawn        bigint;
BEGIN
    EXECUTE format('SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM %s',
                   identity_sequence)
        INTO last_drawn;
    ALTER TABLE events_0 ALTER COLUMN global_position DROP IDENTITY;
    EXECUTE format('CREATE SEQUENCE events_global_position_seq AS bigint START %s',
                   greatest(last_drawn + 1, 1));
END
$$;

CREATE TABLE events
(
    aggregate_type  text        NOT NULL,
    aggregate_id    text        NOT NULL,
    sequence        bigint      NOT NULL CONSTRAINT events_sequence_check CHECK (sequence >= 0),
    event_type      text        NOT NULL,
    event_version   text        NOT NULL,
    payload         json        NOT NULL,
    metadata        json        NOT NULL,
    event_id        uuid        NOT NULL DEFAULT gen_random_uuid(),
    global_position bigint      NOT NULL DEFAULT nextval('events_global_position_seq'),
    transaction_id  xid8        NOT NULL DEFAULT pg_current_xact_id(),
    occurred_at     timestamptz NOT NULL DEFAULT now()
) PARTITION BY RANGE (transaction_id);
ALTER SEQUENCE events_global_position_seq OWNED BY events.global_position;

-- The log's order, unique across the whole log (it begins with the partition key), and the
-- time index; each partition's own index is attached, not built again.
CREATE UNIQUE INDEX events_log_order ON events (transaction_id, global_position);
CREATE INDEX events_occurred_at ON events USING brin (occurred_at);

CREATE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_are_append_only();

CREATE TRIGGER events_append_only_truncate
    BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_are_append_only();

CREATE TRIGGER events_follow_edges
    AFTER INSERT ON events
    FOR EACH ROW
    WHEN (NEW.aggregate_type = 'relation' AND NEW.event_type IN ('Followed', 'Unfollowed'))
    EXECUTE FUNCTION follow_edges_keep();

-- A stream's load reads no partition made for transactions not begun yet: the bound is
-- stable for the statement, so PostgreSQL prunes those partitions when the statement starts
-- (every event a statement can see has a lower transaction id). Measured on 64 streams of a
-- 200,000-event log (pgbench, a cached plan): with twelve partitions of which ten were still
-- empty, 274 -> 350-396 loads a second; with two (the default) no change (510-561), against
-- 635-681 unpartitioned (BENCHMARKS.md, thirty-third round).
CREATE OR REPLACE FUNCTION load_streams(stream_type text, streams text[], versions bigint[])
    RETURNS TABLE (aggregate_id text, sequence bigint, payload json)
    LANGUAGE sql STABLE AS
$$
    SELECT s.id, e.sequence, e.payload
      FROM unnest(streams, versions) AS s(id, version)
     CROSS JOIN LATERAL (
           SELECT e.sequence, e.payload FROM events e
            WHERE e.aggregate_type = stream_type AND e.aggregate_id = s.id
              AND e.sequence > s.version
              AND e.transaction_id < pg_snapshot_xmax(pg_current_snapshot())
            ORDER BY e.sequence) AS e
     ORDER BY s.id, e.sequence
$$;

-- Makes the partitions the next transactions fall in: from the last one's upper bound, one
-- `log_partitioning.xids` wide each, until `ahead` of them lie beyond the partition of the next
-- transaction id. Each is made whole (its stream index, its TRUNCATE trigger) before it is
-- attached. One maker at a time (an advisory lock); answers how many it made.
CREATE FUNCTION log_partitions_keep() RETURNS integer
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    width     bigint;
    kept      integer;
    next_xid  bigint := pg_snapshot_xmax(pg_current_snapshot())::text::bigint;
    upper     bigint;
    part      text;
    made      integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('relations.log_partitions_keep'));
    SELECT xids, ahead INTO width, kept FROM log_partitioning;
    SELECT max(high) INTO upper FROM log_partitions;
    WHILE upper <= next_xid + kept * width LOOP
        part := 'events_' || upper;
        EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                       part);
        EXECUTE format('CREATE UNIQUE INDEX %I ON %I (aggregate_type, aggregate_id, sequence)',
                       part || '_stream', part);
        -- A partition takes its parent's row triggers, not its statement triggers.
        EXECUTE format('CREATE TRIGGER events_append_only_truncate BEFORE TRUNCATE ON %I
                        FOR EACH STATEMENT EXECUTE FUNCTION events_are_append_only()', part);
        EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                       part, upper, upper + width);
        INSERT INTO log_partitions (name, low, high) VALUES (part, upper, upper + width);
        upper := upper + width;
        made := made + 1;
    END LOOP;
    RETURN made;
END
$$;

-- The first partition ends at the next multiple of the width after the next transaction id.
DO $$
DECLARE
    width    bigint := (SELECT xids FROM log_partitioning);
    next_xid bigint := pg_snapshot_xmax(pg_current_snapshot())::text::bigint;
    bound    bigint := (next_xid / width + 1) * width;
BEGIN
    EXECUTE format('ALTER TABLE events ATTACH PARTITION events_0 FOR VALUES FROM (MINVALUE) TO (%L)',
                   bound);
    INSERT INTO log_partitions (name, low, high) VALUES ('events_0', 0, bound);
END
$$;

-- A partition takes its parent's row triggers, not its statement triggers: TRUNCATE of a
-- partition is refused by a trigger of its own.
CREATE TRIGGER events_append_only_truncate
    BEFORE TRUNCATE ON events_0
    FOR EACH STATEMENT EXECUTE FUNCTION events_are_append_only();

SELECT log_partitions_keep();

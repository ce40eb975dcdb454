-- The event log. The first seven columns are postgres-es 0.5's `events` table, unchanged, so
-- cqrs-es's repository can load streams from it. The rest make it a global log:
--   event_id        a unique id per event; Kafka consumers de-duplicate by it
--   global_position a commit-independent number, unique and increasing in insert order
--   transaction_id  the writer's transaction: readers order by (transaction_id, global_position)
--                   and never read past the oldest transaction still open (xid8 horizon), so an
--                   event that commits late under a lower position is never skipped
--   occurred_at     when the command was decided (the transaction's start)
-- The log is append-only: a trigger refuses UPDATE and DELETE.
CREATE TABLE events
(
    aggregate_type  text                         NOT NULL,
    aggregate_id    text                         NOT NULL,
    sequence        bigint CHECK (sequence >= 0) NOT NULL,
    event_type      text                         NOT NULL,
    event_version   text                         NOT NULL,
    payload         json                         NOT NULL,
    metadata        json                         NOT NULL,
    event_id        uuid        NOT NULL DEFAULT gen_random_uuid(),
    global_position bigint      GENERATED ALWAYS AS IDENTITY,
    transaction_id  xid8        NOT NULL DEFAULT pg_current_xact_id(),
    occurred_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (aggregate_type, aggregate_id, sequence)
);

CREATE UNIQUE INDEX events_event_id ON events (event_id);
CREATE UNIQUE INDEX events_log_order ON events (transaction_id, global_position);
CREATE INDEX events_occurred_at ON events USING brin (occurred_at);

CREATE FUNCTION events_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append-only: % on events refused', TG_OP;
END;
$$;

CREATE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_are_append_only();

CREATE TRIGGER events_append_only_truncate
    BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_are_append_only();

-- A wake-up for log readers (they poll too). One notification per writing statement.
CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('relations_events', '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER events_notify
    AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_notify();

-- Rule 3's guard: each user's following count, written in the same transaction as the events
-- that change it and locked (in ascending user order) before they are appended. Derived from
-- the log; `relations verify` checks it against a fresh fold.
CREATE TABLE follow_guard
(
    user_id   bigint  PRIMARY KEY CHECK (user_id > 0),
    following integer NOT NULL DEFAULT 0 CHECK (following >= 0)
);

-- Idempotency-Key: the first successful answer to (actor, key), written in the same
-- transaction as the events it reports, so a retry can never append twice.
CREATE TABLE idempotency_keys
(
    actor       bigint      NOT NULL,
    key         text        NOT NULL,
    fingerprint bytea       NOT NULL,
    status      smallint    NOT NULL,
    response    jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (actor, key)
);

CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

-- Issue 25: the one sanctioned rewrite of the log. Events written before content was sealed
-- hold post and comment text as plain JSON (PostPublished and CommentAdded, version 1);
-- `relations migrate` seals each one once, in place (version 2, docs/events.md). The
-- append-only trigger lets exactly that through, and only in a transaction that asks for it
-- with `SET LOCAL relations.rewrite = 'seal-content'`: the same row keeps its stream, version,
-- type, id, position, transaction, time and metadata; its version goes from 1 to 2 and its
-- payload holds `sealed` instead of `content`. Every other UPDATE, every DELETE and TRUNCATE
-- is refused as before.
CREATE OR REPLACE FUNCTION events_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- OLD and NEW are only looked at for a row UPDATE (the TRUNCATE trigger has neither).
    IF TG_OP = 'UPDATE' THEN
        IF current_setting('relations.rewrite', true) = 'seal-content'
           AND OLD.event_type IN ('PostPublished', 'CommentAdded')
           AND OLD.event_version = '1' AND NEW.event_version = '2'
           AND (NEW.aggregate_type, NEW.aggregate_id, NEW.sequence, NEW.event_type, NEW.event_id,
                NEW.global_position, NEW.transaction_id, NEW.occurred_at)
               IS NOT DISTINCT FROM
               (OLD.aggregate_type, OLD.aggregate_id, OLD.sequence, OLD.event_type, OLD.event_id,
                OLD.global_position, OLD.transaction_id, OLD.occurred_at)
           AND NEW.metadata::jsonb = OLD.metadata::jsonb
           AND (NEW.payload::jsonb -> OLD.event_type) ? 'sealed'
           AND NOT (NEW.payload::jsonb -> OLD.event_type) ? 'content'
        THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION 'the event log is append-only: % on events refused', TG_OP;
END;
$$;

-- A command group's locks and its streams' catch-up in one round trip (issue 28): the users
-- its commands name (`lock_users`), then its streams exclusively (`lock_streams`), then the
-- events each stream has past its known version (`load_streams`), which, read after the
-- locks in a statement of its own, sees every writer that held them before. A row answers
-- either an erased user (`erased`) or an event. `lock_writers` stays for instances of the
-- previous release during a rolling upgrade.
CREATE FUNCTION lock_writers_and_load(users bigint[], exclusive boolean[], stream_type text,
                                      streams text[], versions bigint[])
    RETURNS TABLE (erased bigint, aggregate_id text, sequence bigint, payload json)
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    gone bigint[] := ARRAY(SELECT lock_users(users, exclusive));
BEGIN
    PERFORM lock_streams(stream_type, streams, false);
    RETURN QUERY SELECT u, NULL::text, NULL::bigint, NULL::json FROM unnest(gone) AS u;
    RETURN QUERY SELECT NULL::bigint, l.aggregate_id, l.sequence, l.payload
                   FROM load_streams(stream_type, streams, versions) AS l;
END
$$;

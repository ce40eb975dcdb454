-- A command group's locks in one round trip (issue 28): the users its commands name (as
-- `lock_users`, shared or exclusive), then the streams it appends to, each set in key order,
-- in the order every writer takes them. Two statements per group before.

-- The stream locks, written once: one key per stream of a type, per schema, in the same key
-- space as the user locks; exclusive for a writer that appends, shared for one that only
-- reads a stream it must find unchanged (a like reads its post's).
CREATE FUNCTION lock_streams(stream_type text, streams text[], shared boolean) RETURNS void
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    PERFORM CASE WHEN shared THEN pg_advisory_xact_lock_shared(k) ELSE pg_advisory_xact_lock(k) END
       FROM (SELECT DISTINCT hashtextextended(current_schema() || ':' || stream_type || ':' || s, 0) AS k
               FROM unnest(streams) AS s) AS x
      ORDER BY k;
END
$$;

-- The users (see `lock_users`), then the streams exclusively; answers the erased users.
CREATE FUNCTION lock_writers(users bigint[], exclusive boolean[], stream_type text, streams text[])
    RETURNS SETOF bigint
    LANGUAGE plpgsql VOLATILE AS
$$
DECLARE
    erased bigint[] := ARRAY(SELECT lock_users(users, exclusive));
BEGIN
    PERFORM lock_streams(stream_type, streams, false);
    RETURN QUERY SELECT unnest(erased);
END
$$;

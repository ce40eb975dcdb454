-- Bringing streams up to date, written once (issue 28): the events after each stream's known
-- version, one probe of the primary key per stream (the LATERAL subquery's ORDER BY keeps the
-- planner from flattening it into a hash join over every event of the type: 7 ms instead of
-- 0.9 for 128 new like streams among 12,000, measured in bench (i)).
CREATE FUNCTION load_streams(stream_type text, streams text[], versions bigint[])
    RETURNS TABLE (aggregate_id text, sequence bigint, payload json)
    LANGUAGE sql STABLE AS
$$
    SELECT s.id, e.sequence, e.payload
      FROM unnest(streams, versions) AS s(id, version)
     CROSS JOIN LATERAL (
           SELECT e.sequence, e.payload FROM events e
            WHERE e.aggregate_type = stream_type AND e.aggregate_id = s.id
              AND e.sequence > s.version
            ORDER BY e.sequence) AS e
     ORDER BY s.id, e.sequence
$$;

-- Locks streams (`lock_streams`), then brings them up to date, in one round trip: the read
-- is a statement of its own, so it sees every writer that held a lock before this one.
CREATE FUNCTION lock_and_load(stream_type text, streams text[], versions bigint[], shared boolean)
    RETURNS TABLE (aggregate_id text, sequence bigint, payload json)
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    PERFORM lock_streams(stream_type, streams, shared);
    RETURN QUERY SELECT * FROM load_streams(stream_type, streams, versions);
END
$$;

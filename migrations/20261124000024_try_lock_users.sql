-- An unlock approves every pending request, so it locks each requester's user (shared: no
-- requester can be erased under it). It locks the requesters it read before its first lock
-- in the order every writer shares; a request that arrived after that read is only known once
-- the unlock holds its account's `account_locks` row, and waiting there for a user lock could
-- close a cycle (an erasure holding that lock waits for a guard row of a follow that waits for
-- the account's row). So those few are taken without waiting: `try_lock_users_shared`
-- answers NULL when one is held exclusively (an erasure runs; the unlock is decided again),
-- else which of them are erased, read after the locks as `lock_users` reads them.

-- A user's lock key, per schema: one home for it.
CREATE FUNCTION user_lock_key(u bigint) RETURNS bigint
    LANGUAGE sql STABLE AS
$$ SELECT hashtextextended(current_schema() || ':user:' || u, 0) $$;

CREATE OR REPLACE FUNCTION lock_users(users bigint[], exclusive boolean[]) RETURNS SETOF bigint
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    PERFORM CASE WHEN x THEN pg_advisory_xact_lock(k) ELSE pg_advisory_xact_lock_shared(k) END
       FROM (SELECT user_lock_key(u) AS k, x FROM unnest(users, exclusive) AS t(u, x)) AS l
      ORDER BY k;
    RETURN QUERY SELECT user_id FROM erased_users WHERE user_id = ANY (users);
END
$$;

CREATE FUNCTION try_lock_users_shared(users bigint[]) RETURNS bigint[]
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    IF EXISTS (SELECT 1 FROM unnest(users) AS u
                WHERE NOT pg_try_advisory_xact_lock_shared(user_lock_key(u))) THEN
        RETURN NULL;
    END IF;
    RETURN ARRAY(SELECT user_id FROM erased_users WHERE user_id = ANY (users));
END
$$;

-- Issue 25: erasure. The followers' rule-3 counts (`follow_guard`) that included a follow of
-- the erased user have no write-side index to find them; projector `following` knows them
-- exactly when it folds `UserErased` (its `rm_follows` then holds the follows just before the
-- erasure) and decrements them there, once: it sets this flag in the same transaction, so a
-- rebuild or a second reader of the log never decrements again.
ALTER TABLE erased_users ADD COLUMN guard_settled boolean NOT NULL DEFAULT false;

-- The erasure deletes a user's pending requests as requester too (the primary key serves
-- the target's side).
CREATE INDEX IF NOT EXISTS pending_requests_requester ON pending_requests (requester);

-- Projector `engagement` deletes an erased user's comments at once.
CREATE INDEX IF NOT EXISTS rm_comments_by_author ON rm_comments (author) WHERE NOT deleted;

-- Every command group locks the users its commands name (shared; an erasure exclusively), in
-- one order, then reads which are erased: one round trip. The read is a statement of its own
-- inside a VOLATILE function, so under READ COMMITTED it takes its snapshot after the locks
-- are granted and sees an erasure that committed while the group waited for it.
CREATE FUNCTION lock_users(users bigint[], exclusive boolean[]) RETURNS SETOF bigint
    LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    PERFORM CASE WHEN x THEN pg_advisory_xact_lock(k) ELSE pg_advisory_xact_lock_shared(k) END
       FROM (SELECT hashtextextended(current_schema() || ':user:' || u, 0) AS k, x
               FROM unnest(users, exclusive) AS t(u, x)) AS l
      ORDER BY k;
    RETURN QUERY SELECT user_id FROM erased_users WHERE user_id = ANY (users);
END
$$;

-- Projector `history` deletes every row of an erased user: the pair index finds the rows where
-- the user is the lower id, this one those where it is the higher.
CREATE INDEX IF NOT EXISTS rm_relation_history_by_greater
    ON rm_relation_history (greatest(subject, object));

-- Issue 43, item 5: the read side writes no write-side state. An erasure ends every follow of
-- its user, and each follower's rule-3 count (`follow_guard`) must lose one; until now the
-- write side had no index to find those followers, so projector `following` settled them when
-- it folded the erasure (`erased_users.guard_settled`). The write side now keeps its own index
-- of who follows whom, and the store settles the counts right after the erasure commits
-- (store/src/guards/erasure.rs).
CREATE TABLE follow_edges
(
    followee bigint NOT NULL,
    follower bigint NOT NULL,
    PRIMARY KEY (followee, follower)
);

-- An erasure also drops the user's own follows.
CREATE INDEX follow_edges_follower ON follow_edges (follower);

-- Kept by every transaction that appends a follow or an unfollow, whatever appends it (the
-- executors, an unlock's approvals, the benchmark's bulk load, an older binary during a
-- rolling deploy), row by row in the order appended. Only those two events fire it: a
-- statement trigger with a transition table copied every appended row, payload and all, and
-- cost the follow command about 15% (BENCHMARKS.md, seventeenth round). A pair's events are
-- serialized by its stream's lock, and no event names an erased user, so no two
-- transactions write one row.
CREATE FUNCTION follow_edges_keep() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    who  bigint := (NEW.payload -> NEW.event_type ->> 'follower')::bigint;
    whom bigint := (NEW.payload -> NEW.event_type ->> 'followee')::bigint;
BEGIN
    IF NEW.event_type = 'Followed' THEN
        INSERT INTO follow_edges (followee, follower) VALUES (whom, who) ON CONFLICT DO NOTHING;
    ELSE
        DELETE FROM follow_edges WHERE followee = whom AND follower = who;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER events_follow_edges
    AFTER INSERT ON events
    FOR EACH ROW
    WHEN (NEW.aggregate_type = 'relation' AND NEW.event_type IN ('Followed', 'Unfollowed'))
    EXECUTE FUNCTION follow_edges_keep();

-- The index as the log leaves it: each directed pair's last follow event, in log order.
INSERT INTO follow_edges (followee, follower)
SELECT followee, follower
  FROM (SELECT DISTINCT ON (follower, followee) follower, followee, follows
          FROM (SELECT (payload -> event_type ->> 'follower')::bigint AS follower,
                       (payload -> event_type ->> 'followee')::bigint AS followee,
                       event_type = 'Followed' AS follows, transaction_id, global_position
                  FROM events
                 WHERE aggregate_type = 'relation'
                   AND event_type IN ('Followed', 'Unfollowed')) AS e
         ORDER BY follower, followee, transaction_id DESC, global_position DESC) AS last
 WHERE follows
 ORDER BY followee, follower;

-- Erasures the projector had not settled yet: their followers are the index's follows of the
-- erased user (no event names a user after their erasure, so the last follow events of their
-- pairs are those before it).
WITH n AS (
    SELECT f.follower, count(*) AS n
      FROM follow_edges f JOIN erased_users e ON e.user_id = f.followee AND NOT e.guard_settled
     GROUP BY f.follower)
UPDATE follow_guard g SET following = g.following - n.n FROM n WHERE g.user_id = n.follower;

UPDATE erased_users SET guard_settled = true WHERE NOT guard_settled;

-- An erasure ended every follow of and by its user.
DELETE FROM follow_edges
 WHERE followee IN (SELECT user_id FROM erased_users)
    OR follower IN (SELECT user_id FROM erased_users);

-- From now on the store settles each erasure's followers right after it commits
-- (store/src/guards/erasure.rs, `settle_followers`), and sets `guard_settled` when none is
-- left; no reader of the log does. Roll this release out readers first (as every release):
-- a `project` process of an older release would settle an erasure again.

-- Issue 48, item 1: bytes that buy nothing (BENCHMARKS.md, twenty-second round). Every
-- statement here changes a catalog only: the locks it takes last a moment. (The index builds
-- of the next migration lock `rm_relation_history` alone.)

-- The history's primary key `(tx, gp)` served no query: one row per event, written once in
-- the transaction that advances the projector's checkpoint, so no event is folded twice.
-- `relations verify` reports a duplicated row.
ALTER TABLE rm_relation_history DROP CONSTRAINT rm_relation_history_pkey;

-- A notification cause's primary key `(recipient, cause)` was one of the table's biggest
-- indexes (its text key, an entry a cause) and answered one statement: the removal of one cause
-- (an unfollow, an unlike, a request's end). That removal now names the cause's actor too and
-- finds it through `notify_causes_actor (actor, recipient)`, which blocks and mutes already
-- use (it reads every cause of that actor for that recipient: one or a few, but as many as
-- the recipient's `posted` notifications when they watch the actor's posts). The projector
-- never makes a cause twice (its fold removes a cause before making it again), and
-- `relations verify` reports a duplicated row.
ALTER TABLE notify_causes DROP CONSTRAINT notify_causes_pkey;

-- Every group key begins with its type (`followed:{day}`, `liked_post:{post}`, ...), so a
-- cause's `kind` repeats what its `grp` says, and this release reads the type from the group
-- key. It still writes `kind`, for the previous release's instances during a rolling upgrade
-- (their live notifications read it); the next release stops writing it, and a null takes no
-- bytes. Nullable from now on for that.
ALTER TABLE notify_causes ALTER COLUMN kind DROP NOT NULL;

-- A user follows at most RELATIONS_FOLLOW_LIMIT others (rule 3; 1,000 by default), so the
-- SQL following page (a replica's, or an instance without its graph) reads them all through
-- the primary key `(follower, followee)` and keeps the newest: a bounded sort, where this
-- index cost every follow a third entry. The followers side keeps its index in time order:
-- a followee's followers are not bounded (a 1M-follower account's deep pages).
DROP INDEX rm_follows_by_follower;

-- Issue 48, item 1: bytes that buy nothing (BENCHMARKS.md, twenty-second round).

-- A notification cause's primary key `(recipient, cause)` was the table's biggest index (its
-- text key, one entry a cause) and answered one statement: the removal of one cause (an
-- unfollow, an unlike, a request's end). That removal now names the cause's actor too and
-- finds it through `notify_causes_actor (actor, recipient)`, which blocks and mutes already
-- use. The projector never makes a cause twice (its fold removes a cause before making it
-- again), and `relations verify` reports a duplicated row.
ALTER TABLE notify_causes DROP CONSTRAINT notify_causes_pkey;

-- Every group key begins with its type (`followed:{day}`, `liked_post:{post}`, ...), so a
-- cause's `kind` repeated what its `grp` says. Readers take the type from the group key, and
-- this release writes no `kind`: a null takes no bytes. The column stays, nullable, for the
-- instances of the previous release during a rolling upgrade (their projector still writes
-- it); the next release's migration drops it. The bytes of the rows written before go when
-- the table is next written whole (`relations rebuild notifications`).
ALTER TABLE notify_causes ALTER COLUMN kind DROP NOT NULL;

-- The history's primary key `(tx, gp)` served no query: one row per event, written once in
-- the transaction that advances the projector's checkpoint, so no event is folded twice.
-- `relations verify` reports a duplicated row.
ALTER TABLE rm_relation_history DROP CONSTRAINT rm_relation_history_pkey;

-- A user follows at most RELATIONS_FOLLOW_LIMIT others (rule 3; 1,000 by default), so the
-- SQL following page (a replica's, or an instance without its graph) reads them all through
-- the primary key `(follower, followee)` and keeps the newest: a bounded sort, where this
-- index cost every follow a third entry. The followers side keeps its index in time order:
-- a followee's followers are not bounded (a 1M-follower account's deep pages).
DROP INDEX rm_follows_by_follower;

-- `as_of` folds the pair's relation stream in the log, up to the moment asked (the log's
-- primary key leads with the stream: one range scan per pair, as the pair index gave), so
-- projector `history` keeps what only it answers: each follow's start and end, by followee,
-- for `follower_changes`. Its blocks and requests, the pair index, and the index of the higher
-- id (an erasure's) go; an erasure now finds its user's rows by subject and by object (the
-- follower changes' index). Instances of the previous release, during a rolling upgrade,
-- still write blocks and requests here (`follower_changes` reads follows only; the next
-- rebuild drops them) and answer `as_of` without the pair index, slowly, until they are replaced.
DELETE FROM rm_relation_history WHERE kind <> 0;
DROP INDEX rm_relation_history_by_pair;
DROP INDEX rm_relation_history_by_greater;
CREATE INDEX rm_relation_history_by_subject ON rm_relation_history (subject);
-- Every row is a follow's now: the follower changes' index need not be partial, and so an
-- erasure's `object = $1` uses it too.
DROP INDEX rm_relation_history_follower_changes;
CREATE INDEX rm_relation_history_follower_changes
    ON rm_relation_history (object, at DESC, tx DESC, gp DESC);

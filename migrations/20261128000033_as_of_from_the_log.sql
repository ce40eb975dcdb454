-- Issue 48, item 1: `as_of` folds the pair's relation stream in the log, up to the moment
-- asked (the log's primary key leads with the stream: one range scan per pair, as the pair
-- index gave), so projector `history` keeps what only it answers: each follow's start and
-- end, by followee, for `follower_changes`. The pair index and the index of the higher id (an
-- erasure's) go; an erasure finds its user's rows by subject and by object (the follower
-- changes' index). Each statement locks `rm_relation_history` alone.
--
-- The block and request rows already here stay, unread (`follower_changes` and `verify`
-- read follows only; the next rebuild leaves them out), so that instances of the previous
-- release, during a rolling upgrade, still answer `as_of` rightly: slowly, by a scan of this
-- table, until they are replaced.
DROP INDEX rm_relation_history_by_pair;
DROP INDEX rm_relation_history_by_greater;
CREATE INDEX rm_relation_history_by_subject ON rm_relation_history (subject);
-- Follows only are read now: the follower changes' index need not be partial, and so an
-- erasure's `object = $1` uses it too.
DROP INDEX rm_relation_history_follower_changes;
CREATE INDEX rm_relation_history_follower_changes
    ON rm_relation_history (object, at DESC, tx DESC, gp DESC);

-- Private accounts and follow requests (AccountLocked/AccountUnlocked, FollowRequested,
-- FollowRequestApproved/Rejected/Withdrawn).

-- Write side, kept in the command transactions like follow_guard.
-- The locked accounts. A follow reads its target's row under a shared lock; unlocking takes
-- the row exclusively, so it sees every request decided against the lock, and no new one
-- until it commits.
CREATE TABLE account_locks
(
    user_id bigint PRIMARY KEY
);

-- The pending requests by target: what unlocking approves.
CREATE TABLE pending_requests
(
    target    bigint NOT NULL,
    requester bigint NOT NULL,
    PRIMARY KEY (target, requester)
);

-- Projector `following`: the pending requests, since when (the target's list and the
-- `requested`/`requested_by` flags).
CREATE TABLE rm_follow_requests
(
    requester bigint      NOT NULL,
    target    bigint      NOT NULL,
    since     timestamptz NOT NULL,
    PRIMARY KEY (requester, target)
);
CREATE INDEX rm_follow_requests_by_target ON rm_follow_requests (target, since DESC, requester DESC);

-- Projector checkpoints: one row per projector, locked FOR UPDATE SKIP LOCKED by the instance
-- that applies a batch, and advanced in the same transaction as the batch's read-model rows.
CREATE TABLE projector_checkpoints
(
    name            text PRIMARY KEY,
    transaction_id  bigint      NOT NULL DEFAULT 0,
    global_position bigint      NOT NULL DEFAULT 0,
    events_applied  bigint      NOT NULL DEFAULT 0,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Projector `following`: who follows whom, and the follow counters derived from it.
CREATE TABLE rm_follows
(
    follower bigint      NOT NULL,
    followee bigint      NOT NULL,
    since    timestamptz NOT NULL,
    PRIMARY KEY (follower, followee)
);
-- "following" pages, newest first.
CREATE INDEX rm_follows_by_follower ON rm_follows (follower, since DESC, followee DESC);
-- "followers" pages, newest first, search-after on (since, follower).
CREATE INDEX rm_follows_by_followee ON rm_follows (followee, since DESC, follower DESC);

CREATE TABLE rm_follow_counts
(
    user_id   bigint PRIMARY KEY,
    following bigint NOT NULL DEFAULT 0,
    followers bigint NOT NULL DEFAULT 0,
    friends   bigint NOT NULL DEFAULT 0
);

-- Projector `following` too: who blocks whom (one projector with follows, so a reader never
-- sees a follow beside a block).
CREATE TABLE rm_blocks
(
    blocker bigint      NOT NULL,
    blocked bigint      NOT NULL,
    since   timestamptz NOT NULL,
    PRIMARY KEY (blocker, blocked)
);
CREATE INDEX rm_blocks_by_blocker ON rm_blocks (blocker, since DESC, blocked DESC);

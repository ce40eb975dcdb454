-- Projector `feed`: posts, author timelines and the push/pull hybrid inbox (issue 4).
--
-- `seq` is the feed's order: the projector numbers posts in log order as it applies them, so a
-- post that becomes visible later always has a higher seq than every post already visible. A
-- feed page cursor is a seq: new posts land above it, never inside pages already read. Log
-- order is deterministic, so a rebuild numbers every post the same.
CREATE TABLE rm_posts
(
    post_id    uuid PRIMARY KEY,
    seq        bigint      NOT NULL UNIQUE,
    author     bigint      NOT NULL,
    content    text,                          -- NULL once deleted
    created_at timestamptz NOT NULL,
    deleted    boolean     NOT NULL DEFAULT false
);
-- Author timelines and every pull, newest first, live posts only.
CREATE INDEX rm_posts_timeline ON rm_posts (author, seq DESC) WHERE NOT deleted;
-- `max_time` finds where to start.
CREATE INDEX rm_posts_created_at ON rm_posts (created_at);

-- The feed's own copy of who follows whom, at the feed's position (not `following`'s), so a
-- fan-out, a backfill and a purge always agree with the inbox they write in one transaction.
CREATE TABLE feed_follows
(
    follower bigint NOT NULL,
    followee bigint NOT NULL,
    PRIMARY KEY (follower, followee)
);
CREATE INDEX feed_follows_by_followee ON feed_follows (followee, follower);

-- Per author: follower and post counts, and whether their posts are pulled (followers at or
-- over RELATIONS_BIG_V_THRESHOLD) rather than pushed.
CREATE TABLE feed_authors
(
    author    bigint PRIMARY KEY,
    followers bigint  NOT NULL DEFAULT 0,
    posts     bigint  NOT NULL DEFAULT 0,
    pulled    boolean NOT NULL DEFAULT false
);
CREATE INDEX feed_authors_pulled ON feed_authors (author) WHERE pulled;

-- Every change of an author's mode, at the event that caused it (projector `feed_cache` reads
-- it to refresh the inboxes a switch to push backfilled).
CREATE TABLE feed_mode_changes
(
    transaction_id  bigint  NOT NULL,
    global_position bigint  NOT NULL,
    author          bigint  NOT NULL,
    pulled          boolean NOT NULL,
    PRIMARY KEY (transaction_id, global_position, author)
);

-- Pushed inboxes: for every reader, the posts of followed push-mode authors with seq above
-- the reader's watermark, at most RELATIONS_FEED_INBOX_CAP of them.
CREATE TABLE feed_inbox
(
    reader bigint NOT NULL,
    seq    bigint NOT NULL,
    author bigint NOT NULL,
    PRIMARY KEY (reader, seq)
);
CREATE INDEX feed_inbox_by_seq ON feed_inbox (seq);

-- Per reader: the inbox's size and its watermark. Below the watermark the inbox may be
-- incomplete (trimmed to the cap), so readers pull from every followed author there.
CREATE TABLE feed_readers
(
    reader    bigint PRIMARY KEY,
    size      integer NOT NULL DEFAULT 0,
    watermark bigint  NOT NULL DEFAULT 0
);

-- Not a read model: each reader's last read mark (seed 003's time_mark), a seq. Written when a
-- reader reads the first page of their feed; a rebuild keeps it (seqs are deterministic).
CREATE TABLE feed_read_marks
(
    reader     bigint PRIMARY KEY,
    seq        bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

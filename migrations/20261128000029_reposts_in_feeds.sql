-- Reposts in feeds (issue 44). A repost is an item of the feed: a row of `rm_posts` under the
-- next seq, written by the reposter (`author`), that names the reposted post (`repost_of`). So
-- every way a post travels (pushed to the reposter's followers' inboxes, pulled from a big-V
-- reposter's timeline, backfilled on a follow, purged on an unfollow) carries reposts too,
-- written once. Its `post_id` is the item's own id (`lpad(to_hex(seq), 32, '0')::uuid`, never
-- a post's id: those are version 4 or 7), its `visibility` the reposted post's, its
-- `created_at` the repost's time; it has no content of its own (a page shows the reposted
-- post's). A feed shows a post once, at its newest appearance (`projections/src/feed/query.rs`).
--
-- A log that already holds reposts (only a development one: they came in the same round) has
-- seqs that now count them: rebuild projector `feed` (`relations rebuild feed`).
ALTER TABLE rm_posts ADD COLUMN repost_of uuid;
-- A post's live reposts, newest first: a page's newest appearance and `reposted_by`, a
-- deletion's reposts.
CREATE INDEX rm_posts_reposts ON rm_posts (repost_of, seq DESC) WHERE repost_of IS NOT NULL AND NOT deleted;

-- Per follow: whether the follower keeps the followee's reposts (issue 44's per-follow
-- preferences; a follow starts with true).
ALTER TABLE feed_follows ADD COLUMN show_reposts boolean NOT NULL DEFAULT true;
ALTER TABLE feed_follows ADD COLUMN notify boolean NOT NULL DEFAULT false;

-- Projector `following`: the preferences of follows and pending requests that are not the
-- defaults (show_reposts true, notify false), for `Relation` answers to the follower.
CREATE TABLE rm_follow_prefs
(
    follower     bigint  NOT NULL,
    followee     bigint  NOT NULL,
    show_reposts boolean NOT NULL,
    notify       boolean NOT NULL,
    PRIMARY KEY (follower, followee)
);

-- Projector `notifications`: who follows whom with `notify` (issue 44's `posted`).
CREATE TABLE notify_watchers
(
    author  bigint NOT NULL,
    watcher bigint NOT NULL,
    PRIMARY KEY (author, watcher)
);

-- Likes and comments (seed 002): `like` and `thread` streams, projector `engagement`.

-- Who likes what: target is "post:{id}" or "comment:{post id}.{n}".
CREATE TABLE rm_likes
(
    target  text        NOT NULL,
    user_id bigint      NOT NULL,
    since   timestamptz NOT NULL,
    PRIMARY KEY (target, user_id)
);
-- "Which of these did I like", and the like-state cache's loads (a user's recent likes).
CREATE INDEX rm_likes_by_user ON rm_likes (user_id, target);
-- Likers of an item, newest first.
CREATE INDEX rm_likes_likers ON rm_likes (target, since DESC, user_id DESC);

-- Each post's counts: likes, and live comments (replies included).
CREATE TABLE rm_post_stats
(
    post          uuid PRIMARY KEY,
    like_count    bigint NOT NULL DEFAULT 0,
    comment_count bigint NOT NULL DEFAULT 0
);

-- Every comment. `reply_count` counts the visible direct replies; a comment is `visible` while
-- it is live or has a visible reply (a deleted one then shows as a tombstone).
CREATE TABLE rm_comments
(
    post        uuid        NOT NULL,
    n           integer     NOT NULL,
    author      bigint      NOT NULL,
    parent      integer,
    content     text,
    created_at  timestamptz NOT NULL,
    deleted     boolean     NOT NULL DEFAULT false,
    pinned      boolean     NOT NULL DEFAULT false,
    like_count  bigint      NOT NULL DEFAULT 0,
    reply_count bigint      NOT NULL DEFAULT 0,
    visible     boolean     NOT NULL DEFAULT true,
    PRIMARY KEY (post, n)
);
-- A post's root comments, pinned first: newest, or most liked then newest.
CREATE INDEX rm_comments_new ON rm_comments (post, pinned DESC, created_at DESC, n DESC)
    WHERE parent IS NULL AND visible;
CREATE INDEX rm_comments_top ON rm_comments (post, pinned DESC, like_count DESC, created_at DESC, n DESC)
    WHERE parent IS NULL AND visible;
-- A comment's replies, oldest first.
CREATE INDEX rm_comments_replies ON rm_comments (post, parent, created_at, n)
    WHERE parent IS NOT NULL AND visible;

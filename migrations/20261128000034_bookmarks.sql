-- Bookmarks (issue 46): `bookmark` streams, projector `engagement`. Who bookmarks which post,
-- since when (the newest bookmark's time: an unbookmark takes the row, a new bookmark makes
-- it again). Private: no count beside the posts. The log held no bookmark before this
-- migration: nothing to backfill.
CREATE TABLE rm_bookmarks
(
    post    uuid        NOT NULL,
    user_id bigint      NOT NULL,
    since   timestamptz NOT NULL,
    PRIMARY KEY (post, user_id)
);
-- A user's bookmarks, newest first (`GET /api/v1/me/bookmarks` pages on (since, post)), "which
-- of these do I bookmark", their archive's section and their erasure's.
CREATE INDEX rm_bookmarks_by_user ON rm_bookmarks (user_id, since DESC, post DESC);

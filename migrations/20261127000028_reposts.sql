-- Reposts (issue 44): `repost` streams, projector `engagement`. Who reposts which post, and
-- each post's count of live reposts. The log held no repost before this migration: nothing to
-- backfill.
CREATE TABLE rm_reposts
(
    post    uuid        NOT NULL,
    user_id bigint      NOT NULL,
    since   timestamptz NOT NULL,
    PRIMARY KEY (post, user_id)
);
-- "Which of these did I repost", a user's reposts on their timeline, and an erasure's.
CREATE INDEX rm_reposts_by_user ON rm_reposts (user_id, since DESC, post);
-- Reposters of a post, newest first.
CREATE INDEX rm_reposts_reposters ON rm_reposts (post, since DESC, user_id DESC);

ALTER TABLE rm_post_stats ADD COLUMN repost_count bigint NOT NULL DEFAULT 0;

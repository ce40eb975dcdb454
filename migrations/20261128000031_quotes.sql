-- Quotes (issue 44). A post may quote another (`quote_of`); who may quote a post is its
-- `quote_policy` (anyone, followers, nobody), which its author may change; the quoted post's
-- author may detach a quote (`quote_detached`: the post then shows its quote as detached).
-- Events before quotes read as quoting nothing, quotable by anyone.
ALTER TABLE rm_posts ADD COLUMN quote_of uuid;
ALTER TABLE rm_posts ADD COLUMN quote_policy text NOT NULL DEFAULT 'anyone';
ALTER TABLE rm_posts ADD COLUMN quote_detached boolean NOT NULL DEFAULT false;

-- Projector `engagement`: each live quote that is not detached, by quoting post (a post's
-- `quote_count` counts them; an erasure takes its user's).
CREATE TABLE rm_quotes
(
    post     uuid   PRIMARY KEY,
    quote_of uuid   NOT NULL,
    author   bigint NOT NULL
);
CREATE INDEX rm_quotes_author ON rm_quotes (author);
ALTER TABLE rm_post_stats ADD COLUMN quote_count bigint NOT NULL DEFAULT 0;

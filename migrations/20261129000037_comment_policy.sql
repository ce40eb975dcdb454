-- Reply controls (issue 47): who besides a post's author may comment on it or reply under it
-- (everyone, followers, following, nobody), set at publishing and changed by its author.
-- Events before it read as `everyone`.
ALTER TABLE rm_posts ADD COLUMN comment_policy text NOT NULL DEFAULT 'everyone';

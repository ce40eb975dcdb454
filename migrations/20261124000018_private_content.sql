-- Issue 26: private content.
--
-- Each post's visibility beside it in projector `feed`'s posts, so every feed reader filters
-- on a column, not a join. Posts published before issue 26 are `public` (their events carry
-- no visibility: docs/events.md).
ALTER TABLE rm_posts ADD COLUMN visibility text NOT NULL DEFAULT 'public'
    CHECK (visibility IN ('public', 'unlisted', 'followers'));

-- The write side's index of hidden graphs (GraphHidden / GraphShown), kept in the settings
-- command's transaction like `account_locks`: what graph reads consult when the in-memory
-- replica is not loaded. `relations verify` checks it against the log.
CREATE TABLE hidden_graphs (
    user_id bigint PRIMARY KEY
);

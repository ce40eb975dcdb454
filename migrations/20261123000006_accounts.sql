-- Projector `feed`: banned authors (AccountEvent::UserBanned / UserUnbanned). Their posts stay
-- in rm_posts and in inboxes, and every feed, timeline and new-post count leaves them out while
-- the ban lasts, so unbanning restores them without refolding anything.
CREATE TABLE feed_banned
(
    author bigint PRIMARY KEY
);

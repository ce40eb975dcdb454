-- Projector `feed` reads one preference of a follow, `show_reposts` (issue 44); `notify` is
-- kept by projector `notifications` (`notify_watchers`) and projector `following`
-- (`rm_follow_prefs`), so the feed's copy of it, written and never read, goes.
ALTER TABLE feed_follows DROP COLUMN notify;

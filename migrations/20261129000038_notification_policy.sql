-- Notification policy (issue 47). Projector `notifications` keeps each user's policy that is
-- not the default (`accept` both ways), and judges each cause when it is caused against it
-- and against the follows between the two users at that place in the log (read from the
-- pair's stream, so a rebuild judges the same). A filtered cause joins a group of its own,
-- its key ending in `|filtered`; such groups are listed only at `?filtered=true`, and never
-- counted unread.
CREATE TABLE notify_policies
(
    user_id       bigint PRIMARY KEY,
    not_following text   NOT NULL,
    not_followers text   NOT NULL
);

ALTER TABLE notify_groups ADD COLUMN filtered boolean NOT NULL DEFAULT false;

-- The lists' index gains `filtered`. A rebuild copies a table's indexes under PostgreSQL's
-- own names (`CREATE TABLE ... (LIKE ... INCLUDING ALL)`), so the index to replace is found
-- by what it indexes, not by the name migration 19 gave it.
DO $$
DECLARE
    found text;
BEGIN
    FOR found IN
        SELECT indexname FROM pg_indexes
         WHERE schemaname = current_schema() AND tablename = 'notify_groups'
           AND indexdef LIKE '%(recipient, place_tx DESC, place_gp DESC)'
    LOOP
        EXECUTE format('DROP INDEX %I', found);
    END LOOP;
END
$$;
CREATE INDEX notify_groups_place ON notify_groups (recipient, filtered, place_tx DESC, place_gp DESC);

-- Dismissed suggestions (issue 46): `SuggestionDismissed` on the relation pair's stream,
-- projector `following`. Who never wants whom suggested again, since when; kept for good,
-- gone when either user is erased. The log held no dismissal before this migration: nothing
-- to backfill.
CREATE TABLE rm_dismissals
(
    user_id   bigint      NOT NULL,
    dismissed bigint      NOT NULL,
    since     timestamptz NOT NULL,
    PRIMARY KEY (user_id, dismissed)
);
-- An erasure of the dismissed user takes their rows too.
CREATE INDEX rm_dismissals_of ON rm_dismissals (dismissed);

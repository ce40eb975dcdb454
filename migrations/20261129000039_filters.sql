-- Filters (issue 47): `filters` streams, one per user (every filter of theirs), projector
-- `filters`. The log held no filter event before this migration: nothing to backfill.

-- The read model: every filter not deleted, with its phrase as the replica opens it (personal
-- data: an erasure deletes the user's rows). An expired filter stays until it is deleted; every
-- reader judges it ended at its `expires_at`.
CREATE TABLE rm_filters
(
    filter_id  uuid        PRIMARY KEY,
    user_id    bigint      NOT NULL,
    phrase     text,
    whole_word boolean     NOT NULL,
    contexts   text[]      NOT NULL,
    action     text        NOT NULL,
    expires_at timestamptz,
    created_at timestamptz NOT NULL
);
CREATE INDEX rm_filters_user ON rm_filters (user_id, created_at, filter_id);

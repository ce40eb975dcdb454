-- Progress of the rebuilds running now (`relations rebuild NAME`), for the admin endpoint and
-- the operator page: written every half second by the rebuilding process, removed when it
-- ends. A row whose updated_at stops moving belongs to a rebuild that died.
CREATE TABLE rebuild_progress
(
    name       text PRIMARY KEY,
    applied    bigint      NOT NULL,
    total      bigint      NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

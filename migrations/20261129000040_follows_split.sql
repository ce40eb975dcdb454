-- Seed 001's table split (issue 48, item 3), on PostgreSQL's own partitioning. Projector
-- `following` keeps who follows whom twice, as seed 001's second tier does:
--   * `rm_follows`, "following" by the follower: hash-partitioned by `follower` (a user follows
--     at most the follow limit, so the partitions stay even);
--   * `rm_fans`, "followers" by the followee: list-partitioned by `route`, the followee's hash
--     bucket (-1 to -8) or, for an account routed to a table of its own (`rm_fan_routes`: it
--     crossed `RELATIONS_FAN_TABLE_THRESHOLD` followers), the account's id.
-- Both are written in the projector's one transaction, so they never disagree at any reader's
-- position. This is the layout a Citus deployment distributes by the same keys
-- (docs/scaling.md).
--
-- Rolling upgrade: the previous release folds `rm_follows` only, and its erasure would leave the
-- erased user's rows in `rm_fans`. Every process that runs projector `following` (`serve` runs
-- it by default, `RELATIONS_RUN_PROJECTORS`; `project`) must be on this release before the
-- migration runs, or be stopped: a `relations verify` afterwards says whether the two tables
-- agree, and `relations rebuild following` makes them agree. Readers of the previous release
-- wait for the copy, then read followers through every partition (a scan: upgrade them too).

-- Two copies of every follow: more than the service's 30 s a statement at a million users.
SET LOCAL statement_timeout = 0;

ALTER TABLE rm_follows RENAME TO rm_follows_unsplit;
ALTER TABLE rm_follows_unsplit RENAME CONSTRAINT rm_follows_pkey TO rm_follows_unsplit_pkey;

CREATE TABLE rm_follows
(
    follower bigint      NOT NULL,
    followee bigint      NOT NULL,
    since    timestamptz NOT NULL,
    PRIMARY KEY (follower, followee)
) PARTITION BY HASH (follower);
DO $$
BEGIN
    FOR i IN 0..7 LOOP
        EXECUTE format('CREATE TABLE rm_follows_h%s PARTITION OF rm_follows
                        FOR VALUES WITH (MODULUS 8, REMAINDER %s)', i, i);
    END LOOP;
END $$;
INSERT INTO rm_follows SELECT follower, followee, since FROM rm_follows_unsplit;

-- The accounts whose followers have a table of their own, and since when.
CREATE TABLE rm_fan_routes
(
    followee bigint      PRIMARY KEY,
    since    timestamptz NOT NULL
);

-- Where `followee`'s followers are kept: its own table if it has one, else its hash bucket.
-- STABLE, so a query's `route = rm_fan_route($1)` prunes to one partition when it starts.
CREATE FUNCTION rm_fan_route(followee bigint) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce((SELECT r.followee FROM rm_fan_routes r WHERE r.followee = $1), -1 - ($1 % 8)) $$;

CREATE TABLE rm_fans
(
    route    bigint      NOT NULL,
    followee bigint      NOT NULL,
    follower bigint      NOT NULL,
    since    timestamptz NOT NULL
) PARTITION BY LIST (route);
DO $$
BEGIN
    FOR i IN 0..7 LOOP
        EXECUTE format('CREATE TABLE rm_fans_h%s PARTITION OF rm_fans FOR VALUES IN (%s)',
                       i, -1 - i);
    END LOOP;
END $$;
-- No account is routed yet: every row goes to its hash bucket.
INSERT INTO rm_fans SELECT -1 - followee % 8, followee, follower, since FROM rm_follows;
-- "followers" pages, newest first, search-after on (since, follower); an unfollow finds its row
-- by the follow's `since`. Built once the rows are in.
CREATE UNIQUE INDEX rm_fans_page ON rm_fans (followee, since DESC, follower DESC, route);

DROP TABLE rm_follows_unsplit;
-- Autovacuum never analyzes a partitioned table itself.
ANALYZE rm_follows, rm_fans;

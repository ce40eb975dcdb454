-- Notifications (issue 27): projector `notifications` (projections/src/notifications/).

-- Every live notification, one row per cause: a like, a comment, a follow, a pending request,
-- an approval. Exact undo needs them (an unlike removes exactly its liker from its group);
-- they are never read to answer a page, only to keep `notify_groups` exact.
CREATE TABLE notify_causes
(
    recipient bigint      NOT NULL,
    -- Unique per recipient: `like:{target}:{actor}`, `comment:{post}.{n}`, `follow:{actor}`,
    -- `request:{actor}`, `approved:{actor}:{position}`.
    cause     text        NOT NULL,
    grp       text        NOT NULL,
    kind      text        NOT NULL,
    actor     bigint      NOT NULL,
    post      uuid,
    comment   integer,
    tx        bigint      NOT NULL,
    gp        bigint      NOT NULL,
    at        timestamptz NOT NULL,
    PRIMARY KEY (recipient, cause)
);
-- A group's newest causes (its actors and place after an undo).
CREATE INDEX notify_causes_group ON notify_causes (recipient, grp, tx DESC, gp DESC);
-- A user's newest notifications in log order: the live stream and its reconnections.
CREATE INDEX notify_causes_recipient ON notify_causes (recipient, tx, gp);
-- Blocks, mutes and erasures remove an actor's causes.
CREATE INDEX notify_causes_actor ON notify_causes (actor, recipient);
-- Deleting a post or a comment removes what was about it.
CREATE INDEX notify_causes_post ON notify_causes (post, comment) WHERE post IS NOT NULL;

-- What a page reads: one row per group ("Ana and 12 others liked your post").
CREATE TABLE notify_groups
(
    recipient bigint      NOT NULL,
    grp       text        NOT NULL,
    kind      text        NOT NULL,
    post      uuid,
    comment   integer,
    count     bigint      NOT NULL,
    -- The newest distinct actors, newest first, at most 5.
    actors    bigint[]    NOT NULL,
    -- The group's newest live cause (what `unread` and the marker compare).
    tx        bigint      NOT NULL,
    gp        bigint      NOT NULL,
    latest_at timestamptz NOT NULL,
    -- Its place in the list: the last cause that joined it (an undo never moves it down).
    place_tx  bigint      NOT NULL,
    place_gp  bigint      NOT NULL,
    PRIMARY KEY (recipient, grp)
);
CREATE INDEX notify_groups_place ON notify_groups (recipient, place_tx DESC, place_gp DESC);

-- Each comment's author and its post's author: a reply notifies its parent's author.
CREATE TABLE notify_comments
(
    post        uuid    NOT NULL,
    n           integer NOT NULL,
    author      bigint  NOT NULL,
    post_author bigint  NOT NULL,
    PRIMARY KEY (post, n)
);
CREATE INDEX notify_comments_author ON notify_comments (author);
CREATE INDEX notify_comments_post_author ON notify_comments (post_author);

-- Mutes as the projector has folded them: a cause from a muted user is dropped while the
-- mute lasts (`until` null: for good).
CREATE TABLE notify_mutes
(
    muter bigint NOT NULL,
    muted bigint NOT NULL,
    until timestamptz,
    PRIMARY KEY (muter, muted)
);
CREATE INDEX notify_mutes_muted ON notify_mutes (muted);

-- Each user's read marker (`POST /api/v1/notifications/read`): a log position, only ever
-- raised. Written by the API, not by the projector, so a rebuild keeps it.
CREATE TABLE notify_marks
(
    user_id bigint PRIMARY KEY,
    tx      bigint NOT NULL,
    gp      bigint NOT NULL
);

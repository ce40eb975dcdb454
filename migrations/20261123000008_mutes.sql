-- Mutes (RelationEvent::Muted / Unmuted). A mute past its `until` is no mute: readers compare
-- with now(), so a mute ends by itself with no event and no job.

-- Projector `following`: who mutes whom, since when, until when (the muter's list).
CREATE TABLE rm_mutes
(
    muter bigint      NOT NULL,
    muted bigint      NOT NULL,
    since timestamptz NOT NULL,
    until timestamptz,
    PRIMARY KEY (muter, muted)
);
CREATE INDEX rm_mutes_by_muter ON rm_mutes (muter, since DESC, muted DESC);

-- Projector `feed`: the same facts at the feed's position, read by every feed page and
-- new-post count of the muter.
CREATE TABLE feed_mutes
(
    muter bigint NOT NULL,
    muted bigint NOT NULL,
    until timestamptz,
    PRIMARY KEY (muter, muted)
);

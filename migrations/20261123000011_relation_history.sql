-- Projector `history`: one row per change of a follow (kind 0), a block (1) or a follow
-- request (2), with its time and its place in the log. Never updated.
CREATE TABLE rm_relation_history
(
    subject bigint      NOT NULL,
    object  bigint      NOT NULL,
    tx      bigint      NOT NULL,
    gp      bigint      NOT NULL,
    kind    smallint    NOT NULL,
    present boolean     NOT NULL,
    at      timestamptz NOT NULL,
    PRIMARY KEY (tx, gp)
);
-- `as_of`: a pair's changes up to a moment, one range scan per pair.
CREATE INDEX rm_relation_history_by_pair
    ON rm_relation_history (least(subject, object), greatest(subject, object), at);
-- `follower_changes`: a user's follows started and ended, newest first.
CREATE INDEX rm_relation_history_follower_changes
    ON rm_relation_history (object, at DESC, tx DESC, gp DESC) WHERE kind = 0;

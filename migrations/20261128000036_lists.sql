-- Lists (issue 46): `lists` streams, one per owner (every list of theirs), projector `lists`.
-- The log held no list event before this migration: nothing to backfill.

-- The write side's own index of who is a member of which list, as the log leaves it: read
-- under the owner's lock by a members call (how many change, whether any is a member), kept
-- by the lists guard for the list events, by `follow_edges_keep` for an unfollow (a
-- membership lasts while its follow does) and by an erasure's cleanup. No reader of the log
-- writes it.
CREATE TABLE list_member_edges
(
    owner   bigint NOT NULL,
    member  bigint NOT NULL,
    list_id uuid   NOT NULL,
    PRIMARY KEY (owner, member, list_id)
);
CREATE INDEX list_member_edges_list ON list_member_edges (list_id, member);
CREATE INDEX list_member_edges_member ON list_member_edges (member);

-- An unfollow (by its own command, a block's, a rejection's) ends the follower's memberships
-- of the followee in every list of theirs.
CREATE OR REPLACE FUNCTION follow_edges_keep() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    who  bigint := (NEW.payload -> NEW.event_type ->> 'follower')::bigint;
    whom bigint := (NEW.payload -> NEW.event_type ->> 'followee')::bigint;
BEGIN
    IF NEW.event_type = 'Followed' THEN
        INSERT INTO follow_edges (followee, follower) VALUES (whom, who) ON CONFLICT DO NOTHING;
    ELSE
        DELETE FROM follow_edges WHERE followee = whom AND follower = who;
        DELETE FROM list_member_edges WHERE owner = who AND member = whom;
    END IF;
    RETURN NULL;
END;
$$;

-- The read model: every live list, and its members since they were added.
CREATE TABLE rm_lists
(
    list_id    uuid        PRIMARY KEY,
    owner      bigint      NOT NULL,
    title      text        NOT NULL,
    exclusive  boolean     NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX rm_lists_owner ON rm_lists (owner, created_at, list_id);

CREATE TABLE rm_list_members
(
    list_id uuid        NOT NULL,
    member  bigint      NOT NULL,
    owner   bigint      NOT NULL,
    since   timestamptz NOT NULL,
    PRIMARY KEY (list_id, member)
);
-- An unfollow ends (owner, member) in every list; a home feed leaves out its reader's
-- exclusive lists' members.
CREATE INDEX rm_list_members_owner ON rm_list_members (owner, member);
-- An erasure of a member.
CREATE INDEX rm_list_members_member ON rm_list_members (member);

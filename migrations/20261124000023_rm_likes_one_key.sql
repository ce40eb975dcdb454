-- `rm_likes` kept two indexes on the same two columns: its primary key (target, user_id) and
-- `rm_likes_by_user` (user_id, target). Every query that used the first is served by the
-- second or by `rm_likes_likers` (target, since DESC, user_id DESC): a (target, user) pair is
-- found by user first as well as by target first, and a target's likers are read in the
-- likers' order. So the key becomes (user_id, target), the same uniqueness, and each like
-- writes two index entries in place of three (issue 28: no index should go unread).
ALTER TABLE rm_likes DROP CONSTRAINT rm_likes_pkey;
DROP INDEX rm_likes_by_user;
ALTER TABLE rm_likes ADD CONSTRAINT rm_likes_pkey PRIMARY KEY (user_id, target);

//! Queries on the read models of projector `following`. Each runs as one statement, so it sees
//! one snapshot: never a follow beside a block.

use chrono::{DateTime, Utc};
use relations_domain::privacy::Access;
use relations_domain::{Facts, FollowPrefs, Privacy, Reader, Relation, UserId};
use sqlx::{PgPool, Row};

/// `from`'s relation to each of `to`, in the order asked; `muting` only when `mutes_at` is
/// given (answers to `from` themselves), as of that time.
pub async fn relations(
    pool: &PgPool,
    from: UserId,
    to: &[UserId],
    mutes_at: Option<DateTime<Utc>>,
) -> Result<Vec<Relation>, sqlx::Error> {
    let ids: Vec<i64> = to.iter().map(|u| u.get()).collect();
    let rows = sqlx::query(
        "SELECT t.id,
                EXISTS (SELECT 1 FROM rm_follows WHERE follower = $1 AND followee = t.id) AS following,
                EXISTS (SELECT 1 FROM rm_follows WHERE follower = t.id AND followee = $1) AS followed_by,
                EXISTS (SELECT 1 FROM rm_blocks WHERE blocker = $1 AND blocked = t.id) AS blocking,
                EXISTS (SELECT 1 FROM rm_blocks WHERE blocker = t.id AND blocked = $1) AS blocked_by,
                EXISTS (SELECT 1 FROM rm_follow_requests WHERE requester = $1 AND target = t.id) AS requested,
                EXISTS (SELECT 1 FROM rm_follow_requests WHERE requester = t.id AND target = $1) AS requested_by,
                $3::timestamptz IS NOT NULL AND EXISTS (
                    SELECT 1 FROM rm_mutes WHERE muter = $1 AND muted = t.id
                       AND (until IS NULL OR until > $3)) AS muting,
                p.show_reposts, p.notify
           FROM unnest($2::bigint[]) WITH ORDINALITY AS t(id, ord)
           LEFT JOIN rm_follow_prefs p ON p.follower = $1 AND p.followee = t.id
          ORDER BY t.ord",
    )
    .bind(from.get())
    .bind(&ids)
    .bind(mutes_at)
    .fetch_all(pool)
    .await?;
    rows.iter()
        .zip(to)
        .map(|(row, &to)| {
            let facts = Facts {
                following: row.try_get("following")?,
                followed_by: row.try_get("followed_by")?,
                blocking: row.try_get("blocking")?,
                blocked_by: row.try_get("blocked_by")?,
                requested: row.try_get("requested")?,
                requested_by: row.try_get("requested_by")?,
            };
            // The preferences of a follow, in answers to `from` only.
            let kept = mutes_at.is_some() && facts.following;
            let prefs = FollowPrefs {
                show_reposts: row
                    .try_get::<Option<bool>, _>("show_reposts")?
                    .unwrap_or(true),
                notify: row.try_get::<Option<bool>, _>("notify")?.unwrap_or(false),
            };
            Ok(Relation::new(from, to, facts)
                .with_muting(row.try_get("muting")?)
                .with_prefs(kept.then_some(prefs)))
        })
        .collect()
}

/// What `viewer` is to each of `users` and their settings, in the order asked. The settings
/// come from the write side's indexes (`account_locks`, `hidden_graphs`), current at the
/// moment of reading: this is the fallback while the replica is not loaded.
pub async fn access(
    pool: &PgPool,
    viewer: Option<UserId>,
    users: &[UserId],
) -> Result<Vec<Access>, sqlx::Error> {
    let ids: Vec<i64> = users.iter().map(|u| u.get()).collect();
    let rows: Vec<(bool, bool, bool)> = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM rm_follows WHERE follower = $1 AND followee = t.id),
                EXISTS (SELECT 1 FROM account_locks WHERE user_id = t.id),
                EXISTS (SELECT 1 FROM hidden_graphs WHERE user_id = t.id)
           FROM unnest($2::bigint[]) WITH ORDINALITY AS t(id, ord)
          ORDER BY t.ord",
    )
    .bind(viewer.map(UserId::get))
    .bind(&ids)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .zip(users)
        .map(|((follows, locked, hide_graph), &user)| Access {
            privacy: Privacy { locked, hide_graph },
            reader: Reader::of(viewer, user, follows),
        })
        .collect())
}

/// `user`'s mutes in force at `now`, newest first, strictly after the key `after`, with their
/// ends.
pub async fn mutes(
    pool: &PgPool,
    user: UserId,
    after: Option<(DateTime<Utc>, i64)>,
    limit: i64,
    now: DateTime<Utc>,
) -> Result<Vec<(ListEntry, Option<DateTime<Utc>>)>, sqlx::Error> {
    let (since, id) = after.unwrap_or((DateTime::<Utc>::MAX_UTC, i64::MAX));
    let rows: Vec<(i64, DateTime<Utc>, Option<DateTime<Utc>>)> = sqlx::query_as(
        "SELECT muted, since, until FROM rm_mutes
          WHERE muter = $1 AND (until IS NULL OR until > $5) AND (since, muted) < ($2, $3)
          ORDER BY since DESC, muted DESC LIMIT $4",
    )
    .bind(user.get())
    .bind(since)
    .bind(id)
    .bind(limit)
    .bind(now)
    .fetch_all(pool)
    .await?;
    rows.into_iter()
        .map(|(id, since, until)| Ok((ListEntry::of(id, since)?, until)))
        .collect()
}

/// A user suggested to follow (issue 46): followed by `count` of the users the caller follows
/// and whose graph the caller may see, `followed_by` naming the lowest-id three of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// The suggested user.
    pub user: UserId,
    /// How many of the caller's visible followees follow them.
    pub count: i64,
    /// min(count, 3) of those followees, ascending by id.
    pub followed_by: Vec<UserId>,
}

/// The rule of suggestions, as SQL ([`super::memory::RelationsMemory::suggestions`] walks the
/// same in memory): friends of friends over the followees whose graph `$1` may see (issue 26:
/// `$1` follows them, so only their own `hide_graph` hides it); never `$1`, anyone `$1`
/// follows, has asked to follow, blocks or is blocked by, mutes at `$3`, or dismissed; never a
/// user whose graph `$1` may not see (hidden, or locked: `$1` is not their follower), since a
/// suggestion names some of their followers; never a banned user (SPEC is silent; nobody
/// expects one suggested). Most first, ties by lower id; `$2` of them.
pub async fn suggestions(
    pool: &PgPool,
    user: UserId,
    limit: i64,
    now: DateTime<Utc>,
) -> Result<Vec<Suggestion>, sqlx::Error> {
    let rows: Vec<(i64, i64, Vec<i64>)> = sqlx::query_as(
        "WITH via AS (
             SELECT f.followee AS id FROM rm_follows f
              WHERE f.follower = $1
                AND NOT EXISTS (SELECT 1 FROM hidden_graphs h WHERE h.user_id = f.followee)),
         candidates AS (
             SELECT x.followee AS id, count(*) AS n,
                    (array_agg(x.follower ORDER BY x.follower))[1:3] AS followed_by
               FROM via JOIN rm_follows x ON x.follower = via.id
              WHERE x.followee <> $1
              GROUP BY x.followee)
         SELECT c.id, c.n, c.followed_by FROM candidates c
          WHERE NOT EXISTS (SELECT 1 FROM rm_follows WHERE follower = $1 AND followee = c.id)
            AND NOT EXISTS (SELECT 1 FROM rm_follow_requests WHERE requester = $1 AND target = c.id)
            AND NOT EXISTS (SELECT 1 FROM rm_blocks WHERE blocker = $1 AND blocked = c.id)
            AND NOT EXISTS (SELECT 1 FROM rm_blocks WHERE blocker = c.id AND blocked = $1)
            AND NOT EXISTS (SELECT 1 FROM rm_mutes WHERE muter = $1 AND muted = c.id
                                                    AND (until IS NULL OR until > $3))
            AND NOT EXISTS (SELECT 1 FROM rm_dismissals WHERE user_id = $1 AND dismissed = c.id)
            AND NOT EXISTS (SELECT 1 FROM hidden_graphs WHERE user_id = c.id)
            AND NOT EXISTS (SELECT 1 FROM account_locks WHERE user_id = c.id)
            AND NOT EXISTS (SELECT 1 FROM feed_banned WHERE author = c.id)
          ORDER BY c.n DESC, c.id
          LIMIT $2",
    )
    .bind(user.get())
    .bind(limit)
    .bind(now)
    .fetch_all(pool)
    .await?;
    let id = |id: i64| UserId::try_from(id).map_err(|e| sqlx::Error::Decode(Box::new(e)));
    rows.into_iter()
        .map(|(user, count, by)| {
            Ok(Suggestion {
                user: id(user)?,
                count,
                followed_by: by.into_iter().map(id).collect::<Result<_, _>>()?,
            })
        })
        .collect()
}

/// One edge of a list: the other user and since when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListEntry {
    /// The listed user.
    pub user: UserId,
    /// When the edge appeared.
    pub since: DateTime<Utc>,
}

impl ListEntry {
    /// The entry of a row's user id and time (an id that is no user's fails to decode).
    pub fn of(id: i64, since: DateTime<Utc>) -> Result<Self, sqlx::Error> {
        let user = UserId::try_from(id).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
        Ok(Self { user, since })
    }
}

fn list_entries(rows: Vec<sqlx::postgres::PgRow>) -> Result<Vec<ListEntry>, sqlx::Error> {
    rows.iter()
        .map(|row| ListEntry::of(row.try_get("id")?, row.try_get("since")?))
        .collect()
}

/// A list of one user's edges, newest first, paged by offset: `$1` the user, `$2` the
/// offset, `$3` the limit.
#[derive(Debug, Clone, Copy)]
pub struct OffsetQuery(&'static str);

/// Whom a user follows.
pub const FOLLOWING: OffsetQuery = OffsetQuery(
    "SELECT followee AS id, since FROM rm_follows WHERE follower = $1
      ORDER BY since DESC, followee DESC OFFSET $2 LIMIT $3",
);

/// A user's friends (both follow each other), newest friendship first.
pub const FRIENDS: OffsetQuery = OffsetQuery(
    "SELECT f.followee AS id, greatest(f.since, b.since) AS since
       FROM rm_follows f
       JOIN rm_follows b ON b.follower = f.followee AND b.followee = f.follower
      WHERE f.follower = $1
      ORDER BY 2 DESC, 1 DESC OFFSET $2 LIMIT $3",
);

impl OffsetQuery {
    /// `limit` edges of `user` after skipping `offset`.
    pub async fn page(
        self,
        pool: &PgPool,
        user: UserId,
        offset: i64,
        limit: i64,
    ) -> Result<Vec<ListEntry>, sqlx::Error> {
        let rows = sqlx::query(self.0)
            .bind(user.get())
            .bind(offset)
            .bind(limit)
            .fetch_all(pool)
            .await?;
        list_entries(rows)
    }
}

/// A list of one user's edges, newest first, paged by search-after key `(since, id)`: `$1`
/// the user, `($2, $3)` the key to start after, `$4` the limit.
#[derive(Debug, Clone, Copy)]
pub struct KeyedQuery(&'static str);

/// Who follows a user: from the followee's one table of `rm_fans` (its own, for an account
/// routed to one: issue 48).
pub const FOLLOWERS: KeyedQuery = KeyedQuery(
    "SELECT follower AS id, since FROM rm_fans
      WHERE route = rm_fan_route($1) AND followee = $1 AND (since, follower) < ($2, $3)
      ORDER BY since DESC, follower DESC LIMIT $4",
);

/// Whom a user follows, by search-after key (the following list's order, for streaming it).
pub const FOLLOWING_KEYED: KeyedQuery = KeyedQuery(
    "SELECT followee AS id, since FROM rm_follows
      WHERE follower = $1 AND (since, followee) < ($2, $3)
      ORDER BY since DESC, followee DESC LIMIT $4",
);

/// Who asks to follow a user (pending requests).
pub const FOLLOW_REQUESTS: KeyedQuery = KeyedQuery(
    "SELECT requester AS id, since FROM rm_follow_requests
      WHERE target = $1 AND (since, requester) < ($2, $3)
      ORDER BY since DESC, requester DESC LIMIT $4",
);

/// Whom a user blocks.
pub const BLOCKS: KeyedQuery = KeyedQuery(
    "SELECT blocked AS id, since FROM rm_blocks
      WHERE blocker = $1 AND (since, blocked) < ($2, $3)
      ORDER BY since DESC, blocked DESC LIMIT $4",
);

impl KeyedQuery {
    /// `limit` edges of `user` strictly after the key `after` (from the newest when none).
    pub async fn page(
        self,
        pool: &PgPool,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
    ) -> Result<Vec<ListEntry>, sqlx::Error> {
        let (since, id) = after.unwrap_or((DateTime::<Utc>::MAX_UTC, i64::MAX));
        let rows = sqlx::query(self.0)
            .bind(user.get())
            .bind(since)
            .bind(id)
            .bind(limit)
            .fetch_all(pool)
            .await?;
        list_entries(rows)
    }
}

/// Followers of `user` whom `viewer` follows, newest follow of `user` first, strictly after
/// the key `after`; and how many there are.
pub async fn known_followers(
    pool: &PgPool,
    viewer: UserId,
    user: UserId,
    after: Option<(DateTime<Utc>, i64)>,
    limit: i64,
) -> Result<(Vec<ListEntry>, i64), sqlx::Error> {
    let (since, id) = after.unwrap_or((DateTime::<Utc>::MAX_UTC, i64::MAX));
    let rows = sqlx::query(
        "SELECT b.follower AS id, b.since, count(*) OVER () AS total
           FROM rm_follows a
           JOIN rm_follows b ON b.follower = a.followee AND b.followee = $2
          WHERE a.follower = $1
          ORDER BY b.since DESC, b.follower DESC",
    )
    .bind(viewer.get())
    .bind(user.get())
    .fetch_all(pool)
    .await?;
    let total = match rows.first() {
        Some(row) => row.try_get("total")?,
        None => 0,
    };
    let mut page = list_entries(rows)?;
    page.retain(|e| (e.since, e.user.get()) < (since, id));
    page.truncate(limit.max(0) as usize);
    Ok((page, total))
}

/// A user's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Counts {
    /// Users they follow.
    pub following: i64,
    /// Users who follow them.
    pub followers: i64,
    /// Users both ways.
    pub friends: i64,
    /// Their live posts.
    pub posts: i64,
}

/// `user`'s counters (all zero for a user never seen).
pub async fn counts(pool: &PgPool, user: UserId) -> Result<Counts, sqlx::Error> {
    let row = sqlx::query(
        "SELECT COALESCE(c.following, 0) AS following, COALESCE(c.followers, 0) AS followers,
                COALESCE(c.friends, 0) AS friends, COALESCE(a.posts, 0) AS posts
           FROM (SELECT $1::bigint AS id) AS u
           LEFT JOIN rm_follow_counts c ON c.user_id = u.id
           LEFT JOIN feed_authors a ON a.author = u.id",
    )
    .bind(user.get())
    .fetch_one(pool)
    .await?;
    Ok(Counts {
        following: row.try_get("following")?,
        followers: row.try_get("followers")?,
        friends: row.try_get("friends")?,
        posts: row.try_get("posts")?,
    })
}

//! Queries on projector `engagement`'s read models.

use std::collections::{HashMap, HashSet};

use crate::views::CommentView;
use chrono::{DateTime, Utc};
use relations_domain::{CommentId, LikeTarget, PostId, UserId};
use sqlx::{PgPool, Row};

use crate::relations::query::ListEntry;

/// How a post's root comments are ordered (pinned first either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    /// Newest first.
    New,
    /// Most liked first, then newest.
    Top,
}

/// Where a page of comments resumes: strictly after this comment in the list's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommentKey {
    /// Pinned.
    pub pinned: bool,
    /// Its likes (compared only in `top` order).
    pub likes: i64,
    /// When it was written.
    pub at: DateTime<Utc>,
    /// Its number.
    pub n: i32,
}

impl CommentKey {
    /// The key of `comment`.
    pub fn of(comment: &CommentView) -> Self {
        Self {
            pinned: comment.pinned,
            likes: comment.like_count,
            at: comment.created_at,
            n: comment.id.n as i32,
        }
    }
}

impl std::fmt::Display for CommentKey {
    /// `"{pinned 0|1}.{likes}.{µs}.{n}"`, opaque to clients.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pinned = u8::from(self.pinned);
        let at = self.at.timestamp_micros();
        write!(f, "{pinned}.{}.{at}.{}", self.likes, self.n)
    }
}

impl std::str::FromStr for CommentKey {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split('.').collect();
        let [pinned, likes, at, n] = parts[..] else {
            return Err(());
        };
        let pinned = match pinned {
            "0" => false,
            "1" => true,
            _ => return Err(()),
        };
        let micros: i64 = at.parse().map_err(|_| ())?;
        Ok(Self {
            pinned,
            likes: likes.parse().map_err(|_| ())?,
            at: relations_domain::time::from_key_micros(micros),
            n: n.parse().map_err(|_| ())?,
        })
    }
}

const COLUMNS: &str = "post, n, author, parent, content, created_at, like_count, reply_count, \
                       pinned, deleted";

fn comment(row: &sqlx::postgres::PgRow) -> Result<CommentView, sqlx::Error> {
    let post = PostId::from_uuid(row.try_get("post")?);
    let n: i32 = row.try_get("n")?;
    let author: i64 = row.try_get("author")?;
    let parent: Option<i32> = row.try_get("parent")?;
    Ok(CommentView {
        id: CommentId { post, n: n as u32 },
        post,
        author: UserId::try_from(author).map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
        parent: parent.map(|p| CommentId { post, n: p as u32 }),
        content: row.try_get("content")?,
        created_at: row.try_get("created_at")?,
        like_count: row.try_get("like_count")?,
        reply_count: row.try_get("reply_count")?,
        pinned: row.try_get("pinned")?,
        deleted: row.try_get("deleted")?,
        liked: None,
        filtered: None,
    })
}

/// Up to `limit` of `post`'s visible root comments in `sort` order, strictly after `after`.
pub async fn roots(
    pool: &PgPool,
    post: PostId,
    sort: Sort,
    after: Option<CommentKey>,
    limit: i64,
) -> Result<Vec<CommentView>, sqlx::Error> {
    let after = after.unwrap_or(CommentKey {
        pinned: true,
        likes: i64::MAX,
        at: DateTime::<Utc>::MAX_UTC,
        n: i32::MAX,
    });
    let sql = match sort {
        Sort::New => format!(
            "SELECT {COLUMNS} FROM rm_comments
              WHERE post = $1 AND parent IS NULL AND visible
                AND (pinned, created_at, n) < ($2, $4, $5)
              ORDER BY pinned DESC, created_at DESC, n DESC LIMIT $6"
        ),
        Sort::Top => format!(
            "SELECT {COLUMNS} FROM rm_comments
              WHERE post = $1 AND parent IS NULL AND visible
                AND (pinned, like_count, created_at, n) < ($2, $3, $4, $5)
              ORDER BY pinned DESC, like_count DESC, created_at DESC, n DESC LIMIT $6"
        ),
    };
    let rows = sqlx::query(&sql)
        .bind(post.uuid())
        .bind(after.pinned)
        .bind(after.likes)
        .bind(after.at)
        .bind(after.n)
        .bind(limit)
        .fetch_all(pool)
        .await?;
    rows.iter().map(comment).collect()
}

/// Up to `limit` visible replies to `parent`, oldest first, strictly after `after`.
pub async fn replies(
    pool: &PgPool,
    parent: CommentId,
    after: Option<CommentKey>,
    limit: i64,
) -> Result<Vec<CommentView>, sqlx::Error> {
    // No key: from the start (chrono's earliest instant is out of PostgreSQL's range).
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM rm_comments
          WHERE post = $1 AND parent = $2 AND visible
            AND ($3::timestamptz IS NULL OR (created_at, n) > ($3, $4))
          ORDER BY created_at, n LIMIT $5"
    ))
    .bind(parent.post.uuid())
    .bind(parent.n as i32)
    .bind(after.map(|k| k.at))
    .bind(after.map_or(0, |k| k.n))
    .bind(limit)
    .fetch_all(pool)
    .await?;
    rows.iter().map(comment).collect()
}

/// One comment, visible or not (`None`: never projected).
pub async fn comment_by_id(
    pool: &PgPool,
    id: CommentId,
) -> Result<Option<CommentView>, sqlx::Error> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM rm_comments WHERE post = $1 AND n = $2"
    ))
    .bind(id.post.uuid())
    .bind(id.n as i32)
    .fetch_optional(pool)
    .await?;
    row.as_ref().map(comment).transpose()
}

/// Who likes `target`, newest first, after the key `after`.
pub async fn likers(
    pool: &PgPool,
    target: LikeTarget,
    after: Option<(DateTime<Utc>, i64)>,
    limit: i64,
) -> Result<Vec<ListEntry>, sqlx::Error> {
    const LIKERS: &str = "SELECT user_id, since FROM rm_likes
          WHERE target = $1 AND (since, user_id) < ($2, $3)
          ORDER BY since DESC, user_id DESC LIMIT $4";
    who(pool, LIKERS, target.to_string(), after, limit).await
}

/// Who reposts `post`, newest first, after the key `after` (issue 44).
pub async fn reposters(
    pool: &PgPool,
    post: PostId,
    after: Option<(DateTime<Utc>, i64)>,
    limit: i64,
) -> Result<Vec<ListEntry>, sqlx::Error> {
    const REPOSTERS: &str = "SELECT user_id, since FROM rm_reposts
          WHERE post = $1 AND (since, user_id) < ($2, $3)
          ORDER BY since DESC, user_id DESC LIMIT $4";
    who(pool, REPOSTERS, post.uuid(), after, limit).await
}

/// A page of `sql`'s `(user_id, since)` rows for `key` (`$1`), after `after` (`$2`, `$3`),
/// at most `limit` (`$4`).
async fn who<'q, K>(
    pool: &PgPool,
    sql: &'q str,
    key: K,
    after: Option<(DateTime<Utc>, i64)>,
    limit: i64,
) -> Result<Vec<ListEntry>, sqlx::Error>
where
    K: 'q + Send + sqlx::Encode<'q, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    let (since, id) = after.unwrap_or((DateTime::<Utc>::MAX_UTC, i64::MAX));
    let rows: Vec<(i64, DateTime<Utc>)> = sqlx::query_as(sql)
        .bind(key)
        .bind(since)
        .bind(id)
        .bind(limit)
        .fetch_all(pool)
        .await?;
    rows.into_iter()
        .map(|(id, since)| ListEntry::of(id, since))
        .collect()
}

/// Which of `targets` `user` likes, from the read model.
pub async fn liked(
    pool: &PgPool,
    user: UserId,
    targets: &[LikeTarget],
) -> Result<HashSet<LikeTarget>, sqlx::Error> {
    if targets.is_empty() {
        return Ok(HashSet::new());
    }
    let names: Vec<String> = targets.iter().map(ToString::to_string).collect();
    let rows: Vec<String> =
        sqlx::query_scalar("SELECT target FROM rm_likes WHERE user_id = $1 AND target = ANY($2)")
            .bind(user.get())
            .bind(&names)
            .fetch_all(pool)
            .await?;
    Ok(rows.iter().filter_map(|t| t.parse().ok()).collect())
}

/// `user`'s liked posts whose ids are at or above `floor` (the like-state cache's load).
pub async fn liked_posts_since(
    pool: &PgPool,
    user: UserId,
    floor: uuid::Uuid,
) -> Result<Vec<uuid::Uuid>, sqlx::Error> {
    let from = format!("post:{}", PostId::from_uuid(floor));
    let rows: Vec<String> = sqlx::query_scalar(
        "SELECT target FROM rm_likes WHERE user_id = $1 AND target >= $2 AND target < 'post;'",
    )
    .bind(user.get())
    .bind(from)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .iter()
        .filter_map(|t| match t.parse() {
            Ok(LikeTarget::Post(post)) => Some(post.uuid()),
            _ => None,
        })
        .collect())
}

/// Each post's counts; posts never liked, commented on nor reposted have none.
pub async fn post_stats(
    pool: &PgPool,
    posts: &[PostId],
) -> Result<HashMap<PostId, super::PostCounts>, sqlx::Error> {
    if posts.is_empty() {
        return Ok(HashMap::new());
    }
    let ids: Vec<uuid::Uuid> = posts.iter().map(|p| p.uuid()).collect();
    let rows: Vec<(uuid::Uuid, i64, i64, i64, i64)> = sqlx::query_as(
        "SELECT post, like_count, comment_count, repost_count, quote_count FROM rm_post_stats
          WHERE post = ANY($1)",
    )
    .bind(&ids)
    .fetch_all(pool)
    .await?;
    let counts = rows
        .into_iter()
        .map(|(p, likes, comments, reposts, quotes)| {
            let counts = super::PostCounts {
                likes,
                comments,
                reposts,
                quotes,
            };
            (PostId::from_uuid(p), counts)
        });
    Ok(counts.collect())
}

/// Which of some posts a user reposts (issue 44) and which they bookmark (issue 46).
#[derive(Debug, Default)]
pub struct Marks {
    /// The ones reposted.
    pub reposted: HashSet<PostId>,
    /// The ones bookmarked.
    pub bookmarked: HashSet<PostId>,
}

/// Which of `posts` `user` reposts and which they bookmark, in one round trip (a page's
/// flags: `FeedReader::engage`).
pub async fn marks(pool: &PgPool, user: UserId, posts: &[PostId]) -> Result<Marks, sqlx::Error> {
    let ids: Vec<uuid::Uuid> = posts.iter().map(|p| p.uuid()).collect();
    let rows: Vec<(uuid::Uuid, bool)> = sqlx::query_as(
        "SELECT post, true FROM rm_reposts WHERE user_id = $1 AND post = ANY($2)
         UNION ALL
         SELECT post, false FROM rm_bookmarks WHERE user_id = $1 AND post = ANY($2)",
    )
    .bind(user.get())
    .bind(&ids)
    .fetch_all(pool)
    .await?;
    let mut marks = Marks::default();
    for (post, reposted) in rows {
        let post = PostId::from_uuid(post);
        match reposted {
            true => marks.reposted.insert(post),
            false => marks.bookmarked.insert(post),
        };
    }
    Ok(marks)
}

/// A bookmark's place in its user's bookmarks (issue 46): when it was made, and its post.
pub type BookmarkKey = (DateTime<Utc>, PostId);

/// Up to `limit` of `user`'s bookmarks, newest first, strictly after `after`: each one's key.
/// Every bookmark standing whose post is not deleted (a deleted post, or an erased author's,
/// never comes back: left out here, so a page never scans it again), readable or not (the
/// reader judges).
pub async fn bookmarks(
    pool: &PgPool,
    user: UserId,
    after: Option<BookmarkKey>,
    limit: i64,
) -> Result<Vec<BookmarkKey>, sqlx::Error> {
    let (since, post) = match after {
        Some((since, post)) => (since, post.uuid()),
        None => (DateTime::<Utc>::MAX_UTC, uuid::Uuid::from_u128(u128::MAX)),
    };
    let rows: Vec<(DateTime<Utc>, uuid::Uuid)> = sqlx::query_as(
        "SELECT b.since, b.post FROM rm_bookmarks b
           JOIN rm_posts p ON p.post_id = b.post AND NOT p.deleted
          WHERE b.user_id = $1 AND (b.since, b.post) < ($2, $3)
          ORDER BY b.since DESC, b.post DESC LIMIT $4",
    )
    .bind(user.get())
    .bind(since)
    .bind(post)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    let keys = rows
        .into_iter()
        .map(|(at, post)| (at, PostId::from_uuid(post)));
    Ok(keys.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_keys_read_back_what_they_write() {
        let key = CommentKey {
            pinned: true,
            likes: 7,
            at: DateTime::<Utc>::from_timestamp_micros(1_700_000_000_123_456).unwrap(),
            n: 42,
        };
        assert_eq!(key.to_string().parse::<CommentKey>(), Ok(key));
        for bad in ["", "1.2.3", "2.0.0.1", "1.x.0.1", "0.0.0.0.0"] {
            assert!(bad.parse::<CommentKey>().is_err(), "{bad}");
        }
    }
}

//! Projector `feed`: posts and author timelines (`rm_posts`), and the push/pull hybrid inbox
//! (seeds 002, 003, 004).
//!
//! The projector keeps its own copy of who follows whom (`feed_follows`) so that every fan-out,
//! backfill and purge is decided on the follow graph at the feed's own position, in the same
//! transaction as the inbox rows it writes. From that:
//! - an author with fewer followers than the threshold is in push mode: each post is written to
//!   every follower's inbox; at or over the threshold, pull mode: readers fetch the author's
//!   timeline at read time. Crossing the threshold downwards backfills the author's posts into
//!   every follower's inbox in the same transaction; crossing upwards leaves the old entries
//!   (readers de-duplicate), so no post is ever missing or doubled;
//! - a follow backfills the followee's recent posts, an unfollow (a block's too) purges them, a
//!   deletion removes the post from every inbox;
//! - an inbox holds at most `inbox_cap` entries; trimming raises the reader's watermark, below
//!   which readers pull from every followed author instead. Raising a watermark is always safe.
//!
//! Invariant, at every checkpoint: for every reader R and push-mode author A that R follows,
//! every live post of A with a seq above R's watermark is in R's inbox.

use async_trait::async_trait;
use relations_domain::{Post, PostEvent, RelationEvent, RelationPair, UserId};
use relations_store::log::RecordedEvent;
use relations_store::LogPosition;
use sqlx::{PgConnection, Row};

use crate::error::ProjectionError;
use crate::projector::{decode, Projector};

/// See the module docs.
#[derive(Debug, Clone, Copy)]
pub struct Feed {
    /// Authors with at least this many followers are pulled.
    pub big_v_threshold: i64,
    /// Entries kept per inbox.
    pub inbox_cap: i64,
}

impl Default for Feed {
    fn default() -> Self {
        Self {
            big_v_threshold: 5000,
            inbox_cap: 1000,
        }
    }
}

#[async_trait]
impl Projector for Feed {
    fn name(&self) -> &'static str {
        "feed"
    }

    fn tables(&self) -> &'static [&'static str] {
        &[
            "rm_posts",
            "feed_follows",
            "feed_authors",
            "feed_mode_changes",
            "feed_inbox",
            "feed_readers",
        ]
    }

    async fn apply(
        &self,
        conn: &mut PgConnection,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        match event.stream_type.as_str() {
            RelationPair::TYPE => match decode::<RelationEvent>(event)? {
                RelationEvent::Followed { follower, followee } => {
                    self.followed(conn, event.position, follower, followee)
                        .await
                }
                RelationEvent::Unfollowed {
                    follower, followee, ..
                } => {
                    self.unfollowed(conn, event.position, follower, followee)
                        .await
                }
                RelationEvent::Blocked { .. } | RelationEvent::Unblocked { .. } => Ok(()),
            },
            Post::TYPE => match decode::<PostEvent>(event)? {
                PostEvent::PostPublished {
                    post_id,
                    author,
                    content,
                    created_at,
                } => {
                    let seq: i64 = sqlx::query_scalar(
                        "INSERT INTO rm_posts (post_id, seq, author, content, created_at)
                         SELECT $1, COALESCE(max(seq), 0) + 1, $2, $3, $4 FROM rm_posts
                         RETURNING seq",
                    )
                    .bind(post_id.uuid())
                    .bind(author.get())
                    .bind(content.as_str())
                    .bind(created_at)
                    .fetch_one(&mut *conn)
                    .await?;
                    author_counts(conn, author, 0, 1).await?;
                    if !self.settle_mode(conn, event.position, author).await? {
                        self.fan_out(conn, author, seq).await?;
                    }
                    Ok(())
                }
                PostEvent::PostDeleted { post_id, author } => {
                    let seq: Option<i64> = sqlx::query_scalar(
                        "UPDATE rm_posts SET deleted = true, content = NULL
                          WHERE post_id = $1 AND NOT deleted RETURNING seq",
                    )
                    .bind(post_id.uuid())
                    .fetch_optional(&mut *conn)
                    .await?;
                    let Some(seq) = seq else { return Ok(()) };
                    author_counts(conn, author, 0, -1).await?;
                    sqlx::query(
                        "WITH gone AS (DELETE FROM feed_inbox WHERE seq = $1 RETURNING reader)
                         UPDATE feed_readers r SET size = r.size - 1
                           FROM gone WHERE r.reader = gone.reader",
                    )
                    .bind(seq)
                    .execute(&mut *conn)
                    .await?;
                    Ok(())
                }
            },
            _ => Ok(()),
        }
    }
}

impl Feed {
    async fn followed(
        &self,
        conn: &mut PgConnection,
        position: LogPosition,
        follower: UserId,
        followee: UserId,
    ) -> Result<(), ProjectionError> {
        let inserted = sqlx::query(
            "INSERT INTO feed_follows (follower, followee) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        )
        .bind(follower.get())
        .bind(followee.get())
        .execute(&mut *conn)
        .await?
        .rows_affected();
        if inserted == 0 {
            return Ok(());
        }
        author_counts(conn, followee, 1, 0).await?;
        if !self.settle_mode(conn, position, followee).await? {
            self.backfill(conn, follower.get(), followee.get()).await?;
        }
        Ok(())
    }

    async fn unfollowed(
        &self,
        conn: &mut PgConnection,
        position: LogPosition,
        follower: UserId,
        followee: UserId,
    ) -> Result<(), ProjectionError> {
        let deleted = sqlx::query("DELETE FROM feed_follows WHERE follower = $1 AND followee = $2")
            .bind(follower.get())
            .bind(followee.get())
            .execute(&mut *conn)
            .await?
            .rows_affected();
        if deleted == 0 {
            return Ok(());
        }
        sqlx::query(
            "WITH gone AS (DELETE FROM feed_inbox WHERE reader = $1 AND author = $2 RETURNING seq)
             UPDATE feed_readers SET size = size - (SELECT count(*) FROM gone) WHERE reader = $1",
        )
        .bind(follower.get())
        .bind(followee.get())
        .execute(&mut *conn)
        .await?;
        author_counts(conn, followee, -1, 0).await?;
        self.settle_mode(conn, position, followee).await?;
        Ok(())
    }

    /// Puts `author` in the mode their follower count calls for; a switch to push backfills
    /// every follower's inbox. Returns whether the author is pulled.
    async fn settle_mode(
        &self,
        conn: &mut PgConnection,
        position: LogPosition,
        author: UserId,
    ) -> Result<bool, ProjectionError> {
        let row = sqlx::query("SELECT pulled, followers FROM feed_authors WHERE author = $1")
            .bind(author.get())
            .fetch_optional(&mut *conn)
            .await?;
        let Some(row) = row else { return Ok(false) };
        let before: bool = row.try_get("pulled")?;
        let after = row.try_get::<i64, _>("followers")? >= self.big_v_threshold;
        if before == after {
            return Ok(after);
        }
        sqlx::query("UPDATE feed_authors SET pulled = $2 WHERE author = $1")
            .bind(author.get())
            .bind(after)
            .execute(&mut *conn)
            .await?;
        sqlx::query(
            "INSERT INTO feed_mode_changes (transaction_id, global_position, author, pulled)
             VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        )
        .bind(position.transaction_id)
        .bind(position.global_position)
        .bind(author.get())
        .bind(after)
        .execute(&mut *conn)
        .await?;
        tracing::info!(author = author.get(), pulled = after, "feed mode switched");
        if !after {
            let followers: Vec<i64> =
                sqlx::query_scalar("SELECT follower FROM feed_follows WHERE followee = $1")
                    .bind(author.get())
                    .fetch_all(&mut *conn)
                    .await?;
            for reader in followers {
                self.backfill(conn, reader, author.get()).await?;
            }
        }
        Ok(after)
    }

    /// Pushes post `seq` by `author` into every follower's inbox, then trims the full ones.
    async fn fan_out(
        &self,
        conn: &mut PgConnection,
        author: UserId,
        seq: i64,
    ) -> Result<(), ProjectionError> {
        let over: Vec<i64> = sqlx::query_scalar::<_, Option<i64>>(
            "WITH pushed AS (
                 INSERT INTO feed_inbox (reader, seq, author)
                 SELECT follower, $2, $1 FROM feed_follows WHERE followee = $1
                 ON CONFLICT DO NOTHING RETURNING reader)
             INSERT INTO feed_readers AS r (reader, size) SELECT reader, 1 FROM pushed
             ON CONFLICT (reader) DO UPDATE SET size = r.size + 1
             RETURNING CASE WHEN size > $3 THEN reader END",
        )
        .bind(author.get())
        .bind(seq)
        .bind(self.inbox_cap)
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .flatten()
        .collect();
        self.trim_one(conn, &over).await
    }

    /// Drops the oldest entry of each reader's inbox, one over the cap after a push (every
    /// write path leaves an inbox at most at the cap): an index probe each, where [`Feed::trim`]
    /// would walk the whole inbox.
    async fn trim_one(
        &self,
        conn: &mut PgConnection,
        readers: &[i64],
    ) -> Result<(), ProjectionError> {
        if readers.is_empty() {
            return Ok(());
        }
        sqlx::query(
            "WITH victims AS (
                 SELECT r.reader, (SELECT min(seq) FROM feed_inbox WHERE reader = r.reader) AS seq
                   FROM unnest($1::bigint[]) AS r(reader)),
             gone AS (
                 DELETE FROM feed_inbox i USING victims v
                  WHERE i.reader = v.reader AND i.seq = v.seq
                 RETURNING i.reader, i.seq)
             UPDATE feed_readers r
                SET size = r.size - 1, watermark = greatest(r.watermark, gone.seq)
               FROM gone WHERE r.reader = gone.reader",
        )
        .bind(readers)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// Copies `author`'s live posts above `reader`'s watermark into the inbox, the newest
    /// `inbox_cap` of them; when there were more, the watermark rises to the newest left out.
    async fn backfill(
        &self,
        conn: &mut PgConnection,
        reader: i64,
        author: i64,
    ) -> Result<(), ProjectionError> {
        let mut seqs: Vec<i64> = sqlx::query_scalar(
            "SELECT seq FROM rm_posts
              WHERE author = $2 AND NOT deleted
                AND seq > COALESCE((SELECT watermark FROM feed_readers WHERE reader = $1), 0)
              ORDER BY seq DESC LIMIT $3",
        )
        .bind(reader)
        .bind(author)
        .bind(self.inbox_cap + 1)
        .fetch_all(&mut *conn)
        .await?;
        let left_out = (seqs.len() as i64 > self.inbox_cap)
            .then(|| seqs.pop())
            .flatten();
        let row = sqlx::query(
            "WITH added AS (
                 INSERT INTO feed_inbox (reader, seq, author)
                 SELECT $1, s, $2 FROM unnest($3::bigint[]) AS s
                 ON CONFLICT DO NOTHING RETURNING seq)
             INSERT INTO feed_readers AS r (reader, size, watermark)
             VALUES ($1, (SELECT count(*) FROM added), COALESCE($4, 0))
             ON CONFLICT (reader) DO UPDATE
                SET size = r.size + excluded.size,
                    watermark = greatest(r.watermark, excluded.watermark)
             RETURNING size",
        )
        .bind(reader)
        .bind(author)
        .bind(&seqs)
        .bind(left_out)
        .fetch_one(&mut *conn)
        .await?;
        let size: i32 = row.try_get("size")?;
        if i64::from(size) > self.inbox_cap {
            self.trim(conn, &[reader]).await?;
        }
        Ok(())
    }

    /// Drops every entry beyond the newest `inbox_cap` of each reader's inbox and raises their
    /// watermarks to the newest entry dropped.
    async fn trim(&self, conn: &mut PgConnection, readers: &[i64]) -> Result<(), ProjectionError> {
        if readers.is_empty() {
            return Ok(());
        }
        sqlx::query(
            "WITH victims AS (
                 SELECT r.reader, x.seq FROM unnest($1::bigint[]) AS r(reader)
                 CROSS JOIN LATERAL (SELECT seq FROM feed_inbox WHERE reader = r.reader
                                      ORDER BY seq DESC OFFSET $2) AS x),
             gone AS (
                 DELETE FROM feed_inbox i USING victims v
                  WHERE i.reader = v.reader AND i.seq = v.seq
                 RETURNING i.reader, i.seq)
             UPDATE feed_readers r
                SET size = r.size - g.n, watermark = greatest(r.watermark, g.top)
               FROM (SELECT reader, count(*) AS n, max(seq) AS top FROM gone GROUP BY reader) g
              WHERE r.reader = g.reader",
        )
        .bind(readers)
        .bind(self.inbox_cap)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }
}

/// Adds to an author's follower and post counts (creating the row).
async fn author_counts(
    conn: &mut PgConnection,
    author: UserId,
    followers: i64,
    posts: i64,
) -> Result<(), ProjectionError> {
    sqlx::query(
        "INSERT INTO feed_authors AS a (author, followers, posts) VALUES ($1, $2, $3)
         ON CONFLICT (author) DO UPDATE
            SET followers = a.followers + $2, posts = a.posts + $3",
    )
    .bind(author.get())
    .bind(followers)
    .bind(posts)
    .execute(conn)
    .await?;
    Ok(())
}

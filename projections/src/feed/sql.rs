//! The feed's tables in PostgreSQL, as the fold ([`super::fold`]) sees them: each operation one
//! or two set-based statements, in the projector's transaction.

use std::collections::{HashMap, HashSet};

use relations_store::LogPosition;
use sqlx::postgres::PgArguments;
use sqlx::query::QueryScalar;
use sqlx::{PgConnection, Postgres};

use super::fold::{
    Author, FeedTables, Folded, NewPost, NewRepost, PostTables, RepostsOf, Setting, SettingChange,
};
use super::Settings;
use crate::relations::fold::{RelationChange, UserPair};

/// Drops the oldest entry of each reader's inbox that is over the cap (`$1` the readers, `$2`
/// the cap): after one push an inbox is at most one over, since every write leaves it at most
/// at the cap, so this is an index probe each, where [`TRIM_TO_CAP`] walks the inbox.
const TRIM_OLDEST: &str = "WITH victims AS (
                 SELECT r.reader, (SELECT min(seq) FROM feed_inbox WHERE reader = r.reader) AS seq
                   FROM unnest($1::bigint[]) AS r(reader)
                   JOIN feed_readers f ON f.reader = r.reader AND f.size > $2),
             gone AS (
                 DELETE FROM feed_inbox i USING victims v
                  WHERE i.reader = v.reader AND i.seq = v.seq
                 RETURNING i.reader, i.seq)
             UPDATE feed_readers r
                SET size = r.size - 1, watermark = greatest(r.watermark, gone.seq)
               FROM gone WHERE r.reader = gone.reader";

/// Drops every entry beyond the newest `$2` (the cap) of each reader's inbox (`$1`), raising
/// their watermarks to the newest entry dropped.
const TRIM_TO_CAP: &str = "WITH victims AS (
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
              WHERE r.reader = g.reader";

/// The feed's tables on a connection (the projector's transaction).
pub(super) struct SqlTables<'c> {
    pub(super) conn: &'c mut PgConnection,
    pub(super) settings: Settings,
}

impl SqlTables<'_> {
    /// Runs `fill`, a statement that adds inbox entries and returns each reader it left over
    /// the cap (NULL for the others), then trims those inboxes with `trim`.
    async fn fill_and_trim(
        &mut self,
        fill: QueryScalar<'_, Postgres, Option<i64>, PgArguments>,
        trim: &'static str,
    ) -> Folded<()> {
        let over: Vec<i64> = fill
            .fetch_all(&mut *self.conn)
            .await?
            .into_iter()
            .flatten()
            .collect();
        if over.is_empty() {
            return Ok(());
        }
        sqlx::query(trim)
            .bind(&over)
            .bind(self.settings.inbox_cap)
            .execute(&mut *self.conn)
            .await?;
        Ok(())
    }

    /// Runs `sql` with `user` as `$1`.
    async fn run(&mut self, sql: &str, user: i64) -> Folded<()> {
        sqlx::query(sql).bind(user).execute(&mut *self.conn).await?;
        Ok(())
    }
}

impl PostTables for SqlTables<'_> {
    async fn publish(&mut self, post: &NewPost<'_>) -> Folded<i64> {
        Ok(self.publish_all(std::slice::from_ref(post)).await?[0])
    }

    async fn publish_all(&mut self, posts: &[NewPost<'_>]) -> Folded<Vec<i64>> {
        let ids: Vec<uuid::Uuid> = posts.iter().map(|p| p.id).collect();
        let authors: Vec<i64> = posts.iter().map(|p| p.author).collect();
        let contents: Vec<Option<&str>> = posts.iter().map(|p| p.content).collect();
        let created: Vec<_> = posts.iter().map(|p| p.created_at).collect();
        let visibilities: Vec<&str> = posts.iter().map(|p| p.visibility.as_str()).collect();
        let quotes: Vec<Option<uuid::Uuid>> = posts.iter().map(|p| p.quote_of).collect();
        let policies: Vec<&str> = posts.iter().map(|p| p.quote_policy.as_str()).collect();
        let comments: Vec<&str> = posts.iter().map(|p| p.comment_policy.as_str()).collect();
        Ok(sqlx::query_scalar(
            "INSERT INTO rm_posts (post_id, seq, author, content, created_at, visibility,
                                   quote_of, quote_policy, comment_policy)
             SELECT id, m.top + n, a, c, t, v, q, qp, cp
               FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::timestamptz[], $5::text[],
                           $6::uuid[], $7::text[], $8::text[])
                    WITH ORDINALITY AS x(id, a, c, t, v, q, qp, cp, n),
                    (SELECT COALESCE(max(seq), 0) AS top FROM rm_posts) AS m
              ORDER BY n
             RETURNING seq",
        )
        .bind(&ids)
        .bind(&authors)
        .bind(&contents)
        .bind(&created)
        .bind(&visibilities)
        .bind(&quotes)
        .bind(&policies)
        .bind(&comments)
        .fetch_all(&mut *self.conn)
        .await?)
    }

    async fn delete(&mut self, post: uuid::Uuid, _author: i64) -> Folded<Option<i64>> {
        Ok(sqlx::query_scalar(
            "UPDATE rm_posts SET deleted = true, content = NULL
              WHERE post_id = $1 AND NOT deleted RETURNING seq",
        )
        .bind(post)
        .fetch_optional(&mut *self.conn)
        .await?)
    }

    async fn delete_all(&mut self, author: i64) -> Folded<()> {
        self.run(
            "UPDATE rm_posts SET deleted = true, content = NULL WHERE author = $1 AND NOT deleted",
            author,
        )
        .await
    }

    async fn repost(&mut self, repost: &NewRepost) -> Folded<Option<i64>> {
        let (seq, live): (i64, bool) = sqlx::query_as(
            "INSERT INTO rm_posts (post_id, seq, author, created_at, visibility, repost_of, deleted)
             SELECT lpad(to_hex(m.top + 1), 32, '0')::uuid, m.top + 1, $2, $3,
                    COALESCE(o.visibility, 'public'), $1, o.post_id IS NULL
               FROM (SELECT COALESCE(max(seq), 0) AS top FROM rm_posts) AS m
               LEFT JOIN rm_posts o ON o.post_id = $1 AND NOT o.deleted AND o.repost_of IS NULL
             RETURNING seq, NOT deleted",
        )
        .bind(repost.post)
        .bind(repost.reposter)
        .bind(repost.created_at)
        .fetch_one(&mut *self.conn)
        .await?;
        Ok(live.then_some(seq))
    }

    async fn unrepost(&mut self, post: uuid::Uuid, reposter: i64) -> Folded<Option<i64>> {
        Ok(sqlx::query_scalar(
            "UPDATE rm_posts SET deleted = true
              WHERE repost_of = $1 AND author = $2 AND NOT deleted RETURNING seq",
        )
        .bind(post)
        .bind(reposter)
        .fetch_optional(&mut *self.conn)
        .await?)
    }

    async fn delete_reposts(&mut self, of: RepostsOf) -> Folded<Vec<(i64, i64)>> {
        let query = match of {
            RepostsOf::Post(post) => sqlx::query_as(
                "UPDATE rm_posts SET deleted = true
                  WHERE repost_of = $1 AND NOT deleted RETURNING seq, author",
            )
            .bind(post),
            // Found by the author's posts still live (their timeline index).
            RepostsOf::Author(author) => sqlx::query_as(
                "UPDATE rm_posts r SET deleted = true
                   FROM rm_posts o
                  WHERE o.author = $1 AND NOT o.deleted AND o.repost_of IS NULL
                    AND r.repost_of = o.post_id AND NOT r.deleted
                 RETURNING r.seq, r.author",
            )
            .bind(author),
        };
        Ok(query.fetch_all(&mut *self.conn).await?)
    }

    async fn setting(&mut self, change: SettingChange) -> Folded<()> {
        let query = match change.setting {
            Setting::Quotes(policy) => {
                sqlx::query("UPDATE rm_posts SET quote_policy = $2 WHERE post_id = $1")
                    .bind(change.post)
                    .bind(policy.as_str())
            }
            Setting::Comments(policy) => {
                sqlx::query("UPDATE rm_posts SET comment_policy = $2 WHERE post_id = $1")
                    .bind(change.post)
                    .bind(policy.as_str())
            }
            Setting::Detached => {
                sqlx::query("UPDATE rm_posts SET quote_detached = true WHERE post_id = $1")
                    .bind(change.post)
            }
        };
        query.execute(&mut *self.conn).await?;
        Ok(())
    }
}

impl FeedTables for SqlTables<'_> {
    fn settings(&self) -> Settings {
        self.settings
    }

    async fn follow(&mut self, pairs: &[UserPair]) -> Folded<HashSet<UserPair>> {
        let (followers, followees): (Vec<i64>, Vec<i64>) = pairs.iter().copied().unzip();
        let added: Vec<UserPair> = sqlx::query_as(
            "INSERT INTO feed_follows (follower, followee)
             SELECT f, t FROM unnest($1::bigint[], $2::bigint[]) AS x(f, t)
             ON CONFLICT DO NOTHING RETURNING follower, followee",
        )
        .bind(&followers)
        .bind(&followees)
        .fetch_all(&mut *self.conn)
        .await?;
        Ok(added.into_iter().collect())
    }

    async fn unfollow(&mut self, (follower, followee): UserPair) -> Folded<bool> {
        let deleted = sqlx::query("DELETE FROM feed_follows WHERE follower = $1 AND followee = $2")
            .bind(follower)
            .bind(followee)
            .execute(&mut *self.conn)
            .await?
            .rows_affected();
        Ok(deleted > 0)
    }

    async fn followers(&mut self, author: i64) -> Folded<Vec<i64>> {
        Ok(
            sqlx::query_scalar("SELECT follower FROM feed_follows WHERE followee = $1")
                .bind(author)
                .fetch_all(&mut *self.conn)
                .await?,
        )
    }

    async fn authors(&mut self, authors: &[i64]) -> Folded<HashMap<i64, Author>> {
        let rows: Vec<(i64, i64, bool)> = sqlx::query_as(
            "SELECT author, followers, pulled FROM feed_authors WHERE author = ANY($1::bigint[])",
        )
        .bind(authors)
        .fetch_all(&mut *self.conn)
        .await?;
        Ok(rows.into_iter().map(|(a, n, p)| (a, (n, p))).collect())
    }

    async fn count(&mut self, counts: &[(i64, i64, i64)]) -> Folded<()> {
        let authors: Vec<i64> = counts.iter().map(|c| c.0).collect();
        let followers: Vec<i64> = counts.iter().map(|c| c.1).collect();
        let posts: Vec<i64> = counts.iter().map(|c| c.2).collect();
        sqlx::query(
            "INSERT INTO feed_authors AS a (author, followers, posts)
             SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[])
             ON CONFLICT (author) DO UPDATE
                SET followers = a.followers + excluded.followers,
                    posts = a.posts + excluded.posts",
        )
        .bind(&authors)
        .bind(&followers)
        .bind(&posts)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn set_mode(&mut self, author: i64, pulled: bool, at: LogPosition) -> Folded<()> {
        sqlx::query("UPDATE feed_authors SET pulled = $2 WHERE author = $1")
            .bind(author)
            .bind(pulled)
            .execute(&mut *self.conn)
            .await?;
        sqlx::query(
            "INSERT INTO feed_mode_changes (transaction_id, global_position, author, pulled)
             VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        )
        .bind(at.transaction_id)
        .bind(at.global_position)
        .bind(author)
        .bind(pulled)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn push(&mut self, entries: &[(i64, i64)]) -> Folded<()> {
        let (seqs, authors): (Vec<i64>, Vec<i64>) = entries.iter().copied().unzip();
        let fill = sqlx::query_scalar::<_, Option<i64>>(
            "WITH pushed AS (
                 INSERT INTO feed_inbox (reader, seq, author)
                 SELECT f.follower, p.seq, p.author
                   FROM unnest($1::bigint[], $2::bigint[]) AS p(seq, author)
                   JOIN feed_follows f ON f.followee = p.author
                 ON CONFLICT DO NOTHING RETURNING reader)
             INSERT INTO feed_readers AS r (reader, size)
             SELECT reader, count(*) FROM pushed GROUP BY reader
             ON CONFLICT (reader) DO UPDATE SET size = r.size + excluded.size
             RETURNING CASE WHEN size > $3 THEN reader END",
        )
        .bind(&seqs)
        .bind(&authors)
        .bind(self.settings.inbox_cap);
        // One post leaves each inbox at most one over the cap.
        let trim = if entries.len() == 1 {
            TRIM_OLDEST
        } else {
            TRIM_TO_CAP
        };
        self.fill_and_trim(fill, trim).await
    }

    async fn backfill(&mut self, pairs: &[UserPair]) -> Folded<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        let (readers, authors): (Vec<i64>, Vec<i64>) = pairs.iter().copied().unzip();
        // Each author's newest `inbox_cap + 1` posts above the watermark, then the trim: the
        // one left out, if any, is dropped by it, raising the watermark to it.
        let fill = sqlx::query_scalar::<_, Option<i64>>(
            "WITH p AS (SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS p(reader, author)),
             w AS (SELECT r.reader, COALESCE(f.watermark, 0) AS w
                     FROM (SELECT DISTINCT reader FROM p) r
                     LEFT JOIN feed_readers f ON f.reader = r.reader),
             added AS (
                 INSERT INTO feed_inbox (reader, seq, author)
                 SELECT p.reader, x.seq, p.author FROM p JOIN w ON w.reader = p.reader
                 CROSS JOIN LATERAL (SELECT seq FROM rm_posts
                                      WHERE author = p.author AND NOT deleted AND seq > w.w
                                      ORDER BY seq DESC LIMIT $3) AS x
                 ON CONFLICT DO NOTHING RETURNING reader)
             INSERT INTO feed_readers AS r (reader, size)
             SELECT w.reader, count(a.reader) FROM w LEFT JOIN added a ON a.reader = w.reader
              GROUP BY w.reader
             ON CONFLICT (reader) DO UPDATE SET size = r.size + excluded.size
             RETURNING CASE WHEN size > $4 THEN reader END",
        )
        .bind(&readers)
        .bind(&authors)
        .bind(self.settings.inbox_cap + 1)
        .bind(self.settings.inbox_cap);
        self.fill_and_trim(fill, TRIM_TO_CAP).await
    }

    async fn purge(&mut self, reader: i64, author: i64) -> Folded<()> {
        sqlx::query(
            "WITH gone AS (DELETE FROM feed_inbox WHERE reader = $1 AND author = $2 RETURNING seq)
             UPDATE feed_readers SET size = size - (SELECT count(*) FROM gone) WHERE reader = $1",
        )
        .bind(reader)
        .bind(author)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn unpush(&mut self, items: &[(i64, i64)]) -> Folded<()> {
        let seqs: Vec<i64> = items.iter().map(|&(seq, _)| seq).collect();
        sqlx::query(
            "WITH gone AS (DELETE FROM feed_inbox WHERE seq = ANY($1) RETURNING reader)
             UPDATE feed_readers r SET size = r.size - g.n
               FROM (SELECT reader, count(*) AS n FROM gone GROUP BY reader) AS g
              WHERE r.reader = g.reader",
        )
        .bind(&seqs)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn ban(&mut self, author: i64, banned: bool) -> Folded<()> {
        let sql = match banned {
            true => "INSERT INTO feed_banned (author) VALUES ($1) ON CONFLICT DO NOTHING",
            false => "DELETE FROM feed_banned WHERE author = $1",
        };
        self.run(sql, author).await
    }

    async fn show_reposts(&mut self, (follower, followee): UserPair, on: bool) -> Folded<()> {
        sqlx::query(
            "UPDATE feed_follows SET show_reposts = $3 WHERE follower = $1 AND followee = $2",
        )
        .bind(follower)
        .bind(followee)
        .bind(on)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn mute(&mut self, change: RelationChange) -> Folded<()> {
        crate::relations::write_mute(self.conn, "feed_mutes", &change, false).await
    }

    async fn end_follows_by(&mut self, user: i64) -> Folded<Vec<i64>> {
        Ok(sqlx::query_scalar(
            "WITH gone AS (DELETE FROM feed_follows WHERE follower = $1 RETURNING followee)
             UPDATE feed_authors a SET followers = a.followers - 1
               FROM gone WHERE a.author = gone.followee
             RETURNING a.author",
        )
        .bind(user)
        .fetch_all(&mut *self.conn)
        .await?)
    }

    async fn unpush_all(&mut self, author: i64) -> Folded<()> {
        // By seq (indexed), found by the posts still live.
        self.run(
            "WITH gone AS (
                 DELETE FROM feed_inbox WHERE seq IN
                     (SELECT seq FROM rm_posts WHERE author = $1 AND NOT deleted)
                 RETURNING reader)
             UPDATE feed_readers r SET size = r.size - g.n
               FROM (SELECT reader, count(*) AS n FROM gone GROUP BY reader) AS g
              WHERE r.reader = g.reader",
            author,
        )
        .await
    }

    async fn forget(&mut self, user: i64) -> Folded<()> {
        for sql in [
            "DELETE FROM feed_follows WHERE followee = $1",
            "DELETE FROM feed_inbox WHERE reader = $1",
            "DELETE FROM feed_readers WHERE reader = $1",
            "DELETE FROM feed_authors WHERE author = $1",
            "DELETE FROM feed_mode_changes WHERE author = $1",
            "DELETE FROM feed_banned WHERE author = $1",
            "DELETE FROM feed_mutes WHERE muter = $1 OR muted = $1",
        ] {
            self.run(sql, user).await?;
        }
        Ok(())
    }
}

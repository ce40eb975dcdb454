//! Writing inboxes: pushing a post to every follower, backfilling a new follow or a switch to
//! push mode, and trimming inboxes to the cap (raising watermarks).

use sqlx::postgres::PgArguments;
use sqlx::query::QueryScalar;
use sqlx::{PgConnection, Postgres, Row};

use relations_domain::UserId;

use super::Feed;
use crate::error::ProjectionError;

/// Drops the oldest entry of each reader's inbox that is over the cap (`$1` the readers, `$2`
/// the cap): after a push an inbox is at most one over, since every write path leaves it at
/// most at the cap, so this is an index probe each, where [`TRIM_TO_CAP`] walks the inbox.
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
pub(super) const TRIM_TO_CAP: &str = "WITH victims AS (
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

impl Feed {
    /// Pushes post `seq` by `author` into every follower's inbox, then trims the full ones.
    pub(super) async fn fan_out(
        &self,
        conn: &mut PgConnection,
        author: UserId,
        seq: i64,
    ) -> Result<(), ProjectionError> {
        let fill = sqlx::query_scalar::<_, Option<i64>>(
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
        .bind(self.settings.inbox_cap);
        self.fill_and_trim(conn, fill, TRIM_OLDEST).await
    }

    /// Copies `author`'s live posts above `reader`'s watermark into the inbox, the newest
    /// `inbox_cap` of them; when there were more, the watermark rises to the newest left out.
    pub(super) async fn backfill(
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
        .bind(self.settings.inbox_cap + 1)
        .fetch_all(&mut *conn)
        .await?;
        let left_out = (seqs.len() as i64 > self.settings.inbox_cap)
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
        if i64::from(size) > self.settings.inbox_cap {
            self.trim(conn, TRIM_TO_CAP, &[reader]).await?;
        }
        Ok(())
    }

    /// Runs `fill`, a statement that adds inbox entries and returns each reader it left over
    /// the cap (NULL for the others), then trims those inboxes with `trim`.
    pub(super) async fn fill_and_trim(
        &self,
        conn: &mut PgConnection,
        fill: QueryScalar<'_, Postgres, Option<i64>, PgArguments>,
        trim: &'static str,
    ) -> Result<(), ProjectionError> {
        let over: Vec<i64> = fill
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .flatten()
            .collect();
        self.trim(conn, trim, &over).await
    }

    /// Trims the inboxes of `readers` with `sql` ([`TRIM_OLDEST`] or [`TRIM_TO_CAP`]).
    pub(super) async fn trim(
        &self,
        conn: &mut PgConnection,
        sql: &'static str,
        readers: &[i64],
    ) -> Result<(), ProjectionError> {
        if readers.is_empty() {
            return Ok(());
        }
        sqlx::query(sql)
            .bind(readers)
            .bind(self.settings.inbox_cap)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }
}

//! A run of consecutive `PostPublished` events folded at once. The result is the one
//! event-by-event application gives: posts are numbered in log order; posts do not change
//! follower counts, so every author keeps its mode through the run; each post of a push-mode
//! author goes to every follower's inbox; and since each push trims the oldest entry of a full
//! inbox (raising the watermark to it), pushing the whole run and then trimming each inbox to
//! its newest `inbox_cap` entries drops the same entries and leaves the same watermark.
//!
//! When an author's mode disagrees with the threshold before the run, the caller applies the
//! run event by event instead (that application switches the mode first).

use relations_domain::{LogEvent, PostEvent, UserId};
use relations_store::log::RecordedEvent;
use sqlx::PgConnection;

use super::fan_out::TRIM_TO_CAP;
use super::Feed;
use crate::error::ProjectionError;

/// The run's posts as columns, in log order.
#[derive(Default)]
struct Posts {
    ids: Vec<uuid::Uuid>,
    authors: Vec<i64>,
    /// `None`: erased.
    contents: Vec<Option<String>>,
    created: Vec<chrono::DateTime<chrono::Utc>>,
    visibilities: Vec<&'static str>,
}

impl Feed {
    /// Folds `run` (publishes, in log order); `false`, having written nothing, when it must be
    /// applied event by event.
    pub(super) async fn post_run(
        &self,
        conn: &mut PgConnection,
        run: &[&RecordedEvent],
    ) -> Result<bool, ProjectionError> {
        let mut posts = Posts::default();
        for event in run {
            if let LogEvent::Post(PostEvent::PostPublished {
                post_id,
                author,
                content,
                created_at,
                visibility,
            }) = &event.event
            {
                posts.visibilities.push(visibility.as_str());
                posts.ids.push(post_id.uuid());
                posts.authors.push(UserId::get(*author));
                posts
                    .contents
                    .push(content.as_ref().map(|c| c.as_str().to_owned()));
                posts.created.push(*created_at);
            }
        }
        if !self.modes_settled(conn, &posts.authors).await? {
            return Ok(false);
        }
        let numbered: Vec<(i64, i64)> = sqlx::query_as(
            "INSERT INTO rm_posts (post_id, seq, author, content, created_at, visibility)
             SELECT id, m.top + n, a, c, t, v
               FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::timestamptz[], $5::text[])
                    WITH ORDINALITY AS x(id, a, c, t, v, n),
                    (SELECT COALESCE(max(seq), 0) AS top FROM rm_posts) AS m
              ORDER BY n
             RETURNING seq, author",
        )
        .bind(&posts.ids)
        .bind(&posts.authors)
        .bind(&posts.contents)
        .bind(&posts.created)
        .bind(&posts.visibilities)
        .fetch_all(&mut *conn)
        .await?;
        sqlx::query(
            "INSERT INTO feed_authors AS a (author, followers, posts)
             SELECT author, 0, count(*) FROM unnest($1::bigint[]) AS author GROUP BY author
             ON CONFLICT (author) DO UPDATE SET posts = a.posts + excluded.posts",
        )
        .bind(&posts.authors)
        .execute(&mut *conn)
        .await?;
        let (seqs, authors): (Vec<i64>, Vec<i64>) = numbered.into_iter().unzip();
        let fill = sqlx::query_scalar::<_, Option<i64>>(
            "WITH p AS (SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS p(seq, author)
                         WHERE NOT EXISTS (SELECT 1 FROM feed_authors a
                                            WHERE a.author = p.author AND a.pulled)),
             pushed AS (
                 INSERT INTO feed_inbox (reader, seq, author)
                 SELECT f.follower, p.seq, p.author FROM p JOIN feed_follows f ON f.followee = p.author
                 ON CONFLICT DO NOTHING RETURNING reader)
             INSERT INTO feed_readers AS r (reader, size)
             SELECT reader, count(*) FROM pushed GROUP BY reader
             ON CONFLICT (reader) DO UPDATE SET size = r.size + excluded.size
             RETURNING CASE WHEN size > $3 THEN reader END",
        )
        .bind(&seqs)
        .bind(&authors)
        .bind(self.settings.inbox_cap);
        self.fill_and_trim(conn, fill, TRIM_TO_CAP).await?;
        Ok(true)
    }

    /// Whether every one of `authors` that has a row is in the mode its follower count calls
    /// for (an author without a row has no followers: push, as it will be made).
    pub(super) async fn modes_settled(
        &self,
        conn: &mut PgConnection,
        authors: &[i64],
    ) -> Result<bool, ProjectionError> {
        let unsettled: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM feed_authors
                             WHERE author = ANY($1::bigint[]) AND pulled <> (followers >= $2))",
        )
        .bind(authors)
        .bind(self.settings.big_v_threshold)
        .fetch_one(conn)
        .await?;
        Ok(!unsettled)
    }
}

//! A run of consecutive `Followed` events folded at once: what a catch-up or a rebuild of the
//! feed mostly meets. The result is the one event-by-event application gives:
//! - each new edge is added to `feed_follows` and counted for its author;
//! - an author's count only grows in such a run, so the only switch is to pull mode, at the
//!   follow that reaches the threshold (recorded at that event's position, as `settle_mode`
//!   does); the follows before it backfill, the ones from it on do not;
//! - the backfills of one reader, done one after the other, leave the newest `inbox_cap` of
//!   (its inbox and every backfilled author's live posts above its watermark) with the
//!   watermark at the newest left out; so each author's newest `inbox_cap + 1` posts above the
//!   watermark are inserted at once and the inbox trimmed to the cap, which drops the same
//!   posts and raises the watermark to the same seq.
//!
//! When an author's mode disagrees with the threshold before the run (the threshold changed
//! between runs), the caller applies the run event by event instead.

use std::collections::HashMap;

use relations_store::LogPosition;
use sqlx::PgConnection;

use super::fan_out::TRIM_TO_CAP;
use super::Feed;
use crate::error::ProjectionError;

/// One follow of the run: (follower, followee, position).
pub(super) type Follow = (i64, i64, LogPosition);

impl Feed {
    /// Folds `run` (in log order); `false`, having written nothing, when it must be applied
    /// event by event.
    pub(super) async fn follow_run(
        &self,
        conn: &mut PgConnection,
        run: &[Follow],
    ) -> Result<bool, ProjectionError> {
        let (followers, followees): (Vec<i64>, Vec<i64>) = run.iter().map(|f| (f.0, f.1)).unzip();
        // The authors' counts and modes before the run.
        let before: Vec<(i64, i64, bool)> = sqlx::query_as(
            "SELECT a.author, COALESCE(f.followers, 0), COALESCE(f.pulled, false)
               FROM (SELECT DISTINCT unnest($1::bigint[]) AS author) a
               LEFT JOIN feed_authors f ON f.author = a.author",
        )
        .bind(&followees)
        .fetch_all(&mut *conn)
        .await?;
        let threshold = self.settings.big_v_threshold;
        if before
            .iter()
            .any(|&(_, count, pulled)| pulled != (count >= threshold))
        {
            return Ok(false);
        }
        let mut counts: HashMap<i64, i64> = before.iter().map(|&(a, c, _)| (a, c)).collect();
        let added: Vec<(i64, i64)> = sqlx::query_as(
            "INSERT INTO feed_follows (follower, followee)
             SELECT f, t FROM unnest($1::bigint[], $2::bigint[]) AS x(f, t)
             ON CONFLICT DO NOTHING RETURNING follower, followee",
        )
        .bind(&followers)
        .bind(&followees)
        .fetch_all(&mut *conn)
        .await?;
        let added: std::collections::HashSet<(i64, i64)> = added.into_iter().collect();
        let mut backfills: (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
        let mut switches: Vec<(i64, LogPosition)> = Vec::new();
        for &(follower, author, position) in run.iter().filter(|f| added.contains(&(f.0, f.1))) {
            let count = counts.entry(author).or_default();
            *count += 1;
            if *count == threshold {
                switches.push((author, position));
            } else if *count < threshold {
                backfills.0.push(follower);
                backfills.1.push(author);
            }
        }
        self.count_followers(conn, &added).await?;
        self.switch_to_pull(conn, &switches).await?;
        self.backfill_all(conn, &backfills.0, &backfills.1).await?;
        Ok(true)
    }

    /// Adds the run's new edges to their authors' follower counts.
    async fn count_followers(
        &self,
        conn: &mut PgConnection,
        added: &std::collections::HashSet<(i64, i64)>,
    ) -> Result<(), ProjectionError> {
        let mut per_author: HashMap<i64, i64> = HashMap::new();
        for &(_, author) in added {
            *per_author.entry(author).or_default() += 1;
        }
        let mut authors: Vec<(i64, i64)> = per_author.into_iter().collect();
        authors.sort_unstable();
        let (authors, added): (Vec<i64>, Vec<i64>) = authors.into_iter().unzip();
        sqlx::query(
            "INSERT INTO feed_authors AS a (author, followers, posts)
             SELECT author, n, 0 FROM unnest($1::bigint[], $2::bigint[]) AS x(author, n)
             ON CONFLICT (author) DO UPDATE SET followers = a.followers + excluded.followers",
        )
        .bind(&authors)
        .bind(&added)
        .execute(conn)
        .await?;
        Ok(())
    }

    /// Puts authors in pull mode, each recorded at the follow that reached the threshold.
    async fn switch_to_pull(
        &self,
        conn: &mut PgConnection,
        switches: &[(i64, LogPosition)],
    ) -> Result<(), ProjectionError> {
        if switches.is_empty() {
            return Ok(());
        }
        let authors: Vec<i64> = switches.iter().map(|s| s.0).collect();
        let transactions: Vec<i64> = switches.iter().map(|s| s.1.transaction_id).collect();
        let positions: Vec<i64> = switches.iter().map(|s| s.1.global_position).collect();
        sqlx::query("UPDATE feed_authors SET pulled = true WHERE author = ANY($1::bigint[])")
            .bind(&authors)
            .execute(&mut *conn)
            .await?;
        sqlx::query(
            "INSERT INTO feed_mode_changes (transaction_id, global_position, author, pulled)
             SELECT t, g, a, true FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS x(t, g, a)
             ON CONFLICT DO NOTHING",
        )
        .bind(&transactions)
        .bind(&positions)
        .bind(&authors)
        .execute(&mut *conn)
        .await?;
        for author in authors {
            tracing::info!(author, pulled = true, "feed mode switched");
        }
        Ok(())
    }

    /// Backfills each (reader, author) pair at once, then trims the readers over the cap.
    async fn backfill_all(
        &self,
        conn: &mut PgConnection,
        readers: &[i64],
        authors: &[i64],
    ) -> Result<(), ProjectionError> {
        if readers.is_empty() {
            return Ok(());
        }
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
        .bind(readers)
        .bind(authors)
        .bind(self.settings.inbox_cap + 1)
        .bind(self.settings.inbox_cap);
        self.fill_and_trim(conn, fill, TRIM_TO_CAP).await
    }
}

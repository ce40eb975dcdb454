//! `verify`'s check of projector `engagement`: its tables (bookmarks' too, issue 46) against
//! the one fold ([`super::fold`]) of the log up to its checkpoint into tables in memory, row
//! for row; and the fold's counts against what the rules say they are, recounted from the
//! rows (each count is the number of rows that stand, each visibility the tombstone rule), so
//! that a fault in the fold itself shows too.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use relations_domain::LikeTarget;
use relations_store::log::RecordedEvent;
use sqlx::PgConnection;

use super::fold::{fold, EngagementChange, Key};
use super::memory::{CommentRow, EngagementMemory};
use super::PostCounts;
use crate::error::ProjectionError;
use crate::feed::fold::in_memory;
use crate::runtime::verify::{diff, Check};

/// A compared comment row: (post, n, author, parent, content, deleted, pinned, likes,
/// replies, visible).
type Row = (
    uuid::Uuid,
    i32,
    i64,
    Option<i32>,
    Option<String>,
    bool,
    bool,
    i64,
    i64,
    bool,
);

/// How differences name the tables compared.
const STATS: &str = "rm_post_stats (post, likes, comments, reposts, quotes)";

/// A compared row of `rm_post_stats`: (post, likes, comments, reposts, quotes).
type StatsRow = (uuid::Uuid, i64, i64, i64, i64);

/// The rows of `rm_post_stats` that are not all zero.
fn stats_rows(stats: &BTreeMap<uuid::Uuid, PostCounts>) -> BTreeSet<StatsRow> {
    let rows = stats.iter().filter(|(_, c)| **c != PostCounts::default());
    rows.map(|(&p, c)| (p, c.likes, c.comments, c.reposts, c.quotes))
        .collect()
}
const COMMENTS: &str =
    "rm_comments (post, n, author, parent, content, deleted, pinned, likes, replies, visible)";

/// The engagement read models against the events.
#[derive(Debug, Default)]
pub struct EngagementCheck {
    tables: EngagementMemory,
}

impl EngagementCheck {
    /// The tables folded into.
    #[cfg(test)]
    pub(super) fn tables_mut(&mut self) -> &mut EngagementMemory {
        &mut self.tables
    }

    /// Where the folded counts differ from the rules' recount (nothing when right).
    pub(super) fn recount_mismatches(&self) -> Vec<String> {
        let mut out = Vec::new();
        let (stats, comments) = self.recounted();
        diff(
            &format!("folded {STATS} recounted"),
            &stats,
            &self.stats(),
            &mut out,
        );
        diff(
            &format!("folded {COMMENTS} recounted"),
            &comments,
            &self.comments(),
            &mut out,
        );
        out
    }

    /// `rm_post_stats` as folded, rows of nothing left out.
    fn stats(&self) -> BTreeSet<StatsRow> {
        stats_rows(&self.tables.stats)
    }

    /// `rm_comments` as folded.
    fn comments(&self) -> BTreeSet<Row> {
        let rows = self.tables.comments.iter();
        rows.map(|(&(post, n), c)| row(post, n, c.clone()))
            .collect()
    }

    /// The counts and visibility the rules give, recounted from the folded likes, reposts,
    /// quotes and comments: a post's likes, reposts and quotes are its rows of `rm_likes`,
    /// `rm_reposts` and `rm_quotes`,
    /// its comments the live ones; a comment is visible while live or while it has a visible
    /// reply.
    fn recounted(&self) -> (BTreeSet<StatsRow>, BTreeSet<Row>) {
        let mut stats: BTreeMap<uuid::Uuid, PostCounts> = BTreeMap::new();
        for (post, _) in self.tables.reposts.keys() {
            stats.entry(*post).or_default().reposts += 1;
        }
        for (quoted, _) in self.tables.quotes.values() {
            stats.entry(*quoted).or_default().quotes += 1;
        }
        let mut comment_likes: BTreeMap<Key, i64> = BTreeMap::new();
        for (target, _) in &self.tables.likes {
            match target {
                LikeTarget::Post(post) => stats.entry(post.uuid()).or_default().likes += 1,
                LikeTarget::Comment(c) => {
                    *comment_likes
                        .entry((c.post.uuid(), c.n as i32))
                        .or_default() += 1
                }
            }
        }
        let mut visible = BTreeSet::new();
        let mut replies: BTreeMap<Key, i64> = BTreeMap::new();
        // Children have higher numbers than their parents: walk from the newest down.
        for (&(post, n), c) in self.tables.comments.iter().rev() {
            if !c.deleted {
                stats.entry(post).or_default().comments += 1;
            }
            if !c.deleted || replies.get(&(post, n)).copied().unwrap_or(0) > 0 {
                visible.insert((post, n));
                if let Some(p) = c.parent {
                    *replies.entry((post, p)).or_default() += 1;
                }
            }
        }
        let comments = self.tables.comments.iter().map(|(&key, c)| {
            let recount = CommentRow {
                likes: comment_likes.get(&key).copied().unwrap_or(0),
                replies: replies.get(&key).copied().unwrap_or(0),
                visible: visible.contains(&key),
                ..c.clone()
            };
            row(key.0, key.1, recount)
        });
        (stats_rows(&stats), comments.collect())
    }
}

fn row(post: uuid::Uuid, n: i32, c: CommentRow) -> Row {
    let CommentRow {
        author,
        parent,
        content,
        deleted,
        pinned,
        likes,
        replies,
        visible,
    } = c;
    (
        post, n, author, parent, content, deleted, pinned, likes, replies, visible,
    )
}

#[async_trait]
impl Check for EngagementCheck {
    fn projector(&self) -> Option<&'static str> {
        Some(super::NAME)
    }

    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        match EngagementChange::of(event) {
            Some(change) => in_memory(fold(&mut self.tables, &change)),
            None => Ok(()),
        }
    }

    async fn compare(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<(), ProjectionError> {
        out.extend(self.recount_mismatches());
        let (stats, comments) = (self.stats(), self.comments());
        let likes: BTreeSet<(String, i64)> = sqlx::query_as("SELECT target, user_id FROM rm_likes")
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect();
        let folded = self.tables.likes.iter();
        let folded = folded.map(|(t, u)| (t.to_string(), *u)).collect();
        diff("rm_likes (target, user)", &folded, &likes, out);
        for (table, folded) in [
            ("rm_reposts", &self.tables.reposts),
            ("rm_bookmarks", &self.tables.bookmarks),
        ] {
            let actual = marks(conn, table).await?;
            let folded = (folded.iter())
                .map(|(&(post, user), &since)| (post, user, since))
                .collect();
            diff(
                &format!("{table} (post, user, since)"),
                &folded,
                &actual,
                out,
            );
        }
        let quotes: BTreeMap<uuid::Uuid, (uuid::Uuid, i64)> =
            sqlx::query_as("SELECT post, quote_of, author FROM rm_quotes")
                .fetch_all(&mut *conn)
                .await?
                .into_iter()
                .map(|(post, of, author)| (post, (of, author)))
                .collect();
        let folded: BTreeSet<_> = self.tables.quotes.iter().collect();
        let actual: BTreeSet<_> = quotes.iter().collect();
        diff(
            "rm_quotes (post, (quote_of, author))",
            &folded,
            &actual,
            out,
        );
        let actual_stats: BTreeSet<StatsRow> = sqlx::query_as(
            "SELECT post, like_count, comment_count, repost_count, quote_count FROM rm_post_stats
              WHERE like_count <> 0 OR comment_count <> 0 OR repost_count <> 0
                 OR quote_count <> 0",
        )
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();
        diff(STATS, &stats, &actual_stats, out);
        diff(COMMENTS, &comments, &comment_rows(conn).await?, out);
        Ok(())
    }
}

/// Every `(post, user_id, since µs)` of `table`, a table of marks (`rm_reposts`,
/// `rm_bookmarks`).
async fn marks(
    conn: &mut PgConnection,
    table: &str,
) -> Result<BTreeSet<(uuid::Uuid, i64, i64)>, sqlx::Error> {
    let sql = format!("SELECT post, user_id, since FROM {table}");
    let rows: Vec<(uuid::Uuid, i64, chrono::DateTime<chrono::Utc>)> =
        sqlx::query_as(&sql).fetch_all(&mut *conn).await?;
    let rows = rows.into_iter();
    Ok(rows
        .map(|(p, u, since)| (p, u, since.timestamp_micros()))
        .collect())
}

/// Every row of `rm_comments`, as [`Row`]s.
async fn comment_rows(conn: &mut PgConnection) -> Result<BTreeSet<Row>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT post, n, author, parent, content, deleted, pinned, like_count, reply_count,
                visible FROM rm_comments",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().collect())
}

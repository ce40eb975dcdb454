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
//! - an erasure (`UserErased`) deletes the user's posts (content dropped, as a deletion), takes
//!   them out of every inbox, ends the user's follows both ways (followees' counts and modes
//!   settled), and drops the user's inbox, mutes and rows ([`Feed::erase`]).
//!
//! A rebuild folds the whole log the same way in memory and writes each table with one `COPY`
//! (`bulk.rs`).
//!
//! Invariant, at every checkpoint: for every reader R and push-mode author A that R follows,
//! every live post of A with a seq above R's watermark is in R's inbox.

use async_trait::async_trait;
use relations_domain::{AccountEvent, LogEvent, PostEvent, RelationEvent, UserId};
use relations_store::log::{self, RecordedEvent};
use relations_store::Keyring;
use relations_store::LogPosition;
use sqlx::{PgConnection, Row};

use crate::error::ProjectionError;
use crate::relations::fold::RelationChange;
use crate::runtime::projector::{BulkFold, Projector};

mod bulk;
mod fan_out;
mod follow_run;
pub mod inbox_cache;
mod post_run;
pub mod query;
pub mod read_marks;
mod settings;
pub mod stream;
pub mod verify;

pub use settings::Settings;

/// The projector; see the module docs.
#[derive(Debug, Clone)]
pub struct Feed {
    /// Its threshold and cap.
    pub settings: Settings,
    /// What opens the posts' content (`rm_posts.content` is null for an erased author).
    pub keys: Keyring,
}

/// The projector's name.
pub const NAME: &str = "feed";

/// The projector's tables (a rebuild swaps them all).
pub const TABLES: [&str; 8] = [
    "rm_posts",
    "feed_follows",
    "feed_authors",
    "feed_mode_changes",
    "feed_inbox",
    "feed_readers",
    "feed_banned",
    "feed_mutes",
];

impl Feed {
    /// An account event's effect on the feed: bans hide posts, an erasure removes everything.
    async fn apply_account(
        &self,
        conn: &mut PgConnection,
        event: &RecordedEvent,
        account: AccountEvent,
    ) -> Result<(), ProjectionError> {
        let sql = match account {
            AccountEvent::UserBanned { .. } => {
                "INSERT INTO feed_banned (author) VALUES ($1) ON CONFLICT DO NOTHING"
            }
            AccountEvent::UserUnbanned { .. } => "DELETE FROM feed_banned WHERE author = $1",
            AccountEvent::UserErased { user } => {
                return self.erase(conn, event.position, user).await;
            }
            // Locks and hidden graphs are read at read time from the replica
            // (`crate::privacy`), so every feed reader sees them at once.
            AccountEvent::TokensRevoked { .. }
            | AccountEvent::AccountLocked { .. }
            | AccountEvent::AccountUnlocked { .. }
            | AccountEvent::GraphHidden { .. }
            | AccountEvent::GraphShown { .. } => return Ok(()),
        };
        sqlx::query(sql)
            .bind(account.user().get())
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// A relation event's effect on the feed: follows move inboxes, mutes are kept.
    async fn apply_relation(
        &self,
        conn: &mut PgConnection,
        event: &RecordedEvent,
        relation: RelationEvent,
    ) -> Result<(), ProjectionError> {
        match relation {
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
            // Requests change no feed; an approval's `Followed` does.
            RelationEvent::Blocked { .. }
            | RelationEvent::Unblocked { .. }
            | RelationEvent::FollowRequested { .. }
            | RelationEvent::FollowRequestApproved { .. }
            | RelationEvent::FollowRequestRejected { .. }
            | RelationEvent::FollowRequestWithdrawn { .. } => Ok(()),
            mute @ (RelationEvent::Muted { .. } | RelationEvent::Unmuted { .. }) => {
                let change = RelationChange::of(&mute, event.occurred_at);
                crate::relations::write_mute(conn, "feed_mutes", &change, false).await
            }
        }
    }
}

#[async_trait]
impl Projector for Feed {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tables(&self) -> &'static [&'static str] {
        &TABLES
    }

    fn bulk(&self) -> Option<Box<dyn BulkFold>> {
        Some(Box::new(bulk::FeedBulk::new(
            self.settings,
            self.keys.clone(),
        )))
    }

    /// Runs of consecutive follows, and of consecutive publishes, are folded at once (see
    /// `follow_run` and `post_run`); everything else event by event.
    async fn apply_batch(
        &self,
        conn: &mut PgConnection,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        let events = log::revealed(&self.keys, events).await?;
        let mut run: Vec<&RecordedEvent> = Vec::new();
        let mut kind = None;
        for event in events.iter() {
            let this = Run::of(event)?;
            if this != kind || this.is_none() {
                self.apply_run(conn, kind, &mut run).await?;
            }
            kind = this;
            match this {
                Some(_) => run.push(event),
                None => self.apply(conn, event).await?,
            }
        }
        self.apply_run(conn, kind, &mut run).await
    }

    async fn apply(
        &self,
        conn: &mut PgConnection,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        let revealed = log::revealed(&self.keys, std::slice::from_ref(event)).await?;
        let event = &revealed[0];
        match event.event.clone() {
            LogEvent::Relation(relation) => self.apply_relation(conn, event, relation).await,
            LogEvent::Post(post) => match post {
                PostEvent::PostPublished {
                    post_id,
                    author,
                    content,
                    created_at,
                    visibility,
                } => {
                    let seq: i64 = sqlx::query_scalar(
                        "INSERT INTO rm_posts (post_id, seq, author, content, created_at, visibility)
                         SELECT $1, COALESCE(max(seq), 0) + 1, $2, $3, $4, $5 FROM rm_posts
                         RETURNING seq",
                    )
                    .bind(post_id.uuid())
                    .bind(author.get())
                    .bind(content.as_ref().map(|c| c.as_str()))
                    .bind(created_at)
                    .bind(visibility.as_str())
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
            LogEvent::Account(account) => self.apply_account(conn, event, account).await,
            // Likes and comments are shown from projector `engagement`'s tables.
            LogEvent::Thread(_) | LogEvent::Like(_) => Ok(()),
        }
    }
}

impl Feed {
    /// Applies a run (emptying it): folded at once when it can be, otherwise one by one.
    async fn apply_run(
        &self,
        conn: &mut PgConnection,
        kind: Option<Run>,
        run: &mut Vec<&RecordedEvent>,
    ) -> Result<(), ProjectionError> {
        let folded = match kind {
            _ if run.is_empty() => true,
            Some(Run::Follows) => {
                let mut follows = Vec::with_capacity(run.len());
                for event in run.iter() {
                    if let LogEvent::Relation(RelationEvent::Followed { follower, followee }) =
                        event.event
                    {
                        follows.push((follower.get(), followee.get(), event.position));
                    }
                }
                self.follow_run(conn, &follows).await?
            }
            Some(Run::Publishes) => self.post_run(conn, run).await?,
            None => false,
        };
        if !folded {
            for event in run.iter() {
                self.apply(conn, event).await?;
            }
        }
        run.clear();
        Ok(())
    }

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

    /// Folds `user`'s erasure set-based: their live posts are deleted (content dropped) and
    /// leave every inbox; their follows end both ways (each followee loses a follower and is
    /// put in the mode its count now calls for: at most the follow limit of them); their own
    /// inbox, mutes and rows go.
    async fn erase(
        &self,
        conn: &mut PgConnection,
        position: LogPosition,
        user: UserId,
    ) -> Result<(), ProjectionError> {
        // This process opens none of the user's content from now on (their key is gone).
        self.keys.forget(user);
        let followees: Vec<i64> = sqlx::query_scalar(
            "WITH gone AS (DELETE FROM feed_follows WHERE follower = $1 RETURNING followee)
             UPDATE feed_authors a SET followers = a.followers - 1
               FROM gone WHERE a.author = gone.followee
             RETURNING a.author",
        )
        .bind(user.get())
        .fetch_all(&mut *conn)
        .await?;
        let statements = [
            // The live posts' inbox entries by seq (indexed), before the posts are deleted.
            "WITH gone AS (
                 DELETE FROM feed_inbox WHERE seq IN
                     (SELECT seq FROM rm_posts WHERE author = $1 AND NOT deleted)
                 RETURNING reader)
             UPDATE feed_readers r SET size = r.size - g.n
               FROM (SELECT reader, count(*) AS n FROM gone GROUP BY reader) AS g
              WHERE r.reader = g.reader",
            "UPDATE rm_posts SET deleted = true, content = NULL WHERE author = $1 AND NOT deleted",
            "DELETE FROM feed_follows WHERE followee = $1",
            "DELETE FROM feed_inbox WHERE reader = $1",
            "DELETE FROM feed_readers WHERE reader = $1",
            "DELETE FROM feed_authors WHERE author = $1",
            "DELETE FROM feed_mode_changes WHERE author = $1",
            "DELETE FROM feed_banned WHERE author = $1",
            "DELETE FROM feed_mutes WHERE muter = $1 OR muted = $1",
        ];
        for sql in statements {
            sqlx::query(sql)
                .bind(user.get())
                .execute(&mut *conn)
                .await?;
        }
        for followee in followees {
            let followee = UserId::try_from(followee).map_err(|e| sqlx::Error::Decode(e.into()))?;
            self.settle_mode(conn, position, followee).await?;
        }
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
        let after = row.try_get::<i64, _>("followers")? >= self.settings.big_v_threshold;
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
}

/// The kinds of events folded in runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// `Followed`
    Follows,
    /// `PostPublished`
    Publishes,
}

impl Run {
    /// The run `event` belongs in, if any.
    fn of(event: &RecordedEvent) -> Result<Option<Run>, ProjectionError> {
        Ok(match &event.event {
            LogEvent::Relation(RelationEvent::Followed { .. }) => Some(Run::Follows),
            LogEvent::Post(PostEvent::PostPublished { .. }) => Some(Run::Publishes),
            // Everything else is applied event by event.
            LogEvent::Relation(_)
            | LogEvent::Post(PostEvent::PostDeleted { .. })
            | LogEvent::Thread(_)
            | LogEvent::Like(_)
            | LogEvent::Account(_) => None,
        })
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

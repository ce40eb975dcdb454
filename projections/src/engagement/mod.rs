//! Projector `engagement`: likes and comments (seed 002), reposts and quotes (issue 44),
//! bookmarks (issue 46). Who likes what (`rm_likes`), who reposts what (`rm_reposts`), who
//! bookmarks what (`rm_bookmarks`, private: no count), which post quotes which (`rm_quotes`),
//! each post's like, comment, repost and quote counts (`rm_post_stats`), and every comment
//! with its like count, reply count and visibility (`rm_comments`).
//!
//! Counts are folded from the log and never written any other way, so they cannot drift: a
//! rebuild gives the same numbers, and `verify` recounts them. The rules (tombstones, erasure)
//! are the one fold's ([`fold`]); PostgreSQL's tables are [`sql`], `verify`'s [`memory`] and
//! the replica's counts beside its held posts [`held`].

pub mod fold;
pub mod held;
pub mod like_cache;
mod likes;
pub mod memory;
pub mod query;
mod sql;
pub mod verify;
pub mod visible;

#[cfg(test)]
mod tests;

use async_trait::async_trait;
use relations_store::log::{self, RecordedEvent};
use relations_store::Keyring;
use sqlx::PgConnection;

use crate::error::ProjectionError;
use crate::runtime::projector::Projector;

/// A post's counts, as `rm_post_stats` holds them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PostCounts {
    /// Likes.
    pub likes: i64,
    /// Live comments.
    pub comments: i64,
    /// Live reposts (issue 44).
    pub reposts: i64,
    /// Live quotes that are not detached (issue 44).
    pub quotes: i64,
}

/// The projector's name.
pub const NAME: &str = "engagement";

/// See the module docs.
pub struct Engagement {
    /// What opens the comments' content (`rm_comments.content` is null for an erased author).
    pub keys: Keyring,
}

#[async_trait]
impl Projector for Engagement {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tables(&self) -> &'static [&'static str] {
        &[
            "rm_likes",
            "rm_reposts",
            "rm_bookmarks",
            "rm_quotes",
            "rm_post_stats",
            "rm_comments",
        ]
    }

    /// The batch's content opened at once (one key look-up for its authors), then folded
    /// ([`fold::fold_events`]): runs of likes set-based, the rest event by event.
    async fn apply_batch(
        &self,
        conn: &mut PgConnection,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        let events = log::revealed_to_fold(&self.keys, events).await?;
        fold::fold_events(&mut sql::SqlTables { conn }, &events).await
    }
}

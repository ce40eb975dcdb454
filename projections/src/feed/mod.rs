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
//!   settled), and drops the user's inbox, mutes and rows.
//!
//! These rules are written once, in [`fold`], over the tables' operations: the projector folds
//! into PostgreSQL ([`sql`]), a rebuild into memory, then writes each table with one `COPY`
//! (`memory.rs`, `bulk.rs`), and `verify` folds into memory to compare ([`verify`]).
//!
//! Invariant, at every checkpoint: for every reader R and push-mode author A that R follows,
//! every live post of A with a seq above R's watermark is in R's inbox.

use async_trait::async_trait;
use relations_store::log::{self, RecordedEvent};
use relations_store::Keyring;
use sqlx::PgConnection;

use crate::error::ProjectionError;
use crate::runtime::projector::{BulkFold, Projector};

pub mod bookmarks;
mod bulk;
pub mod fold;
pub mod held;
pub mod inbox_cache;
mod memory;
pub mod query;
pub mod quotes;
pub mod read_marks;
pub mod reader;
mod settings;
mod sql;
pub mod stream;
pub mod verify;

#[cfg(test)]
mod tests;

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
    /// [`fold::fold_events`]); everything else event by event.
    async fn apply_batch(
        &self,
        conn: &mut PgConnection,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        let events = log::revealed_to_fold(&self.keys, events).await?;
        let mut tables = sql::SqlTables {
            conn,
            settings: self.settings,
        };
        fold::fold_events(&mut tables, &events).await
    }
}

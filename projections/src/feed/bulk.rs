//! A rebuild of the feed in memory (issue 28, item 4): the whole log folded into the feed's
//! tables in memory ([`FeedMemory`], by the one fold), then every table's rows laid out for
//! `COPY` ([`CopyOut`]), in its key's order. The rebuild tests compare every table with what the runner wrote.

use std::fmt::Write as _;

use async_trait::async_trait;
use relations_store::log::{self, RecordedEvent};
use relations_store::Keyring;

use super::fold::{fold_events, in_memory};
use super::memory::{AuthorRow, FeedMemory, Inbox};
use super::Settings;
use crate::error::ProjectionError;
use crate::runtime::copy_out::{copy_nullable_timestamp, copy_text, copy_timestamp, CopyOut};
use crate::runtime::projector::BulkFold;

/// The feed's read model, folded in memory.
pub(super) struct FeedBulk {
    keys: Keyring,
    tables: FeedMemory,
}

impl FeedBulk {
    pub(super) fn new(settings: Settings, keys: Keyring) -> Self {
        Self {
            keys,
            tables: FeedMemory::new(settings, true),
        }
    }
}

#[async_trait]
impl BulkFold for FeedBulk {
    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        log::forget_erased(&self.keys, std::slice::from_ref(event));
        in_memory(fold_events(&mut self.tables, std::slice::from_ref(event)))
    }

    /// Posts' content is sealed in the log: each batch is revealed (as the runner's are)
    /// before it is folded, in place (a revealed copy of each batch, as `log::revealed` makes
    /// for borrowed events, cost the 50k rebuild 5%).
    async fn fold_batch(&mut self, mut events: Vec<RecordedEvent>) -> Result<(), ProjectionError> {
        log::reveal(&self.keys, &mut events).await?;
        log::forget_erased(&self.keys, &events);
        in_memory(fold_events(&mut self.tables, &events))
    }

    fn write(self: Box<Self>, out: &CopyOut) -> Result<(), ProjectionError> {
        let tables = &self.tables;
        write_posts_and_follows(tables, out);
        write_authors(tables, out);
        write_inboxes(tables, out);
        write_banned_and_mutes(tables, out);
        Ok(())
    }
}

/// `rm_posts` in seq order, `feed_follows` in key order.
fn write_posts_and_follows(tables: &FeedMemory, out: &CopyOut) {
    let mut rows = out.table(
        "rm_posts (post_id, seq, author, content, created_at, deleted, visibility, repost_of,
                   quote_of, quote_policy, quote_detached, comment_policy)",
    );
    for (at, post) in tables.posts.iter().enumerate() {
        let content = post.content.as_deref().map(copy_text);
        writeln!(
            rows,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            post.id,
            at + 1,
            post.author,
            content.as_deref().unwrap_or("\\N"),
            copy_timestamp(post.created_at),
            post.deleted,
            post.visibility,
            or_null(post.repost_of),
            or_null(post.quote_of),
            post.quote_policy,
            post.quote_detached,
            post.comment_policy,
        )
        .expect("rows in memory");
    }
    let mut rows = out.table("feed_follows (follower, followee, show_reposts)");
    for pair @ (follower, followee) in &tables.following {
        let shown = !tables.hiding_reposts.contains(pair);
        writeln!(rows, "{follower}\t{followee}\t{shown}").expect("rows in memory");
    }
}

/// A post id for `COPY`, or its null.
fn or_null(post: Option<uuid::Uuid>) -> String {
    post.map_or_else(|| "\\N".to_owned(), |p| p.to_string())
}

/// `feed_authors` and `feed_mode_changes`, in key order.
fn write_authors(tables: &FeedMemory, out: &CopyOut) {
    let mut authors: Vec<(&i64, &AuthorRow)> = tables.authors.iter().collect();
    authors.sort_unstable_by_key(|(author, _)| **author);
    let mut rows = out.table("feed_authors (author, followers, posts, pulled)");
    for (author, row) in authors {
        let (followers, posts, pulled) = (row.followers, row.posts, row.pulled);
        writeln!(rows, "{author}\t{followers}\t{posts}\t{pulled}").expect("rows in memory");
    }
    let mut rows = out.table("feed_mode_changes (transaction_id, global_position, author, pulled)");
    for ((tx, gp, author), pulled) in &tables.mode_changes {
        writeln!(rows, "{tx}\t{gp}\t{author}\t{pulled}").expect("rows in memory");
    }
}

/// `feed_inbox` and `feed_readers`, in reader order.
fn write_inboxes(tables: &FeedMemory, out: &CopyOut) {
    let mut readers: Vec<(&i64, &Inbox)> = tables.inboxes.iter().collect();
    readers.sort_unstable_by_key(|(reader, _)| **reader);
    let mut rows = out.table("feed_inbox (reader, seq, author)");
    for (reader, inbox) in &readers {
        for (seq, author) in &inbox.entries {
            writeln!(rows, "{reader}\t{seq}\t{author}").expect("rows in memory");
        }
    }
    let mut rows = out.table("feed_readers (reader, size, watermark)");
    for (reader, inbox) in &readers {
        let (size, watermark) = (inbox.entries.len(), inbox.watermark);
        writeln!(rows, "{reader}\t{size}\t{watermark}").expect("rows in memory");
    }
}

/// `feed_banned` and `feed_mutes`.
fn write_banned_and_mutes(tables: &FeedMemory, out: &CopyOut) {
    let mut rows = out.table("feed_banned (author)");
    for author in &tables.banned {
        writeln!(rows, "{author}").expect("rows in memory");
    }
    let mut rows = out.table("feed_mutes (muter, muted, until)");
    for ((muter, muted), until) in &tables.mutes {
        let until = copy_nullable_timestamp(*until);
        writeln!(rows, "{muter}\t{muted}\t{until}").expect("rows in memory");
    }
}

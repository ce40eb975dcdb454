//! The feed as the service reads it (issue 43, item 4): every choice a read of posts makes is
//! made here, so that a handler parses, calls and renders. A feed page comes from the
//! replica's held timelines when they can answer it exactly, else from PostgreSQL through the
//! Redis inbox cache (or the inbox table, for a read that asks for its own writes); each post
//! carries its engagement; what the reader may read is judged on the graph at the moment of
//! reading (issue 26).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use relations_domain::privacy as privacy_rule;
use relations_domain::{FilterContext, ListId, PostId, UserId};
use relations_store::LogPosition;
use sqlx::PgPool;

use super::bookmarks;
use super::held::page::FeedAsk;
use super::inbox_cache::InboxCache;
use super::query::{self, Inbox, InboxEntries, InboxRange, PageStart, PgInbox, SeqPage};
use super::quotes;
use crate::engagement::like_cache::LikeCache;
use crate::engagement::query::{self as engagement_query, BookmarkKey};
use crate::error::ProjectionError;
use crate::filters::screen::{Screen, Screening};
use crate::privacy::{self, ReadFilter};
use crate::relations::reads::Source;
use crate::replica::live::LiveGraph;
use crate::views::PostView;

/// Reads of posts, for one request: the caches and the replica, and the pool and graph source
/// that reflect the request's `min_position` (the caller waited for both once).
pub struct FeedReader<'a> {
    /// The replica: first pages and `new_count` from memory.
    pub replica: &'a LiveGraph,
    /// The inbox cache.
    pub inboxes: &'a InboxCache,
    /// The like-state cache.
    pub likes: &'a LikeCache,
    /// The primary, which the caches fill from (see [`LoadsFromPrimary`]).
    pub primary: &'a PgPool,
    /// The read models' pool, reflecting `min_position`.
    pub reads: &'a PgPool,
    /// The graph's facts, reflecting `min_position`.
    pub source: Source<'a>,
    /// The position the request asked to see (read-your-writes), if any.
    pub min_position: Option<LogPosition>,
}

impl FeedReader<'_> {
    /// A page of `reader`'s feed (the recommended authors' posts when they follow nobody), or
    /// of their `list`'s (issue 46; the caller checked it is theirs), each post with its
    /// engagement; and the newest seq, the read mark a first page of the home feed sets.
    pub async fn page(
        &self,
        reader: UserId,
        recommended: &[UserId],
        start: PageStart,
        size: i64,
        list: Option<ListId>,
    ) -> Result<(SeqPage, i64), ProjectionError> {
        let now = Utc::now();
        let screen = self.screen(reader).await?;
        let context = match list {
            Some(_) => FilterContext::Lists,
            None => FilterContext::Home,
        };
        let screening = Screening::new(screen.as_deref(), context, now);
        let ask = FeedAsk {
            reader,
            recommended,
            now,
            list,
            screening,
        };
        if let Some(mut answer) = self.held_page(ask, start, size) {
            metrics::counter!("relations_feed_pages_total", "source" => "memory").increment(1);
            self.quotes(&mut answer.0.items, Some(reader)).await?;
            return Ok(answer);
        }
        metrics::counter!("relations_feed_pages_total", "source" => "postgres").increment(1);
        // Read-your-writes must not wait on the cache projector: read the inbox table.
        let cached = LoadsFromPrimary(self.inboxes, self.primary);
        let inbox: &dyn Inbox = match self.min_position {
            Some(_) => &PgInbox,
            None => &cached,
        };
        let filter = self.filter(reader);
        let read = query::feed(
            self.reads,
            inbox,
            &filter,
            screening,
            reader,
            recommended,
            start,
            size,
            list,
        );
        let (mut page, head) = read.await?;
        self.engage(&mut page.items, Some(reader)).await?;
        self.quotes(&mut page.items, Some(reader)).await?;
        Ok((page, head))
    }

    /// Whether `list` is `owner`'s and live (issue 46): asked of the replica when it reflects
    /// `min_position`, else of projector `lists`' tables.
    pub async fn owns_list(&self, owner: UserId, list: ListId) -> Result<bool, ProjectionError> {
        let in_memory = self.replica.with(|replica| {
            let behind = self.min_position.is_some_and(|at| replica.position() < at);
            (!behind).then(|| replica.lists().get(owner, list).is_some())
        });
        match in_memory.flatten() {
            Some(owned) => Ok(owned),
            None => Ok(crate::lists::query::list(self.reads, owner, list)
                .await?
                .is_some()),
        }
    }

    /// How many posts of `reader`'s feed are newer than their read mark (`pending`: a mark
    /// not written yet).
    pub async fn new_count(
        &self,
        reader: UserId,
        recommended: &[UserId],
        pending: Option<i64>,
    ) -> Result<i64, ProjectionError> {
        let mark = query::read_mark(self.reads, reader, pending).await?;
        let now = Utc::now();
        let screen = self.screen(reader).await?;
        let screening = Screening::new(screen.as_deref(), FilterContext::Home, now);
        let ask = FeedAsk {
            reader,
            recommended,
            now,
            list: None,
            screening,
        };
        let in_memory = self.replica.with(|replica| {
            let behind = self.min_position.is_some_and(|at| replica.position() < at);
            (!behind)
                .then(|| replica.feed_new_count(ask, mark))
                .flatten()
        });
        match in_memory.flatten() {
            Some(count) => Ok(count),
            None => {
                let filter = self.filter(reader);
                query::new_count(self.reads, &filter, screening, reader, recommended, mark).await
            }
        }
    }

    /// A page of `author`'s live posts that `viewer` may read, and with `reposts` their
    /// reposts of posts the viewer may read (issue 44), newest first, with their engagement.
    pub async fn timeline(
        &self,
        author: UserId,
        viewer: Option<UserId>,
        start: PageStart,
        size: i64,
        reposts: bool,
    ) -> Result<SeqPage, ProjectionError> {
        // What the viewer may read of the author, by the graph now: a filter on a column.
        let access = privacy::access(self.source, viewer, &[author]).await?[&author];
        let readable = privacy_rule::readable(access.privacy, access.reader);
        let ask = query::TimelineAsk {
            author,
            readable: &readable,
            viewer,
            reposts,
        };
        let filter = ReadFilter {
            source: self.source,
            viewer,
        };
        let mut page = query::timeline(self.reads, &filter, ask, start, size).await?;
        self.engage(&mut page.items, viewer).await?;
        self.quotes(&mut page.items, viewer).await?;
        Ok(page)
    }

    /// A page of `reader`'s bookmarks (issue 46): up to `size` of them strictly after
    /// `after`, newest first, whose posts the reader may see now ([`bookmarks`]), each with its
    /// key, and with its engagement and quote.
    pub async fn bookmarks(
        &self,
        reader: UserId,
        after: Option<BookmarkKey>,
        size: i64,
    ) -> Result<Vec<(BookmarkKey, PostView)>, ProjectionError> {
        let page = bookmarks::page(self.reads, self.source, reader, after, size).await;
        let (keys, mut posts): (Vec<BookmarkKey>, Vec<PostView>) = page?.into_iter().unzip();
        self.engage(&mut posts, Some(reader)).await?;
        self.quotes(&mut posts, Some(reader)).await?;
        Ok(keys.into_iter().zip(posts).collect())
    }

    /// Shows in each of `posts` the post it quotes as `viewer` may see it now (issue 44:
    /// [`quotes`]), with its engagement; no round trip when none quotes.
    pub async fn quotes(
        &self,
        posts: &mut [PostView],
        viewer: Option<UserId>,
    ) -> Result<(), ProjectionError> {
        let ids: Vec<PostId> = posts.iter().filter_map(PostView::quoting).collect();
        let found = self.quoted(&ids, viewer).await?;
        quotes::embed(posts, &found);
        Ok(())
    }

    /// The posts of `ids` that `viewer` may see now as quoted posts, with their engagement.
    pub async fn quoted(
        &self,
        ids: &[PostId],
        viewer: Option<UserId>,
    ) -> Result<HashMap<PostId, PostView>, ProjectionError> {
        let mut found = quotes::quoted(self.reads, self.source, viewer, ids).await?;
        self.engage(&mut found, viewer).await?;
        Ok(found.into_iter().map(|post| (post.id, post)).collect())
    }

    /// Fills `posts`' like, comment and repost counts, and for a viewer whether they like,
    /// repost and bookmark each one: the counts, reposts and bookmarks from the read models'
    /// pool and the like states from their cache, side by side.
    pub async fn engage(
        &self,
        posts: &mut [PostView],
        viewer: Option<UserId>,
    ) -> Result<(), ProjectionError> {
        if posts.is_empty() {
            return Ok(());
        }
        let ids: Vec<PostId> = posts.iter().map(|p| p.id).collect();
        let liked = async {
            match viewer {
                Some(viewer) => self.likes.liked(self.primary, viewer, &ids).await.map(Some),
                None => Ok(None),
            }
        };
        let marked = async {
            match viewer {
                Some(viewer) => engagement_query::marks(self.reads, viewer, &ids)
                    .await
                    .map(Some),
                None => Ok(None),
            }
        };
        let stats = engagement_query::post_stats(self.reads, &ids);
        let (stats, liked, marked) = tokio::join!(stats, liked, marked);
        let (stats, liked, marked) = (stats?, liked?, marked?);
        let (reposted, bookmarked) = marked.map(|m| (m.reposted, m.bookmarked)).unzip();
        for (i, post) in posts.iter_mut().enumerate() {
            let counts = stats.get(&post.id).copied().unwrap_or_default();
            post.like_count = counts.likes;
            post.comment_count = counts.comments;
            post.repost_count = counts.reposts;
            post.quote_count = counts.quotes;
            post.liked = liked.as_ref().map(|l| l[i]);
            post.reposted = reposted.as_ref().map(|r| r.contains(&post.id));
            post.bookmarked = bookmarked.as_ref().map(|b| b.contains(&post.id));
        }
        Ok(())
    }

    /// What `reader` may read, judged on this read's graph source.
    fn filter(&self, reader: UserId) -> ReadFilter<'_> {
        ReadFilter {
            source: self.source,
            viewer: Some(reader),
        }
    }

    /// `reader`'s filters as a screen (issue 47), none when they have none: the replica's
    /// when it reflects `min_position`, else projector `filters`' table's (the request waited
    /// for it).
    pub async fn screen(&self, reader: UserId) -> Result<Option<Arc<Screen>>, ProjectionError> {
        crate::filters::read::screen_for(self.replica, self.reads, self.min_position, reader).await
    }

    /// The page from the replica's held timelines (issue 28), with its engagement, when it
    /// reflects `min_position` and can answer exactly: no `max_time` (a time bound needs every
    /// post's time), no post below what it holds.
    fn held_page(&self, ask: FeedAsk<'_>, start: PageStart, size: i64) -> Option<(SeqPage, i64)> {
        if start.max_time.is_some() {
            return None;
        }
        self.replica
            .with(|replica| {
                if self.min_position.is_some_and(|at| replica.position() < at) {
                    return None;
                }
                replica.feed_page(ask, start.before, size)
            })
            .flatten()
    }
}

/// The inbox cache, filled from the primary whatever pool the rest of the page reads. A fill
/// stores what it read only if the inbox's generation did not move meanwhile, and projector
/// `feed_cache` moves it only after projector `feed` wrote the change on the primary: a fill
/// from a standby that has not replayed that change yet would cache a stale inbox for good.
/// The like-state cache fills from the primary for the same reason.
struct LoadsFromPrimary<'a>(&'a InboxCache, &'a PgPool);

#[async_trait]
impl Inbox for LoadsFromPrimary<'_> {
    async fn entries(
        &self,
        _reads: &PgPool,
        range: InboxRange,
    ) -> Result<InboxEntries, ProjectionError> {
        self.0.entries(self.1, range).await
    }
}

//! The feed's part of the replica (issue 28; issue 43: each read model owns its memory):
//! every author's newest posts with their likes and live comments ([`timelines`]), loaded from
//! `rm_posts`, `feed_authors` and projector `engagement`'s tables, folded forward by the feed
//! fold's posts part ([`super::fold::fold_posts`]), and the feed page read from them
//! ([`page`]).

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use relations_domain::{AccountEvent, LikeTarget, LogEvent, Post, PostEvent, PostId};
use relations_store::log::{self, RecordedEvent};
use relations_store::LogPosition;
use sqlx::{PgConnection, Row};

use super::fold::{
    fold_posts, in_memory, FeedChange, Folded, NewPost, NewRepost, PostTables, RepostsOf,
    SettingChange,
};
use crate::engagement::fold::{
    self as engagement, EngagementChange, EngagementTables, Like, NewComment, PostMark,
};
use crate::engagement::held::Engagement;
use crate::replica::MemoryModel;
use crate::runtime::checkpoint;
use timelines::{Caps, Controls, HeldPost, Timelines};

pub mod page;
pub mod timelines;

/// The held posts and their engagement, and where the load left each.
#[derive(Debug, Default, Clone)]
pub struct HeldPosts {
    timelines: Timelines,
    /// Post events up to here were in `rm_posts` and `feed_authors`.
    posts_loaded: LogPosition,
    /// Like and thread events up to here were in `rm_likes` and `rm_comments`.
    engagement_loaded: LogPosition,
}

impl HeldPosts {
    /// Nothing held yet; up to `caps` once loaded.
    pub fn new(caps: Caps) -> Self {
        Self {
            timelines: Timelines::new(caps),
            ..Self::default()
        }
    }

    /// Every author's recent posts.
    pub fn timelines(&self) -> &Timelines {
        &self.timelines
    }

    /// [`HeldPosts::timelines`], to change (tests).
    #[cfg(test)]
    pub(crate) fn timelines_mut(&mut self) -> &mut Timelines {
        &mut self.timelines
    }

    /// The newest posts projector `feed` wrote, up to the caps, and its newest seq; the lowest
    /// seq it may hold.
    async fn load_posts(&mut self, tx: &mut PgConnection) -> Result<i64, sqlx::Error> {
        let head: i64 = sqlx::query_scalar("SELECT COALESCE(max(seq), 0) FROM rm_posts")
            .fetch_one(&mut *tx)
            .await?;
        let caps = self.timelines.caps();
        let from = (head - caps.total as i64 + 1).max(1);
        self.timelines.start(head, from);
        let mut rows =
            sqlx::query("SELECT author, posts FROM feed_authors WHERE posts <> 0").fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let (author, posts): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
            self.timelines.count(author as u64, posts);
        }
        drop(rows);
        let mut rows = sqlx::query(
            "SELECT author, count(*) FROM rm_posts
              WHERE repost_of IS NOT NULL AND NOT deleted GROUP BY author",
        )
        .fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let (author, reposts): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
            self.timelines.count_reposts(author as u64, reposts);
        }
        drop(rows);
        if !caps.on() {
            return Ok(from);
        }
        // Posts and reposts, a repost with its post's id and author. Only a repost probes for
        // its post's author: a start-up reading every held post must not join (or hash) all of
        // `rm_posts` for the few reposts among them.
        let sql = "SELECT p.seq, p.post_id, p.author, p.content, p.created_at, p.visibility,
                          p.quote_of, p.quote_policy, p.quote_detached, p.comment_policy,
                          p.repost_of AS reposted,
                          CASE WHEN p.repost_of IS NOT NULL THEN
                              (SELECT o.author FROM rm_posts o WHERE o.post_id = p.repost_of)
                          END AS reposted_author
                     FROM rm_posts p WHERE p.seq >= $1 AND NOT p.deleted ORDER BY p.seq";
        let mut rows = sqlx::query(sql).bind(from).fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let (seq, view) =
                super::query::post(&row).map_err(|e| sqlx::Error::Decode(e.into()))?;
            let (author, mut post) = HeldPost::of_view(seq, view);
            let reposted: Option<uuid::Uuid> = row.try_get("reposted")?;
            let reposted_author: Option<i64> = row.try_get("reposted_author")?;
            if let (Some(id), Some(by)) = (reposted, reposted_author) {
                post.repost_of = Some((PostId::from_uuid(id), by as u64));
            }
            self.timelines.hold(author, post);
        }
        Ok(from)
    }

    /// The likes, reposts, bookmarks, quotes and live comments projector `engagement` wrote
    /// of the posts held (from `rm_posts` at seq `from` and above) and of those `gap`'s events
    /// publish (after projector `feed`'s checkpoint, up to `engagement`'s, when it is ahead:
    /// the replay publishes them but skips their likes and comments). Whatever ends up not
    /// held goes when the replay is over ([`MemoryModel::settle`]).
    async fn load_engagement(
        &mut self,
        tx: &mut PgConnection,
        from: i64,
        gap: &[RecordedEvent],
    ) -> Result<(), sqlx::Error> {
        let (mut ids, mut authors) = (Vec::new(), Vec::new());
        for event in gap {
            if let LogEvent::Post(PostEvent::PostPublished {
                post_id, author, ..
            }) = event.event
            {
                ids.push(post_id.uuid());
                authors.push(author.get());
            }
        }
        // The posts, as `(post_id, author)`.
        const POSTS: &str = "(SELECT post_id, author FROM rm_posts
               WHERE seq >= $1 AND NOT deleted AND repost_of IS NULL
              UNION ALL SELECT * FROM unnest($2::uuid[], $3::bigint[])) AS p(post_id, author)";
        let likes = format!(
            "SELECT p.post_id, p.author, l.user_id FROM rm_likes l
               JOIN {POSTS} ON l.target = 'post:' || p.post_id::text"
        );
        let reposts = format!(
            "SELECT p.post_id, p.author, r.user_id FROM rm_reposts r
               JOIN {POSTS} ON r.post = p.post_id"
        );
        let bookmarks = format!(
            "SELECT p.post_id, p.author, b.user_id FROM rm_bookmarks b
               JOIN {POSTS} ON b.post = p.post_id"
        );
        let comments = format!(
            "SELECT p.post_id, p.author, c.author, c.n FROM rm_comments c
               JOIN {POSTS} ON c.post = p.post_id WHERE NOT c.deleted"
        );
        let quotes = format!(
            "SELECT p.post_id, p.author, q.author, q.post FROM rm_quotes q
               JOIN {POSTS} ON q.quote_of = p.post_id"
        );
        let engagement = self.timelines.engagement_mut();
        for (sql, kind) in [
            (likes, Loaded::Like),
            (reposts, Loaded::Repost),
            (bookmarks, Loaded::Bookmark),
            (comments, Loaded::Comment),
            (quotes, Loaded::Quote),
        ] {
            let query = sqlx::query(&sql).bind(from).bind(&ids).bind(&authors);
            let mut rows = query.fetch(&mut *tx);
            while let Some(row) = rows.try_next().await? {
                let post = PostId::from_uuid(row.try_get(0)?);
                let (author, by): (i64, i64) = (row.try_get(1)?, row.try_get(2)?);
                let (author, by) = (author as u64, by as u64);
                match kind {
                    Loaded::Like => engagement.like(post, author, by, true),
                    Loaded::Repost => engagement.repost(post, author, by, true),
                    Loaded::Bookmark => engagement.bookmark(post, author, by, true),
                    Loaded::Comment => {
                        let n: i32 = row.try_get(3)?;
                        engagement.comment(post, author, n as u32, by);
                    }
                    Loaded::Quote => {
                        let quoting = PostId::from_uuid(row.try_get(3)?);
                        engagement.quote(quoting, by, post, author);
                    }
                }
            }
        }
        Ok(())
    }
}

/// The kinds of rows the load reads of projector `engagement`'s tables.
#[derive(Clone, Copy)]
enum Loaded {
    Like,
    Repost,
    Bookmark,
    Comment,
    Quote,
}

impl HeldPosts {
    /// Folds a like, thread or erasure event into the held posts' engagement.
    fn engage(&mut self, event: &LogEvent, occurred_at: DateTime<Utc>) {
        if let Some(change) = EngagementChange::of_event(event, occurred_at) {
            in_memory(engagement::fold(&mut self.timelines, &change)).expect("in memory");
        }
    }
}

impl MemoryModel for HeldPosts {
    async fn checkpoint(
        &mut self,
        tx: &mut PgConnection,
    ) -> Result<Option<LogPosition>, sqlx::Error> {
        self.posts_loaded = checkpoint::read(&mut *tx, super::NAME).await?;
        // Without held posts no engagement is kept: the replay need not start earlier for it.
        self.engagement_loaded = match self.timelines.on() {
            true => checkpoint::read(&mut *tx, crate::engagement::NAME).await?,
            false => self.posts_loaded,
        };
        Ok(Some(self.posts_loaded.min(self.engagement_loaded)))
    }

    async fn load(&mut self, tx: &mut PgConnection, _: LogPosition) -> Result<(), sqlx::Error> {
        let from = self.load_posts(tx).await?;
        if self.timelines.on() {
            let (posts, engagement) = (self.posts_loaded, self.engagement_loaded);
            let gap = log::read_type(tx, Post::TYPE, posts, engagement).await?;
            self.load_engagement(tx, from, &gap).await?;
        }
        Ok(())
    }

    fn apply(&mut self, at: LogPosition, occurred_at: DateTime<Utc>, event: &LogEvent) {
        // The feed fold's posts part: publishes, deletions and reposts (which take seqs too).
        let numbered = match event {
            LogEvent::Post(_) | LogEvent::Repost(_) => at > self.posts_loaded,
            LogEvent::Like(_)
            | LogEvent::Bookmark(_)
            | LogEvent::Lists(_)
            | LogEvent::Filters(_)
            | LogEvent::Thread(_)
            | LogEvent::Account(_)
            | LogEvent::Relation(_) => false,
        };
        if numbered {
            if let Some(change) = FeedChange::of_event(event, occurred_at) {
                in_memory(fold_posts(&mut self.timelines, &change)).expect("in memory");
            }
        }
        match event {
            // Engagement is kept only beside held posts.
            LogEvent::Like(_)
            | LogEvent::Repost(_)
            | LogEvent::Bookmark(_)
            | LogEvent::Thread(_)
            | LogEvent::Post(_)
                if self.timelines.on() && at > self.engagement_loaded =>
            {
                self.engage(event, occurred_at)
            }
            // Folding an erasure twice changes nothing.
            LogEvent::Account(AccountEvent::UserErased { user }) => {
                let change = FeedChange::Erased(user.get());
                in_memory(fold_posts(&mut self.timelines, &change)).expect("in memory");
                self.engage(event, occurred_at);
            }
            // Numbered above, what the load held, and what is not the posts'.
            LogEvent::Post(_)
            | LogEvent::Like(_)
            | LogEvent::Repost(_)
            | LogEvent::Bookmark(_)
            | LogEvent::Lists(_)
            | LogEvent::Filters(_)
            | LogEvent::Thread(_)
            | LogEvent::Account(_)
            | LogEvent::Relation(_) => {}
        }
    }

    fn settle(&mut self) {
        self.timelines.settle();
    }
}

/// The held timelines as the feed fold's post tables: a publish is numbered and held, a
/// deletion or an erasure takes posts out, a repost is numbered. They hold only each author's
/// newest posts, so a deletion is answered `None` (the fold's posts part asks no seq of them).
impl PostTables for Timelines {
    async fn publish(&mut self, post: &NewPost<'_>) -> Folded<i64> {
        let held = HeldPost {
            seq: 0,
            id: PostId::from_uuid(post.id),
            created_at: post.created_at.timestamp_micros(),
            visibility: post.visibility,
            content: post.content.unwrap_or_default().into(),
            repost_of: None,
            controls: Controls {
                quotes: post.quote_policy,
                comments: post.comment_policy,
                quote: post
                    .quote_of
                    .map(|q| Box::new((PostId::from_uuid(q), false))),
            },
        };
        self.publish_held(post.author as u64, held);
        Ok(self.head())
    }

    async fn delete(&mut self, post: uuid::Uuid, author: i64) -> Folded<Option<i64>> {
        self.delete_held(author as u64, PostId::from_uuid(post));
        Ok(None)
    }

    async fn delete_all(&mut self, author: i64) -> Folded<()> {
        self.delete_author(author as u64);
        Ok(())
    }

    /// Numbered and held as an item of the reposter's, showing its post (see
    /// [`Timelines::repost_held`]).
    async fn repost(&mut self, repost: &NewRepost) -> Folded<Option<i64>> {
        let reposted = (PostId::from_uuid(repost.post), repost.author as u64);
        let at = repost.created_at.timestamp_micros();
        Ok(Some(self.repost_held(repost.reposter as u64, reposted, at)))
    }

    async fn unrepost(&mut self, post: uuid::Uuid, reposter: i64) -> Folded<Option<i64>> {
        self.unrepost_held(reposter as u64, PostId::from_uuid(post));
        Ok(None)
    }

    /// A deletion's and an erasure's reposts go with the posts (`delete`, `delete_all`).
    async fn delete_reposts(&mut self, _: RepostsOf) -> Folded<Vec<(i64, i64)>> {
        Ok(Vec::new())
    }

    async fn setting(&mut self, change: SettingChange) -> Folded<()> {
        let post = PostId::from_uuid(change.post);
        self.setting_changed(change.author as u64, post, change.setting);
        Ok(())
    }
}

/// The held timelines as the engagement fold's tables: who likes each held post and its live
/// comments, kept only beside held posts (likes of comments, tombstones and pins are not
/// shown from memory). Its counts are the sizes of those sets, so the fold's `count_*` keep
/// nothing.
impl EngagementTables for Timelines {
    async fn like(&mut self, like: &Like) -> Folded<bool> {
        if let LikeTarget::Post(post) = like.target {
            self.like(post, like.author as u64, like.user as u64, like.on);
        }
        Ok(false)
    }

    async fn repost(&mut self, repost: &engagement::Repost) -> Folded<bool> {
        hold_mark(self, repost, Engagement::repost);
        Ok(false)
    }

    async fn unrepost_all(&mut self, user: i64) -> Folded<Vec<uuid::Uuid>> {
        self.engagement_mut().unrepost_all(user as u64);
        Ok(Vec::new())
    }

    async fn bookmark(&mut self, bookmark: &engagement::Bookmark) -> Folded<()> {
        hold_mark(self, bookmark, Engagement::bookmark);
        Ok(())
    }

    async fn unbookmark_all(&mut self, user: i64) -> Folded<()> {
        self.engagement_mut().unbookmark_all(user as u64);
        Ok(())
    }

    async fn count_reposts(&mut self, _: &[(uuid::Uuid, i64)]) -> Folded<()> {
        Ok(())
    }

    async fn quote(&mut self, quote: &engagement::Quote) -> Folded<bool> {
        let (quoted, author) = (
            PostId::from_uuid(quote.quote_of),
            quote.quoted_author as u64,
        );
        if self.holds(author, quoted) {
            let post = PostId::from_uuid(quote.post);
            let engagement = self.engagement_mut();
            engagement.quote(post, quote.author as u64, quoted, author);
        }
        Ok(false)
    }

    async fn unquote(&mut self, post: uuid::Uuid) -> Folded<Option<uuid::Uuid>> {
        self.engagement_mut().unquote(PostId::from_uuid(post));
        Ok(None)
    }

    async fn unquote_all(&mut self, user: i64) -> Folded<Vec<uuid::Uuid>> {
        self.engagement_mut().unquote_all(user as u64);
        Ok(Vec::new())
    }

    async fn count_quotes(&mut self, _: &[(uuid::Uuid, i64)]) -> Folded<()> {
        Ok(())
    }

    async fn count_likes(&mut self, _: &[(LikeTarget, i64)]) -> Folded<()> {
        Ok(())
    }

    async fn count_comments(&mut self, _: &[(uuid::Uuid, i64)]) -> Folded<()> {
        Ok(())
    }

    async fn count_replies(&mut self, _: &[(engagement::Key, i64)]) -> Folded<()> {
        Ok(())
    }

    async fn comment(&mut self, c: &NewComment<'_>) -> Folded<bool> {
        let post = PostId::from_uuid(c.key.0);
        self.comment(post, c.post_author as u64, c.key.1 as u32, c.author as u64);
        Ok(false)
    }

    async fn uncomment(&mut self, (post, n): engagement::Key) -> Folded<bool> {
        self.uncomment(PostId::from_uuid(post), n as u32);
        Ok(false)
    }

    async fn uncomment_all(&mut self, user: i64) -> Folded<Vec<engagement::Key>> {
        self.engagement_mut().uncomment_all(user as u64);
        Ok(Vec::new())
    }

    async fn unlike_all(&mut self, user: i64) -> Folded<Vec<LikeTarget>> {
        self.engagement_mut().unlike_all(user as u64);
        Ok(Vec::new())
    }

    async fn pin(&mut self, _: engagement::Key, _: bool) -> Folded<()> {
        Ok(())
    }

    async fn hide(&mut self, _: &[engagement::Key]) -> Folded<Vec<engagement::Key>> {
        Ok(Vec::new())
    }
}

/// How a user's mark on a post goes into the held engagement: [`Engagement::repost`] or
/// [`Engagement::bookmark`].
type Marks = fn(&mut Engagement, PostId, u64, u64, bool);

/// Folds `mark` into its post's engagement with `marks` when the post is held; its end
/// whether held or not (the load may have read the mark of a post it then did not hold).
fn hold_mark(timelines: &mut Timelines, mark: &PostMark, marks: Marks) {
    let (post, author) = (PostId::from_uuid(mark.post), mark.author as u64);
    if !mark.on || timelines.holds(author, post) {
        let user = mark.user as u64;
        marks(timelines.engagement_mut(), post, author, user, mark.on);
    }
}

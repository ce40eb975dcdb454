//! The engagement fold, written once (issue 43): what each like, comment and erasure does to
//! likes, counts and threads. Projector `engagement` folds into PostgreSQL
//! ([`super::sql::SqlTables`]), `verify` into memory ([`super::memory::EngagementMemory`]) and
//! the replica's held posts into their counts (`crate::feed::held`).
//!
//! The rules (seed 002):
//! - a like is a row per (target, user); a count moves only with a row that came or went, so
//!   a second like, or an unlike of nothing, changes no count;
//! - a comment adds one to its post's comment count and one to its parent's reply count;
//! - a deletion drops the comment's content and pin and takes one from its post's count; the
//!   comment stays as a tombstone while it has a visible reply, and a deleted comment left
//!   without one disappears, taking one reply from its parent, which may disappear in turn
//!   ([`hide_bare`]);
//! - a repost is a row per (post, user) and moves the post's repost count as a like moves its
//!   like count (issue 44);
//! - a bookmark is a row per (post, user), and moves no count: bookmarks are private (issue
//!   46);
//! - a quote is a row per quoting post and adds one to the quoted post's quote count; the
//!   quoting post's deletion, or its quote's detaching, takes the row and the one (issue 44);
//! - an erasure voids the user's likes, reposts and quotes (each target loses one) and
//!   bookmarks, and deletes each of their live comments as a deletion does. A post's deletion,
//!   or its author's erasure, leaves its likes', reposts' and bookmarks' rows: every read of
//!   them joins the posts that are live and readable.
//!
//! A run of likes ([`fold_changes`]) is folded at once where the tables can do better than one
//! by one ([`EngagementTables::like_run`]), with the result one by one gives.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use relations_domain::{LikeTarget, LogEvent, PostEvent, PostId, ThreadEvent, UserId};
use relations_store::log::RecordedEvent;

use crate::error::ProjectionError;

/// What the tables answer.
pub type Folded<T> = Result<T, ProjectionError>;

/// A comment's key: (post, n).
pub type Key = (uuid::Uuid, i32);

/// A like given or taken back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Like {
    /// What is liked.
    pub target: LikeTarget,
    /// Who likes it.
    pub user: i64,
    /// Whose post or comment it is.
    pub author: i64,
    /// When.
    pub at: DateTime<Utc>,
    /// A like (`true`) or its end.
    pub on: bool,
}

/// A user's mark on a post made or taken back: a repost (issue 44) or a bookmark (issue 46).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostMark {
    /// The post.
    pub post: uuid::Uuid,
    /// Who marks it.
    pub user: i64,
    /// Its author.
    pub author: i64,
    /// When.
    pub at: DateTime<Utc>,
    /// A mark (`true`) or its end.
    pub on: bool,
}

impl PostMark {
    /// The mark an event's `(user, post, author, on)` parts make, at `at`.
    fn of((user, post, author, on): (UserId, PostId, UserId, bool), at: DateTime<Utc>) -> Self {
        Self {
            post: post.uuid(),
            user: user.get(),
            author: author.get(),
            at,
            on,
        }
    }
}

/// A repost made or taken back (issue 44).
pub type Repost = PostMark;

/// A bookmark made or taken back (issue 46).
pub type Bookmark = PostMark;

/// A quote as published (issue 44).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quote {
    /// The quoting post.
    pub post: uuid::Uuid,
    /// The quoted post.
    pub quote_of: uuid::Uuid,
    /// The quoting post's author.
    pub author: i64,
    /// The quoted post's author.
    pub quoted_author: i64,
}

/// A comment as written.
#[derive(Debug, Clone, Copy)]
pub struct NewComment<'a> {
    /// (post, n).
    pub key: Key,
    /// Who wrote it.
    pub author: i64,
    /// The post's author.
    pub post_author: i64,
    /// The comment it answers.
    pub parent: Option<i32>,
    /// Its text (`None`: its author's key is gone).
    pub content: Option<&'a str>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
}

/// What one event changes of engagement.
#[derive(Debug, Clone, Copy)]
pub enum EngagementChange<'a> {
    /// A like given or taken back.
    Like(Like),
    /// A repost made or taken back.
    Repost(Repost),
    /// A bookmark made or taken back.
    Bookmark(Bookmark),
    /// A post that quotes another was published.
    Quoted(Quote),
    /// A post was deleted, or its quote detached: it quotes no more, if it did.
    Unquoted(uuid::Uuid),
    /// A comment written.
    Commented(NewComment<'a>),
    /// A comment deleted.
    Uncommented(Key),
    /// A comment pinned (`true`) or unpinned.
    Pinned(Key, bool),
    /// The user was erased.
    Erased(i64),
}

impl<'a> EngagementChange<'a> {
    /// What `event` changes of engagement, if anything.
    pub fn of(event: &'a RecordedEvent) -> Option<Self> {
        Self::of_event(&event.event, event.occurred_at)
    }

    /// What `event`, decided at `occurred_at`, changes of engagement, if anything.
    pub fn of_event(event: &'a LogEvent, occurred_at: DateTime<Utc>) -> Option<Self> {
        if let Some(user) = event.erased_user() {
            return Some(Self::Erased(user.get()));
        }
        Some(match event {
            LogEvent::Like(like) => {
                let (user, target, author, on) = like.parts();
                Self::Like(Like {
                    target,
                    user: user.get(),
                    author: author.get(),
                    at: occurred_at,
                    on,
                })
            }
            LogEvent::Repost(repost) => Self::Repost(PostMark::of(repost.parts(), occurred_at)),
            LogEvent::Bookmark(bookmark) => {
                Self::Bookmark(PostMark::of(bookmark.parts(), occurred_at))
            }
            LogEvent::Thread(thread) => Self::of_thread(thread),
            LogEvent::Post(
                published @ PostEvent::PostPublished {
                    post_id,
                    author,
                    quote_of: Some(_),
                    ..
                },
            ) => {
                let quote = published.quote()?;
                Self::Quoted(Quote {
                    post: post_id.uuid(),
                    quote_of: quote.post.uuid(),
                    author: author.get(),
                    quoted_author: quote.author.get(),
                })
            }
            LogEvent::Post(
                PostEvent::PostDeleted { post_id, .. } | PostEvent::QuoteDetached { post_id, .. },
            ) => Self::Unquoted(post_id.uuid()),
            // Erasures are above; nothing else is engagement.
            LogEvent::Post(
                PostEvent::PostPublished { quote_of: None, .. }
                | PostEvent::QuotePolicyChanged { .. }
                | PostEvent::CommentPolicyChanged { .. },
            )
            | LogEvent::Relation(_)
            | LogEvent::Account(_)
            | LogEvent::Lists(_)
            | LogEvent::Filters(_) => return None,
        })
    }

    /// What a thread event changes.
    pub(crate) fn of_thread(event: &'a ThreadEvent) -> Self {
        let key = |post: &relations_domain::PostId, n: &u32| (post.uuid(), *n as i32);
        match event {
            ThreadEvent::CommentAdded {
                post_id,
                comment,
                author,
                post_author,
                parent,
                content,
                created_at,
            } => Self::Commented(NewComment {
                key: key(post_id, comment),
                author: author.get(),
                post_author: post_author.get(),
                parent: parent.map(|p| p as i32),
                content: content.as_ref().map(|c| c.as_str()),
                created_at: *created_at,
            }),
            ThreadEvent::CommentDeleted {
                post_id, comment, ..
            } => Self::Uncommented(key(post_id, comment)),
            ThreadEvent::CommentPinned { post_id, comment } => {
                Self::Pinned(key(post_id, comment), true)
            }
            ThreadEvent::CommentUnpinned { post_id, comment } => {
                Self::Pinned(key(post_id, comment), false)
            }
        }
    }
}

/// The tables engagement is folded into. Each method keeps rows only; the counts are moved
/// by the fold through the `count_*` methods (tables whose counts are the sizes of their sets
/// implement those as nothing).
#[allow(async_fn_in_trait)]
pub trait EngagementTables {
    /// Makes (`like.on`) or removes the row of (`like.target`, `like.user`); whether it came
    /// or went.
    async fn like(&mut self, like: &Like) -> Folded<bool>;

    /// Folds `run` as [`fold`] folds each like of it in turn.
    async fn like_run(&mut self, run: &[Like]) -> Folded<()> {
        for like in run {
            fold(self, &EngagementChange::Like(*like)).await?;
        }
        Ok(())
    }

    /// Makes (`repost.on`) or removes the row of (`repost.post`, `repost.user`); whether it
    /// came or went.
    async fn repost(&mut self, repost: &Repost) -> Folded<bool>;

    /// Removes every repost of `user`; the posts they reposted.
    async fn unrepost_all(&mut self, user: i64) -> Folded<Vec<uuid::Uuid>>;

    /// Adds each post's change to its repost count.
    async fn count_reposts(&mut self, moved: &[(uuid::Uuid, i64)]) -> Folded<()>;

    /// Makes (`bookmark.on`) or removes the row of (`bookmark.post`, `bookmark.user`); no
    /// count moves with it (issue 46: bookmarks are private).
    async fn bookmark(&mut self, bookmark: &Bookmark) -> Folded<()>;

    /// Removes every bookmark of `user`.
    async fn unbookmark_all(&mut self, user: i64) -> Folded<()>;

    /// Keeps `quote`'s row; whether it is new.
    async fn quote(&mut self, quote: &Quote) -> Folded<bool>;

    /// Removes the quote row of `post`; the post it quoted, if it had one.
    async fn unquote(&mut self, post: uuid::Uuid) -> Folded<Option<uuid::Uuid>>;

    /// Removes every quote row of `user`'s posts; the posts they quoted.
    async fn unquote_all(&mut self, user: i64) -> Folded<Vec<uuid::Uuid>>;

    /// Adds each post's change to its quote count.
    async fn count_quotes(&mut self, moved: &[(uuid::Uuid, i64)]) -> Folded<()>;

    /// Adds each target's change to its like count.
    async fn count_likes(&mut self, moved: &[(LikeTarget, i64)]) -> Folded<()>;

    /// Adds each post's change to its comment count.
    async fn count_comments(&mut self, moved: &[(uuid::Uuid, i64)]) -> Folded<()>;

    /// Adds each comment's change to its count of visible replies.
    async fn count_replies(&mut self, moved: &[(Key, i64)]) -> Folded<()>;

    /// Keeps `comment`, live and visible; whether it is new.
    async fn comment(&mut self, comment: &NewComment<'_>) -> Folded<bool>;

    /// Marks the comment deleted (its content and pin dropped); whether it was live.
    async fn uncomment(&mut self, key: Key) -> Folded<bool>;

    /// Marks every live comment of `user` deleted, as [`EngagementTables::uncomment`]; the
    /// ones that were live.
    async fn uncomment_all(&mut self, user: i64) -> Folded<Vec<Key>>;

    /// Removes every like of `user`; the targets they liked.
    async fn unlike_all(&mut self, user: i64) -> Folded<Vec<LikeTarget>>;

    /// Pins or unpins the comment.
    async fn pin(&mut self, key: Key, on: bool) -> Folded<()>;

    /// Hides each of `candidates` that is deleted, visible and without visible replies; the
    /// parent of each one hidden (once per child hidden).
    async fn hide(&mut self, candidates: &[Key]) -> Folded<Vec<Key>>;
}

/// Folds one change into `tables`; see the module docs.
pub async fn fold<T: EngagementTables + ?Sized>(
    tables: &mut T,
    change: &EngagementChange<'_>,
) -> Folded<()> {
    match *change {
        EngagementChange::Like(like) => {
            if tables.like(&like).await? {
                let delta = if like.on { 1 } else { -1 };
                tables.count_likes(&[(like.target, delta)]).await?;
            }
        }
        EngagementChange::Repost(repost) => {
            if tables.repost(&repost).await? {
                let delta = if repost.on { 1 } else { -1 };
                tables.count_reposts(&[(repost.post, delta)]).await?;
            }
        }
        EngagementChange::Bookmark(bookmark) => tables.bookmark(&bookmark).await?,
        EngagementChange::Quoted(quote) => {
            if tables.quote(&quote).await? {
                tables.count_quotes(&[(quote.quote_of, 1)]).await?;
            }
        }
        EngagementChange::Unquoted(post) => {
            if let Some(quoted) = tables.unquote(post).await? {
                tables.count_quotes(&[(quoted, -1)]).await?;
            }
        }
        EngagementChange::Commented(comment) => {
            if tables.comment(&comment).await? {
                if let Some(parent) = comment.parent {
                    tables
                        .count_replies(&[((comment.key.0, parent), 1)])
                        .await?;
                }
                tables.count_comments(&[(comment.key.0, 1)]).await?;
            }
        }
        EngagementChange::Uncommented(key) => {
            if tables.uncomment(key).await? {
                tables.count_comments(&[(key.0, -1)]).await?;
                hide_bare(tables, vec![key]).await?;
            }
        }
        EngagementChange::Pinned(key, on) => tables.pin(key, on).await?,
        EngagementChange::Erased(user) => erase(tables, user).await?,
    }
    Ok(())
}

/// Folds `user`'s erasure: every like, repost and quote of theirs goes and its target loses one;
/// every bookmark of theirs goes; every live comment of theirs is deleted as a deletion
/// deletes one.
async fn erase<T: EngagementTables + ?Sized>(tables: &mut T, user: i64) -> Folded<()> {
    let liked = tables.unlike_all(user).await?;
    tables
        .count_likes(&net(liked.into_iter().map(|t| (t, -1))))
        .await?;
    let reposted = tables.unrepost_all(user).await?;
    tables
        .count_reposts(&net(reposted.into_iter().map(|p| (p, -1))))
        .await?;
    tables.unbookmark_all(user).await?;
    let quoted = tables.unquote_all(user).await?;
    tables
        .count_quotes(&net(quoted.into_iter().map(|p| (p, -1))))
        .await?;
    let deleted = tables.uncomment_all(user).await?;
    tables
        .count_comments(&net(deleted.iter().map(|k| (k.0, -1))))
        .await?;
    hide_bare(tables, deleted).await
}

/// Hides the deleted comments of `candidates` left without visible replies; each one hidden
/// takes a reply from its parent, which is a candidate in turn (one level at a time).
async fn hide_bare<T: EngagementTables + ?Sized>(
    tables: &mut T,
    mut candidates: Vec<Key>,
) -> Folded<()> {
    while !candidates.is_empty() {
        let parents = tables.hide(&candidates).await?;
        let moved = net(parents.iter().map(|p| (*p, -1)));
        tables.count_replies(&moved).await?;
        candidates = moved.into_iter().map(|(p, _)| p).collect();
    }
    Ok(())
}

/// Each key's changes added up, in key order (so every write locks its rows in one order),
/// without the ones that add up to nothing.
pub fn net<K: Ord>(moves: impl IntoIterator<Item = (K, i64)>) -> Vec<(K, i64)> {
    let mut sums = BTreeMap::new();
    for (key, delta) in moves {
        *sums.entry(key).or_insert(0) += delta;
    }
    sums.into_iter().filter(|(_, d)| *d != 0).collect()
}

/// Folds `events` into `tables`: runs of consecutive likes at once
/// ([`EngagementTables::like_run`]), the rest one by one.
pub async fn fold_changes<T: EngagementTables>(
    tables: &mut T,
    changes: &[EngagementChange<'_>],
) -> Folded<()> {
    let mut rest = changes;
    while let Some(first) = rest.first() {
        let likes = rest
            .iter()
            .take_while(|c| matches!(c, EngagementChange::Like(_)))
            .count();
        if likes > 0 {
            let run: Vec<Like> = rest[..likes]
                .iter()
                .filter_map(|c| match c {
                    EngagementChange::Like(like) => Some(*like),
                    _ => None,
                })
                .collect();
            tables.like_run(&run).await?;
            rest = &rest[likes..];
        } else {
            fold(tables, first).await?;
            rest = &rest[1..];
        }
    }
    Ok(())
}

/// [`fold_changes`] of `events`' changes.
pub async fn fold_events<T: EngagementTables>(
    tables: &mut T,
    events: &[RecordedEvent],
) -> Folded<()> {
    let changes: Vec<EngagementChange<'_>> =
        events.iter().filter_map(EngagementChange::of).collect();
    fold_changes(tables, &changes).await
}

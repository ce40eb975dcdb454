//! The relation pairs a comment or a like reads: whether a block stands between the actor and
//! the author, and (issue 26) whether the actor follows the post's author. Their streams are
//! locked like a relation command's, after the command's own stream (a relation command locks
//! pairs only, so the two never wait in a cycle), and folded before the decision, so a block,
//! an unfollow or a removal and a comment or like never pass each other.
//!
//! Then the post's stream, locked shared and brought up to date from the version the command
//! was judged at: a post deleted since (by another instance; the caller may have judged it
//! from its cache) refuses the command as not found, and a deletion waits for the command to
//! commit, so a like or a comment never lands on a deleted post. A deletion locks its post's
//! stream only, so it waits in no cycle with a like either.
//!
//! A like of a comment first locks the comment's thread shared and reads what it appended since
//! the comment was found live (the thread is the post's: a comment's deletion appends to it,
//! under its exclusive lock): a comment deleted since refuses the like as not found, and a
//! deletion waits for the like to commit, so a like never lands on a deleted comment. Threads
//! come before pairs, as a thread command locks its own thread before its pairs.
//!
//! The post's author's `account_locks` row is read last, under a shared lock held to commit,
//! as a follow reads it (the same order: pairs, then account locks), so a lock and a like
//! never pass each other either.

use std::collections::{HashMap, HashSet};

use relations_domain::privacy::{may_read, Privacy, Reader};
use relations_domain::{
    CommentId, CommentPolicy, PairId, Post, PostEvent, PostId, QuotePolicy, RelationPair, Thread,
    ThreadEvent, UserId, Visibility,
};
use sqlx::PgConnection;

use crate::append::{self, Loaded, Mode};
use crate::error::StoreError;
use crate::executor::Guard;

/// The post a comment or like is on, as far as who may read it: the command is refused as
/// not found when its actor may not ([`relations_domain::privacy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostAccess {
    /// The post.
    pub post: PostId,
    /// The post's author.
    pub author: UserId,
    /// The post's visibility (fixed at publishing).
    pub visibility: Visibility,
    /// Who may quote it, as found (the guard brings it up to date).
    pub quote_policy: QuotePolicy,
    /// Who may comment on it, as found (the guard brings it up to date).
    pub comment_policy: CommentPolicy,
    /// The version of the post's stream it was found live at.
    pub seen: usize,
}

impl PostAccess {
    /// The post as found live, as far as the guard reads it (who may read and quote it; its
    /// own quote is not read).
    fn as_seen(&self) -> Loaded<Post> {
        Loaded {
            aggregate: Post::Live {
                author: self.author,
                visibility: self.visibility,
                quote_policy: self.quote_policy,
                comment_policy: self.comment_policy,
                quote_of: None,
                detached_by: None,
            },
            version: self.seen,
        }
    }
}

/// Whether `actor` may read a post of `visibility` by `author`, who they follow or not and who
/// is locked or not ([`relations_domain::privacy`]): the rule the guard applies under lock, and
/// a command's handler to what is committed (`RelationStore::may_read_now`).
pub(crate) fn may_read_post(
    actor: UserId,
    author: UserId,
    visibility: Visibility,
    follows: bool,
    locked: bool,
) -> bool {
    let privacy = Privacy {
        locked,
        hide_graph: false,
    };
    may_read(
        visibility,
        privacy,
        Reader::of(Some(actor), author, follows),
    )
}

/// What one comment or like asks: the pairs it reads, and the post whose readability it needs.
#[derive(Debug, Default)]
pub(crate) struct PairAsk {
    /// The relation pairs read (the post's author's among them).
    pub pairs: Vec<PairId>,
    /// The post: checked live, and its author's account lock read.
    pub post: Option<PostAccess>,
    /// The comment liked, and the version of its thread it was found live at: checked live.
    pub comment: Option<(CommentId, usize)>,
}

impl PairAsk {
    /// What a command of `user`'s on `post` alone asks (a repost, a bookmark, a quote): the
    /// pair of `user` and the post's author (a block, a follow for readability), and the post
    /// (live, and its author's lock).
    pub fn on_post(user: UserId, post: PostAccess) -> Self {
        Self {
            pairs: PairId::new(user, post.author).ok().into_iter().collect(),
            post: Some(post),
            comment: None,
        }
    }
}

/// The relation pairs a group's commands read, locked and folded, by stream id, which of
/// the posts' authors are locked, and which posts and comments are gone.
#[derive(Debug, Default)]
pub(crate) struct PairGuard {
    pairs: HashMap<String, RelationPair>,
    locked: HashSet<UserId>,
    /// The posts asked about, brought up to date under their streams' shared locks.
    posts: HashMap<PostId, Post>,
    gone_comments: HashSet<CommentId>,
}

impl PairGuard {
    /// Whether `actor` may not read `post`: it is gone, or the pair and the lock read under
    /// lock say so.
    pub fn unreadable(&self, actor: UserId, post: PostAccess) -> bool {
        if !matches!(self.posts.get(&post.post), Some(Post::Live { .. })) {
            return true;
        }
        let follows = self.follows(actor, post.author);
        let locked = self.locked.contains(&post.author);
        !may_read_post(actor, post.author, post.visibility, follows, locked)
    }

    /// Whether `actor` follows `author`, as read under lock.
    fn follows(&self, actor: UserId, author: UserId) -> bool {
        PairId::new(actor, author).is_ok_and(|pair| {
            self.pairs
                .get(&pair.stream_id())
                .is_some_and(|p| p.facts(actor, author).following)
        })
    }

    /// Whether `post`'s comment policy, as it stands under lock, keeps `actor` from
    /// commenting or replying (issue 47): the post's stream and the pair of `actor` and the
    /// author are both read under lock in the comment's transaction, so neither a policy
    /// change nor an unfollow passes it.
    pub fn comments_restricted(&self, actor: UserId, post: PostAccess) -> bool {
        let policy = match self.posts.get(&post.post) {
            Some(Post::Live { comment_policy, .. }) => *comment_policy,
            _ => return true,
        };
        let own = actor == post.author;
        let (follows, followed) = (
            self.follows(actor, post.author),
            self.follows(post.author, actor),
        );
        !policy.allows(own, follows, followed)
    }

    /// Whether `post`'s quote policy, as it stands under lock, keeps `actor` from quoting it
    /// (issue 44).
    pub fn not_quotable(&self, actor: UserId, post: PostAccess) -> bool {
        let policy = match self.posts.get(&post.post) {
            Some(Post::Live { quote_policy, .. }) => *quote_policy,
            _ => return true,
        };
        let own = actor == post.author;
        !policy.allows(own, self.follows(actor, post.author))
    }

    /// Takes in a post event decided in the group (a policy change or a deletion of a post
    /// asked about), so that a later command of the group is judged after it.
    fn post_decided(&mut self, event: &PostEvent) {
        let post = match event {
            PostEvent::PostPublished { post_id, .. }
            | PostEvent::QuotePolicyChanged { post_id, .. }
            | PostEvent::CommentPolicyChanged { post_id, .. }
            | PostEvent::QuoteDetached { post_id, .. }
            | PostEvent::PostDeleted { post_id, .. } => post_id,
        };
        if let Some(state) = self.posts.get_mut(post) {
            state.apply(event.clone());
        }
    }

    /// Whether `post` may not be reposted (issue 44): it is `followers` only (or narrower), or
    /// its author is locked, as read under lock.
    pub fn not_repostable(&self, post: PostAccess) -> bool {
        let open = matches!(post.visibility, Visibility::Public | Visibility::Unlisted);
        !open || self.locked.contains(&post.author)
    }

    /// Whether `comment`, asked about as found live, was deleted since.
    pub fn comment_gone(&self, comment: CommentId) -> bool {
        self.gone_comments.contains(&comment)
    }

    /// Whether a block stands, either way, between `a` and any of `others` (none between a
    /// user and themselves).
    pub fn blocked(&self, a: UserId, others: impl IntoIterator<Item = UserId>) -> bool {
        others.into_iter().any(|b| {
            let Ok(pair) = PairId::new(a, b) else {
                return false;
            };
            self.pairs.get(&pair.stream_id()).is_some_and(|p| {
                let facts = p.facts(a, b);
                facts.blocking || facts.blocked_by
            })
        })
    }
}

/// The events of the commands a [`PairGuard`] guards: a post's own events change the posts it
/// holds (a quote's guard, issue 44); the others change nothing it reads.
pub(crate) trait GuardedEvent: Sync {
    /// The event as a post's, if it is one.
    fn as_post(&self) -> Option<&PostEvent> {
        None
    }
}

impl GuardedEvent for PostEvent {
    fn as_post(&self) -> Option<&PostEvent> {
        Some(self)
    }
}

impl GuardedEvent for relations_domain::ThreadEvent {}
impl GuardedEvent for relations_domain::LikeEvent {}
impl GuardedEvent for relations_domain::RepostEvent {}
impl GuardedEvent for relations_domain::BookmarkEvent {}

impl<E: GuardedEvent> Guard<E> for PairGuard {
    /// The pairs one command reads, and its post's author.
    type Ask = PairAsk;

    async fn lock(conn: &mut PgConnection, asks: Vec<PairAsk>) -> Result<Self, StoreError> {
        let comments: Vec<(CommentId, usize)> = asks.iter().filter_map(|a| a.comment).collect();
        let gone_comments = deleted_comments(conn, &comments).await?;
        let posts: HashMap<String, Loaded<Post>> = asks
            .iter()
            .filter_map(|a| a.post)
            .map(|p| (p.post.to_string(), p.as_seen()))
            .collect();
        let mut authors: Vec<i64> = asks
            .iter()
            .filter_map(|a| a.post)
            .map(|p| p.author.get())
            .collect();
        authors.sort_unstable();
        authors.dedup();
        let mut ids: Vec<String> = asks
            .into_iter()
            .flat_map(|a| a.pairs)
            .map(|pair| pair.stream_id())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() && authors.is_empty() {
            return Ok(Self {
                gone_comments,
                ..Self::default()
            });
        }
        let mut pairs: HashMap<String, Loaded<RelationPair>> =
            ids.into_iter().map(|id| (id, Loaded::default())).collect();
        append::lock_and_catch_up(conn, &mut pairs, Mode::Exclusive).await?;
        // Only likes and new comments ask about a post: a group of other thread commands
        // (deletes, pins) makes no round trip for it.
        let (posts, locked) = match authors.is_empty() {
            true => Default::default(),
            false => (
                posts_now(conn, posts).await?,
                locked_authors(conn, &authors).await?,
            ),
        };
        Ok(Self {
            pairs: pairs
                .into_iter()
                .map(|(id, loaded)| (id, loaded.aggregate))
                .collect(),
            locked,
            posts,
            gone_comments,
        })
    }

    /// A comment or like changes no pair; a post's policy change or deletion changes the post.
    fn decided(&mut self, events: &[E]) {
        for event in events.iter().filter_map(GuardedEvent::as_post) {
            self.post_decided(event);
        }
    }

    async fn write(self, _conn: &mut PgConnection) -> Result<(), StoreError> {
        Ok(())
    }
}

/// The comments of `comments`' threads deleted since the earliest version any of them was
/// found live at (each asked-about comment is among them if it was deleted since): their
/// threads locked shared, and what they appended since read.
async fn deleted_comments(
    conn: &mut PgConnection,
    comments: &[(CommentId, usize)],
) -> Result<HashSet<CommentId>, StoreError> {
    if comments.is_empty() {
        return Ok(HashSet::new());
    }
    // A thread's events since the lowest version any of its comments was found live at.
    let mut since: HashMap<String, usize> = HashMap::new();
    for (comment, seen) in comments {
        let at = since.entry(comment.post.to_string()).or_insert(*seen);
        *at = (*at).min(*seen);
    }
    // (`lock_and_load` takes the locks in key order itself.)
    let threads: Vec<(&str, usize)> = since.iter().map(|(id, v)| (id.as_str(), *v)).collect();
    let events = append::lock_and_read::<Thread>(conn, &threads, Mode::Shared).await?;
    Ok(events
        .into_iter()
        .filter_map(|(_, event)| match event {
            ThreadEvent::CommentDeleted { .. } => Some(event.comment()),
            _ => None,
        })
        .collect())
}

/// `posts` (each as found live) as they are now: their streams locked shared and brought up
/// to date.
async fn posts_now(
    conn: &mut PgConnection,
    mut posts: HashMap<String, Loaded<Post>>,
) -> Result<HashMap<PostId, Post>, StoreError> {
    append::lock_and_catch_up(conn, &mut posts, Mode::Shared).await?;
    posts
        .into_iter()
        .map(|(id, loaded)| match id.parse() {
            Ok(post) => Ok((post, loaded.aggregate)),
            Err(_) => Err(StoreError::Corrupt(id)),
        })
        .collect()
}

/// Which of `authors` are locked, each row read under a shared lock held to commit (in id
/// order, as a follow reads them).
async fn locked_authors(
    conn: &mut PgConnection,
    authors: &[i64],
) -> Result<HashSet<UserId>, StoreError> {
    let locked: Vec<i64> = sqlx::query_scalar(
        "SELECT user_id FROM account_locks WHERE user_id = ANY($1) ORDER BY user_id FOR SHARE",
    )
    .bind(authors)
    .fetch_all(&mut *conn)
    .await?;
    locked
        .into_iter()
        .map(|u| UserId::try_from(u).map_err(|e| StoreError::Corrupt(e.to_string())))
        .collect()
}

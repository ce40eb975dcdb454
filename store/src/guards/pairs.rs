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
//! The post's author's `account_locks` row is read last, under a shared lock held to commit,
//! as a follow reads it (the same order: pairs, then account locks), so a lock and a like
//! never pass each other either.

use std::collections::{HashMap, HashSet};

use relations_domain::privacy::{may_read, Privacy, Reader};
use relations_domain::{PairId, Post, PostId, RelationPair, UserId, Visibility};
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
    /// The version of the post's stream it was found live at.
    pub seen: usize,
}

impl PostAccess {
    /// The post as found live.
    fn as_seen(&self) -> Loaded<Post> {
        Loaded {
            aggregate: Post::Live {
                author: self.author,
                visibility: self.visibility,
            },
            version: self.seen,
        }
    }
}

/// What one comment or like asks: the pairs it reads, and the post whose readability it needs.
#[derive(Debug, Default)]
pub(crate) struct PairAsk {
    /// The relation pairs read (the post's author's among them).
    pub pairs: Vec<PairId>,
    /// The post: checked live, and its author's account lock read.
    pub post: Option<PostAccess>,
}

/// The relation pairs a group's commands read, locked and folded, by stream id, which of
/// the posts' authors are locked, and which posts are gone.
#[derive(Debug, Default)]
pub(crate) struct PairGuard {
    pairs: HashMap<String, RelationPair>,
    locked: HashSet<UserId>,
    gone: HashSet<PostId>,
}

impl PairGuard {
    /// Whether `actor` may not read `post`: it is gone, or the pair and the lock read under
    /// lock say so.
    pub fn unreadable(&self, actor: UserId, post: PostAccess) -> bool {
        if self.gone.contains(&post.post) {
            return true;
        }
        let follows = PairId::new(actor, post.author).is_ok_and(|pair| {
            self.pairs
                .get(&pair.stream_id())
                .is_some_and(|p| p.facts(actor, post.author).following)
        });
        let privacy = Privacy {
            locked: self.locked.contains(&post.author),
            hide_graph: false,
        };
        !may_read(
            post.visibility,
            privacy,
            Reader::of(Some(actor), post.author, follows),
        )
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

impl<E: Sync> Guard<E> for PairGuard {
    /// The pairs one command reads, and its post's author.
    type Ask = PairAsk;

    async fn lock(conn: &mut PgConnection, asks: Vec<PairAsk>) -> Result<Self, StoreError> {
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
            return Ok(Self::default());
        }
        let mut pairs: HashMap<String, Loaded<RelationPair>> =
            ids.into_iter().map(|id| (id, Loaded::default())).collect();
        append::lock_and_catch_up(conn, &mut pairs, Mode::Exclusive).await?;
        // Only likes and new comments ask about a post: a group of other thread commands
        // (deletes, pins) makes no round trip for it.
        let (gone, locked) = match authors.is_empty() {
            true => Default::default(),
            false => (
                gone_posts(conn, posts).await?,
                locked_authors(conn, &authors).await?,
            ),
        };
        Ok(Self {
            pairs: pairs
                .into_iter()
                .map(|(id, loaded)| (id, loaded.aggregate))
                .collect(),
            locked,
            gone,
        })
    }

    /// A comment or like changes no pair.
    fn decided(&mut self, _events: &[E]) {}

    async fn write(self, _conn: &mut PgConnection) -> Result<(), StoreError> {
        Ok(())
    }
}

/// Which of `posts` (each as found live) are no longer live: their streams locked shared and
/// brought up to date.
async fn gone_posts(
    conn: &mut PgConnection,
    mut posts: HashMap<String, Loaded<Post>>,
) -> Result<HashSet<PostId>, StoreError> {
    append::lock_and_catch_up(conn, &mut posts, Mode::Shared).await?;
    posts
        .into_iter()
        .filter(|(_, loaded)| !matches!(loaded.aggregate, Post::Live { .. }))
        .map(|(id, _)| id.parse().map_err(|_| StoreError::Corrupt(id)))
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

//! The relation pairs a comment or a like reads: whether a block stands between the actor and
//! the author, and (issue 26) whether the actor follows the post's author. Their streams are
//! locked like a relation command's, after the command's own stream (a relation command locks
//! pairs only, so the two never wait in a cycle), and folded before the decision, so a block,
//! an unfollow or a removal and a comment or like never pass each other. The post's author's
//! `account_locks` row is read after them under a shared lock held to commit, as a follow reads
//! it (the same order: pairs, then account locks), so a lock and a like never pass each other
//! either.

use std::collections::{HashMap, HashSet};

use relations_domain::privacy::{may_read, Privacy, Reader};
use relations_domain::{PairId, RelationPair, UserId, Visibility};
use sqlx::PgConnection;

use crate::append::{self, Loaded};
use crate::error::StoreError;
use crate::executor::Guard;

/// The post a comment or like is on, as far as who may read it: the command is refused as
/// not found when its actor may not ([`relations_domain::privacy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostAccess {
    /// The post's author.
    pub author: UserId,
    /// The post's visibility (fixed at publishing).
    pub visibility: Visibility,
}

/// What one comment or like asks: the pairs it reads, and the post whose readability it needs.
#[derive(Debug, Default)]
pub(crate) struct PairAsk {
    /// The relation pairs read (the post's author's among them).
    pub pairs: Vec<PairId>,
    /// The post's author, whose account lock is read.
    pub author: Option<UserId>,
}

/// The relation pairs a group's commands read, locked and folded, by stream id, and which of
/// the posts' authors are locked.
#[derive(Debug, Default)]
pub(crate) struct PairGuard {
    pairs: HashMap<String, RelationPair>,
    locked: HashSet<UserId>,
}

impl PairGuard {
    /// Whether `actor` may not read `post`, by the pair and the lock read under lock.
    pub fn unreadable(&self, actor: UserId, post: PostAccess) -> bool {
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
        let mut authors: Vec<i64> = asks
            .iter()
            .filter_map(|a| a.author)
            .map(UserId::get)
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
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        append::lock::<RelationPair>(conn, &refs).await?;
        let mut pairs: HashMap<String, Loaded<RelationPair>> =
            ids.into_iter().map(|id| (id, Loaded::default())).collect();
        append::catch_up(conn, &mut pairs).await?;
        // Only likes and new comments ask about a post's author: a group of other thread
        // commands (deletes, pins) makes no round trip for it.
        let locked = match authors.is_empty() {
            true => HashSet::new(),
            false => locked_authors(conn, &authors).await?,
        };
        Ok(Self {
            pairs: pairs
                .into_iter()
                .map(|(id, loaded)| (id, loaded.aggregate))
                .collect(),
            locked,
        })
    }

    /// A comment or like changes no pair.
    fn decided(&mut self, _events: &[E]) {}

    async fn write(self, _conn: &mut PgConnection) -> Result<(), StoreError> {
        Ok(())
    }
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

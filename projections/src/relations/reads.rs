//! Where one request's graph reads come from: the in-memory replica once it is loaded
//! ([`crate::replica`]), PostgreSQL's read model before that. Both answer the same questions
//! with the same types; the replica needs no round trip.

use chrono::{DateTime, Utc};
use relations_domain::{Relation, UserId};
use sqlx::PgPool;

use super::query::{self, Counts, ListEntry};
use crate::replica::live::LiveGraph;

/// The source a request reads from, chosen once per request (see the API's `graph_source`), so that
/// a request never mixes the replica's state with the database's.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// The loaded replica.
    Memory(&'a LiveGraph),
    /// Projector `following`'s tables.
    Database(&'a PgPool),
}

/// A page of an offset-paged list, with the list's length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetSlice {
    /// The page.
    pub edges: Vec<ListEntry>,
    /// Every item of the list.
    pub total: i64,
}

/// The offset-paged lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetList {
    /// Whom a user follows.
    Following,
    /// A user's friends.
    Friends,
}

/// The cursor-paged lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyedList {
    /// Who follows a user.
    Followers,
    /// Whom a user blocks.
    Blocking,
    /// Who asks to follow a user.
    FollowRequests,
}

/// `f` on the replica a memory source was chosen for (it is loaded: sources are chosen so).
fn read<R>(graph: &LiveGraph, f: impl FnOnce(&crate::replica::MemoryGraph) -> R) -> R {
    graph.with(f).expect("a memory source is loaded")
}

impl Source<'_> {
    /// `from`'s relation to each of `to`, in the order asked, from one state; `muting` only
    /// when `mutes_at` is given (answers to `from` themselves).
    pub async fn relations(
        self,
        from: UserId,
        to: &[UserId],
        mutes_at: Option<DateTime<Utc>>,
    ) -> Result<Vec<Relation>, sqlx::Error> {
        match self {
            Source::Memory(graph) => Ok(read(graph, |g| g.relations(from, to, mutes_at))),
            Source::Database(pool) => query::relations(pool, from, to, mutes_at).await,
        }
    }

    /// `user`'s mutes in force at `now`, newest first, after the key `after`, with their ends.
    pub async fn mutes(
        self,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
        now: DateTime<Utc>,
    ) -> Result<Vec<(ListEntry, Option<DateTime<Utc>>)>, sqlx::Error> {
        match self {
            Source::Memory(graph) => Ok(read(graph, |g| g.mutes(user, after, limit, now))),
            Source::Database(pool) => query::mutes(pool, user, after, limit, now).await,
        }
    }

    /// Followers of `user` whom `viewer` follows, newest first, after the key `after`; and how
    /// many there are.
    pub async fn known_followers(
        self,
        viewer: UserId,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
    ) -> Result<(Vec<ListEntry>, i64), sqlx::Error> {
        match self {
            Source::Memory(graph) => Ok(read(graph, |g| {
                g.known_followers(viewer, user, after, limit)
            })),
            Source::Database(pool) => {
                query::known_followers(pool, viewer, user, after, limit).await
            }
        }
    }

    /// `user`'s counters.
    pub async fn counts(self, user: UserId) -> Result<Counts, sqlx::Error> {
        match self {
            Source::Memory(graph) => Ok(read(graph, |g| g.counts(user))),
            Source::Database(pool) => query::counts(pool, user).await,
        }
    }

    /// A page of `list` for `user`, and the list's length.
    pub async fn offset_page(
        self,
        list: OffsetList,
        user: UserId,
        offset: i64,
        limit: i64,
    ) -> Result<OffsetSlice, sqlx::Error> {
        match self {
            Source::Memory(graph) => Ok(read(graph, |g| {
                let counts = g.counts(user);
                match list {
                    OffsetList::Following => OffsetSlice {
                        edges: g.following(user, offset, limit),
                        total: counts.following,
                    },
                    OffsetList::Friends => OffsetSlice {
                        edges: g.friends(user, offset, limit),
                        total: counts.friends,
                    },
                }
            })),
            Source::Database(pool) => {
                let sql = match list {
                    OffsetList::Following => query::FOLLOWING,
                    OffsetList::Friends => query::FRIENDS,
                };
                let edges = sql.page(pool, user, offset, limit).await?;
                let counts = query::counts(pool, user).await?;
                let total = match list {
                    OffsetList::Following => counts.following,
                    OffsetList::Friends => counts.friends,
                };
                Ok(OffsetSlice { edges, total })
            }
        }
    }

    /// Up to `limit` edges of `list` for `user`, newest first, strictly after the key `after`.
    pub async fn keyed_page(
        self,
        list: KeyedList,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
    ) -> Result<Vec<ListEntry>, sqlx::Error> {
        match self {
            Source::Memory(graph) => Ok(read(graph, |g| g.keyed(list, user, after, limit))),
            Source::Database(pool) => {
                let sql = match list {
                    KeyedList::Followers => query::FOLLOWERS,
                    KeyedList::Blocking => query::BLOCKS,
                    KeyedList::FollowRequests => query::FOLLOW_REQUESTS,
                };
                sql.page(pool, user, after, limit).await
            }
        }
    }
}

//! The graph-read contract: one trait ([`GraphReads`]) for the relation checks, lists and
//! counts a request asks, implemented by PostgreSQL's read model (here, on a pool) and by the
//! in-memory replica (`crate::replica`). Both answer the same questions with the same types;
//! the replica needs no round trip.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use relations_domain::{Relation, UserId};
use sqlx::PgPool;

use super::query::{self, Counts, ListEntry, Suggestion};
use relations_domain::privacy::Access;

/// The source a request reads the graph from, chosen once per request (see the API's
/// `graph_source`), so that a request never mixes the replica's state with the database's.
pub type Source<'a> = &'a dyn GraphReads;

/// The graph's reads, whatever holds the graph.
#[async_trait]
pub trait GraphReads: Send + Sync {
    /// `from`'s relation to each of `to`, in the order asked, from one state; `muting` only
    /// when `mutes_at` is given (answers to `from` themselves).
    async fn relations(
        &self,
        from: UserId,
        to: &[UserId],
        mutes_at: Option<DateTime<Utc>>,
    ) -> Result<Vec<Relation>, sqlx::Error>;

    /// `user`'s mutes in force at `now`, newest first, after the key `after`, with their ends.
    async fn mutes(
        &self,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
        now: DateTime<Utc>,
    ) -> Result<Vec<(ListEntry, Option<DateTime<Utc>>)>, sqlx::Error>;

    /// Followers of `user` whom `viewer` follows, newest first, after the key `after`; and how
    /// many there are.
    async fn known_followers(
        &self,
        viewer: UserId,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
    ) -> Result<(Vec<ListEntry>, i64), sqlx::Error>;

    /// `user`'s counters.
    async fn counts(&self, user: UserId) -> Result<Counts, sqlx::Error>;

    /// Up to `limit` users to suggest `user` follow, at `now` (issue 46's rule:
    /// [`query::suggestions`]).
    async fn suggestions(
        &self,
        user: UserId,
        limit: i64,
        now: DateTime<Utc>,
    ) -> Result<Vec<Suggestion>, sqlx::Error>;

    /// What `viewer` is to each of `users` and their settings, in the order asked, from one
    /// state (issue 26's rules: `crate::privacy`).
    async fn access(
        &self,
        viewer: Option<UserId>,
        users: &[UserId],
    ) -> Result<Vec<Access>, sqlx::Error>;

    /// A page of `list` for `user`, and the list's length.
    async fn offset_page(
        &self,
        list: OffsetList,
        user: UserId,
        offset: i64,
        limit: i64,
    ) -> Result<OffsetSlice, sqlx::Error>;

    /// Up to `limit` entries of `list` for `user`, newest first, strictly after the key `after`.
    async fn keyed_page(
        &self,
        list: KeyedList,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
    ) -> Result<Vec<ListEntry>, sqlx::Error>;
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

impl OffsetList {
    /// The list's length, from its user's counters.
    pub fn total(self, counts: &Counts) -> i64 {
        match self {
            OffsetList::Following => counts.following,
            OffsetList::Friends => counts.friends,
        }
    }
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

/// Projector `following`'s tables (and `feed_authors` for post counts).
#[async_trait]
impl GraphReads for PgPool {
    async fn relations(
        &self,
        from: UserId,
        to: &[UserId],
        mutes_at: Option<DateTime<Utc>>,
    ) -> Result<Vec<Relation>, sqlx::Error> {
        query::relations(self, from, to, mutes_at).await
    }

    async fn mutes(
        &self,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
        now: DateTime<Utc>,
    ) -> Result<Vec<(ListEntry, Option<DateTime<Utc>>)>, sqlx::Error> {
        query::mutes(self, user, after, limit, now).await
    }

    async fn known_followers(
        &self,
        viewer: UserId,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
    ) -> Result<(Vec<ListEntry>, i64), sqlx::Error> {
        query::known_followers(self, viewer, user, after, limit).await
    }

    async fn counts(&self, user: UserId) -> Result<Counts, sqlx::Error> {
        query::counts(self, user).await
    }

    async fn suggestions(
        &self,
        user: UserId,
        limit: i64,
        now: DateTime<Utc>,
    ) -> Result<Vec<Suggestion>, sqlx::Error> {
        query::suggestions(self, user, limit, now).await
    }

    async fn access(
        &self,
        viewer: Option<UserId>,
        users: &[UserId],
    ) -> Result<Vec<Access>, sqlx::Error> {
        query::access(self, viewer, users).await
    }

    async fn offset_page(
        &self,
        list: OffsetList,
        user: UserId,
        offset: i64,
        limit: i64,
    ) -> Result<OffsetSlice, sqlx::Error> {
        let sql = match list {
            OffsetList::Following => query::FOLLOWING,
            OffsetList::Friends => query::FRIENDS,
        };
        let edges = sql.page(self, user, offset, limit).await?;
        let counts = query::counts(self, user).await?;
        Ok(OffsetSlice {
            edges,
            total: list.total(&counts),
        })
    }

    async fn keyed_page(
        &self,
        list: KeyedList,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
    ) -> Result<Vec<ListEntry>, sqlx::Error> {
        let sql = match list {
            KeyedList::Followers => query::FOLLOWERS,
            KeyedList::Blocking => query::BLOCKS,
            KeyedList::FollowRequests => query::FOLLOW_REQUESTS,
        };
        sql.page(self, user, after, limit).await
    }
}

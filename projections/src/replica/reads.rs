//! The graph-read contract answered from the loaded replica, without a round trip.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use relations_domain::{Relation, UserId};

use super::live::LiveGraph;
use super::Replica;
use crate::relations::query::{Counts, ListEntry, Suggestion};
use crate::relations::reads::{GraphReads, KeyedList, OffsetList, OffsetSlice};
use relations_domain::privacy::Access;

impl LiveGraph {
    /// `f` on the replica, which a request reads from only once it is loaded (it stays so).
    fn read<R>(&self, f: impl FnOnce(&Replica) -> R) -> R {
        self.with(f).expect("a replica is read from once loaded")
    }
}

/// The replica; read only once loaded (see `crate::relations::reads::Source`).
#[async_trait]
impl GraphReads for LiveGraph {
    async fn relations(
        &self,
        from: UserId,
        to: &[UserId],
        mutes_at: Option<DateTime<Utc>>,
    ) -> Result<Vec<Relation>, sqlx::Error> {
        Ok(self.read(|g| g.relations().relations(from, to, mutes_at)))
    }

    async fn mutes(
        &self,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
        now: DateTime<Utc>,
    ) -> Result<Vec<(ListEntry, Option<DateTime<Utc>>)>, sqlx::Error> {
        Ok(self.read(|g| g.relations().mutes(user, after, limit, now)))
    }

    async fn known_followers(
        &self,
        viewer: UserId,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
    ) -> Result<(Vec<ListEntry>, i64), sqlx::Error> {
        Ok(self.read(|g| g.relations().known_followers(viewer, user, after, limit)))
    }

    async fn counts(&self, user: UserId) -> Result<Counts, sqlx::Error> {
        Ok(self.read(|g| g.counts(user)))
    }

    async fn suggestions(
        &self,
        user: UserId,
        limit: i64,
        now: DateTime<Utc>,
    ) -> Result<Vec<Suggestion>, sqlx::Error> {
        Ok(self.read(|g| {
            let standing = |id: u64| g.accounts().standing(crate::relations::memory::user(id));
            let limit = limit.max(0) as usize;
            g.relations().suggestions(user, limit, now, standing)
        }))
    }

    async fn access(
        &self,
        viewer: Option<UserId>,
        users: &[UserId],
    ) -> Result<Vec<Access>, sqlx::Error> {
        Ok(self.read(|g| users.iter().map(|&u| g.access(viewer, u)).collect()))
    }

    async fn offset_page(
        &self,
        list: OffsetList,
        user: UserId,
        offset: i64,
        limit: i64,
    ) -> Result<OffsetSlice, sqlx::Error> {
        Ok(self.read(|g| {
            let edges = match list {
                OffsetList::Following => g.relations().following(user, offset, limit),
                OffsetList::Friends => g.relations().friends(user, offset, limit),
            };
            OffsetSlice {
                edges,
                total: list.total(&g.counts(user)),
            }
        }))
    }

    async fn keyed_page(
        &self,
        list: KeyedList,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
    ) -> Result<Vec<ListEntry>, sqlx::Error> {
        Ok(self.read(|g| g.relations().keyed(list, user, after, limit)))
    }
}

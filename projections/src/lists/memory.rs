//! The lists in memory: the replica's part of projector `lists` (loaded from its tables at its
//! checkpoint, then folded from the log by [`super::fold`]), and the fold `verify` compares
//! the tables with. A list feed's members and the home feed's exclusions are read here with
//! no round trip.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use foldhash::{HashMap, HashSet};
use futures::TryStreamExt;
use relations_domain::{ListId, LogEvent, UserId};
use relations_store::LogPosition;
use sqlx::{PgConnection, Row};

use super::ListTables;
use crate::replica::MemoryModel;
use crate::runtime::checkpoint;

/// One live list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldList {
    /// Whose.
    pub owner: i64,
    /// Its title.
    pub title: String,
    /// Whether its members leave the owner's home feed.
    pub exclusive: bool,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// Its members, each since they were added.
    pub members: BTreeMap<i64, DateTime<Utc>>,
}

/// Every live list, by id, and each owner's.
#[derive(Debug, Default, Clone)]
pub struct ListsMemory {
    lists: HashMap<ListId, HeldList>,
    owned: HashMap<i64, Vec<ListId>>,
    /// Events up to here are in the load.
    loaded: LogPosition,
}

impl ListsMemory {
    /// `owner`'s `list`, if it is theirs and live.
    pub fn get(&self, owner: UserId, list: ListId) -> Option<&HeldList> {
        self.lists.get(&list).filter(|l| l.owner == owner.get())
    }

    /// Every list, by id (verify).
    pub fn all(&self) -> &HashMap<ListId, HeldList> {
        &self.lists
    }

    /// The members of `owner`'s exclusive lists: they leave the owner's home feed.
    pub fn excluded(&self, owner: UserId) -> HashSet<u64> {
        let Some(owned) = self.owned.get(&owner.get()) else {
            return HashSet::default();
        };
        owned
            .iter()
            .filter_map(|id| self.lists.get(id))
            .filter(|list| list.exclusive)
            .flat_map(|list| list.members.keys().map(|&m| m as u64))
            .collect()
    }

    /// Whether `member` is in one of `owner`'s exclusive lists: out of the owner's home feed.
    pub fn excludes(&self, owner: UserId, member: UserId) -> bool {
        self.owned.get(&owner.get()).is_some_and(|owned| {
            owned.iter().any(|id| {
                self.lists
                    .get(id)
                    .is_some_and(|l| l.exclusive && l.members.contains_key(&member.get()))
            })
        })
    }

    /// Folds one event, unless the load held it.
    fn fold(&mut self, at: LogPosition, occurred_at: DateTime<Utc>, event: &LogEvent) {
        if at > self.loaded {
            super::fold(self, event, occurred_at);
        }
    }

    /// Folds `event` whatever the load held (verify's fold of the whole log).
    pub fn fold_all(&mut self, occurred_at: DateTime<Utc>, event: &LogEvent) {
        super::fold(self, event, occurred_at);
    }
}

impl ListTables for ListsMemory {
    fn create(
        &mut self,
        list: ListId,
        owner: i64,
        title: &str,
        exclusive: bool,
        at: DateTime<Utc>,
    ) {
        if self.lists.contains_key(&list) {
            return;
        }
        let held = HeldList {
            owner,
            title: title.to_owned(),
            exclusive,
            created_at: at,
            members: BTreeMap::new(),
        };
        self.lists.insert(list, held);
        self.owned.entry(owner).or_default().push(list);
    }

    fn update(&mut self, list: ListId, title: &str, exclusive: bool) {
        if let Some(held) = self.lists.get_mut(&list) {
            held.title = title.to_owned();
            held.exclusive = exclusive;
        }
    }

    fn delete(&mut self, list: ListId) {
        if let Some(held) = self.lists.remove(&list) {
            if let Some(owned) = self.owned.get_mut(&held.owner) {
                owned.retain(|l| *l != list);
            }
        }
    }

    fn add(&mut self, list: ListId, owner: i64, member: i64, since: DateTime<Utc>) {
        if let Some(held) = self.lists.get_mut(&list).filter(|l| l.owner == owner) {
            held.members.entry(member).or_insert(since);
        }
    }

    fn remove(&mut self, list: ListId, member: i64) {
        if let Some(held) = self.lists.get_mut(&list) {
            held.members.remove(&member);
        }
    }

    fn end(&mut self, owner: i64, member: i64) {
        for list in self.owned.get(&owner).into_iter().flatten() {
            if let Some(held) = self.lists.get_mut(list) {
                held.members.remove(&member);
            }
        }
    }

    /// Scans every list for the user's memberships: erasures are rare, lists few per user.
    fn erase(&mut self, user: i64) {
        for list in self.owned.remove(&user).unwrap_or_default() {
            self.lists.remove(&list);
        }
        for held in self.lists.values_mut() {
            held.members.remove(&user);
        }
    }
}

impl MemoryModel for ListsMemory {
    async fn checkpoint(
        &mut self,
        tx: &mut PgConnection,
    ) -> Result<Option<LogPosition>, sqlx::Error> {
        self.loaded = checkpoint::read(&mut *tx, super::NAME).await?;
        Ok(Some(self.loaded))
    }

    /// The read model's rows, as of the snapshot.
    async fn load(&mut self, tx: &mut PgConnection, _: LogPosition) -> Result<(), sqlx::Error> {
        let mut rows = sqlx::query(
            "SELECT list_id, owner, title, exclusive, created_at FROM rm_lists
              ORDER BY owner, created_at, list_id",
        )
        .fetch(&mut *tx);
        let mut lists = Vec::new();
        while let Some(row) = rows.try_next().await? {
            let list = ListId::from_uuid(row.try_get("list_id")?);
            let owner: i64 = row.try_get("owner")?;
            let title: String = row.try_get("title")?;
            lists.push((
                list,
                owner,
                title,
                row.try_get("exclusive")?,
                row.try_get("created_at")?,
            ));
        }
        drop(rows);
        for (list, owner, title, exclusive, at) in lists {
            self.create(list, owner, &title, exclusive, at);
        }
        let mut rows = sqlx::query("SELECT list_id, owner, member, since FROM rm_list_members")
            .fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let list = ListId::from_uuid(row.try_get("list_id")?);
            let (owner, member): (i64, i64) = (row.try_get("owner")?, row.try_get("member")?);
            let since = row.try_get("since")?;
            if let Some(held) = self.lists.get_mut(&list).filter(|l| l.owner == owner) {
                held.members.insert(member, since);
            }
        }
        Ok(())
    }

    fn apply(&mut self, at: LogPosition, occurred_at: DateTime<Utc>, event: &LogEvent) {
        self.fold(at, occurred_at, event);
    }
}

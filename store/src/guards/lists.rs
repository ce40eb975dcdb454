//! The write side's index of list members (`list_member_edges`, issue 46), read and kept by
//! list commands. A membership lasts while its follow does, and the lists stream does not
//! see a follow end; so a members call reads, under its owner's exclusive user lock, which of
//! the users it names the owner follows (`follow_edges`) and which are members now. Every
//! writer that ends a follow of the owner (an unfollow, a removal, a block either way) or
//! erases the owner or a member locks one of those users exclusively too, before any write,
//! so the two are ordered the same way in the log and in what each read.

use std::collections::HashMap;

use relations_domain::{ListEvent, ListId, ListServices, UserId};
use sqlx::PgConnection;

use crate::error::StoreError;
use crate::executor::Guard;

/// What one list command asks: its owner, its list, and the users it names.
#[derive(Debug)]
pub(crate) struct ListAsk {
    pub owner: UserId,
    pub list: ListId,
    pub named: Vec<UserId>,
}

/// One list as a group's decisions leave it: the named users the owner follows, the named
/// users in it, and how many members it has.
#[derive(Debug, Default)]
struct Seen {
    follows: Vec<UserId>,
    members: Vec<UserId>,
    count: i64,
}

/// The lists a group's commands are about, read under lock, and what the group changes.
#[derive(Debug, Default)]
pub(crate) struct ListGuard {
    lists: HashMap<ListId, Seen>,
    changes: Vec<ListEvent>,
}

impl ListGuard {
    /// What a command on `list` is decided with.
    pub fn services(&self, list: ListId) -> ListServices {
        let seen = self.lists.get(&list);
        ListServices {
            follows: seen.map(|s| s.follows.clone()).unwrap_or_default(),
            members: seen.map(|s| s.members.clone()).unwrap_or_default(),
        }
    }

    /// How many members `list` has, as the group leaves it.
    pub fn count(&self, list: ListId) -> i64 {
        self.lists.get(&list).map_or(0, |s| s.count)
    }
}

fn ids(users: &[UserId]) -> Vec<i64> {
    users.iter().map(|u| u.get()).collect()
}

fn users(ids: Vec<i64>) -> Result<Vec<UserId>, StoreError> {
    ids.into_iter()
        .map(|u| UserId::try_from(u).map_err(|e| StoreError::Corrupt(e.to_string())))
        .collect()
}

impl Guard<ListEvent> for ListGuard {
    type Ask = ListAsk;

    /// Reads each ask's named users' follows and memberships, and its list's size: one
    /// statement an ask (a group holds few list commands; the owner's lock is held already).
    /// Two commands on one list in a group share its entry: each named user's facts are
    /// facts of the list, whoever asked, so the entries merge.
    async fn lock(conn: &mut PgConnection, asks: Vec<ListAsk>) -> Result<Self, StoreError> {
        let mut guard = Self::default();
        for ask in asks {
            let (follows, members, count): (Vec<i64>, Vec<i64>, i64) = sqlx::query_as(
                "SELECT ARRAY(SELECT followee FROM follow_edges
                               WHERE follower = $1 AND followee = ANY($3)),
                        ARRAY(SELECT member FROM list_member_edges
                               WHERE owner = $1 AND list_id = $2 AND member = ANY($3)),
                        (SELECT count(*) FROM list_member_edges WHERE list_id = $2)",
            )
            .bind(ask.owner.get())
            .bind(ask.list.uuid())
            .bind(ids(&ask.named))
            .fetch_one(&mut *conn)
            .await?;
            let seen = guard.lists.entry(ask.list).or_default();
            for (known, found) in [(&mut seen.follows, follows), (&mut seen.members, members)] {
                for user in users(found)? {
                    if !known.contains(&user) {
                        known.push(user);
                    }
                }
            }
            seen.count = count;
        }
        Ok(guard)
    }

    fn decided(&mut self, events: &[ListEvent]) {
        for event in events {
            match event {
                ListEvent::ListMembersAdded { list, members, .. } => {
                    let seen = self.lists.entry(*list).or_default();
                    seen.members.extend(members);
                    seen.count += members.len() as i64;
                }
                ListEvent::ListMembersRemoved { list, members, .. } => {
                    let seen = self.lists.entry(*list).or_default();
                    seen.members.retain(|m| !members.contains(m));
                    seen.count -= members.len() as i64;
                }
                ListEvent::ListDeleted { list, .. } => {
                    self.lists.remove(list);
                }
                ListEvent::ListCreated { .. } | ListEvent::ListUpdated { .. } => {}
            }
        }
        self.changes.extend(events.iter().cloned());
    }

    /// Keeps the index as the group's events leave it, in their order.
    async fn write(self, conn: &mut PgConnection) -> Result<(), StoreError> {
        for event in self.changes {
            let (sql, owner, list, members) = match event {
                ListEvent::ListMembersAdded {
                    owner,
                    list,
                    members,
                } => (
                    "INSERT INTO list_member_edges (owner, member, list_id)
                     SELECT $1, unnest($3::bigint[]), $2 ON CONFLICT DO NOTHING",
                    owner,
                    list,
                    members,
                ),
                ListEvent::ListMembersRemoved {
                    owner,
                    list,
                    members,
                } => (
                    "DELETE FROM list_member_edges
                      WHERE owner = $1 AND list_id = $2 AND member = ANY($3)",
                    owner,
                    list,
                    members,
                ),
                ListEvent::ListDeleted { owner, list } => (
                    "DELETE FROM list_member_edges
                      WHERE owner = $1 AND list_id = $2 AND $3::bigint[] IS NOT NULL",
                    owner,
                    list,
                    Vec::new(),
                ),
                ListEvent::ListCreated { .. } | ListEvent::ListUpdated { .. } => continue,
            };
            sqlx::query(sql)
                .bind(owner.get())
                .bind(list.uuid())
                .bind(ids(&members))
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }
}

//! Lists (issue 46) and projector `lists`: every live list (`rm_lists`) and its members since
//! they were added (`rm_list_members`).
//!
//! **The fold is written once** ([`fold`] over [`ListTables`]): the projector's statements,
//! the replica's lists (`memory.rs`) and `verify` (which folds into the replica's tables) all
//! fold with it. A membership lasts while its follow does: an `Unfollowed` (of its own, of a
//! block, of an erasure's) ends the follower's memberships of the followee in every list of
//! theirs, at that event; a `UserErased` takes the user's lists and their memberships.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use relations_domain::{ListEvent, ListId, LogEvent};
use relations_store::log::RecordedEvent;
use sqlx::PgConnection;

use crate::error::ProjectionError;
use crate::relations::fold::{EdgeKind, RelationChange};
use crate::runtime::projector::Projector;

pub mod memory;
pub mod query;
pub mod verify;

/// The projector's name.
pub const NAME: &str = "lists";

/// What a fold of lists writes to; each reader of the log keeps its own.
pub trait ListTables {
    /// Makes a list.
    fn create(&mut self, list: ListId, owner: i64, title: &str, exclusive: bool, at: DateTime<Utc>);
    /// Renames a list, or changes whether it is exclusive.
    fn update(&mut self, list: ListId, title: &str, exclusive: bool);
    /// Deletes a list and its members.
    fn delete(&mut self, list: ListId);
    /// Adds `member` to `owner`'s live `list` since the time, unless a member (the first
    /// since stands); nothing when the list is not live.
    fn add(&mut self, list: ListId, owner: i64, member: i64, since: DateTime<Utc>);
    /// Removes `member` from `list`.
    fn remove(&mut self, list: ListId, member: i64);
    /// Ends `member`'s memberships of every list of `owner`'s (their follow ended).
    fn end(&mut self, owner: i64, member: i64);
    /// Takes `user`'s lists and their memberships of every list.
    fn erase(&mut self, user: i64);
}

/// Folds `event`, which happened `at`, into `tables`.
pub fn fold(tables: &mut impl ListTables, event: &LogEvent, at: DateTime<Utc>) {
    if let Some(user) = event.erased_user() {
        tables.erase(user.get());
        return;
    }
    let event = match event {
        LogEvent::Lists(event) => event,
        LogEvent::Relation(relation) => {
            if let RelationChange::End(EdgeKind::Follow, (owner, member)) =
                RelationChange::of(relation, at)
            {
                tables.end(owner, member);
            }
            return;
        }
        LogEvent::Post(_)
        | LogEvent::Thread(_)
        | LogEvent::Like(_)
        | LogEvent::Repost(_)
        | LogEvent::Bookmark(_)
        | LogEvent::Account(_)
        | LogEvent::Filters(_) => return,
    };
    match event {
        ListEvent::ListCreated {
            owner,
            list,
            title,
            exclusive,
            created_at,
        } => tables.create(*list, owner.get(), title, *exclusive, *created_at),
        ListEvent::ListUpdated {
            list,
            title,
            exclusive,
            ..
        } => tables.update(*list, title, *exclusive),
        ListEvent::ListDeleted { list, .. } => tables.delete(*list),
        ListEvent::ListMembersAdded {
            owner,
            list,
            members,
        } => {
            for member in members {
                tables.add(*list, owner.get(), member.get(), at);
            }
        }
        ListEvent::ListMembersRemoved { list, members, .. } => {
            for member in members {
                tables.remove(*list, member.get());
            }
        }
    }
}

/// See the module docs.
pub struct Lists;

#[async_trait]
impl Projector for Lists {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tables(&self) -> &'static [&'static str] {
        &["rm_lists", "rm_list_members"]
    }

    async fn apply_batch(
        &self,
        conn: &mut PgConnection,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        let mut statements = Statements::default();
        for event in events {
            fold(&mut statements, &event.event, event.occurred_at);
        }
        for statement in statements.0 {
            statement.run(conn).await?;
        }
        Ok(())
    }
}

/// One change to the tables, as a statement.
enum Statement {
    Create(ListId, i64, String, bool, DateTime<Utc>),
    Update(ListId, String, bool),
    Delete(ListId),
    Add(ListId, i64, i64, DateTime<Utc>),
    Remove(ListId, i64),
    /// Follows that ended, `(owner, member)`: a run of them, one statement.
    End(Vec<i64>, Vec<i64>),
    Erase(i64),
}

impl Statement {
    async fn run(self, conn: &mut PgConnection) -> Result<(), sqlx::Error> {
        let query = match self {
            Self::Create(list, owner, title, exclusive, at) => sqlx::query(
                "INSERT INTO rm_lists (list_id, owner, title, exclusive, created_at)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            )
            .bind(list.uuid())
            .bind(owner)
            .bind(title)
            .bind(exclusive)
            .bind(at),
            Self::Update(list, title, exclusive) => {
                sqlx::query("UPDATE rm_lists SET title = $2, exclusive = $3 WHERE list_id = $1")
                    .bind(list.uuid())
                    .bind(title)
                    .bind(exclusive)
            }
            Self::Delete(list) => sqlx::query(
                "WITH m AS (DELETE FROM rm_list_members WHERE list_id = $1)
                 DELETE FROM rm_lists WHERE list_id = $1",
            )
            .bind(list.uuid()),
            Self::Add(list, owner, member, since) => sqlx::query(
                "INSERT INTO rm_list_members (list_id, member, owner, since)
                 SELECT $1, $3, $2, $4 WHERE EXISTS (SELECT 1 FROM rm_lists
                                                     WHERE list_id = $1 AND owner = $2)
                 ON CONFLICT DO NOTHING",
            )
            .bind(list.uuid())
            .bind(owner)
            .bind(member)
            .bind(since),
            Self::Remove(list, member) => {
                sqlx::query("DELETE FROM rm_list_members WHERE list_id = $1 AND member = $2")
                    .bind(list.uuid())
                    .bind(member)
            }
            Self::End(owners, members) => sqlx::query(
                "DELETE FROM rm_list_members m USING unnest($1::bigint[], $2::bigint[]) AS e(o, u)
                  WHERE m.owner = e.o AND m.member = e.u",
            )
            .bind(owners)
            .bind(members),
            Self::Erase(user) => sqlx::query(
                "WITH m AS (DELETE FROM rm_list_members WHERE owner = $1 OR member = $1)
                 DELETE FROM rm_lists WHERE owner = $1",
            )
            .bind(user),
        };
        query.execute(conn).await.map(drop)
    }
}

/// The projector's fold, as statements in the batch's order.
#[derive(Default)]
struct Statements(Vec<Statement>);

impl ListTables for Statements {
    fn create(
        &mut self,
        list: ListId,
        owner: i64,
        title: &str,
        exclusive: bool,
        at: DateTime<Utc>,
    ) {
        self.0.push(Statement::Create(
            list,
            owner,
            title.to_owned(),
            exclusive,
            at,
        ));
    }
    fn update(&mut self, list: ListId, title: &str, exclusive: bool) {
        self.0
            .push(Statement::Update(list, title.to_owned(), exclusive));
    }
    fn delete(&mut self, list: ListId) {
        self.0.push(Statement::Delete(list));
    }
    fn add(&mut self, list: ListId, owner: i64, member: i64, since: DateTime<Utc>) {
        self.0.push(Statement::Add(list, owner, member, since));
    }
    fn remove(&mut self, list: ListId, member: i64) {
        self.0.push(Statement::Remove(list, member));
    }
    fn end(&mut self, owner: i64, member: i64) {
        // A batch's unfollows, most of its list statements, go in one statement a run.
        if let Some(Statement::End(owners, members)) = self.0.last_mut() {
            owners.push(owner);
            members.push(member);
        } else {
            self.0.push(Statement::End(vec![owner], vec![member]));
        }
    }
    fn erase(&mut self, user: i64) {
        self.0.push(Statement::Erase(user));
    }
}

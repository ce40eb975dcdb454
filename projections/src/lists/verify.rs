//! `verify`'s check of projector `lists`: every live list and every membership, field by
//! field, against the one fold in memory up to the projector's checkpoint.

use std::collections::BTreeSet;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use relations_store::log::RecordedEvent;
use sqlx::PgConnection;

use super::memory::ListsMemory;
use crate::error::ProjectionError;
use crate::runtime::verify::{diff, distinct, Check};

/// A list as compared: (id, owner, title, exclusive, created µs).
type ListCompared = (uuid::Uuid, i64, String, bool, i64);
/// A membership as compared: (list, member, owner, since µs).
type MemberCompared = (uuid::Uuid, i64, i64, i64);

/// `rm_lists` and `rm_list_members` against the fold.
#[derive(Debug, Default)]
pub struct ListsCheck {
    lists: ListsMemory,
}

impl ListsCheck {
    fn expected(&self) -> (BTreeSet<ListCompared>, BTreeSet<MemberCompared>) {
        let mut lists = BTreeSet::new();
        let mut members = BTreeSet::new();
        for (id, list) in self.lists.all() {
            let created = list.created_at.timestamp_micros();
            lists.insert((
                id.uuid(),
                list.owner,
                list.title.clone(),
                list.exclusive,
                created,
            ));
            for (&member, since) in &list.members {
                members.insert((id.uuid(), member, list.owner, since.timestamp_micros()));
            }
        }
        (lists, members)
    }
}

#[async_trait]
impl Check for ListsCheck {
    fn projector(&self) -> Option<&'static str> {
        Some(super::NAME)
    }

    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        self.lists.fold_all(event.occurred_at, &event.event);
        Ok(())
    }

    async fn compare(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<(), ProjectionError> {
        let (lists, members) = self.expected();
        let rows: Vec<(uuid::Uuid, i64, String, bool, DateTime<Utc>)> =
            sqlx::query_as("SELECT list_id, owner, title, exclusive, created_at FROM rm_lists")
                .fetch_all(&mut *conn)
                .await?;
        const LISTS: &str = "rm_lists (list, owner, title, exclusive, created_at)";
        let rows = rows
            .into_iter()
            .map(|(id, owner, title, exclusive, at)| {
                (id, owner, title, exclusive, at.timestamp_micros())
            })
            .collect();
        let actual = distinct(LISTS, rows, out);
        diff(LISTS, &lists, &actual, out);
        let rows: Vec<(uuid::Uuid, i64, i64, DateTime<Utc>)> =
            sqlx::query_as("SELECT list_id, member, owner, since FROM rm_list_members")
                .fetch_all(&mut *conn)
                .await?;
        const MEMBERS: &str = "rm_list_members (list, member, owner, since)";
        let rows = rows
            .into_iter()
            .map(|(id, member, owner, since)| (id, member, owner, since.timestamp_micros()))
            .collect();
        let actual = distinct(MEMBERS, rows, out);
        diff(MEMBERS, &members, &actual, out);
        Ok(())
    }
}

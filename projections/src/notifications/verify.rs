//! `verify`'s check of projector `notifications`: every cause, group, comment author and mute
//! against the fold in memory ([`super::model`]).

use std::collections::BTreeSet;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use relations_store::log::RecordedEvent;
use sqlx::PgConnection;
use uuid::Uuid;

use super::model::Model;
use crate::error::ProjectionError;
use crate::runtime::verify::{diff, distinct, Check};

/// A compared cause: (recipient, cause, group, actor, post, comment, tx, gp, at). The group
/// key names the type ([`super::change::Kind::of_group`]).
type CauseRow = (
    i64,
    String,
    String,
    i64,
    Option<Uuid>,
    Option<i32>,
    i64,
    i64,
    DateTime<Utc>,
);

/// A compared group: (recipient, group, kind, post, comment, count, actors, tx, gp, at,
/// place tx, place gp). Its `filtered` is compared apart: it must say what its key says.
type GroupRow = (
    i64,
    String,
    String,
    Option<Uuid>,
    Option<i32>,
    i64,
    Vec<i64>,
    i64,
    i64,
    DateTime<Utc>,
    i64,
    i64,
);

/// The notifications read model against the events.
#[derive(Debug, Default)]
pub struct NotificationsCheck {
    model: Model,
}

impl NotificationsCheck {
    fn expected_causes(&self) -> BTreeSet<CauseRow> {
        self.model
            .causes
            .values()
            .map(|c| {
                (
                    c.recipient,
                    c.cause.clone(),
                    c.group.clone(),
                    c.actor,
                    c.post,
                    c.comment,
                    c.position.transaction_id,
                    c.position.global_position,
                    c.at,
                )
            })
            .collect()
    }

    fn expected_groups(&self) -> BTreeSet<GroupRow> {
        self.model
            .groups()
            .into_iter()
            .map(|(g, place)| {
                (
                    g.recipient,
                    g.group,
                    g.kind.name().to_owned(),
                    g.post,
                    g.comment,
                    g.count,
                    g.actors,
                    g.position.transaction_id,
                    g.position.global_position,
                    g.at,
                    place.transaction_id,
                    place.global_position,
                )
            })
            .collect()
    }
}

#[async_trait]
impl Check for NotificationsCheck {
    fn projector(&self) -> Option<&'static str> {
        Some(super::NAME)
    }

    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        self.model.fold(event)
    }

    async fn compare(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<(), ProjectionError> {
        const CAUSES: &str =
            "notify_causes (recipient, cause, group, actor, post, comment, tx, gp, at)";
        let causes: Vec<CauseRow> = sqlx::query_as(
            "SELECT recipient, cause, grp, actor, post, comment, tx, gp, at FROM notify_causes",
        )
        .fetch_all(&mut *conn)
        .await?;
        let causes = distinct(CAUSES, causes, out);
        diff(CAUSES, &self.expected_causes(), &causes, out);
        let groups: BTreeSet<GroupRow> = sqlx::query_as(
            "SELECT recipient, grp, kind, post, comment, count, actors, tx, gp, latest_at,
                    place_tx, place_gp
               FROM notify_groups",
        )
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();
        diff(
            "notify_groups (recipient, group, kind, post, comment, count, actors, tx, gp, at, place)",
            &self.expected_groups(),
            &groups,
            out,
        );
        self.compare_policies(conn, out).await?;
        let comments: BTreeSet<(Uuid, i32, i64, i64)> =
            sqlx::query_as("SELECT post, n, author, post_author FROM notify_comments")
                .fetch_all(&mut *conn)
                .await?
                .into_iter()
                .collect();
        let expected: BTreeSet<(Uuid, i32, i64, i64)> = self
            .model
            .comments
            .iter()
            .map(|(&(p, n), &(a, pa))| (p, n, a, pa))
            .collect();
        diff(
            "notify_comments (post, n, author, post author)",
            &expected,
            &comments,
            out,
        );
        let mutes: BTreeSet<(i64, i64, Option<DateTime<Utc>>)> =
            sqlx::query_as("SELECT muter, muted, until FROM notify_mutes")
                .fetch_all(&mut *conn)
                .await?
                .into_iter()
                .collect();
        let expected: BTreeSet<(i64, i64, Option<DateTime<Utc>>)> = self
            .model
            .mutes
            .iter()
            .map(|(&(a, b), &u)| (a, b, u))
            .collect();
        diff("notify_mutes (muter, muted, until)", &expected, &mutes, out);
        let watchers: BTreeSet<(i64, i64)> =
            sqlx::query_as("SELECT author, watcher FROM notify_watchers")
                .fetch_all(&mut *conn)
                .await?
                .into_iter()
                .collect();
        diff(
            "notify_watchers (author, watcher)",
            &self.model.watchers,
            &watchers,
            out,
        );
        Ok(())
    }
}

impl NotificationsCheck {
    /// Issue 47: the notification policies, and each group's `filtered` (what the lists'
    /// index reads) against what its key says.
    async fn compare_policies(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<(), ProjectionError> {
        let misfiled: BTreeSet<(i64, String)> = sqlx::query_as(
            "SELECT recipient, grp FROM notify_groups
              WHERE filtered <> (grp LIKE '%|filtered')",
        )
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();
        diff(
            "notify_groups (recipient, group) whose filtered does not match the key",
            &BTreeSet::new(),
            &misfiled,
            out,
        );
        let policies: BTreeSet<(i64, String, String)> =
            sqlx::query_as("SELECT user_id, not_following, not_followers FROM notify_policies")
                .fetch_all(&mut *conn)
                .await?
                .into_iter()
                .collect();
        let expected: BTreeSet<(i64, String, String)> = (self.model.policies.iter())
            .map(|(&u, p)| {
                let (a, b) = (p.not_following.as_str(), p.not_followers.as_str());
                (u, a.to_owned(), b.to_owned())
            })
            .collect();
        diff(
            "notify_policies (user, not_following, not_followers)",
            &expected,
            &policies,
            out,
        );
        Ok(())
    }
}

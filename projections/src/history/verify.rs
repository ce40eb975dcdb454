//! `verify`'s check of projector `history`: one row per follow event up to its checkpoint,
//! equal field by field, and none of an erased user. (Rows of blocks and requests that an
//! older release wrote are not read: migration `20261128000033_as_of_from_the_log.sql`.)

use std::collections::BTreeSet;

use async_trait::async_trait;
use relations_store::log::RecordedEvent;
use sqlx::PgConnection;

use super::EdgeChange;
use crate::error::ProjectionError;
use crate::runtime::projector::erased_user;
use crate::runtime::verify::{diff, distinct, Check};

/// A row as compared: (tx, gp, subject, object, kind, present, at µs).
type Compared = (i64, i64, i64, i64, i16, bool, i64);

fn compared(c: &EdgeChange) -> Compared {
    (
        c.position.transaction_id,
        c.position.global_position,
        c.subject,
        c.object,
        c.kind as i16,
        c.present,
        c.at.timestamp_micros(),
    )
}

/// `rm_relation_history` against the events.
#[derive(Debug, Default)]
pub struct HistoryCheck {
    expected: BTreeSet<Compared>,
}

#[async_trait]
impl Check for HistoryCheck {
    fn projector(&self) -> Option<&'static str> {
        Some(super::NAME)
    }

    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        if let Some(user) = erased_user(event) {
            // No row of an erased user is left.
            self.expected.retain(|c| c.2 != user && c.3 != user);
        }
        if let Some(change) = EdgeChange::kept(event)? {
            self.expected.insert(compared(&change));
        }
        Ok(())
    }

    async fn compare(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<(), ProjectionError> {
        let rows: Vec<(i64, i64, i64, i64, i16, bool, chrono::DateTime<chrono::Utc>)> =
            sqlx::query_as(
                "SELECT tx, gp, subject, object, kind, present, at FROM rm_relation_history
                  WHERE kind = 0",
            )
            .fetch_all(conn)
            .await?;
        const WHAT: &str = "rm_relation_history (tx, gp, subject, object, kind, present, at)";
        let rows: Vec<Compared> = rows
            .into_iter()
            .map(|(tx, gp, s, o, kind, present, at)| {
                (tx, gp, s, o, kind, present, at.timestamp_micros())
            })
            .collect();
        let actual = distinct(WHAT, rows, out);
        diff(WHAT, &self.expected, &actual, out);
        Ok(())
    }
}

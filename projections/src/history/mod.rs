//! The relations' history. Peers keep the current graph only; this service keeps every fact,
//! so it can answer what no peer can:
//! - `as_of`: the relation between two users at any past moment, exact to the event: the
//!   pair's relation stream in the log, read up to the moment and folded with the one relation
//!   fold ([`EdgeChange::of`]); the last change of each edge in log order is its state. The
//!   log's primary key leads with the stream, so that is one index range scan per pair
//!   ([`query::relations_as_of`]). An erased user's pairs are `none` at every moment.
//! - `follower_changes`: who started and stopped following a user since a time, newest first:
//!   projector `history` keeps each follow's start and end, with its time and its place in the
//!   log (`rm_relation_history`; blocks and requests are read from the log, so it keeps none).
//!
//! One row per follow event, never updated: a rebuild writes the same rows, and `verify`
//! compares them with the events one to one. An erasure (`UserErased`) deletes every row of the
//! user: afterwards no follower change names them.

pub mod query;
pub mod verify;

use std::fmt::Write;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use relations_domain::{LogEvent, RelationEvent};
use relations_store::log::RecordedEvent;
use relations_store::LogPosition;
use sqlx::PgConnection;

use crate::error::ProjectionError;
use crate::relations::fold::{EdgeKind, RelationChange};
use crate::runtime::copy_out::{copy_timestamp, CopyOut};
use crate::runtime::projector::{erased_user, BulkFold, Projector};

/// The projector's name.
pub const NAME: &str = "history";

/// One change of one directed edge: a row of `rm_relation_history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EdgeChange {
    /// Where the event sits in the log.
    pub position: LogPosition,
    /// The edge's subject (follower, blocker, requester).
    pub subject: i64,
    /// The edge's object.
    pub object: i64,
    /// The fact.
    pub kind: EdgeKind,
    /// Whether the edge holds after the event.
    pub present: bool,
    /// When the event occurred.
    pub at: DateTime<Utc>,
}

impl EdgeChange {
    /// The change a relation event makes, if it changes a follow, a block or a request: as
    /// the relation fold reads it ([`RelationChange::of`]), kept as a fact instead of folded.
    pub fn of(event: &RelationEvent, position: LogPosition, at: DateTime<Utc>) -> Option<Self> {
        let (kind, (subject, object), present) = match RelationChange::of(event, at) {
            RelationChange::Begin(kind, pair, _) => (kind, pair, true),
            RelationChange::End(kind, pair) => (kind, pair, false),
            RelationChange::Mute(..)
            | RelationChange::Unmute(_)
            | RelationChange::Prefs(..)
            | RelationChange::Dismiss(..) => return None,
        };
        Some(Self {
            position,
            subject,
            object,
            kind,
            present,
            at,
        })
    }

    /// Whether `user` is the change's subject or object.
    pub fn names(&self, user: i64) -> bool {
        self.subject == user || self.object == user
    }

    /// The row projector `history` keeps of a log event: the change of a follow it makes, if
    /// any (`follower_changes` reads follows only).
    pub fn kept(event: &RecordedEvent) -> Result<Option<Self>, ProjectionError> {
        Ok(Self::of_recorded(event)?.filter(|c| c.kind == EdgeKind::Follow))
    }

    /// The change a log event makes, if any.
    pub fn of_recorded(event: &RecordedEvent) -> Result<Option<Self>, ProjectionError> {
        Ok(match &event.event {
            LogEvent::Relation(decoded) => Self::of(decoded, event.position, event.occurred_at),
            LogEvent::Post(_)
            | LogEvent::Thread(_)
            | LogEvent::Like(_)
            | LogEvent::Repost(_)
            | LogEvent::Bookmark(_)
            | LogEvent::Lists(_)
            | LogEvent::Filters(_)
            | LogEvent::Account(_) => None,
        })
    }
}

/// See the module docs.
pub struct History;

#[async_trait]
impl Projector for History {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tables(&self) -> &'static [&'static str] {
        &["rm_relation_history"]
    }

    /// History answers no command and gates no read-your-writes but its own.
    fn essential(&self) -> bool {
        false
    }

    fn bulk(&self) -> Option<Box<dyn BulkFold>> {
        Some(Box::<HistoryBulk>::default())
    }

    async fn apply_batch(
        &self,
        conn: &mut PgConnection,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        let mut changes: Vec<EdgeChange> = Vec::new();
        for event in events {
            if let Some(user) = erased_user(event) {
                changes.retain(|c| !c.names(user));
                // Both ends by index: `rm_relation_history_by_subject`, and the follower
                // changes' index (object first).
                sqlx::query("DELETE FROM rm_relation_history WHERE subject = $1 OR object = $1")
                    .bind(user)
                    .execute(&mut *conn)
                    .await?;
            }
            changes.extend(EdgeChange::kept(event)?);
        }
        write(conn, &changes).await
    }
}

/// Inserts `changes` in one statement (each event is folded once: the batch commits with the
/// checkpoint it advances).
async fn write(conn: &mut PgConnection, changes: &[EdgeChange]) -> Result<(), ProjectionError> {
    if changes.is_empty() {
        return Ok(());
    }
    let mut columns: (Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>) = Default::default();
    let (mut kinds, mut present, mut at) = (Vec::new(), Vec::new(), Vec::new());
    for c in changes {
        columns.0.push(c.subject);
        columns.1.push(c.object);
        columns.2.push(c.position.transaction_id);
        columns.3.push(c.position.global_position);
        kinds.push(c.kind as i16);
        present.push(c.present);
        at.push(c.at);
    }
    sqlx::query(
        "INSERT INTO rm_relation_history (subject, object, tx, gp, kind, present, at)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[],
                              $5::smallint[], $6::boolean[], $7::timestamptz[])",
    )
    .bind(&columns.0)
    .bind(&columns.1)
    .bind(&columns.2)
    .bind(&columns.3)
    .bind(&kinds)
    .bind(&present)
    .bind(&at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// A rebuild: every change, COPYed at once.
#[derive(Default)]
struct HistoryBulk {
    changes: Vec<EdgeChange>,
}

#[async_trait]
impl BulkFold for HistoryBulk {
    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        if let Some(user) = erased_user(event) {
            self.changes.retain(|c| !c.names(user));
        }
        self.changes.extend(EdgeChange::kept(event)?);
        Ok(())
    }

    fn write(self: Box<Self>, out: &CopyOut) -> Result<(), ProjectionError> {
        let mut rows =
            out.table("rm_relation_history (subject, object, tx, gp, kind, present, at)");
        for c in &self.changes {
            writeln!(
                rows,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                c.subject,
                c.object,
                c.position.transaction_id,
                c.position.global_position,
                c.kind as i16,
                c.present,
                copy_timestamp(c.at)
            )
            .expect("rows in memory");
        }
        Ok(())
    }
}

//! Relations as of a moment (the log's relation streams, folded), and a user's follower
//! changes (`rm_relation_history`).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use relations_domain::{Facts, Relation, UserId};
use relations_store::{log, LogPosition};
use sqlx::{PgPool, Row};

use super::EdgeChange;
use crate::relations::fold::EdgeKind;

/// `from`'s relation to each of `to` as it stood at `at`, in the order asked: the pair's
/// relation stream in the log, folded up to the last event that occurred by `at`
/// ([`EdgeChange::of`], the one relation fold): for every edge, the state its last change in
/// log order left (no change: absent). `muting` is false (mutes are not history). A pair with
/// an erased user is `none`. One index range scan per pair, one statement for the batch.
pub async fn relations_as_of(
    pool: &PgPool,
    from: UserId,
    to: &[UserId],
    at: DateTime<Utc>,
) -> Result<Vec<Relation>, sqlx::Error> {
    let facts = log::relation_streams_until(pool, from, to, at).await?;
    // (subject, object, kind) -> present, the last change in log order winning.
    let mut state: HashMap<(i64, i64, EdgeKind), bool> = HashMap::new();
    for (position, at, event) in &facts {
        if let Some(change) = EdgeChange::of(event, *position, *at) {
            state.insert((change.subject, change.object, change.kind), change.present);
        }
    }
    let has = |a: i64, b: i64, kind| state.get(&(a, b, kind)).copied().unwrap_or(false);
    Ok(to
        .iter()
        .map(|&to| {
            let (a, b) = (from.get(), to.get());
            let facts = Facts {
                following: has(a, b, EdgeKind::Follow),
                followed_by: has(b, a, EdgeKind::Follow),
                blocking: has(a, b, EdgeKind::Block),
                blocked_by: has(b, a, EdgeKind::Block),
                requested: has(a, b, EdgeKind::Request),
                requested_by: has(b, a, EdgeKind::Request),
            };
            Relation::new(from, to, facts)
        })
        .collect())
}

/// One start or end of a follow of the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerChange {
    /// The follower.
    pub user: UserId,
    /// Whether they started (`true`) or stopped following.
    pub followed: bool,
    /// When.
    pub at: DateTime<Utc>,
    /// Where the event sits in the log (the cursor's tie-break).
    pub position: LogPosition,
}

/// Where a page of follower changes resumes: strictly before this `(at, position)`.
pub type ChangeKey = (DateTime<Utc>, LogPosition);

/// Who started and stopped following `user` at or after `since`, newest first, strictly before
/// the key `before` (from the newest when none); one item per event.
pub async fn follower_changes(
    pool: &PgPool,
    user: UserId,
    since: DateTime<Utc>,
    before: Option<ChangeKey>,
    limit: i64,
) -> Result<Vec<FollowerChange>, sqlx::Error> {
    let (at, position) = before.unwrap_or((
        DateTime::<Utc>::MAX_UTC,
        LogPosition {
            transaction_id: i64::MAX,
            global_position: i64::MAX,
        },
    ));
    let rows = sqlx::query(
        "SELECT subject, present, at, tx, gp FROM rm_relation_history
          WHERE object = $1 AND kind = 0 AND at >= $2 AND (at, tx, gp) < ($3, $4, $5)
          ORDER BY at DESC, tx DESC, gp DESC LIMIT $6",
    )
    .bind(user.get())
    .bind(since)
    .bind(at)
    .bind(position.transaction_id)
    .bind(position.global_position)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|row| {
            let subject: i64 = row.try_get("subject")?;
            Ok(FollowerChange {
                user: UserId::try_from(subject).map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
                followed: row.try_get("present")?,
                at: row.try_get("at")?,
                position: LogPosition {
                    transaction_id: row.try_get("tx")?,
                    global_position: row.try_get("gp")?,
                },
            })
        })
        .collect()
}

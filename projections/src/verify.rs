//! `relations verify`: fold the log afresh in memory and compare every read model row by row.
//!
//! Everything is read in one REPEATABLE READ snapshot: the checkpoint and the rows it stands
//! for were committed together, so the read models are compared with a fold of the log up to
//! that checkpoint, and the write side's guard rows with a fold of every event in the snapshot.

use std::collections::{BTreeMap, BTreeSet};

use relations_domain::{RelationEvent, RelationPair};
use relations_store::log::read_after;
use relations_store::LogPosition;
use sqlx::{PgPool, Row};

use crate::error::ProjectionError;
use crate::projector::decode;

#[derive(Default)]
struct Fold {
    follows: BTreeSet<(i64, i64)>,
    blocks: BTreeSet<(i64, i64)>,
}

impl Fold {
    fn apply(&mut self, event: RelationEvent) {
        match event {
            RelationEvent::Followed { follower, followee } => {
                self.follows.insert((follower.get(), followee.get()));
            }
            RelationEvent::Unfollowed {
                follower, followee, ..
            } => {
                self.follows.remove(&(follower.get(), followee.get()));
            }
            RelationEvent::Blocked { blocker, blocked } => {
                self.blocks.insert((blocker.get(), blocked.get()));
            }
            RelationEvent::Unblocked { blocker, blocked } => {
                self.blocks.remove(&(blocker.get(), blocked.get()));
            }
        }
    }

    /// user -> (following, followers, friends), zero rows left out.
    fn counts(&self) -> BTreeMap<i64, (i64, i64, i64)> {
        let mut counts: BTreeMap<i64, (i64, i64, i64)> = BTreeMap::new();
        for &(a, b) in &self.follows {
            counts.entry(a).or_default().0 += 1;
            counts.entry(b).or_default().1 += 1;
            if self.follows.contains(&(b, a)) {
                counts.entry(a).or_default().2 += 1;
            }
        }
        counts
    }
}

fn diff<T: Ord + std::fmt::Debug + Clone>(
    what: &str,
    expected: &BTreeSet<T>,
    actual: &BTreeSet<T>,
    out: &mut Vec<String>,
) {
    for missing in expected.difference(actual) {
        out.push(format!("{what}: missing {missing:?}"));
    }
    for extra in actual.difference(expected) {
        out.push(format!("{what}: unexpected {extra:?}"));
    }
}

async fn pairs(
    conn: &mut sqlx::PgConnection,
    sql: &'static str,
) -> Result<BTreeSet<(i64, i64)>, sqlx::Error> {
    let rows = sqlx::query(sql).fetch_all(conn).await?;
    rows.iter()
        .map(|r| Ok((r.try_get::<i64, _>(0)?, r.try_get::<i64, _>(1)?)))
        .collect()
}

/// Every difference between the read models (and guard rows) and a fresh fold of the log;
/// empty when they agree.
pub async fn verify(pool: &PgPool) -> Result<Vec<String>, ProjectionError> {
    let mut tx = pool.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *tx)
        .await?;
    let checkpoint = sqlx::query("SELECT transaction_id, global_position FROM projector_checkpoints WHERE name = 'following'")
        .fetch_optional(&mut *tx)
        .await?
        .map(|row| -> Result<LogPosition, sqlx::Error> {
            Ok(LogPosition {
                transaction_id: row.try_get("transaction_id")?,
                global_position: row.try_get("global_position")?,
            })
        })
        .transpose()?
        .unwrap_or(LogPosition::START);

    let mut at_checkpoint = Fold::default();
    let mut everything = Fold::default();
    let mut after = LogPosition::START;
    loop {
        let batch = read_after(&mut tx, after, 5_000).await?;
        let Some(last) = batch.last() else { break };
        after = last.position;
        for event in &batch {
            if event.stream_type != RelationPair::TYPE {
                continue;
            }
            let decoded: RelationEvent = decode(event)?;
            everything.apply(decoded);
            if event.position <= checkpoint {
                at_checkpoint.apply(decoded);
            }
        }
    }
    // Events above the readers' horizon are in the snapshot too; the guard rows count them.
    let pending = sqlx::query(
        "SELECT payload::jsonb AS payload FROM events
          WHERE aggregate_type = 'relation' AND transaction_id >= pg_snapshot_xmin(pg_current_snapshot())
          ORDER BY transaction_id, global_position",
    )
    .fetch_all(&mut *tx)
    .await?;
    for row in &pending {
        let payload: serde_json::Value = row.try_get("payload")?;
        if let Ok(event) = serde_json::from_value::<RelationEvent>(payload) {
            everything.apply(event);
        }
    }

    let follows = pairs(&mut tx, "SELECT follower, followee FROM rm_follows").await?;
    let blocks = pairs(&mut tx, "SELECT blocker, blocked FROM rm_blocks").await?;
    let counts: BTreeSet<(i64, (i64, i64, i64))> = sqlx::query(
        "SELECT user_id, following, followers, friends FROM rm_follow_counts
          WHERE following <> 0 OR followers <> 0 OR friends <> 0",
    )
    .fetch_all(&mut *tx)
    .await?
    .iter()
    .map(|r| Ok((r.try_get(0)?, (r.try_get(1)?, r.try_get(2)?, r.try_get(3)?))))
    .collect::<Result<_, sqlx::Error>>()?;
    let guards: BTreeSet<(i64, i64)> =
        sqlx::query("SELECT user_id, following::bigint FROM follow_guard WHERE following <> 0")
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<_, sqlx::Error>>()?;

    tx.rollback().await?;
    let mut out = Vec::new();
    diff(
        "rm_follows (follower, followee)",
        &at_checkpoint.follows,
        &follows,
        &mut out,
    );
    diff(
        "rm_blocks (blocker, blocked)",
        &at_checkpoint.blocks,
        &blocks,
        &mut out,
    );
    let expected_counts: BTreeSet<_> = at_checkpoint.counts().into_iter().collect();
    diff(
        "rm_follow_counts (user, (following, followers, friends))",
        &expected_counts,
        &counts,
        &mut out,
    );
    let expected_guards: BTreeSet<(i64, i64)> = everything
        .counts()
        .into_iter()
        .filter(|(_, c)| c.0 != 0)
        .map(|(u, c)| (u, c.0))
        .collect();
    diff(
        "follow_guard (user, following)",
        &expected_guards,
        &guards,
        &mut out,
    );
    Ok(out)
}

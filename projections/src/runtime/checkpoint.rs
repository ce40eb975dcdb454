//! Projector checkpoints (`projector_checkpoints`): where each projector stands in the log.
//! A checkpoint is advanced in the same transaction as the read-model rows it stands for.

use relations_store::LogPosition;
use sqlx::{PgConnection, PgExecutor};

/// A projector's checkpoint (the start of the log when it never ran).
pub async fn read<'e>(
    executor: impl PgExecutor<'e>,
    name: &str,
) -> Result<LogPosition, sqlx::Error> {
    let position: Option<LogPosition> = sqlx::query_as(
        "SELECT transaction_id, global_position FROM projector_checkpoints WHERE name = $1",
    )
    .bind(name)
    .fetch_optional(executor)
    .await?;
    Ok(position.unwrap_or(LogPosition::START))
}

/// Makes sure `name` has a checkpoint row (at the start of the log).
pub async fn register<'e>(executor: impl PgExecutor<'e>, name: &str) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO projector_checkpoints (name) VALUES ($1) ON CONFLICT DO NOTHING")
        .bind(name)
        .execute(executor)
        .await?;
    Ok(())
}

/// Locks `name`'s checkpoint row for the caller's transaction and returns it; `None` when
/// another transaction holds it (`SKIP LOCKED`: the caller does not wait).
pub async fn try_lock(
    conn: &mut PgConnection,
    name: &str,
) -> Result<Option<LogPosition>, sqlx::Error> {
    sqlx::query_as(
        "SELECT transaction_id, global_position FROM projector_checkpoints
          WHERE name = $1 FOR UPDATE SKIP LOCKED",
    )
    .bind(name)
    .fetch_optional(conn)
    .await
}

/// Moves `name`'s checkpoint to `to`, counting `applied` more events.
pub async fn advance(
    conn: &mut PgConnection,
    name: &str,
    to: LogPosition,
    applied: usize,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE projector_checkpoints
            SET transaction_id = $2, global_position = $3,
                events_applied = events_applied + $4, updated_at = now()
          WHERE name = $1",
    )
    .bind(name)
    .bind(to.transaction_id)
    .bind(to.global_position)
    .bind(applied as i64)
    .execute(conn)
    .await?;
    Ok(())
}

/// Every checkpoint, by name: the log watch's one look at where all readers stand.
pub async fn read_all<'e>(
    executor: impl PgExecutor<'e>,
) -> Result<Vec<(String, LogPosition)>, sqlx::Error> {
    let rows: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT name, transaction_id, global_position FROM projector_checkpoints ORDER BY name",
    )
    .fetch_all(executor)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(name, transaction_id, global_position)| {
            let position = LogPosition {
                transaction_id,
                global_position,
            };
            (name, position)
        })
        .collect())
}

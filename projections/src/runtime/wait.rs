//! Read-your-writes: waiting until projectors have applied a client's `min_position`.

use std::time::{Duration, Instant};

use relations_store::LogPosition;
use sqlx::PgPool;

/// Waits until every projector in `names` has applied `position`, polling, for at most
/// `timeout`. True when they have.
pub async fn wait_for(
    pool: &PgPool,
    names: &[&str],
    position: LogPosition,
    timeout: Duration,
) -> Result<bool, sqlx::Error> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(2);
    loop {
        let behind: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM unnest($1::text[]) AS n(name)
               LEFT JOIN projector_checkpoints c USING (name)
              WHERE (COALESCE(c.transaction_id, 0), COALESCE(c.global_position, 0)) < ($2, $3)",
        )
        .bind(names)
        .bind(position.transaction_id)
        .bind(position.global_position)
        .fetch_one(pool)
        .await?;
        if behind == 0 {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

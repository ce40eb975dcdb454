//! `relations replay`: the event log as JSON lines on stdout, in commit order, filtered.

use std::io::Write;
use std::time::Duration;

use relations_store::LogPosition;

use crate::config::DatabaseConfig;

/// `relations replay` filters; all optional, all combined.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// Only events of this type (repeatable): Followed, Unfollowed, Blocked, Unblocked, ...
    #[arg(long = "type")]
    types: Vec<String>,
    /// Only events whose data names this user.
    #[arg(long)]
    user: Option<i64>,
    /// Only events that occurred at or after this time (RFC 3339).
    #[arg(long)]
    since: Option<chrono::DateTime<chrono::Utc>>,
    /// Only events that occurred before this time (RFC 3339).
    #[arg(long)]
    until: Option<chrono::DateTime<chrono::Utc>>,
    /// Only events after this position (exclusive).
    #[arg(long)]
    after: Option<LogPosition>,
    /// Only events up to this position (inclusive).
    #[arg(long)]
    up_to: Option<LogPosition>,
    #[command(flatten)]
    database: DatabaseConfig,
}

impl ReplayArgs {
    /// Whether `event` passes every filter but `up_to`.
    fn keeps(&self, event: &relations_store::log::RecordedEvent) -> bool {
        (self.types.is_empty() || self.types.contains(&event.event_type))
            && self.user.is_none_or(|u| event.mentions(u))
            && self.since.is_none_or(|t| event.occurred_at >= t)
            && self.until.is_none_or(|t| event.occurred_at < t)
    }
}

/// Prints every kept event committed when replay starts.
pub async fn run(args: ReplayArgs) -> anyhow::Result<()> {
    let pool = args.database.connect().await?;
    let mut conn = pool.acquire().await?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut after = args.after.unwrap_or(LogPosition::START);
    let mut written = 0u64;
    // Everything committed when replay starts is printed: when the horizon (held back by any
    // open writer in the cluster) stops short of it, wait for it to move, up to a minute.
    let committed: Option<i64> = sqlx::query_scalar("SELECT max(global_position) FROM events")
        .fetch_one(&mut *conn)
        .await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    'log: loop {
        let batch = relations_store::log::read_after(&mut conn, after, 5_000).await?;
        let Some(last) = batch.last() else {
            if held_back(&mut conn, after, committed, deadline).await? {
                continue;
            }
            break;
        };
        after = last.position;
        for event in &batch {
            if args.up_to.is_some_and(|end| event.position > end) {
                break 'log;
            }
            if args.keeps(event) {
                serde_json::to_writer(&mut out, &event.envelope())?;
                out.write_all(b"\n")?;
                written += 1;
            }
        }
    }
    out.flush()?;
    tracing::info!(events = written, "replayed");
    Ok(())
}

/// Whether events committed before replay started lie beyond `after` but below the horizon
/// still: then waits a moment and says to read again, until `deadline`.
async fn held_back(
    conn: &mut sqlx::PgConnection,
    after: LogPosition,
    committed: Option<i64>,
    deadline: std::time::Instant,
) -> anyhow::Result<bool> {
    let behind: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM events
                  WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
                    AND global_position <= $3)",
    )
    .bind(after.transaction_id.to_string())
    .bind(after.global_position)
    .bind(committed.unwrap_or(0))
    .fetch_one(&mut *conn)
    .await?;
    if behind && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        return Ok(true);
    }
    if behind {
        tracing::warn!("an open transaction held the log back for a minute; stopping here");
    }
    Ok(false)
}

//! `relations replay`: the event log as JSON lines on stdout, in commit order, filtered.

use std::io::Write;
use std::time::Duration;

use relations_store::log::{self, Replay};
use relations_store::LogPosition;

use crate::config::{DatabaseConfig, KeysConfig};

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
    #[command(flatten)]
    keys: KeysConfig,
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

/// Prints every kept event committed when replay starts (waiting up to a minute for a
/// horizon that an open writer elsewhere in the cluster holds back), content opened (`null`
/// with `"erased": true` where the author's key is gone).
pub async fn run(args: ReplayArgs) -> anyhow::Result<()> {
    let master_key = args.keys.master_key()?;
    let pool = args.database.connect().await?;
    let keys = relations_store::Keyring::new(master_key, pool.clone());
    let mut conn = pool.acquire().await?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let after = args.after.unwrap_or(LogPosition::START);
    let mut replay = Replay::start(&mut conn, after, Duration::from_secs(60)).await?;
    let mut written = 0u64;
    'log: while let Some(mut batch) = replay.next_batch(&mut conn).await? {
        log::reveal(&keys, &mut batch).await?;
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

//! `relations replay`: the event log in commit order, as JSON lines on stdout (filtered), or
//! as Parquet files in a directory, appended to incrementally (`--format parquet --out DIR`).

mod columns;
mod parquet_dir;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use relations_store::log::{self, Replay};
use relations_store::LogPosition;

use crate::config::{DatabaseConfig, KeysConfig};

/// The output's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// One JSON envelope per line on stdout (docs/events.md).
    JsonLines,
    /// Parquet files under `--out`, partitioned by day, appended to incrementally
    /// (docs/analytics.md); the whole log, no filters.
    Parquet,
}

/// `relations replay`: the format, and filters (JSON lines only); all optional, all combined.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The output: JSON lines on stdout, or Parquet files in `--out`.
    #[arg(long, value_enum, default_value = "json-lines")]
    format: Format,
    /// With `--format parquet`: the directory (made if missing; a second run appends).
    #[arg(long, required_if_eq("format", "parquet"))]
    out: Option<PathBuf>,
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
        (self.types.is_empty() || self.types.iter().any(|t| t == event.event_type()))
            && self.user.is_none_or(|u| event.mentions(u))
            && self.since.is_none_or(|t| event.occurred_at >= t)
            && self.until.is_none_or(|t| event.occurred_at < t)
    }

    /// Whether any filter is set.
    fn filtered(&self) -> bool {
        !self.types.is_empty()
            || self.user.is_some()
            || self.since.is_some()
            || self.until.is_some()
            || self.after.is_some()
            || self.up_to.is_some()
    }
}

/// Runs the replay in the format asked for.
pub async fn run(args: ReplayArgs) -> anyhow::Result<()> {
    match (args.format, &args.out) {
        (Format::JsonLines, None) => json_lines(args).await,
        (Format::Parquet, Some(out)) if !args.filtered() => {
            let keys = args.keys.master_key()?;
            let pool = args.database.connect().await?;
            let keys = relations_store::Keyring::new(keys, pool.clone());
            let mut conn = pool.acquire().await?;
            let written = parquet_dir::run(&mut conn, &keys, out).await?;
            tracing::info!(
                events = written.events,
                forgotten = written.forgotten,
                "replayed to parquet"
            );
            Ok(())
        }
        (Format::Parquet, _) => anyhow::bail!(
            "--format parquet writes the whole log to --out DIR, appending to what is there: \
             filter it in your query instead"
        ),
        (Format::JsonLines, Some(_)) => {
            anyhow::bail!("--out is for --format parquet; JSON lines go to stdout")
        }
    }
}

/// Prints every kept event committed when replay starts (waiting up to a minute for a
/// horizon that an open writer elsewhere in the cluster holds back), content opened (`null`
/// with `"erased": true` where the author's key is gone).
async fn json_lines(args: ReplayArgs) -> anyhow::Result<()> {
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

//! The `relations` command line.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use relations_domain::UserId;
use relations_store::db::{self, PoolSettings};
use tokio_util::sync::CancellationToken;

use crate::auth::JwtKeys;
use crate::config::{Config, DatabaseConfig, FeedConfig, JwtConfig};
use crate::startup::{cancel_on_signal, spawn_projectors, Application};
use relations_store::LogPosition;

/// relations: an event-sourced service for follows, blocks and the follow feed.
#[derive(Debug, Parser)]
#[command(name = "relations", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP API (migrates first).
    Serve(Box<Config>),
    /// Apply pending database migrations and exit.
    Migrate(DatabaseConfig),
    /// Run the projectors alone (no HTTP), until SIGTERM.
    Project {
        /// Run only this projector.
        #[arg(long)]
        only: Option<String>,
        /// Redis, for projector `cache` (left out when unset).
        #[arg(long = "redis-url", env = "REDIS_URL", hide_env_values = true)]
        redis_url: Option<String>,
        /// Prefix of every Redis key.
        #[arg(long, env = "RELATIONS_REDIS_PREFIX", default_value = "relations:")]
        redis_prefix: String,
        #[command(flatten)]
        feed: FeedConfig,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Rebuild a projector's read model from the start of the log into shadow tables, while the
    /// live one keeps serving, then swap atomically.
    Rebuild {
        /// The projector (`following`, `feed`).
        name: String,
        #[command(flatten)]
        feed: FeedConfig,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Print the event log as JSON lines (the versioned envelope), in commit order.
    Replay(ReplayArgs),
    /// Fold the log afresh and compare every read model row by row; exit 1 on a difference.
    Verify {
        #[command(flatten)]
        feed: FeedConfig,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Print a development JWT for a user.
    Token {
        /// The user id (`sub`).
        #[arg(long)]
        user: UserId,
        /// Grant the admin role.
        #[arg(long)]
        admin: bool,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl_secs: u64,
        #[command(flatten)]
        jwt: JwtConfig,
    },
}

/// `relations replay` filters; all optional, all combined.
#[derive(Debug, clap::Args)]
struct ReplayArgs {
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

/// Parses the command line and runs the command; errors are logged and turn into exit code 1.
pub async fn main() -> ExitCode {
    crate::telemetry::init();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "failed");
            eprintln!("relations: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(config) => {
            let app = Application::build(*config).await?;
            let shutdown = CancellationToken::new();
            tokio::spawn(cancel_on_signal(shutdown.clone()));
            app.run(shutdown).await
        }
        Command::Migrate(database) => {
            let pool = connect(&database).await?;
            db::migrate(&pool).await.context("applying migrations")?;
            tracing::info!("migrations applied");
            Ok(())
        }
        Command::Project {
            only,
            redis_url,
            redis_prefix,
            feed,
            database,
        } => {
            let pool = connect(&database).await?;
            let caches = match redis_url {
                Some(url) => Some(relations_projections::Caches::new(
                    crate::redis_conn::Redis::new(&url, &redis_prefix)?,
                    feed.projector(),
                )),
                None => None,
            };
            let projectors: Vec<_> = relations_projections::all(feed.projector(), caches.as_ref())
                .into_iter()
                .filter(|p| only.as_deref().is_none_or(|name| p.name() == name))
                .collect();
            if projectors.is_empty() {
                anyhow::bail!("no projector named {:?}", only.unwrap_or_default());
            }
            let runners = projectors
                .into_iter()
                .map(|p| relations_projections::Runner::new(pool.clone(), p))
                .collect();
            let shutdown = CancellationToken::new();
            tokio::spawn(cancel_on_signal(shutdown.clone()));
            for task in spawn_projectors(&pool, runners, shutdown) {
                task.await?;
            }
            Ok(())
        }
        Command::Replay(args) => replay(args).await,
        Command::Rebuild {
            name,
            feed,
            database,
        } => {
            let projector =
                relations_projections::by_name(&name, feed.projector()).with_context(|| {
                    let names: Vec<_> = relations_projections::all(feed.projector(), None)
                        .iter()
                        .map(|p| p.name())
                        .collect();
                    format!("no projector named {name:?}; there are {names:?}")
                })?;
            let pool = connect(&database).await?;
            let bar = indicatif::ProgressBar::new(0)
                .with_style(indicatif::ProgressStyle::with_template(
                "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} events ({per_sec}, eta {eta})",
            )?);
            bar.set_message(format!("rebuilding {name}"));
            let report =
                relations_projections::rebuild::rebuild(&pool, projector, |done, total| {
                    bar.set_length(total);
                    bar.set_position(done);
                })
                .await?;
            bar.finish();
            tracing::info!(projector = %name, events = report.events, position = %report.position, "rebuilt and swapped in");
            Ok(())
        }
        Command::Verify { feed, database } => {
            let pool = connect(&database).await?;
            let differences =
                relations_projections::verify::verify(&pool, feed.projector()).await?;
            if differences.is_empty() {
                println!("read models agree with the log");
                Ok(())
            } else {
                for difference in &differences {
                    println!("{difference}");
                }
                anyhow::bail!(
                    "{} differences between the read models and the log",
                    differences.len()
                )
            }
        }
        Command::Token {
            user,
            admin,
            ttl_secs,
            jwt,
        } => {
            let token =
                JwtKeys::new(&jwt.jwt_secret).issue(user, admin, Duration::from_secs(ttl_secs))?;
            println!("{token}");
            Ok(())
        }
    }
}

async fn connect(database: &DatabaseConfig) -> anyhow::Result<sqlx::PgPool> {
    let settings = PoolSettings {
        max_connections: database.db_max_connections,
        ..PoolSettings::default()
    };
    db::connect(&database.database_url, &settings)
        .await
        .context("connecting to PostgreSQL (DATABASE_URL)")
}

async fn replay(args: ReplayArgs) -> anyhow::Result<()> {
    use std::io::Write;
    let pool = connect(&args.database).await?;
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
                continue;
            }
            if behind {
                tracing::warn!("an open transaction held the log back for a minute; stopping here");
            }
            break;
        };
        after = last.position;
        for event in &batch {
            if args.up_to.is_some_and(|end| event.position > end) {
                break 'log;
            }
            let keep = (args.types.is_empty() || args.types.contains(&event.event_type))
                && args.user.is_none_or(|u| event.mentions(u))
                && args.since.is_none_or(|t| event.occurred_at >= t)
                && args.until.is_none_or(|t| event.occurred_at < t);
            if keep {
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

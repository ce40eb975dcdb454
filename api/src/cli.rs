//! The `relations` command line.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use relations_domain::UserId;
use relations_store::db::{self, PoolSettings};
use tokio_util::sync::CancellationToken;

use crate::auth::JwtKeys;
use crate::config::{Config, DatabaseConfig, FeedConfig, JwtConfig, KafkaConfig};
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
    /// Run the projectors alone (no HTTP), until SIGTERM: from PostgreSQL's log (with the Kafka
    /// relay when KAFKA_BROKERS is set), or from the Kafka topic as a consumer group.
    Project {
        /// Run only these projectors (repeatable): following, feed, cache, feed_cache,
        /// kafka_relay.
        #[arg(long)]
        only: Vec<String>,
        /// Where the events come from.
        #[arg(long, value_enum, default_value_t = Source::Postgres)]
        source: Source,
        /// The consumer group, with `--source kafka` (each projector joins `GROUP.NAME`).
        #[arg(long, env = "KAFKA_GROUP", default_value = "relations")]
        group: String,
        #[command(flatten)]
        kafka: KafkaConfig,
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
        /// Compare with the whole log, not with each projector's checkpoint (for read models
        /// fed from Kafka, which keep offsets instead; run it once they have caught up).
        #[arg(long)]
        whole_log: bool,
        /// Only this projector's read models (repeatable): following, feed.
        #[arg(long)]
        only: Vec<String>,
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

/// Where `relations project` reads events from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Source {
    /// PostgreSQL's log, in global order (every projector; the relay too).
    Postgres,
    /// The Kafka topic, as a consumer group (partition-safe projectors: following).
    Kafka,
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
            source,
            group,
            kafka,
            redis_url,
            redis_prefix,
            feed,
            database,
        } => {
            let pool = connect(&database).await?;
            let caches = match redis_url {
                Some(url) => Some(relations_projections::Caches::new(
                    relations_projections::redis::Redis::new(&url, &redis_prefix)?,
                    feed.settings(),
                )),
                None => None,
            };
            let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
            let projectors: Vec<_> = relations_projections::all(feed.settings(), caches.as_ref())
                .into_iter()
                .filter(|p| wanted(p.name()))
                .collect();
            let shutdown = CancellationToken::new();
            tokio::spawn(cancel_on_signal(shutdown.clone()));
            match source {
                Source::Kafka => {
                    let settings = kafka
                        .settings()
                        .context("--source kafka needs KAFKA_BROKERS")?;
                    let projectors: Vec<_> = projectors
                        .into_iter()
                        // Named ones are checked by the consumer; by default, the safe ones.
                        .filter(|p| {
                            !only.is_empty()
                                || relations_kafka::consumer::PARTITION_SAFE.contains(&p.name())
                        })
                        .collect();
                    anyhow::ensure!(!projectors.is_empty(), "no projector named {only:?}");
                    let mut tasks = Vec::new();
                    for projector in projectors {
                        let consumer = relations_kafka::KafkaProjector::new(
                            pool.clone(),
                            projector,
                            &settings,
                            &group,
                        )?;
                        tasks.push(tokio::spawn(consumer.run(shutdown.clone())));
                    }
                    for task in tasks {
                        task.await??;
                    }
                }
                Source::Postgres => {
                    let relay = match kafka.settings() {
                        Some(settings) if wanted(relations_kafka::relay::NAME) => {
                            Some(relations_kafka::Relay::new(pool.clone(), &settings)?)
                        }
                        _ => None,
                    };
                    anyhow::ensure!(
                        !projectors.is_empty() || relay.is_some(),
                        "no projector named {only:?}"
                    );
                    let runners = projectors
                        .into_iter()
                        .map(|p| relations_projections::Runner::new(pool.clone(), p))
                        .collect();
                    for task in spawn_projectors(&pool, runners, relay, shutdown) {
                        task.await?;
                    }
                }
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
                relations_projections::by_name(&name, feed.settings()).with_context(|| {
                    let names: Vec<_> = relations_projections::all(feed.settings(), None)
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
            let report = relations_projections::runtime::rebuild::rebuild(
                &pool,
                projector,
                |done, total| {
                    bar.set_length(total);
                    bar.set_position(done);
                },
            )
            .await?;
            bar.finish();
            tracing::info!(projector = %name, events = report.events, position = %report.position, "rebuilt and swapped in");
            Ok(())
        }
        Command::Verify {
            whole_log,
            only,
            feed,
            database,
        } => {
            let pool = connect(&database).await?;
            let scope = relations_projections::runtime::verify::Scope {
                whole_log,
                projectors: only,
            };
            let differences = relations_projections::verify(&pool, feed.settings(), &scope).await?;
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

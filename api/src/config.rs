//! Configuration, read once from the environment (SPEC.md's table) with typed defaults.
//!
//! Each group is a clap `Args` so that every subcommand takes only what it needs: `token`
//! needs the JWT secret, not a database.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use relations_domain::UserId;

/// Where PostgreSQL is.
#[derive(Debug, Clone, Args)]
pub struct DatabaseConfig {
    /// PostgreSQL: event store and read models.
    #[arg(long = "database-url", env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: String,
    /// Upper bound on the shared pool's connections.
    #[arg(long, env = "RELATIONS_DB_MAX_CONNECTIONS", default_value_t = 32)]
    pub db_max_connections: u32,
}

impl DatabaseConfig {
    /// The pool every command and the server use (the one place a pool is made from settings).
    pub async fn connect(&self) -> anyhow::Result<sqlx::PgPool> {
        self.pool(&self.database_url, true)
            .await
            .context("connecting to PostgreSQL (DATABASE_URL)")
    }

    /// The pool `serve`'s reads use: the hot standby at `read_url` when one is set (sessions
    /// in recovery are what it is for), else `primary` itself.
    pub async fn connect_reads(
        &self,
        read_url: Option<&str>,
        primary: &sqlx::PgPool,
    ) -> anyhow::Result<sqlx::PgPool> {
        match read_url {
            Some(url) => self
                .pool(url, false)
                .await
                .context("connecting to PostgreSQL (DATABASE_READ_URL)"),
            None => Ok(primary.clone()),
        }
    }

    async fn pool(&self, url: &str, primary_only: bool) -> Result<sqlx::PgPool, sqlx::Error> {
        let settings = relations_store::db::PoolSettings {
            max_connections: self.db_max_connections,
            primary_only,
            ..Default::default()
        };
        relations_store::db::connect(url, &settings).await
    }
}

/// Where Redis is: `serve` needs it (rate limiter and caches, so it is required there);
/// `project` runs projector `cache` only when it is set.
#[derive(Debug, Clone, Args)]
pub struct RedisConfig {
    /// Redis: rate limiter and caches (`serve` requires it; `project` leaves projector `cache`
    /// out when unset).
    #[arg(long = "redis-url", env = "REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// Prefix of every Redis key this instance writes (lets deployments and tests share a Redis).
    #[arg(long, env = "RELATIONS_REDIS_PREFIX", default_value = "relations:")]
    pub redis_prefix: String,
}

impl RedisConfig {
    /// A client, when a URL is set.
    pub fn connect(&self) -> anyhow::Result<Option<relations_projections::redis::Redis>> {
        self.redis_url
            .as_deref()
            .map(|url| {
                relations_projections::redis::Redis::new(url, &self.redis_prefix)
                    .context("REDIS_URL")
            })
            .transpose()
    }
}

/// The HS256 key that signs and checks tokens.
#[derive(Clone, Args)]
pub struct JwtConfig {
    /// HS256 key. Never printed.
    #[arg(
        long = "jwt-secret",
        env = "RELATIONS_JWT_SECRET",
        hide_env_values = true
    )]
    pub jwt_secret: String,
}

/// The shortest HS256 key the service starts with (SPEC, "Hardening").
pub const JWT_SECRET_MIN_BYTES: usize = 32;

impl JwtConfig {
    /// The key; one shorter than [`JWT_SECRET_MIN_BYTES`] refuses to start, naming the
    /// variable and never showing the value.
    pub fn secret(&self) -> anyhow::Result<&str> {
        anyhow::ensure!(
            self.jwt_secret.len() >= JWT_SECRET_MIN_BYTES,
            "RELATIONS_JWT_SECRET must be at least {JWT_SECRET_MIN_BYTES} bytes \
             (`openssl rand -hex 32` makes one)"
        );
        Ok(&self.jwt_secret)
    }
}

impl std::fmt::Debug for JwtConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JwtConfig { jwt_secret: <redacted> }")
    }
}

/// What every command of the read side run from the CLI (`project`, `rebuild`, `verify`)
/// needs: the database, the content's keys and the feed's settings.
#[derive(Debug, Clone, Args)]
pub struct ReadSideConfig {
    #[command(flatten)]
    feed: FeedConfig,
    #[command(flatten)]
    fans: FanConfig,
    #[command(flatten)]
    database: DatabaseConfig,
    #[command(flatten)]
    keys: KeysConfig,
}

impl ReadSideConfig {
    /// The pool, the keyring over it and the projectors' settings.
    pub async fn connect(
        &self,
    ) -> anyhow::Result<(
        sqlx::PgPool,
        relations_store::Keyring,
        relations_projections::Settings,
    )> {
        let master_key = self.keys.master_key()?;
        let pool = self.database.connect().await?;
        let keys = relations_store::Keyring::new(master_key, pool.clone());
        Ok((pool, keys, projector_settings(self.feed, self.fans)))
    }
}

/// The master key of the content's envelope encryption (issue 25): it wraps every user's data
/// key, so every process that writes or reads post and comment content needs it.
#[derive(Clone, Args)]
pub struct KeysConfig {
    /// 64 hex digits (32 bytes; `openssl rand -hex 32`). Never printed.
    #[arg(
        long = "master-key",
        env = "RELATIONS_MASTER_KEY",
        hide_env_values = true
    )]
    pub master_key: String,
}

impl std::fmt::Debug for KeysConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeysConfig { master_key: <redacted> }")
    }
}

impl KeysConfig {
    /// The master key; a malformed one refuses to start, with a message that never shows it.
    pub fn master_key(&self) -> anyhow::Result<relations_store::MasterKey> {
        self.master_key
            .parse()
            .map_err(|e: relations_store::keys::BadMasterKey| {
                anyhow::anyhow!("RELATIONS_MASTER_KEY: {e}")
            })
    }

    /// The keyring that looks data keys up on `pool`.
    pub fn keyring(&self, pool: &sqlx::PgPool) -> anyhow::Result<relations_store::Keyring> {
        Ok(relations_store::Keyring::new(
            self.master_key()?,
            pool.clone(),
        ))
    }
}

/// How the feed projector pushes and caps (every process that runs or rebuilds it needs the
/// same values).
#[derive(Debug, Clone, Copy, Args)]
pub struct FeedConfig {
    /// Authors with at least this many followers are pulled, not pushed.
    #[arg(long, env = "RELATIONS_BIG_V_THRESHOLD", default_value_t = 5000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub big_v_threshold: u32,
    /// Entries kept per pushed inbox.
    #[arg(long, env = "RELATIONS_FEED_INBOX_CAP", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub feed_inbox_cap: u32,
}

impl FeedConfig {
    /// The feed projector's settings.
    pub fn settings(self) -> relations_projections::feed::Settings {
        relations_projections::feed::Settings {
            big_v_threshold: i64::from(self.big_v_threshold),
            inbox_cap: i64::from(self.feed_inbox_cap),
        }
    }
}

/// How projector `following` keeps followers (every process that runs or rebuilds it needs the
/// same value).
#[derive(Debug, Clone, Copy, Args)]
pub struct FanConfig {
    /// An account with at least this many followers has them kept in a table of its own
    /// (seed 001's routes; issue 48).
    #[arg(long, env = "RELATIONS_FAN_TABLE_THRESHOLD", default_value_t = 100_000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub fan_table_threshold: u32,
}

/// Every projector's settings, from their parts of the configuration.
pub fn projector_settings(feed: FeedConfig, fans: FanConfig) -> relations_projections::Settings {
    relations_projections::Settings {
        feed: feed.settings(),
        relations: relations_projections::relations::Settings {
            fan_table_threshold: i64::from(fans.fan_table_threshold),
        },
    }
}

/// Where the event log is published (and, for `project --source kafka`, read back).
#[derive(Debug, Clone, Args)]
pub struct KafkaConfig {
    /// Kafka brokers (`host:port,...`); unset, no relay runs.
    #[arg(long, env = "KAFKA_BROKERS")]
    pub kafka_brokers: Option<String>,
    /// The topic; created at start when missing.
    #[arg(long, env = "KAFKA_TOPIC", default_value = "relations.events")]
    pub kafka_topic: String,
    /// Partitions of the topic when the relay creates it (the most consumers a group can use).
    #[arg(long, env = "KAFKA_PARTITIONS", default_value_t = 8,
          value_parser = clap::value_parser!(i32).range(1..))]
    pub kafka_partitions: i32,
}

impl KafkaConfig {
    /// The settings, when brokers are configured.
    pub fn settings(&self) -> Option<relations_kafka::KafkaSettings> {
        self.kafka_brokers
            .as_ref()
            .map(|brokers| relations_kafka::KafkaSettings {
                brokers: brokers.clone(),
                topic: self.kafka_topic.clone(),
                partitions: self.kafka_partitions,
            })
    }
}

/// Everything `serve` needs.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// PostgreSQL.
    #[command(flatten)]
    pub database: DatabaseConfig,
    /// A hot standby of `DATABASE_URL` (optional) for the reads that go to PostgreSQL:
    /// timelines, feed pages, comments, likes lists, `as_of`, follower changes, the CSV export,
    /// the lists' fallback, and the graph replica's load and log tail. `min_position` then
    /// waits until the standby has replayed the position. Unset, the primary serves them.
    #[arg(
        long = "database-read-url",
        env = "DATABASE_READ_URL",
        hide_env_values = true
    )]
    pub database_read_url: Option<String>,
    /// Token signing.
    #[command(flatten)]
    pub jwt: JwtConfig,
    /// The master key sealing post and comment content.
    #[command(flatten)]
    pub keys: KeysConfig,
    /// Redis: rate limiter and caches.
    #[command(flatten)]
    pub redis: RedisConfig,
    /// Kafka: where the log is published.
    #[command(flatten)]
    pub kafka: KafkaConfig,
    /// Listen address.
    #[arg(long, env = "RELATIONS_HTTP_ADDR", default_value = "127.0.0.1:8080")]
    pub http_addr: SocketAddr,
    /// Rule 3: how many users one user may follow.
    #[arg(long, env = "RELATIONS_FOLLOW_LIMIT", default_value_t = 1000)]
    pub follow_limit: u32,
    /// Commands are decided in groups, one transaction each: how many groups run at once.
    #[arg(long, env = "RELATIONS_COMMAND_WORKERS", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub command_workers: u16,
    /// The longest a command waits for its answer, queue and commit included; a group
    /// transaction that overruns it is abandoned with its connection (closed, not reused) and
    /// its commands are answered 503 `UNAVAILABLE` with Retry-After (a retry under the same
    /// Idempotency-Key replays or decides afresh).
    #[arg(long, env = "RELATIONS_COMMAND_DEADLINE_MS", default_value_t = 5_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub command_deadline_ms: u64,
    /// Rule 7: token bucket size per user.
    #[arg(long, env = "RELATIONS_RATE_CAPACITY", default_value_t = 100)]
    pub rate_capacity: u32,
    /// Rule 7: tokens added per second (a decimal).
    #[arg(long, env = "RELATIONS_RATE_REFILL_PER_SEC", default_value_t = 1.0)]
    pub rate_refill_per_sec: f64,
    /// The feed's push/pull threshold and inbox cap.
    #[command(flatten)]
    pub feed: FeedConfig,
    /// Where an account's followers are kept once they are many.
    #[command(flatten)]
    pub fans: FanConfig,
    /// Posts each instance holds in memory per author, for feed pages and `new_count`
    /// answered without PostgreSQL (issue 28); 0 reads every feed page from PostgreSQL.
    #[arg(long, env = "RELATIONS_FEED_MEMORY_PER_AUTHOR", default_value_t = 32)]
    pub feed_memory_per_author: u32,
    /// Posts each instance holds in memory in all (the newest); 0 holds none.
    #[arg(long, env = "RELATIONS_FEED_MEMORY_POSTS", default_value_t = 4_000_000)]
    pub feed_memory_posts: u32,
    /// A directory where the in-memory graph's snapshot is kept (issue 48): an instance
    /// starts from it in seconds and replays the log from its position; unset, none is
    /// written and the graph loads from the read model.
    #[arg(long, env = "RELATIONS_GRAPH_SNAPSHOT_DIR")]
    pub graph_snapshot_dir: Option<std::path::PathBuf>,
    /// How often the graph's snapshot is written while the graph moves, in seconds.
    #[arg(long, env = "RELATIONS_GRAPH_SNAPSHOT_EVERY_S", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub graph_snapshot_every_s: u64,
    /// Comma-separated ids whose posts make the recommended feed.
    #[arg(
        long,
        env = "RELATIONS_RECOMMENDED_AUTHORS",
        value_delimiter = ',',
        default_value = ""
    )]
    pub recommended_authors: Vec<RecommendedAuthor>,
    /// Run the projectors inside `serve` (turn off when `relations project` runs them).
    #[arg(long, env = "RELATIONS_RUN_PROJECTORS", default_value_t = true, action = clap::ArgAction::Set)]
    pub run_projectors: bool,
    /// How long a query with `min_position` waits for the read models before 503 `NOT_CAUGHT_UP`.
    #[arg(long, env = "RELATIONS_CATCH_UP_WAIT_MS", default_value_t = 3_000)]
    pub catch_up_wait_ms: u64,
    /// How long an essential projector may keep failing before `/readyz` answers 503.
    #[arg(long, env = "RELATIONS_STUCK_AFTER_MS", default_value_t = 30_000)]
    pub stuck_after_ms: u64,
    /// How long a request may take before it is answered 503.
    #[arg(long, env = "RELATIONS_REQUEST_TIMEOUT_MS", default_value_t = 10_000)]
    pub request_timeout_ms: u64,
    /// How long a client may take to send a request's headers before its connection is closed
    /// (slow clients must not hold the service's sockets).
    #[arg(
        long,
        env = "RELATIONS_HEADER_READ_TIMEOUT_MS",
        default_value_t = 5_000
    )]
    pub header_read_timeout_ms: u64,
    /// Most client connections open at once; beyond it new ones wait in the listen backlog.
    #[arg(long, env = "RELATIONS_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub max_connections: usize,
    /// How long committed events may wait behind an open transaction (the log's horizon)
    /// before projectors report the state `held` and `/readyz` fails.
    #[arg(long, env = "RELATIONS_HELD_AFTER_MS", default_value_t = 10_000)]
    pub held_after_ms: u64,
    /// Most live streams (feed and notifications together) one user holds open on an
    /// instance; one more is 429 `TOO_MANY_STREAMS`.
    #[arg(long, env = "RELATIONS_STREAMS_PER_USER", default_value_t = 5)]
    pub streams_per_user: usize,
}

impl Config {
    /// The request deadline.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    /// How command workers run: how many groups at once, and the command deadline.
    pub fn workers(&self) -> relations_store::Workers {
        relations_store::Workers {
            count: usize::from(self.command_workers),
            deadline: Duration::from_millis(self.command_deadline_ms),
        }
    }

    /// How many posts the replica holds for the feed.
    pub fn feed_memory(&self) -> relations_projections::feed::held::timelines::Caps {
        relations_projections::feed::held::timelines::Caps {
            per_author: self.feed_memory_per_author as usize,
            total: self.feed_memory_posts as usize,
        }
    }

    /// Where and how often the graph's snapshot is written, if anywhere.
    pub fn graph_snapshots(&self) -> Option<relations_projections::replica::SnapshotConfig> {
        let dir = self.graph_snapshot_dir.clone()?;
        Some(relations_projections::replica::SnapshotConfig {
            dir,
            every: std::time::Duration::from_secs(self.graph_snapshot_every_s),
        })
    }

    /// The recommended authors' ids.
    pub fn recommended(&self) -> Vec<UserId> {
        self.recommended_authors
            .iter()
            .filter_map(|a| a.0)
            .collect()
    }
}

/// One entry of `RELATIONS_RECOMMENDED_AUTHORS` (empty entries are ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecommendedAuthor(pub Option<UserId>);

impl std::str::FromStr for RecommendedAuthor {
    type Err = relations_domain::UserIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            Ok(Self(None))
        } else {
            s.parse().map(|id| Self(Some(id)))
        }
    }
}

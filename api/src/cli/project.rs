//! `relations project`: the projectors alone (no HTTP), until SIGTERM, fed from PostgreSQL's
//! log or from the Kafka topic.

use std::sync::Arc;

use anyhow::Context;
use relations_projections::Projector;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::config::{KafkaConfig, ReadSideConfig, RedisConfig};
use crate::startup::{cancel_on_signal, spawn_projectors};

/// `relations project` arguments.
#[derive(Debug, clap::Args)]
pub struct ProjectArgs {
    /// Run only these projectors (repeatable): following, feed, history, engagement,
    /// feed_cache, likes_cache, kafka_relay.
    #[arg(long)]
    only: Vec<String>,
    /// Where the events come from.
    #[arg(long, value_enum, default_value_t = Source::Postgres)]
    source: Source,
    /// The consumer group, with `--source kafka` (each projector joins `GROUP.NAME`).
    #[arg(long, env = "KAFKA_GROUP", default_value = "relations")]
    group: String,
    /// Who assigns the partitions, with `--source kafka`: the broker's group coordinator, or
    /// (the fallback) advisory locks in PostgreSQL.
    #[arg(long, env = "RELATIONS_KAFKA_COORDINATOR", value_enum, default_value_t = Coordinator::Broker)]
    coordinator: Coordinator,
    #[command(flatten)]
    kafka: KafkaConfig,
    /// Redis, for projector `cache` (left out when unset).
    #[command(flatten)]
    redis: RedisConfig,
    #[command(flatten)]
    read_side: ReadSideConfig,
}

/// Who assigns a Kafka consumer group's partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Coordinator {
    /// The broker's group coordinator (Kafka's consumer group protocol).
    Broker,
    /// Session advisory locks in PostgreSQL.
    Postgres,
}

/// Where `relations project` reads events from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Source {
    /// PostgreSQL's log, in global order (every projector; the relay too).
    Postgres,
    /// The Kafka topic, as a consumer group (partition-safe projectors: following).
    Kafka,
}

impl ProjectArgs {
    /// Whether `--only` lets projector `name` run.
    fn wanted(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name)
    }
}

/// Runs the chosen projectors until a signal.
pub async fn run(args: ProjectArgs) -> anyhow::Result<()> {
    let (pool, keys, settings) = args.read_side.connect().await?;
    let caches = args
        .redis
        .connect()?
        .map(|redis| relations_projections::Caches::new(redis, settings.feed));
    let projectors: Vec<_> = relations_projections::all(settings, &keys, caches.as_ref())
        .into_iter()
        .filter(|p| args.wanted(p.name()))
        .collect();
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    match args.source {
        Source::Kafka => from_kafka(&args, pool, projectors, shutdown).await,
        Source::Postgres => from_postgres(&args, pool, projectors, shutdown).await,
    }
}

/// Each projector as a consumer in group `GROUP.NAME`.
async fn from_kafka(
    args: &ProjectArgs,
    pool: PgPool,
    projectors: Vec<Arc<dyn Projector>>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let only = &args.only;
    let settings = args
        .kafka
        .settings()
        .context("--source kafka needs KAFKA_BROKERS")?;
    let projectors: Vec<_> = projectors
        .into_iter()
        // Named ones are checked by the consumer; by default, the safe ones.
        .filter(|p| {
            !only.is_empty() || relations_kafka::consumer::PARTITION_SAFE.contains(&p.name())
        })
        .collect();
    anyhow::ensure!(!projectors.is_empty(), "no projector named {only:?}");
    let mut tasks = Vec::new();
    for projector in projectors {
        let coordinator = match args.coordinator {
            Coordinator::Broker => relations_kafka::Coordinator::Broker,
            Coordinator::Postgres => relations_kafka::Coordinator::Postgres,
        };
        let consumer = relations_kafka::KafkaProjector::new(
            pool.clone(),
            projector,
            &settings,
            &args.group,
            coordinator,
        )?;
        tasks.push(tokio::spawn(consumer.run(shutdown.clone())));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// Runners over PostgreSQL's log, with the Kafka relay when brokers are set.
async fn from_postgres(
    args: &ProjectArgs,
    pool: PgPool,
    projectors: Vec<Arc<dyn Projector>>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    // One read of the log for the process's runners and relay.
    let log = relations_projections::SharedLog::default();
    let relay = match args.kafka.settings() {
        Some(settings) if args.wanted(relations_kafka::relay::NAME) => {
            Some(relations_kafka::Relay::new(pool.clone(), &settings)?.sharing(log.clone()))
        }
        _ => None,
    };
    anyhow::ensure!(
        !projectors.is_empty() || relay.is_some(),
        "no projector named {:?}",
        args.only
    );
    let runners = relations_projections::Runner::all(&pool, &log, projectors);
    let wakeup = relations_projections::Wakeup::listen(pool.clone(), shutdown.clone());
    for task in spawn_projectors(wakeup, runners, relay, shutdown) {
        task.await?;
    }
    Ok(())
}

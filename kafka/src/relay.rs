//! The relay: publishes every event of the log to a Kafka topic, in log order, keyed by stream.
//!
//! Each event goes out as the versioned envelope `relations replay` prints (`relations.event/1`),
//! keyed by `"{stream type}:{stream id}"`, so a stream's events share a partition and stay in
//! order; the producer is idempotent (`acks=all`), so retries inside it neither reorder nor
//! double them. The relay's checkpoint (`projector_checkpoints`, name `kafka_relay`) advances
//! only once the broker acknowledged every event up to it: after a crash or a broker outage it
//! publishes again from there, so the topic holds every event at least once and consumers
//! de-duplicate by event id (or by stream version, as the projectors here do).
//!
//! The relay never holds a PostgreSQL transaction while it waits for the broker: an open
//! transaction would hold back the log horizon of every reader in the cluster for as long as
//! the broker is away. It reads batches in autocommit mode and takes a session-level advisory
//! lock, which needs no transaction, so that only one relay publishes at a time.
//! The lock's session ends itself after [`LOCK_IDLE`] idle, so that a relay frozen between
//! statements while it holds the lock cannot keep the others from publishing for good (the
//! fault trial freezes one).

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use relations_projections::runtime::tail::Ended;
use relations_projections::runtime::{
    checkpoint, AfterFailure, Backoff, Health, LogTail, Progress, TailLoop,
};
use relations_projections::{SharedLog, Wakeup};
use relations_store::faults;
use sqlx::{PgConnection, PgPool};
use tokio_util::sync::CancellationToken;

/// How long the relay waits for a wake-up before it looks anyway.
const POLL: Duration = Duration::from_millis(500);

/// How long the session holding the relay's lock may stay idle before PostgreSQL ends it
/// (and the lock with it): longer than one step's wait for the broker (`message.timeout.ms`).
/// A relay whose broker stays away longer (its backoff grows to 30 s) may lose the lock to
/// another and take it again later; at-least-once holds either way.
pub const LOCK_IDLE: Duration = Duration::from_secs(20);

/// How the session holding the relay's lock names itself in `pg_stat_activity`, before the
/// process id.
pub const SESSION_NAME: &str = "relations relay pid";

/// The relay's name: its checkpoint row, its line in the admin endpoint and the metrics.
pub const NAME: &str = "kafka_relay";

/// Where and how the log is published.
#[derive(Debug, Clone)]
pub struct KafkaSettings {
    /// `bootstrap.servers`.
    pub brokers: String,
    /// The topic.
    pub topic: String,
    /// Partitions of the topic when the relay creates it.
    pub partitions: i32,
}

/// Why a relay step did not publish.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// PostgreSQL failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// The broker refused or did not acknowledge in time.
    #[error("kafka: {0}")]
    Kafka(#[from] rdkafka::error::KafkaError),
    /// A fail point's error (issue 45; only in builds with fail points).
    #[error(transparent)]
    Injected(#[from] faults::Injected),
}

/// Creates the topic unless it exists (SPEC.md: created at start when missing).
pub async fn ensure_topic(settings: &KafkaSettings) -> anyhow::Result<()> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &settings.brokers)
        .create()?;
    let topic = NewTopic::new(
        &settings.topic,
        settings.partitions,
        TopicReplication::Fixed(-1),
    );
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    for result in admin.create_topics([&topic], &options).await? {
        match result {
            Ok(_) => tracing::info!(topic = %settings.topic, "topic created"),
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((topic, code)) => anyhow::bail!("creating topic {topic}: {code}"),
        }
    }
    Ok(())
}

/// Publishes the log to Kafka; see the module docs.
#[derive(Clone)]
pub struct Relay {
    pool: PgPool,
    producer: FutureProducer,
    settings: Arc<KafkaSettings>,
    topic: Arc<str>,
    health: Arc<Health>,
    batch_size: i64,
    /// The log as this process's readers read it.
    log: SharedLog,
}

impl Relay {
    /// A relay on `pool` publishing to `settings`' topic (nothing is connected yet).
    pub fn new(pool: PgPool, settings: &KafkaSettings) -> anyhow::Result<Self> {
        let producer: FutureProducer = ClientConfig::new()
            .set("bootstrap.servers", &settings.brokers)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("max.in.flight.requests.per.connection", "5")
            .set("linger.ms", "5")
            .set("message.timeout.ms", "15000")
            .create()?;
        Ok(Self {
            pool,
            producer,
            topic: settings.topic.as_str().into(),
            settings: Arc::new(settings.clone()),
            health: Arc::default(),
            batch_size: 1000,
            log: SharedLog::default(),
        })
    }

    /// The relay reading the log through `log`, the window the process's runners share.
    pub fn sharing(mut self, log: SharedLog) -> Self {
        self.log = log;
        self
    }

    /// This relay's health, for the admin endpoint and `/readyz`.
    pub fn health(&self) -> Arc<Health> {
        self.health.clone()
    }

    /// Publishes the next batch after the checkpoint and advances it; how many were published.
    #[tracing::instrument(name = "relay.step", skip_all, fields(events))]
    async fn step(&self, conn: &mut PgConnection) -> Result<usize, RelayError> {
        let after = checkpoint::read(&mut *conn, NAME).await?;
        self.health.at(after);
        let events = self.log.batch(&mut *conn, after, self.batch_size).await?;
        let Some(last) = events.last().map(|e| e.position) else {
            return Ok(0);
        };
        let records: Vec<(String, Vec<u8>, String)> = events
            .iter()
            .map(|event| {
                let payload = serde_json::to_vec(&event.envelope()).expect("an envelope encodes");
                (event.stream_key(), payload, event.event_id.to_string())
            })
            .collect();
        let sends = records.iter().map(|(key, payload, event_id)| {
            let headers = OwnedHeaders::new().insert(Header {
                key: "event_id",
                value: Some(event_id.as_str()),
            });
            let record = FutureRecord::to(&self.topic)
                .key(key.as_str())
                .payload(payload.as_slice())
                .headers(headers);
            self.producer.send(record, Duration::from_secs(5))
        });
        for result in join_all(sends).await {
            result.map_err(|(error, _)| error)?;
        }
        faults::point(faults::RELAY_AFTER_PUBLISH).await?;
        // Every event up to `last` is acknowledged: only now may the checkpoint pass them.
        checkpoint::advance(conn, NAME, last, events.len()).await?;
        self.health.at(last);
        tracing::Span::current().record("events", events.len());
        metrics::counter!("relations_projector_events_total", "projector" => NAME)
            .increment(events.len() as u64);
        Ok(events.len())
    }

    /// A connection holding the relay's advisory lock, once this instance gets it.
    async fn lock(&self, shutdown: &CancellationToken) -> Option<PgConnection> {
        loop {
            let attempt = async {
                let mut conn = self.pool.acquire().await?.detach();
                checkpoint::register(&mut conn, NAME).await?;
                // One lock per schema: deployments that share a database keep their own relay.
                let locked: bool = sqlx::query_scalar(
                    "SELECT pg_try_advisory_lock(hashtext(current_schema() || ':kafka_relay'), 0)",
                )
                .fetch_one(&mut conn)
                .await?;
                if !locked {
                    return Ok(None);
                }
                // A relay frozen while it holds the lock (SIGSTOP, a VM paused, a GC-like
                // stall) would hold it for as long as its TCP connection lives, and no other
                // relay would publish. An idle session ends after LOCK_IDLE, which frees the
                // lock for another; the frozen one's next statement fails and it takes the
                // lock again (or finds it elsewhere). The name says which process publishes.
                sqlx::query(
                    "SELECT set_config('idle_session_timeout', $1, false),
                            set_config('application_name', $2, false)",
                )
                .bind(format!("{}ms", LOCK_IDLE.as_millis()))
                .bind(format!("{SESSION_NAME} {}", std::process::id()))
                .execute(&mut conn)
                .await?;
                Ok::<_, sqlx::Error>(Some(conn))
            };
            match attempt.await {
                Ok(Some(conn)) => return Some(conn),
                Ok(None) => self.health.stepped("Elsewhere".into()),
                Err(error) => {
                    self.health.failed(&error);
                    tracing::warn!(%error, "relay cannot reach PostgreSQL");
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return None,
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }

    /// Publishes until `shutdown`: straight on while there is work, else waiting for a wake-up
    /// or the poll interval; after a failure (the broker away), backing off up to 30 s and
    /// publishing again from the checkpoint ([`TailLoop`]).
    pub async fn run(self, wakeup: Wakeup, shutdown: CancellationToken) {
        tracing::info!(topic = %self.topic, "kafka relay started");
        let mut backoff = Backoff::default();
        // The topic first, however long the broker takes to appear.
        while let Err(error) = ensure_topic(&self.settings).await {
            self.health.failed(&error);
            let retry_in = backoff.pause();
            tracing::error!(
                error = format!("{error:#}"),
                ?retry_in,
                "cannot create the topic"
            );
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(retry_in) => {}
            }
        }
        // The relay reports no held horizon (it waits for the next wake-up instead).
        let mut tail_loop = TailLoop::new(POLL, POLL);
        while let Some(conn) = self.lock(&shutdown).await {
            let mut tail = Publisher { relay: &self, conn };
            if tail_loop.run(&mut tail, &wakeup, &shutdown).await == Ended::Shutdown {
                break;
            }
        }
        tracing::info!("kafka relay stopped");
    }
}

/// The relay as the tail loop steps it: on the connection that holds its advisory lock.
struct Publisher<'a> {
    relay: &'a Relay,
    conn: PgConnection,
}

#[async_trait::async_trait]
impl LogTail for Publisher<'_> {
    type Error = RelayError;

    async fn step(&mut self) -> Result<Progress, RelayError> {
        let step = self.relay.step(&mut self.conn).await;
        let health = &self.relay.health;
        match &step {
            Ok(published) => health.stepped(format!("Published({published})")),
            Err(_) => health.stepped("Failed".into()),
        }
        Ok(match step? {
            0 => Progress::Idle,
            _ => Progress::Moved(Duration::ZERO),
        })
    }

    fn health(&self) -> &Health {
        &self.relay.health
    }

    fn failed(&mut self, error: &RelayError, retry_in: Duration) -> AfterFailure {
        metrics::counter!("relations_projector_errors_total", "projector" => NAME).increment(1);
        tracing::error!(%error, ?retry_in, "relay step failed");
        match error {
            // The lock may have gone with the connection: take it again.
            RelayError::Database(_) => AfterFailure::Restart,
            RelayError::Kafka(_) | RelayError::Injected(_) => AfterFailure::Retry,
        }
    }

    /// The session holds the relay's lock and may have been left mid-statement: a new one.
    fn after_panic(&mut self) -> AfterFailure {
        AfterFailure::Restart
    }
}

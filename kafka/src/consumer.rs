//! Projectors fed from the Kafka topic instead of PostgreSQL's log, as one consumer group:
//! `relations project --source kafka`. The write side stays on PostgreSQL; read models spread
//! over as many processes as the topic has partitions.
//!
//! Exactly-once effect, whatever rebalances and crashes do: each message is applied in one
//! PostgreSQL transaction that also moves the partition's next offset (`kafka_offsets`) and the
//! stream's last applied version (`kafka_stream_versions`). A message below the stored offset
//! was applied already (a rebalance or a restart handed it out again); an event not above its
//! stream's version is a duplicate the relay published twice. Both are skipped. Kafka's own
//! committed offset only says where to resume reading, and is written after PostgreSQL's.
//!
//! Only projectors whose rows are partition-safe may run here: `following` is (every fact of a
//! pair is one stream, so one partition; counters only add). `feed` numbers posts in the log's
//! global order, which a partitioned topic does not have, so it reads PostgreSQL.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::message::{BorrowedMessage, Message};
use relations_projections::Projector;
use relations_store::log::RecordedEvent;
use sqlx::{PgConnection, PgPool};
use tokio_util::sync::CancellationToken;

use crate::relay::KafkaSettings;

/// The projectors that may consume the topic (see the module docs).
pub const PARTITION_SAFE: &[&str] = &["following"];

/// Why a message was not applied; it is tried again.
#[derive(Debug, thiserror::Error)]
pub enum ConsumeError {
    /// PostgreSQL failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// The projector failed.
    #[error(transparent)]
    Projection(#[from] relations_projections::ProjectionError),
    /// The message is not an envelope this build reads.
    #[error("message at {partition}/{offset}: {error}")]
    Unreadable {
        /// Its partition.
        partition: i32,
        /// Its offset.
        offset: i64,
        /// What is wrong with it.
        error: String,
    },
}

/// What applying one message did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Folded into the read model.
    Applied,
    /// Below the partition's stored offset: applied before.
    SeenOffset,
    /// Not above its stream's last version: a duplicate.
    Duplicate,
}

/// One projector consuming the topic in a consumer group.
pub struct KafkaProjector {
    pool: PgPool,
    projector: Arc<dyn Projector>,
    consumer: StreamConsumer,
    /// Who this is in `kafka_offsets`: the group and the projector.
    name: String,
}

impl KafkaProjector {
    /// `projector` consuming `settings`' topic in consumer group `group`.
    pub fn new(
        pool: PgPool,
        projector: Arc<dyn Projector>,
        settings: &KafkaSettings,
        group: &str,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(
            PARTITION_SAFE.contains(&projector.name()),
            "projector {} cannot consume a partitioned topic; these can: {PARTITION_SAFE:?}",
            projector.name()
        );
        let group = format!("{group}.{}", projector.name());
        let consumer: StreamConsumer = ClientConfig::new()
            .set("bootstrap.servers", &settings.brokers)
            .set("group.id", &group)
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .set("session.timeout.ms", "10000")
            .set("heartbeat.interval.ms", "1000")
            .create()?;
        consumer.subscribe(&[&settings.topic])?;
        Ok(Self {
            pool,
            projector,
            consumer,
            name: group,
        })
    }

    /// Consumes until `shutdown`; a message that fails is tried again with backoff, never
    /// skipped.
    pub async fn run(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let name = self.projector.name();
        tracing::info!(projector = name, group = %self.name, "consuming the topic");
        loop {
            let message = tokio::select! {
                _ = shutdown.cancelled() => break,
                message = self.consumer.recv() => message,
            };
            let message = match message {
                Ok(message) => message,
                Err(error) => {
                    tracing::warn!(%error, "kafka consumer");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            };
            let mut backoff = Duration::from_millis(100);
            loop {
                match self.apply(&message).await {
                    Ok(outcome) => {
                        if outcome == Applied::Applied {
                            metrics::counter!("relations_projector_events_total", "projector" => name)
                                .increment(1);
                        }
                        break;
                    }
                    Err(error) => {
                        metrics::counter!("relations_projector_errors_total", "projector" => name)
                            .increment(1);
                        tracing::error!(%error, retry_in = ?backoff, "applying a message failed");
                        tokio::select! {
                            _ = shutdown.cancelled() => return Ok(()),
                            _ = tokio::time::sleep(backoff) => {}
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(30));
                    }
                }
            }
            // Where to resume reading; PostgreSQL's offsets decide what was applied.
            if let Err(error) = self.consumer.commit_message(&message, CommitMode::Async) {
                tracing::debug!(%error, "offset commit to kafka failed (harmless)");
            }
        }
        tracing::info!(projector = name, "consumer stopped");
        Ok(())
    }

    /// Applies one message in one transaction with its offset and its stream's version.
    pub async fn apply(&self, message: &BorrowedMessage<'_>) -> Result<Applied, ConsumeError> {
        let mut tx = self.pool.begin().await?;
        let result = self.apply_in(&mut tx, message).await;
        // Every path ends the transaction explicitly (see the runner's note on the horizon).
        match result {
            Ok(Applied::Applied | Applied::Duplicate) => tx.commit().await?,
            Ok(Applied::SeenOffset) | Err(_) => {
                let _ = tx.rollback().await;
            }
        }
        result
    }

    async fn apply_in(
        &self,
        tx: &mut PgConnection,
        message: &BorrowedMessage<'_>,
    ) -> Result<Applied, ConsumeError> {
        let (topic, partition, offset) = (message.topic(), message.partition(), message.offset());
        sqlx::query(
            "INSERT INTO kafka_offsets (consumer, topic, partition) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
        )
        .bind(&self.name)
        .bind(topic)
        .bind(partition)
        .execute(&mut *tx)
        .await?;
        // Locked: two consumers of one partition during a rebalance take turns, and the second
        // finds the offset moved.
        let next: i64 = sqlx::query_scalar(
            "SELECT next_offset FROM kafka_offsets
              WHERE consumer = $1 AND topic = $2 AND partition = $3 FOR UPDATE",
        )
        .bind(&self.name)
        .bind(topic)
        .bind(partition)
        .fetch_one(&mut *tx)
        .await?;
        if offset < next {
            return Ok(Applied::SeenOffset);
        }
        let unreadable = |error: String| ConsumeError::Unreadable {
            partition,
            offset,
            error,
        };
        let envelope: serde_json::Value =
            serde_json::from_slice(message.payload().unwrap_or_default())
                .map_err(|e| unreadable(e.to_string()))?;
        let event =
            RecordedEvent::from_envelope(&envelope).map_err(|e| unreadable(e.to_string()))?;
        let stream = event.stream_key();
        let last: Option<i64> = sqlx::query_scalar(
            "SELECT version FROM kafka_stream_versions WHERE consumer = $1 AND stream = $2",
        )
        .bind(&self.name)
        .bind(&stream)
        .fetch_optional(&mut *tx)
        .await?;
        let outcome = if last.is_some_and(|v| event.stream_version <= v) {
            Applied::Duplicate
        } else {
            self.projector.apply(tx, &event).await?;
            sqlx::query(
                "INSERT INTO kafka_stream_versions (consumer, stream, version) VALUES ($1, $2, $3)
                 ON CONFLICT (consumer, stream) DO UPDATE SET version = excluded.version",
            )
            .bind(&self.name)
            .bind(&stream)
            .bind(event.stream_version)
            .execute(&mut *tx)
            .await?;
            Applied::Applied
        };
        sqlx::query(
            "UPDATE kafka_offsets SET next_offset = $4
              WHERE consumer = $1 AND topic = $2 AND partition = $3",
        )
        .bind(&self.name)
        .bind(topic)
        .bind(partition)
        .bind(offset + 1)
        .execute(&mut *tx)
        .await?;
        Ok(outcome)
    }
}

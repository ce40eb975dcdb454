//! One projector consuming the topic, whoever coordinates the group: the consuming loop
//! ([`KafkaProjector::consume`], over a [`Coordination`]) and the apply of one message in one
//! transaction with its offset and its stream's version (see the parent module's docs).

use std::sync::Arc;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::Offset;
use relations_projections::runtime::Backoff;
use relations_projections::Projector;
use relations_store::db::end_transaction;
use relations_store::log::RecordedEvent;
use sqlx::{PgConnection, PgPool};
use tokio_util::sync::CancellationToken;

use super::rebalances::GroupContext;
use crate::relay::KafkaSettings;

/// The projectors that may consume the topic (see the module docs).
pub const PARTITION_SAFE: &[&str] = &[relations_projections::relations::NAME];

/// Why a message was not applied; it is tried again.
#[derive(Debug, thiserror::Error)]
pub enum ConsumeError {
    /// PostgreSQL failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// The projector failed.
    #[error(transparent)]
    Projection(#[from] relations_projections::ProjectionError),
    /// The consumer could not be pointed at its partitions.
    #[error("kafka: {0}")]
    Kafka(String),
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
    /// Below the partition's stored offset and not above its stream's version: read again.
    SeenOffset,
    /// Not above its stream's last version: a duplicate.
    Duplicate,
    /// Another member has taken the partition since this one was given it (the generation
    /// moved): nothing applied.
    NotOwner,
    /// An event of its stream is missing before it (the broker showed a later message before
    /// an earlier one): nothing applied; the partition is read again from `next`, just after
    /// the stream's last applied event, where the missing one is.
    Ahead {
        /// Where to read the partition from.
        next: i64,
    },
}

/// Who decides which member consumes which partition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Coordinator {
    /// The broker's group coordinator (Kafka's consumer group protocol).
    #[default]
    Broker,
    /// Session advisory locks in PostgreSQL (the fallback; see the module docs).
    Postgres,
}

/// One projector consuming the topic as a member of a group (see the module docs).
pub struct KafkaProjector {
    pub(super) pool: PgPool,
    pub(super) projector: Arc<dyn Projector>,
    pub(super) consumer: StreamConsumer<GroupContext>,
    pub(super) coordinator: Coordinator,
    pub(super) topic: String,
    /// Who this is in `kafka_offsets` and in the advisory locks: the group and the projector.
    pub(super) name: String,
}

/// What the coordinators do differently around the one consuming loop
/// ([`KafkaProjector::consume`]): which partitions are this member's, at which generation.
#[async_trait::async_trait]
pub(super) trait Coordination: Send {
    /// Before each receive: follows the group. `Some(until)`: nothing to consume before then.
    async fn look(&mut self, consumer: &KafkaProjector) -> Look;
    /// When the next look is due even without a message (`None`: only after one).
    fn next_look(&self) -> Option<tokio::time::Instant>;
    /// After each receive.
    fn received(&mut self, consumer: &KafkaProjector);
    /// The generation this member holds `message`'s partition at; `None`: not its to apply.
    async fn generation(
        &mut self,
        consumer: &KafkaProjector,
        message: &BorrowedMessage<'_>,
    ) -> Option<i64>;
    /// `partition` must be read again from `offset`.
    async fn seek(&mut self, consumer: &KafkaProjector, partition: i32, offset: i64);
    /// Another member took `partition`.
    fn lost(&mut self, partition: i32);
}

/// What a look at the group found.
pub(super) enum Look {
    /// Consume.
    Ready,
    /// Look again at once (the membership was lost).
    Again,
    /// Nothing to consume until then.
    Idle(tokio::time::Instant),
}

impl KafkaProjector {
    /// `projector` consuming `settings`' topic as a member of group `group`, its partitions
    /// assigned by `coordinator`.
    pub fn new(
        pool: PgPool,
        projector: Arc<dyn Projector>,
        settings: &KafkaSettings,
        group: &str,
        coordinator: Coordinator,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(
            PARTITION_SAFE.contains(&projector.name()),
            "projector {} cannot consume a partitioned topic; these can: {PARTITION_SAFE:?}",
            projector.name()
        );
        let name = format!("{group}.{}", projector.name());
        let consumer: StreamConsumer<GroupContext> = ClientConfig::new()
            .set("bootstrap.servers", &settings.brokers)
            .set("group.id", &name)
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest")
            .set("partition.assignment.strategy", "cooperative-sticky")
            .set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "1000")
            .create_with_context(GroupContext::default())?;
        Ok(Self {
            pool,
            projector,
            consumer,
            coordinator,
            topic: settings.topic.clone(),
            name,
        })
    }

    /// The one consuming loop, whoever coordinates: receive, check the partition is this
    /// member's, apply, follow what applying found.
    pub(super) async fn consume(
        &self,
        group: &mut impl Coordination,
        shutdown: &CancellationToken,
    ) {
        while !shutdown.is_cancelled() {
            match group.look(self).await {
                Look::Ready => {}
                Look::Again => continue,
                Look::Idle(until) => tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep_until(until) => continue,
                },
            }
            let next_look = group.next_look();
            let message = tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = sleep_until(next_look) => continue,
                message = self.consumer.recv() => message,
            };
            group.received(self);
            let message = match message {
                Ok(message) => message,
                Err(error) => {
                    tracing::warn!(%error, "kafka consumer");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            };
            // A message fetched before a rebalance took its partition away is not ours to
            // apply: its new owner reads from the stored offset, and applying a later offset
            // here would move that offset past messages the new owner has not applied yet.
            let Some(generation) = group.generation(self, &message).await else {
                continue;
            };
            match self.apply_until_done(&message, generation, shutdown).await {
                None => break,
                Some(Applied::Ahead { next }) => {
                    group.seek(self, message.partition(), next).await;
                }
                Some(Applied::NotOwner) => group.lost(message.partition()),
                Some(_) => {}
            }
        }
    }

    /// Takes `partition`: bumps its generation (waiting for an apply in flight by a former
    /// owner, which commits first) and returns the new one. The next offset is read after
    /// this, so it includes everything the former owner applied.
    pub(super) async fn take(
        &self,
        session: &mut PgConnection,
        partition: i32,
    ) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar(
            "INSERT INTO kafka_offsets AS o (consumer, topic, partition, generation)
             VALUES ($1, $2, $3, 1)
             ON CONFLICT (consumer, topic, partition)
             DO UPDATE SET generation = o.generation + 1
             RETURNING generation",
        )
        .bind(&self.name)
        .bind(&self.topic)
        .bind(partition)
        .fetch_one(session)
        .await
    }

    /// Reads `partition` from `offset` next; whether the consumer could be pointed there.
    pub(super) fn seek(&self, partition: i32, offset: i64) -> bool {
        let seek = self.consumer.seek(
            &self.topic,
            partition,
            Offset::Offset(offset),
            Duration::from_secs(5),
        );
        if let Err(error) = &seek {
            tracing::warn!(%error, partition, offset, "seek failed");
        }
        seek.is_ok()
    }

    /// Applies `message`, trying again with backoff until it is done; `None` on shutdown.
    async fn apply_until_done(
        &self,
        message: &BorrowedMessage<'_>,
        generation: i64,
        shutdown: &CancellationToken,
    ) -> Option<Applied> {
        let name = self.projector.name();
        let mut backoff = Backoff::default();
        loop {
            match self.apply(message, generation).await {
                Ok(outcome) => {
                    match outcome {
                        Applied::Applied => {
                            metrics::counter!("relations_projector_events_total", "projector" => name)
                                .increment(1);
                        }
                        Applied::Ahead { next } => tracing::warn!(
                            partition = message.partition(),
                            offset = message.offset(),
                            next,
                            "an event arrived before an earlier one of its stream; reading the partition again"
                        ),
                        _ => {}
                    }
                    return Some(outcome);
                }
                Err(error) => {
                    metrics::counter!("relations_projector_errors_total", "projector" => name)
                        .increment(1);
                    let retry_in = backoff.pause();
                    tracing::error!(%error, ?retry_in, "applying a message failed");
                    tokio::select! {
                        _ = shutdown.cancelled() => return None,
                        _ = tokio::time::sleep(retry_in) => {}
                    }
                }
            }
        }
    }

    /// Applies one message in one transaction with its offset and its stream's version, if
    /// this member still holds the partition at `generation`.
    pub async fn apply(
        &self,
        message: &BorrowedMessage<'_>,
        generation: i64,
    ) -> Result<Applied, ConsumeError> {
        let mut tx = self.pool.begin().await?;
        let result = self.apply_in(&mut tx, message, generation).await;
        end_transaction(tx, result, |applied| {
            matches!(applied, Applied::Applied | Applied::Duplicate)
        })
        .await
    }

    async fn apply_in(
        &self,
        tx: &mut PgConnection,
        message: &BorrowedMessage<'_>,
        generation: i64,
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
        let (next, current): (i64, i64) = sqlx::query_as(
            "SELECT next_offset, generation FROM kafka_offsets
              WHERE consumer = $1 AND topic = $2 AND partition = $3 FOR UPDATE",
        )
        .bind(&self.name)
        .bind(topic)
        .bind(partition)
        .fetch_one(&mut *tx)
        .await?;
        if current != generation {
            return Ok(Applied::NotOwner);
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
        let outcome = self.apply_in_order(tx, &event, offset, next).await?;
        if let Applied::Ahead { .. } = outcome {
            return Ok(outcome);
        }
        // Never back: a message read again below it (to fetch a missing event) leaves it.
        sqlx::query(
            "UPDATE kafka_offsets SET next_offset = greatest(next_offset, $4)
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

    /// Applies `event` (at `offset`; the partition's stored next offset is `next`) if it is
    /// the next of its stream, and records its stream's version.
    async fn apply_in_order(
        &self,
        tx: &mut PgConnection,
        event: &RecordedEvent,
        offset: i64,
        next: i64,
    ) -> Result<Applied, ConsumeError> {
        let stream = event.stream_key();
        let last: Option<(i64, i64)> = sqlx::query_as(
            "SELECT version, last_offset FROM kafka_stream_versions
              WHERE consumer = $1 AND stream = $2",
        )
        .bind(&self.name)
        .bind(&stream)
        .fetch_optional(&mut *tx)
        .await?;
        let expected = last.map_or(0, |l| l.0) + 1;
        if event.stream_version < expected {
            return Ok(match offset < next {
                true => Applied::SeenOffset,
                false => Applied::Duplicate,
            });
        }
        if event.stream_version > expected {
            // Applying it would make the missing event look like a duplicate later. It sits
            // after the stream's last applied event, in this partition: read from there.
            return Ok(Applied::Ahead {
                next: last.map_or(0, |l| l.1 + 1),
            });
        }
        // The message holds the payload as the log stores it (content sealed, version 2): a
        // projector that keeps content opens it itself, as it does reading the log.
        self.projector.apply(tx, event).await?;
        sqlx::query(
            "INSERT INTO kafka_stream_versions (consumer, stream, version, last_offset)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (consumer, stream)
             DO UPDATE SET version = excluded.version, last_offset = excluded.last_offset",
        )
        .bind(&self.name)
        .bind(&stream)
        .bind(event.stream_version)
        .bind(offset)
        .execute(&mut *tx)
        .await?;
        Ok(Applied::Applied)
    }
}

/// Sleeps until `at`, or for ever when there is none.
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

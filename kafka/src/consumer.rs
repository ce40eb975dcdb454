//! Projectors fed from the Kafka topic instead of PostgreSQL's log, as one consumer group:
//! `relations project --source kafka`. The write side stays on PostgreSQL; read models spread
//! over as many processes as the topic has partitions.
//!
//! Exactly-once effect, whatever rebalances and crashes do: each message is applied in one
//! PostgreSQL transaction that also moves the partition's next offset (`kafka_offsets`) and the
//! stream's last applied version (`kafka_stream_versions`). The versions decide: a stream's
//! events are applied exactly in version order, each once; an event not above its stream's
//! version is a duplicate (the relay published it twice, or a restart read it again) and is
//! skipped; an event ahead of a missing one makes the consumer read the partition again from
//! just after the stream's last applied event. The stored offset is where reading resumes,
//! never moved back.
//!
//! Who consumes which partition is decided by the broker's group coordinator
//! ([`Coordinator::Broker`], the default): the consumer subscribes to the topic as a member of
//! group `G.NAME` (cooperative-sticky assignment, a short session timeout), and the rebalance
//! callbacks tell it which partitions it holds. Offsets are not committed to the broker: they
//! live beside the read model (the external offset store pattern). On the first message of a
//! newly assigned partition the member takes it in PostgreSQL (bumping its generation, so a
//! former owner still applying is fenced off) and seeks to the stored offset. A killed
//! member's partitions move after the session timeout; a stopped one leaves the group at once.
//!
//! [`Coordinator::Postgres`] is the fallback from before nisshi 0.8 (tansu 0.6's coordinator
//! kept assigning partitions to SIGKILLed members): every process holds a session advisory lock
//! on a member slot and one on each partition it consumes, takes its fair share (partitions /
//! live members, rounded up) of the unlocked partitions, gives back what is over its share, and
//! reads its partitions from the stored offsets. A process that dies loses its session, so its
//! locks go with it and the others take its partitions at their next look (every second).
//!
//! Only projectors whose rows are partition-safe may run here: `following` is (every fact of a
//! pair is one stream, so one partition; counters only add). `feed` numbers posts in the log's
//! global order, which a partitioned topic does not have, so it reads PostgreSQL.

use std::sync::Arc;
use std::time::Duration;

use std::collections::BTreeMap;

use std::sync::Mutex;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance, StreamConsumer};
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::ClientContext;
use rdkafka::{Offset, TopicPartitionList};
use relations_projections::Projector;
use relations_store::db::end_transaction;
use relations_store::log::RecordedEvent;
use sqlx::{PgConnection, PgPool};
use tokio_util::sync::CancellationToken;

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

/// A change of the partitions the broker gave this member.
#[derive(Debug, Clone, PartialEq, Eq)]
enum GroupChange {
    Assigned(Vec<i32>),
    Revoked(Vec<i32>),
}

/// The consumer's context: records the rebalances the broker's coordinator decides, for the
/// consuming loop to follow between messages.
#[derive(Default)]
pub struct GroupContext {
    changes: Mutex<Vec<GroupChange>>,
}

impl GroupContext {
    fn record(&self, change: GroupChange) {
        tracing::info!(?change, "rebalance");
        self.changes.lock().expect("not poisoned").push(change);
    }

    fn drain(&self) -> Vec<GroupChange> {
        std::mem::take(&mut *self.changes.lock().expect("not poisoned"))
    }
}

fn partitions_of(list: &TopicPartitionList) -> Vec<i32> {
    list.elements().iter().map(|e| e.partition()).collect()
}

impl ClientContext for GroupContext {}

impl ConsumerContext for GroupContext {
    /// Recorded before the partitions go, so nothing of them is applied after.
    fn pre_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(list) = rebalance {
            self.record(GroupChange::Revoked(partitions_of(list)));
        }
    }

    fn post_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(list) => self.record(GroupChange::Assigned(partitions_of(list))),
            Rebalance::Error(error) => tracing::warn!(%error, "rebalance failed"),
            Rebalance::Revoke(_) => {}
        }
    }
}

/// How often a process looks at the group: live members, its share, unlocked partitions.
const REBALANCE_EVERY: Duration = Duration::from_secs(1);

/// The most processes one group may run (member slots).
const MAX_MEMBERS: i32 = 256;

/// One projector consuming the topic as a member of a group (see the module docs).
pub struct KafkaProjector {
    pool: PgPool,
    projector: Arc<dyn Projector>,
    consumer: StreamConsumer<GroupContext>,
    coordinator: Coordinator,
    topic: String,
    /// Who this is in `kafka_offsets` and in the advisory locks: the group and the projector.
    name: String,
}

/// This process's place in the group: a session that holds its locks, and what it holds.
struct Membership {
    session: PgConnection,
    /// Advisory lock class of the member slots, and of the partitions.
    classes: (i32, i32),
    /// Owned partitions, each with the generation this member took it at.
    owned: BTreeMap<i32, i64>,
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

    /// Joins the group: a session and a member slot.
    async fn join(&self) -> Result<Membership, sqlx::Error> {
        let mut session = self.pool.acquire().await?.detach();
        let classes: (i32, i32) =
            sqlx::query_as("SELECT hashtext($1 || ':members'), hashtext($1 || ':partitions')")
                .bind(&self.name)
                .fetch_one(&mut session)
                .await?;
        let slot: Option<i32> = sqlx::query_scalar(
            "SELECT slot FROM generate_series(0, $2 - 1) AS slot
              WHERE pg_try_advisory_lock($1, slot) LIMIT 1",
        )
        .bind(classes.0)
        .bind(MAX_MEMBERS)
        .fetch_optional(&mut session)
        .await?;
        tracing::info!(group = %self.name, slot, "joined the group");
        Ok(Membership {
            session,
            classes,
            owned: BTreeMap::new(),
        })
    }

    /// Takes this member's share of the partitions and gives back the rest; true when what it
    /// owns changed.
    async fn rebalance(
        &self,
        member: &mut Membership,
        partitions: i32,
    ) -> Result<bool, sqlx::Error> {
        let members: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_locks
              WHERE locktype = 'advisory' AND granted AND objsubid = 2
                AND classid = $1::int::oid
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        .bind(member.classes.0)
        .fetch_one(&mut member.session)
        .await?;
        let share = (partitions as usize).div_ceil(members.max(1) as usize);
        let before = member.owned.clone();
        while member.owned.len() > share {
            let last = *member
                .owned
                .keys()
                .next_back()
                .expect("over a share of at least 1");
            sqlx::query("SELECT pg_advisory_unlock($1, $2)")
                .bind(member.classes.1)
                .bind(last)
                .execute(&mut member.session)
                .await?;
            member.owned.remove(&last);
        }
        for partition in 0..partitions {
            if member.owned.len() >= share {
                break;
            }
            if member.owned.contains_key(&partition) {
                continue;
            }
            let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
                .bind(member.classes.1)
                .bind(partition)
                .fetch_one(&mut member.session)
                .await?;
            if locked {
                let generation = self.take(&mut member.session, partition).await?;
                member.owned.insert(partition, generation);
            }
        }
        Ok(member.owned != before)
    }

    /// Takes `partition`: bumps its generation (waiting for an apply in flight by a former
    /// owner, which commits first) and returns the new one. The next offset is read after
    /// this, so it includes everything the former owner applied.
    async fn take(&self, session: &mut PgConnection, partition: i32) -> Result<i64, sqlx::Error> {
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

    /// Points the consumer at the owned partitions, each from its stored next offset.
    async fn assign(&self, owned: &BTreeMap<i32, i64>) -> Result<(), ConsumeError> {
        let stored: Vec<(i32, i64)> = sqlx::query_as(
            "SELECT partition, next_offset FROM kafka_offsets WHERE consumer = $1 AND topic = $2",
        )
        .bind(&self.name)
        .bind(&self.topic)
        .fetch_all(&self.pool)
        .await?;
        let mut list = TopicPartitionList::new();
        for &partition in owned.keys() {
            // Never `Offset::Beginning`: that asks the broker for the earliest offset, and
            // tansu 0.6 answered such questions wrongly once producers batched (it skipped the start
            // of partitions here). Offset 0 is fetched directly; where retention removed it,
            // `auto.offset.reset=earliest` moves on to the first offset kept.
            let next = stored.iter().find(|s| s.0 == partition).map_or(0, |s| s.1);
            let offset = Offset::Offset(next);
            list.add_partition_offset(&self.topic, partition, offset)
                .map_err(|e| ConsumeError::Kafka(e.to_string()))?;
        }
        self.consumer
            .assign(&list)
            .map_err(|e| ConsumeError::Kafka(e.to_string()))?;
        tracing::info!(group = %self.name, partitions = ?owned, "consuming partitions");
        Ok(())
    }

    /// How many partitions the topic has, once it exists.
    async fn partitions(&self, shutdown: &CancellationToken) -> Option<i32> {
        loop {
            let metadata = self
                .consumer
                .fetch_metadata(Some(&self.topic), Duration::from_secs(5));
            match metadata {
                Ok(metadata) => {
                    let count = metadata
                        .topics()
                        .iter()
                        .find(|t| t.name() == self.topic)
                        .map_or(0, |t| t.partitions().len());
                    if count > 0 {
                        return Some(count as i32);
                    }
                    tracing::info!(topic = %self.topic, "waiting for the topic");
                }
                Err(error) => tracing::warn!(%error, "kafka metadata"),
            }
            tokio::select! {
                _ = shutdown.cancelled() => return None,
                _ = tokio::time::sleep(REBALANCE_EVERY) => {}
            }
        }
    }

    /// Consumes until `shutdown`; a message that fails is tried again with backoff, never
    /// skipped.
    pub async fn run(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let name = self.projector.name();
        tracing::info!(projector = name, group = %self.name, coordinator = ?self.coordinator,
            "consuming the topic");
        let result = match self.coordinator {
            Coordinator::Broker => self.run_broker(&shutdown).await,
            Coordinator::Postgres => self.run_postgres(&shutdown).await,
        };
        tracing::info!(projector = name, "consumer stopped");
        result
    }

    /// As a member of the broker's consumer group: the rebalance callbacks say which
    /// partitions are this member's; each is taken in PostgreSQL and read from its stored
    /// offset on its first message.
    async fn run_broker(&self, shutdown: &CancellationToken) -> anyhow::Result<()> {
        self.consumer.subscribe(&[self.topic.as_str()])?;
        // Partitions the broker gave this member, each with the generation it took it at in
        // PostgreSQL (none until its first message).
        let mut owned: BTreeMap<i32, Option<i64>> = BTreeMap::new();
        while !shutdown.is_cancelled() {
            self.follow_rebalances(&mut owned);
            let message = tokio::select! {
                _ = shutdown.cancelled() => break,
                message = self.consumer.recv() => message,
            };
            self.follow_rebalances(&mut owned);
            let message = match message {
                Ok(message) => message,
                Err(error) => {
                    tracing::warn!(%error, "kafka consumer");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            };
            let partition = message.partition();
            let generation = match owned.get(&partition).copied() {
                None => continue,
                Some(Some(generation)) => generation,
                Some(None) => match self.position(partition, message.offset()).await {
                    Ok((generation, None)) => {
                        owned.insert(partition, Some(generation));
                        generation
                    }
                    Ok((generation, Some(next))) => {
                        owned.insert(partition, Some(generation));
                        self.seek(partition, next);
                        continue;
                    }
                    Err(error) => {
                        tracing::warn!(%error, partition, "taking a partition failed; retrying");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                },
            };
            match self.apply_until_done(&message, generation, shutdown).await {
                None => break,
                Some(Applied::Ahead { next }) => self.seek(partition, next),
                Some(Applied::NotOwner) => {
                    // Another member took it (this one's session lapsed): leave it to them.
                    tracing::warn!(partition, "partition taken by another member");
                    owned.remove(&partition);
                }
                Some(_) => {}
            }
        }
        self.consumer.unsubscribe();
        Ok(())
    }

    /// Follows the rebalances recorded since the last look.
    fn follow_rebalances(&self, owned: &mut BTreeMap<i32, Option<i64>>) {
        for change in self.consumer.context().drain() {
            match change {
                GroupChange::Assigned(partitions) => {
                    for partition in partitions {
                        owned.insert(partition, None);
                    }
                }
                GroupChange::Revoked(partitions) => {
                    for partition in partitions {
                        owned.remove(&partition);
                    }
                }
            }
        }
    }

    /// Takes `partition` in PostgreSQL; its generation, and where to seek when `offset` (the
    /// first message read) is not the stored next offset.
    async fn position(
        &self,
        partition: i32,
        offset: i64,
    ) -> Result<(i64, Option<i64>), sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        let generation = self.take(&mut conn, partition).await?;
        let next: i64 = sqlx::query_scalar(
            "SELECT next_offset FROM kafka_offsets
              WHERE consumer = $1 AND topic = $2 AND partition = $3",
        )
        .bind(&self.name)
        .bind(&self.topic)
        .bind(partition)
        .fetch_one(&mut *conn)
        .await?;
        tracing::info!(group = %self.name, partition, generation, next, "took a partition");
        Ok((generation, (offset != next).then_some(next)))
    }

    /// Reads `partition` from `offset` next.
    fn seek(&self, partition: i32, offset: i64) {
        let seek = self.consumer.seek(
            &self.topic,
            partition,
            Offset::Offset(offset),
            Duration::from_secs(5),
        );
        if let Err(error) = seek {
            tracing::warn!(%error, partition, offset, "seek failed");
        }
    }

    /// Applies `message`, trying again with backoff until it is done; `None` on shutdown.
    async fn apply_until_done(
        &self,
        message: &BorrowedMessage<'_>,
        generation: i64,
        shutdown: &CancellationToken,
    ) -> Option<Applied> {
        let name = self.projector.name();
        let mut backoff = Duration::from_millis(100);
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
                    tracing::error!(%error, retry_in = ?backoff, "applying a message failed");
                    tokio::select! {
                        _ = shutdown.cancelled() => return None,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                }
            }
        }
    }

    /// With the partitions assigned by advisory locks in PostgreSQL (the fallback).
    async fn run_postgres(&self, shutdown: &CancellationToken) -> anyhow::Result<()> {
        let Some(partitions) = self.partitions(shutdown).await else {
            return Ok(());
        };
        let mut member: Option<Membership> = None;
        let mut next_look = tokio::time::Instant::now();
        while !shutdown.is_cancelled() {
            if tokio::time::Instant::now() >= next_look {
                next_look = tokio::time::Instant::now() + REBALANCE_EVERY;
                if let Err(error) = self.look(&mut member, partitions).await {
                    // The session (and so every lock) may be gone: start over with nothing.
                    tracing::warn!(%error, "group membership lost; rejoining");
                    member = None;
                    let _ = self.consumer.unassign();
                    continue;
                }
            }
            if member.as_ref().is_none_or(|m| m.owned.is_empty()) {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep_until(next_look) => continue,
                }
            }
            let message = tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep_until(next_look) => continue,
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
            // A message fetched before a rebalance took its partition away is not ours to
            // apply: its new owner reads from the stored offset, and applying a later offset
            // here would move that offset past messages the new owner has not applied yet.
            let Some(generation) = member
                .as_ref()
                .and_then(|m| m.owned.get(&message.partition()).copied())
            else {
                continue;
            };
            match self.apply_until_done(&message, generation, shutdown).await {
                None => return Ok(()),
                Some(Applied::Ahead { next }) => {
                    let seek = self.consumer.seek(
                        &self.topic,
                        message.partition(),
                        Offset::Offset(next),
                        Duration::from_secs(5),
                    );
                    if let Err(error) = seek {
                        tracing::warn!(%error, "seek failed; reassigning");
                        next_look = tokio::time::Instant::now();
                        if let Some(member) = member.as_ref() {
                            let _ = self.assign(&member.owned).await;
                        }
                    }
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Joins when out of the group, then takes this member's share.
    async fn look(
        &self,
        member: &mut Option<Membership>,
        partitions: i32,
    ) -> Result<(), ConsumeError> {
        if member.is_none() {
            *member = Some(self.join().await?);
        }
        let current = member.as_mut().expect("joined above");
        if self.rebalance(current, partitions).await? {
            self.assign(&current.owned).await?;
        }
        Ok(())
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
        let outcome = if event.stream_version < expected {
            match offset < next {
                true => Applied::SeenOffset,
                false => Applied::Duplicate,
            }
        } else if event.stream_version > expected {
            // Applying it would make the missing event look like a duplicate later. It sits
            // after the stream's last applied event, in this partition: read from there.
            return Ok(Applied::Ahead {
                next: last.map_or(0, |l| l.1 + 1),
            });
        } else {
            self.projector.apply(tx, &event).await?;
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
            Applied::Applied
        };
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
}

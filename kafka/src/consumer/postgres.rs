//! [`Coordinator::Postgres`]: partitions assigned by session advisory locks in PostgreSQL (the
//! fallback; see the module docs of [`super`]).

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::consumer::Consumer;
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::{Offset, TopicPartitionList};
use sqlx::PgConnection;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[cfg(doc)]
use super::projector::Coordinator;
use super::projector::{ConsumeError, Coordination, KafkaProjector, Look};

/// How often a process looks at the group: live members, its share, unlocked partitions.
const REBALANCE_EVERY: Duration = Duration::from_secs(1);

/// The most processes one group may run (member slots).
const MAX_MEMBERS: i32 = 256;

/// This process's place in the group: a session that holds its locks, and what it holds.
struct Membership {
    session: PgConnection,
    /// Advisory lock class of the member slots, and of the partitions.
    classes: (i32, i32),
    /// Owned partitions, each with the generation this member took it at.
    owned: BTreeMap<i32, i64>,
}

/// The group as this process sees it: its membership, once joined, and when it looks again.
struct Postgres {
    partitions: i32,
    member: Option<Membership>,
    next_look: Instant,
}

#[async_trait::async_trait]
impl Coordination for Postgres {
    async fn look(&mut self, consumer: &KafkaProjector) -> Look {
        if Instant::now() >= self.next_look {
            self.next_look = Instant::now() + REBALANCE_EVERY;
            if let Err(error) = consumer.look(&mut self.member, self.partitions).await {
                // The session (and so every lock) may be gone: start over with nothing.
                tracing::warn!(%error, "group membership lost; rejoining");
                self.member = None;
                let _ = consumer.consumer.unassign();
                return Look::Again;
            }
        }
        match self.member.as_ref().is_none_or(|m| m.owned.is_empty()) {
            true => Look::Idle(self.next_look),
            false => Look::Ready,
        }
    }

    fn next_look(&self) -> Option<Instant> {
        Some(self.next_look)
    }

    fn received(&mut self, _: &KafkaProjector) {}

    async fn generation(
        &mut self,
        _: &KafkaProjector,
        message: &BorrowedMessage<'_>,
    ) -> Option<i64> {
        let member = self.member.as_ref()?;
        member.owned.get(&message.partition()).copied()
    }

    async fn seek(&mut self, consumer: &KafkaProjector, partition: i32, offset: i64) {
        if !consumer.seek(partition, offset) {
            tracing::warn!(partition, "reassigning after a failed seek");
            self.next_look = Instant::now();
            if let Some(member) = self.member.as_ref() {
                let _ = consumer.assign(&member.owned).await;
            }
        }
    }

    fn lost(&mut self, _: i32) {}
}

impl KafkaProjector {
    /// With the partitions assigned by advisory locks in PostgreSQL.
    pub(super) async fn run_postgres(&self, shutdown: &CancellationToken) -> anyhow::Result<()> {
        let Some(partitions) = self.partitions(shutdown).await else {
            return Ok(());
        };
        let mut group = Postgres {
            partitions,
            member: None,
            next_look: Instant::now(),
        };
        self.consume(&mut group, shutdown).await;
        Ok(())
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
}

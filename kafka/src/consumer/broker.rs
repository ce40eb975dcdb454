//! [`Coordinator::Broker`]: the broker's group coordinator decides which member consumes which
//! partition; the rebalance callbacks say which are this member's, and each is taken in
//! PostgreSQL and read from its stored offset on its first message.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::consumer::Consumer;
use rdkafka::message::{BorrowedMessage, Message};
use tokio_util::sync::CancellationToken;

#[cfg(doc)]
use super::projector::Coordinator;
use super::projector::{Coordination, KafkaProjector, Look};
use super::rebalances::GroupChange;

/// The partitions the broker gave this member, each with the generation it took it at in
/// PostgreSQL (none until its first message).
#[derive(Default)]
struct Broker {
    owned: BTreeMap<i32, Option<i64>>,
}

impl Broker {
    /// Follows the rebalances recorded since the last look.
    fn follow_rebalances(&mut self, consumer: &KafkaProjector) {
        for change in consumer.consumer.context().drain() {
            match change {
                GroupChange::Assigned(partitions) => {
                    for partition in partitions {
                        self.owned.insert(partition, None);
                    }
                }
                GroupChange::Revoked(partitions) => {
                    for partition in partitions {
                        self.owned.remove(&partition);
                    }
                }
            }
        }
    }
}

#[async_trait::async_trait]
impl Coordination for Broker {
    async fn look(&mut self, consumer: &KafkaProjector) -> Look {
        self.follow_rebalances(consumer);
        Look::Ready
    }

    fn next_look(&self) -> Option<tokio::time::Instant> {
        None
    }

    fn received(&mut self, consumer: &KafkaProjector) {
        self.follow_rebalances(consumer);
    }

    async fn generation(
        &mut self,
        consumer: &KafkaProjector,
        message: &BorrowedMessage<'_>,
    ) -> Option<i64> {
        let partition = message.partition();
        match self.owned.get(&partition).copied()? {
            Some(generation) => Some(generation),
            None => match consumer.position(partition, message.offset()).await {
                Ok((generation, None)) => {
                    self.owned.insert(partition, Some(generation));
                    Some(generation)
                }
                Ok((generation, Some(next))) => {
                    self.owned.insert(partition, Some(generation));
                    consumer.seek(partition, next);
                    None
                }
                Err(error) => {
                    tracing::warn!(%error, partition, "taking a partition failed; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    None
                }
            },
        }
    }

    async fn seek(&mut self, consumer: &KafkaProjector, partition: i32, offset: i64) {
        consumer.seek(partition, offset);
    }

    fn lost(&mut self, partition: i32) {
        // Another member took it (this one's session lapsed): leave it to them.
        tracing::warn!(partition, "partition taken by another member");
        self.owned.remove(&partition);
    }
}

impl KafkaProjector {
    /// As a member of the broker's consumer group.
    pub(super) async fn run_broker(&self, shutdown: &CancellationToken) -> anyhow::Result<()> {
        self.consumer.subscribe(&[self.topic.as_str()])?;
        self.consume(&mut Broker::default(), shutdown).await;
        self.consumer.unsubscribe();
        Ok(())
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
}

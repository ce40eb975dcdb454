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

mod broker;
mod postgres;
mod projector;
mod rebalances;

use tokio_util::sync::CancellationToken;

pub use projector::{Applied, ConsumeError, Coordinator, KafkaProjector, PARTITION_SAFE};
pub use rebalances::GroupContext;

impl KafkaProjector {
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
}

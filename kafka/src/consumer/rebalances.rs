//! The rebalances the broker's group coordinator decides, recorded by the consumer's context
//! as they happen, for the consuming loop to follow between messages.

use std::sync::Mutex;

use rdkafka::consumer::{BaseConsumer, ConsumerContext, Rebalance};
use rdkafka::{ClientContext, TopicPartitionList};

/// A change of the partitions the broker gave this member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum GroupChange {
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

    pub(super) fn drain(&self) -> Vec<GroupChange> {
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

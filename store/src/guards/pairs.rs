//! The relation pairs a comment or a like reads: whether a block stands between the actor and
//! the author. Their streams are locked like a relation command's, after the command's own
//! stream (a relation command locks pairs only, so the two never wait in a cycle), and folded
//! before the decision, so a block and a comment or like never pass each other.

use std::collections::HashMap;

use relations_domain::{PairId, RelationPair, UserId};
use sqlx::PgConnection;

use crate::append::{self, Loaded};
use crate::error::StoreError;
use crate::executor::Guard;

/// The relation pairs a group's commands read, locked and folded, by stream id.
#[derive(Debug, Default)]
pub(crate) struct PairGuard {
    pairs: HashMap<String, RelationPair>,
}

impl PairGuard {
    /// Whether a block stands, either way, between `a` and any of `others` (none between a
    /// user and themselves).
    pub fn blocked(&self, a: UserId, others: impl IntoIterator<Item = UserId>) -> bool {
        others.into_iter().any(|b| {
            let Ok(pair) = PairId::new(a, b) else {
                return false;
            };
            self.pairs.get(&pair.stream_id()).is_some_and(|p| {
                let facts = p.facts(a, b);
                facts.blocking || facts.blocked_by
            })
        })
    }
}

impl<E: Sync> Guard<E> for PairGuard {
    /// The pairs one command reads.
    type Ask = Vec<PairId>;

    async fn lock(conn: &mut PgConnection, asks: Vec<Vec<PairId>>) -> Result<Self, StoreError> {
        let ids: Vec<String> = asks
            .into_iter()
            .flatten()
            .map(|pair| pair.stream_id())
            .collect();
        if ids.is_empty() {
            return Ok(Self::default());
        }
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        append::lock::<RelationPair>(conn, &refs).await?;
        let mut pairs: HashMap<String, Loaded<RelationPair>> =
            ids.into_iter().map(|id| (id, Loaded::default())).collect();
        append::catch_up(conn, &mut pairs).await?;
        Ok(Self {
            pairs: pairs
                .into_iter()
                .map(|(id, loaded)| (id, loaded.aggregate))
                .collect(),
        })
    }

    /// A comment or like changes no pair.
    fn decided(&mut self, _events: &[E]) {}

    async fn write(self, _conn: &mut PgConnection) -> Result<(), StoreError> {
        Ok(())
    }
}

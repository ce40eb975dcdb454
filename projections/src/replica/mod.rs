//! The replica: what each service instance holds in memory of the read models, answering
//! relation checks, lists, counts, the token check and the feed's first pages without a
//! database round trip.
//!
//! TAO and Bluesky's graph service serve the same reads from memory; here the replica is kept
//! current from the log itself, not expired by TTL. [`live::LiveGraph`] loads it once from the
//! read models, each at its projector's checkpoint, in one snapshot, and then applies every
//! later event in log order, so the replica is always exactly the fold of the log up to its
//! [`Replica::position`]: one consistent state (never a follow beside a block: a block's
//! unfollows share its transaction, and a batch is applied under one write lock), and never
//! older than a state it has served before. `min_position` waits until the replica has passed
//! the position asked.
//!
//! Each read model's part lives in its own folder behind [`MemoryModel`] (issue 43): the graph
//! (`crate::relations::memory`), the accounts (`crate::accounts`) and the held posts with their
//! engagement (`crate::feed::held`). The replica only composes them: [`each_model`] is the one
//! list, and the reads that cross models (a user's counts, a feed page) ask each its part.

pub mod live;
mod load;
mod model;
pub mod reads;
mod snapshot;
mod tail;

/// How the admin endpoint names the replica.
pub const NAME: &str = "graph";

use chrono::{DateTime, Utc};
use relations_domain::{LogEvent, UserId};
use relations_store::LogPosition;

use crate::accounts::Accounts;
use crate::feed::held::timelines::{Caps, Timelines};
use crate::feed::held::HeldPosts;
use crate::filters::memory::FiltersMemory;
use crate::lists::memory::ListsMemory;
use crate::relations::memory::RelationsMemory;
use crate::relations::query::Counts;
pub use model::MemoryModel;
pub use snapshot::SnapshotConfig;

/// Runs `$body` with `$model` bound to each model of `$replica`, in order: the one list of the
/// replica's models (a new model is a field and a line here).
macro_rules! each_model {
    ($replica:expr, |$model:ident| $body:expr) => {{
        {
            let $model = &mut $replica.relations;
            $body
        }
        {
            let $model = &mut $replica.accounts;
            $body
        }
        {
            let $model = &mut $replica.posts;
            $body
        }
        {
            let $model = &mut $replica.lists;
            $body
        }
        {
            let $model = &mut $replica.filters;
            $body
        }
    }};
}
pub(crate) use each_model;

/// The read models in memory, as of [`Replica::position`].
#[derive(Debug, Default, Clone)]
pub struct Replica {
    relations: RelationsMemory,
    accounts: Accounts,
    posts: HeldPosts,
    lists: ListsMemory,
    filters: FiltersMemory,
    position: LogPosition,
}

impl Replica {
    /// Empty, holding posts up to `caps` once loaded.
    pub fn new(caps: Caps) -> Self {
        Self {
            posts: HeldPosts::new(caps),
            ..Self::default()
        }
    }

    /// The follow graph.
    pub fn relations(&self) -> &RelationsMemory {
        &self.relations
    }

    /// The accounts with a revocation, a ban, an erasure or a privacy setting: the token
    /// check's table.
    pub fn accounts(&self) -> &Accounts {
        &self.accounts
    }

    /// Every live list and its members (issue 46).
    pub fn lists(&self) -> &ListsMemory {
        &self.lists
    }

    /// Every user's filters, as a screen each (issue 47).
    pub fn filters(&self) -> &FiltersMemory {
        &self.filters
    }

    /// Every author's recent posts.
    pub fn timelines(&self) -> &Timelines {
        self.posts.timelines()
    }

    /// The graph restored from a snapshot, in place of its load.
    pub(super) fn restore(&mut self, relations: RelationsMemory) {
        self.relations = relations;
    }

    /// The position of the snapshot its graph was restored from, if it was.
    pub fn restored(&self) -> Option<LogPosition> {
        self.relations.restored_from()
    }

    /// The models, to change (tests).
    #[cfg(test)]
    pub(crate) fn parts_mut(&mut self) -> (&mut RelationsMemory, &mut Accounts, &mut HeldPosts) {
        (&mut self.relations, &mut self.accounts, &mut self.posts)
    }

    /// The log position the replica reflects: every event up to it, none after.
    pub fn position(&self) -> LogPosition {
        self.position
    }

    /// Folds the next event of the log into every model, in log order.
    pub fn apply(&mut self, at: LogPosition, occurred_at: DateTime<Utc>, event: &LogEvent) {
        each_model!(self, |model| model.apply(at, occurred_at, event));
    }

    /// The load's replay is over.
    pub(super) fn settle(&mut self) {
        each_model!(self, |model| model.settle());
    }

    /// Marks the replica as reflecting the log up to `position`.
    pub fn advance(&mut self, position: LogPosition) {
        debug_assert!(position >= self.position);
        self.position = position;
    }

    /// `user`'s counters: the graph's and the posts'.
    pub fn counts(&self, user: UserId) -> Counts {
        let posts = self.posts.timelines().live(user.get() as u64);
        self.relations.counts(user, posts)
    }
}

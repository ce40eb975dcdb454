//! What a read model served from memory offers the replica (issue 43, item 3): its load and
//! its fold of the log, written in the model's own folder. The replica only composes
//! them ([`super::Replica`]): a new model costs its folder and one line in
//! [`each_model`](super::each_model).

use chrono::{DateTime, Utc};
use relations_domain::LogEvent;
use relations_store::LogPosition;
use sqlx::PgConnection;

/// A read model's part of the replica.
#[allow(async_fn_in_trait)] // called on each model's own type, never through `dyn`
pub trait MemoryModel {
    /// Where its tables stand in the load's snapshot: the checkpoint of the projector whose
    /// read model it loads; `None` for a model folded from the log alone, which is loaded up
    /// to where the replay begins.
    async fn checkpoint(
        &mut self,
        tx: &mut PgConnection,
    ) -> Result<Option<LogPosition>, sqlx::Error>;

    /// Loads it in the snapshot. The replay of the log begins after `replay` (the lowest
    /// checkpoint), and the model skips in [`MemoryModel::apply`] what its load held.
    async fn load(&mut self, tx: &mut PgConnection, replay: LogPosition)
        -> Result<(), sqlx::Error>;

    /// Folds the next event of the log (at `at`, decided at `occurred_at`), in log order.
    fn apply(&mut self, at: LogPosition, occurred_at: DateTime<Utc>, event: &LogEvent);

    /// The load's replay is over: what it read only for the replay's sake may go.
    fn settle(&mut self) {}
}

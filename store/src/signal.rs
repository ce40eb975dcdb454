//! Waking the log's readers after commits.
//!
//! Commands do not NOTIFY inside their transactions: PostgreSQL serialises the commits of
//! notifying transactions under one database-wide lock, held through the WAL flush. Instead a
//! committed command pokes this signal, and one background session sends
//! `pg_notify('relations_events', '')`; pokes that arrive while it is sending are coalesced into
//! the next one. A NOTIFY is only a wake-up: readers poll as well.

use std::sync::Arc;

use sqlx::PgPool;
use tokio::sync::Notify;

/// The channel log readers LISTEN on.
pub const CHANNEL: &str = "relations_events";

/// See the module docs. Cheap to clone; a default one (no sender) wakes nobody.
#[derive(Clone, Default)]
pub struct CommitSignal(Option<Arc<Notify>>);

impl CommitSignal {
    /// A signal whose NOTIFYs go out through `pool`, from a task that ends with the runtime.
    pub fn spawn(pool: PgPool) -> Self {
        let poked = Arc::new(Notify::new());
        let waiting = poked.clone();
        tokio::spawn(async move {
            loop {
                waiting.notified().await;
                if let Err(error) = sqlx::query("SELECT pg_notify($1, '')")
                    .bind(CHANNEL)
                    .execute(&pool)
                    .await
                {
                    tracing::debug!(%error, "log wake-up not sent (readers poll anyway)");
                }
            }
        });
        Self(Some(poked))
    }

    /// Something was committed to the log.
    pub fn committed(&self) {
        if let Some(poked) = &self.0 {
            poked.notify_one();
        }
    }
}

//! Watching the log's horizon. Readers stop at the oldest open transaction in the cluster, so
//! one session left `idle in transaction` stalls every projector while their own lag reads 0.
//! The watch looks every second at the committed events waiting above the horizon and at the
//! session holding it, keeps what it saw for `/readyz` and the admin endpoint, sets the gauges
//! `relations_log_held_events` and `relations_log_held_seconds`, and logs a WARN naming the
//! holder once it has held events longer than the configured time (once per holder).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use relations_store::log::{self, Held, HorizonHolder};
use serde::Serialize;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

/// How often the watch looks.
const EVERY: Duration = Duration::from_secs(1);

/// What the watch last saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Horizon {
    /// Committed events waiting above the horizon.
    pub held: Held,
    /// The session holding it, while events wait.
    pub held_by: Option<HorizonHolder>,
    /// Whether events have waited longer than the configured time: projectors then report
    /// the state `held` and `/readyz` fails.
    pub stalled: bool,
}

/// The watch: cheap to clone, shared by `/readyz`, `/metrics` and the admin endpoint.
#[derive(Clone)]
pub struct HorizonWatch {
    held_after: Duration,
    last: Arc<Mutex<Horizon>>,
}

impl HorizonWatch {
    /// A watch that calls events held longer than `held_after` a stall.
    pub fn new(held_after: Duration) -> Self {
        Self {
            held_after,
            last: Arc::default(),
        }
    }

    /// What it last saw.
    pub fn last(&self) -> Horizon {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Looks now, records and reports what it sees.
    pub async fn observe(&self, pool: &PgPool) -> Result<Horizon, sqlx::Error> {
        let held = log::held(pool).await?;
        let held_by = match held.events {
            0 => None,
            _ => log::horizon_holder(pool).await?,
        };
        let stalled = held.events > 0 && held.seconds > self.held_after.as_secs_f64();
        let now = Horizon {
            held,
            held_by,
            stalled,
        };
        metrics::gauge!("relations_log_held_events").set(held.events as f64);
        metrics::gauge!("relations_log_held_seconds").set(held.seconds);
        let before = std::mem::replace(
            &mut *self.last.lock().unwrap_or_else(|e| e.into_inner()),
            now.clone(),
        );
        let holder = |h: &Horizon| h.held_by.as_ref().map(|h| (h.pid, h.xid.clone()));
        if now.stalled && (!before.stalled || holder(&before) != holder(&now)) {
            match &now.held_by {
                Some(h) => tracing::warn!(
                    held_events = now.held.events,
                    held_seconds = now.held.seconds,
                    pid = h.pid,
                    xid = %h.xid,
                    age_seconds = h.age_seconds,
                    application_name = %h.application_name,
                    state = %h.state,
                    who = %h.who,
                    "an open transaction holds the log's horizon: projectors cannot pass it \
                     (end it, or pg_terminate_backend(pid))"
                ),
                None => tracing::warn!(
                    held_events = now.held.events,
                    held_seconds = now.held.seconds,
                    "events wait behind the log's horizon; no session holding it is visible"
                ),
            }
        } else if before.stalled && !now.stalled {
            tracing::info!("the log's horizon moves again");
        }
        Ok(now)
    }

    /// Looks every second until `shutdown`.
    pub async fn run(self, pool: PgPool, shutdown: CancellationToken) {
        while !shutdown.is_cancelled() {
            if let Err(error) = self.observe(&pool).await {
                tracing::debug!(%error, "cannot look at the log's horizon");
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(EVERY) => {}
            }
        }
    }
}

//! Watching the log: its horizon, its head and how far each reader is behind.
//!
//! Readers stop at the oldest open transaction in the cluster, so one session left `idle in
//! transaction` stalls every projector while their own lag reads 0. The watch looks every
//! second at the committed events waiting above the horizon and at the session holding it, at
//! the head of the log, and at every checkpoint's lag (one round trip, bounded whatever the
//! log's size). It keeps what it saw in memory for `/readyz`, `/metrics` and the admin
//! endpoint, so that a scrape never waits on the database: `/metrics` says how old the view is
//! (`relations_log_watch_age_seconds`), which grows while PostgreSQL does not answer. It logs a
//! WARN naming the holder once events have been held longer than the configured time (once per
//! holder).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use relations_store::log::{self, Held, HorizonHolder, Lag};
use relations_store::LogPosition;
use serde::Serialize;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

/// How often the watch looks.
const EVERY: Duration = Duration::from_secs(1);

/// How long one look may take before it is given up (the next one starts afresh).
const LOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// A reader that keeps its position in memory rather than in a checkpoint (the graph replica).
pub type MemoryReader = (
    &'static str,
    Arc<dyn Fn() -> Option<LogPosition> + Send + Sync>,
);

/// What the watch last saw of the log and its readers.
#[derive(Debug, Clone, Default)]
pub struct LogView {
    /// The horizon, as [`LogWatch::last`] gives it.
    pub horizon: Horizon,
    /// The last event below the horizon.
    pub head: LogPosition,
    /// Every reader with a checkpoint, then the memory readers: where each stood and how far
    /// behind the horizon it was.
    pub readers: Vec<(String, LogPosition, Lag)>,
    /// When the database answered this look (`None`: it never has, in this process).
    pub seen_at: Option<Instant>,
}

impl LogView {
    /// What the watch saw of `name`, if it has a checkpoint or is a memory reader.
    pub fn reader(&self, name: &str) -> Option<(LogPosition, Lag)> {
        self.readers
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, at, lag)| (*at, *lag))
    }

    /// The lag of a reader now at `position` (a newer position than the view's, published in
    /// memory as it stepped): none once it reached the head, else at most what the view saw.
    pub fn lag_at(&self, name: &str, position: LogPosition) -> Lag {
        if position >= self.head {
            return Lag::default();
        }
        match self.reader(name) {
            Some((seen, lag)) if seen >= position => lag,
            Some((_, lag)) => Lag {
                events: lag
                    .events
                    .min(self.head.global_position - position.global_position)
                    .max(1),
                ..lag
            },
            None => Lag {
                events: (self.head.global_position - position.global_position).max(1),
                seconds: 0.0,
            },
        }
    }
}

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
pub struct LogWatch {
    held_after: Duration,
    last: Arc<Mutex<Horizon>>,
    view: Arc<Mutex<LogView>>,
    started: Instant,
}

impl LogWatch {
    /// A watch that calls events held longer than `held_after` a stall.
    pub fn new(held_after: Duration) -> Self {
        Self {
            held_after,
            last: Arc::default(),
            view: Arc::default(),
            started: Instant::now(),
        }
    }

    /// What the last full look saw (memory only: never waits on the database).
    pub fn view(&self) -> LogView {
        self.view.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How old the view is: since the database last answered a look, or since the process
    /// started if it never has.
    pub fn age(&self) -> Duration {
        let view = self.view.lock().unwrap_or_else(|e| e.into_inner());
        view.seen_at.unwrap_or(self.started).elapsed()
    }

    /// One full look: the horizon, the head, and every reader's lag. Gauges of the log are set
    /// here; a scrape reads the rest from [`view`](Self::view).
    pub async fn refresh(
        &self,
        pool: &PgPool,
        memory: &[MemoryReader],
    ) -> Result<LogView, sqlx::Error> {
        let horizon = self.observe(pool).await?;
        let head = log::head(pool).await?;
        let mut readers: Vec<(String, LogPosition)> = super::checkpoint::read_all(pool).await?;
        readers.extend(
            memory
                .iter()
                .filter_map(|(name, at)| at().map(|at| ((*name).to_owned(), at))),
        );
        let positions: Vec<LogPosition> = readers.iter().map(|(_, at)| *at).collect();
        let lags = log::lags(pool, &positions).await?;
        metrics::gauge!("relations_log_head_position").set(head.global_position as f64);
        let view = LogView {
            horizon,
            head,
            readers: readers
                .into_iter()
                .zip(lags)
                .map(|((name, at), lag)| (name, at, lag))
                .collect(),
            seen_at: Some(Instant::now()),
        };
        *self.view.lock().unwrap_or_else(|e| e.into_inner()) = view.clone();
        Ok(view)
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

    /// Looks every second until `shutdown`, each look bounded by a timeout.
    pub async fn run(self, pool: PgPool, memory: Vec<MemoryReader>, shutdown: CancellationToken) {
        while !shutdown.is_cancelled() {
            match tokio::time::timeout(LOOK_TIMEOUT, self.refresh(&pool, &memory)).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => tracing::debug!(%error, "cannot look at the log"),
                Err(_) => tracing::debug!("a look at the log took too long"),
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(EVERY) => {}
            }
        }
    }
}

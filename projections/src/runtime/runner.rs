//! Running a projector: catch up from its checkpoint in batches, one transaction per batch,
//! woken by NOTIFY and polling as a fallback; failures retried with backoff and reported.
//!
//! Only one instance applies a projector at a time: a batch starts by locking the projector's
//! checkpoint row `FOR UPDATE SKIP LOCKED`; an instance that finds it locked waits its turn.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use relations_store::db::end_transaction;
use relations_store::faults;
use relations_store::log::RecordedEvent;
use relations_store::LogPosition;
use sqlx::{PgConnection, PgPool};
use tokio_util::sync::CancellationToken;

use super::checkpoint;
use super::health::Health;
use super::projector::Projector;
use super::shared_log::{Batch, SharedLog};
use super::tail::{AfterFailure, LogTail, Progress, TailLoop};
use super::wakeup::Wakeup;
use crate::error::ProjectionError;

/// How soon a runner looks again when committed events wait above the horizon.
const HELD_RETRY: Duration = Duration::from_millis(5);

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Applied this many events and advanced the checkpoint.
    Applied(usize),
    /// Nothing new below the horizon.
    CaughtUp,
    /// Nothing new below the horizon, but events committed above it (an older transaction is
    /// still open): look again shortly.
    Held,
    /// Another instance holds the projector right now.
    Elsewhere,
}

/// Runs one projector.
#[derive(Clone)]
pub struct Runner {
    pool: PgPool,
    projector: Arc<dyn Projector>,
    health: Arc<Health>,
    batch_size: i64,
    poll_interval: Duration,
    /// How long to wait after a partial batch before the next step.
    coalesce: Duration,
    /// Whether this projector's checkpoint row is known to exist.
    registered: Arc<AtomicBool>,
    /// The log as the process's runners read it: once for all of them.
    log: SharedLog,
}

impl Runner {
    /// A runner for `projector` on `pool`, reading the log by itself.
    pub fn new(pool: PgPool, projector: Arc<dyn Projector>) -> Self {
        Self {
            pool,
            projector,
            health: Arc::default(),
            batch_size: 500,
            poll_interval: Duration::from_millis(100),
            coalesce: Duration::from_millis(10),
            registered: Arc::default(),
            log: SharedLog::default(),
        }
    }

    /// One runner for each of `projectors` on `pool`, all reading the log through `log`, one
    /// window ([`SharedLog`]) for the process: its readers read each event once between them.
    pub fn all(
        pool: &PgPool,
        log: &SharedLog,
        projectors: impl IntoIterator<Item = Arc<dyn Projector>>,
    ) -> Vec<Self> {
        projectors
            .into_iter()
            .map(|p| Self {
                log: log.clone(),
                ..Self::new(pool.clone(), p)
            })
            .collect()
    }

    /// Events per batch (whole transactions are never split, so a batch may hold a few more).
    pub fn with_batch_size(mut self, batch_size: i64) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The projector's name.
    pub fn name(&self) -> &'static str {
        self.projector.name()
    }

    /// This runner's health.
    pub fn health(&self) -> Arc<Health> {
        self.health.clone()
    }

    /// Applies the next batch, if this instance can take the projector and there is one.
    #[tracing::instrument(name = "projector.step", skip_all, fields(projector = self.projector.name(), events))]
    pub async fn step(&self) -> Result<Step, ProjectionError> {
        let name = self.projector.name();
        // Once per runner, not per poll: an idle step must write nothing.
        if !self.registered.load(Ordering::Relaxed) {
            checkpoint::register(&self.pool, name).await?;
            self.registered.store(true, Ordering::Relaxed);
        }
        // Look before locking: an idle runner takes no transaction id, so it never holds back
        // the horizon other readers wait on.
        {
            let mut conn = self.pool.acquire().await?;
            let before = checkpoint::read(&mut *conn, name).await?;
            self.health.at(before);
            // Nor does one whose upstreams have not moved past it (a cache waits for its
            // tables): without this look it would read a batch only to drop it, on every
            // wake-up.
            let upstream = self.upstream_bound(&mut conn).await?;
            if upstream.is_some_and(|until| until <= before) {
                return Ok(Step::CaughtUp);
            }
            let ahead = self.log.ahead(&mut conn, before).await?;
            if !ahead.settled {
                // Committed events an older open transaction keeps above the horizon send no
                // further wake-up when it ends: look again soon rather than at the next poll.
                return Ok(match ahead.unsettled {
                    true => Step::Held,
                    false => Step::CaughtUp,
                });
            }
        }
        let mut tx = self.pool.begin().await?;
        let result = self.locked_batch(&mut tx).await;
        let step = end_transaction(tx, result, |step| matches!(step, Step::Applied(_))).await?;
        let Step::Applied(applied) = step else {
            return Ok(step);
        };
        tracing::Span::current().record("events", applied);
        metrics::counter!("relations_projector_events_total", "projector" => name)
            .increment(applied as u64);
        Ok(Step::Applied(applied))
    }

    /// Inside the step's transaction: lock the checkpoint (or find it taken), apply a batch.
    async fn locked_batch(&self, tx: &mut PgConnection) -> Result<Step, ProjectionError> {
        let Some(after) = checkpoint::try_lock(tx, self.projector.name()).await? else {
            return Ok(Step::Elsewhere);
        };
        let until = self.upstream_bound(&mut *tx).await?;
        if until.is_some_and(|until| until <= after) {
            return Ok(Step::CaughtUp);
        }
        let mut batch = self.log.batch(&mut *tx, after, self.batch_size).await?;
        if let Some(until) = until {
            batch = batch.until(until);
        }
        let applied = apply_batch(tx, self.projector.as_ref(), batch).await?;
        Ok(applied.map_or(Step::CaughtUp, Step::Applied))
    }

    /// The lowest checkpoint of the projector's upstreams, which it never passes (`None`: it
    /// has none).
    async fn upstream_bound(
        &self,
        conn: &mut PgConnection,
    ) -> Result<Option<LogPosition>, ProjectionError> {
        let mut until: Option<LogPosition> = None;
        for upstream in self.projector.upstreams() {
            let at = checkpoint::read(&mut *conn, upstream).await?;
            until = Some(until.map_or(at, |u| u.min(at)));
        }
        Ok(until)
    }

    /// Steps until `shutdown`: straight on while there is work, otherwise waiting for a
    /// wake-up or the poll interval; after a failure, backing off up to 30 s ([`TailLoop`]).
    pub async fn run(mut self, wakeup: Wakeup, shutdown: CancellationToken) {
        let name = self.projector.name();
        tracing::info!(projector = name, "projector started");
        TailLoop::new(self.poll_interval, HELD_RETRY)
            .run(&mut self, &wakeup, &shutdown)
            .await;
        tracing::info!(projector = name, "projector stopped");
    }
}

#[async_trait]
impl LogTail for Runner {
    type Error = ProjectionError;

    async fn step(&mut self) -> Result<Progress, ProjectionError> {
        let step = Runner::step(self).await;
        self.health.stepped(format!("{step:?}"));
        Ok(match step? {
            // A full batch: more is waiting. A partial one: let a few more commits land first,
            // so a steady write rate is folded in batches, not one transaction per commit
            // (that costs the database more than the commits).
            Step::Applied(applied) if (applied as i64) < self.batch_size => {
                Progress::Moved(self.coalesce)
            }
            Step::Applied(_) => Progress::Moved(Duration::ZERO),
            Step::CaughtUp | Step::Elsewhere => Progress::Idle,
            Step::Held => Progress::Held,
        })
    }

    fn health(&self) -> &Health {
        &self.health
    }

    fn failed(&mut self, error: &ProjectionError, retry_in: Duration) -> AfterFailure {
        let name = self.projector.name();
        metrics::counter!("relations_projector_errors_total", "projector" => name).increment(1);
        tracing::error!(projector = name, %error, ?retry_in, "projector step failed");
        AfterFailure::Retry
    }
}

/// Applies `events` (the batch after the checkpoint) and advances the checkpoint, all on `conn`
/// (the caller's transaction, which holds the checkpoint row). Table names are unqualified, so
/// a rebuild's `search_path` points the same code at its shadow tables. `None` when there was
/// nothing; otherwise how many events were applied.
pub(crate) async fn apply_batch(
    conn: &mut PgConnection,
    projector: &dyn Projector,
    events: Batch,
) -> Result<Option<usize>, ProjectionError> {
    let Some(last) = events.last().map(|e: &RecordedEvent| e.position) else {
        return Ok(None);
    };
    projector.apply_batch(conn, &events).await?;
    faults::point(faults::PROJECTOR_AFTER_APPLY).await?;
    checkpoint::advance(conn, projector.name(), last, events.len()).await?;
    Ok(Some(events.len()))
}

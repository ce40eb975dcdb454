//! Running a projector: catch up from its checkpoint in batches, one transaction per batch,
//! woken by NOTIFY and polling as a fallback; failures retried with backoff and reported.
//!
//! Only one instance applies a projector at a time: a batch starts by locking the projector's
//! checkpoint row `FOR UPDATE SKIP LOCKED`; an instance that finds it locked waits its turn.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use relations_store::log::{self, RecordedEvent};
use relations_store::LogPosition;
use serde::Serialize;
use sqlx::postgres::PgListener;
use sqlx::{PgConnection, PgPool, Row};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::error::ProjectionError;
use crate::projector::Projector;

/// The channel committed appends are signalled on.
pub use relations_store::signal::CHANNEL;

/// A wake-up for runners when the log grows. Only a hint: runners poll as well.
#[derive(Clone, Default)]
pub struct Wakeup(Arc<Notify>);

impl Wakeup {
    /// Listens on [`CHANNEL`] until `shutdown`, reconnecting after failures.
    pub fn listen(pool: PgPool, shutdown: CancellationToken) -> Self {
        let wakeup = Self::default();
        let notify = wakeup.0.clone();
        tokio::spawn(async move {
            while !shutdown.is_cancelled() {
                let listener = async {
                    let mut listener = PgListener::connect_with(&pool).await?;
                    listener.listen(CHANNEL).await?;
                    loop {
                        listener.recv().await?;
                        notify.notify_waiters();
                    }
                    #[allow(unreachable_code)]
                    Ok::<(), sqlx::Error>(())
                };
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    result = listener => {
                        if let Err(error) = result {
                            tracing::warn!(%error, "log listener failed; polling until it reconnects");
                        }
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        });
        wakeup
    }

    /// Returns when woken, or after `max`.
    pub async fn wait(&self, max: Duration) {
        let _ = tokio::time::timeout(max, self.0.notified()).await;
    }
}

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Applied this many events and advanced the checkpoint.
    Applied(usize),
    /// Nothing new below the horizon.
    CaughtUp,
    /// Another instance holds the projector right now.
    Elsewhere,
}

/// Why a locked batch did not apply.
enum LockOutcome {
    /// Another instance holds the checkpoint.
    Elsewhere,
    /// Something failed.
    Failed(ProjectionError),
}

/// A runner's health, shared with the admin endpoint and `/readyz`.
#[derive(Debug, Default)]
pub struct Health {
    failures: AtomicU64,
    last_error: Mutex<Option<String>>,
    failing_since: Mutex<Option<Instant>>,
    /// When the last step (of any outcome) ended, and what it was.
    last_step: Mutex<Option<(Instant, String)>>,
}

impl Health {
    /// Consecutive failed steps (0 when the last step succeeded).
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// The last error, while failing.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().expect("not poisoned").clone()
    }

    /// How long it has been failing without a success.
    pub fn failing_for(&self) -> Option<Duration> {
        self.failing_since
            .lock()
            .expect("not poisoned")
            .map(|t| t.elapsed())
    }

    /// How long ago the last step ended, and its outcome.
    pub fn last_step(&self) -> Option<(Duration, String)> {
        self.last_step
            .lock()
            .expect("not poisoned")
            .as_ref()
            .map(|(t, what)| (t.elapsed(), what.clone()))
    }

    /// Records that a step ended with `what`.
    pub fn stepped(&self, what: String) {
        *self.last_step.lock().expect("not poisoned") = Some((Instant::now(), what));
    }

    /// Records a successful step: no longer failing.
    pub fn succeeded(&self) {
        self.failures.store(0, Ordering::Relaxed);
        *self.last_error.lock().expect("not poisoned") = None;
        *self.failing_since.lock().expect("not poisoned") = None;
    }

    /// Records a failed step.
    pub fn failed(&self, error: &dyn std::fmt::Display) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock().expect("not poisoned") = Some(error.to_string());
        self.failing_since
            .lock()
            .expect("not poisoned")
            .get_or_insert_with(Instant::now);
    }
}

/// Runs one projector.
#[derive(Clone)]
pub struct Runner {
    pool: PgPool,
    projector: Arc<dyn Projector>,
    health: Arc<Health>,
    batch_size: i64,
    poll_interval: Duration,
    /// Whether this projector's checkpoint row is known to exist.
    registered: Arc<std::sync::atomic::AtomicBool>,
}

impl Runner {
    /// A runner for `projector` on `pool`.
    pub fn new(pool: PgPool, projector: Arc<dyn Projector>) -> Self {
        Self {
            pool,
            projector,
            health: Arc::default(),
            batch_size: 500,
            poll_interval: Duration::from_millis(500),
            registered: Arc::default(),
        }
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
            sqlx::query(
                "INSERT INTO projector_checkpoints (name) VALUES ($1) ON CONFLICT DO NOTHING",
            )
            .bind(name)
            .execute(&self.pool)
            .await?;
            self.registered.store(true, Ordering::Relaxed);
        }
        // Look before locking: an idle runner takes no transaction id, so it never holds back
        // the horizon other readers wait on.
        let before = checkpoint(&self.pool, name).await?;
        if !log::has_after(&self.pool, before).await? {
            return Ok(Step::CaughtUp);
        }
        let mut tx = self.pool.begin().await?;
        let result = self.locked_batch(&mut tx).await;
        // Every path ends the transaction explicitly: one left to a lazy rollback would sit
        // idle holding a transaction id, and stall every log reader in the cluster.
        let applied = match result {
            Ok(Some(applied)) => applied,
            Ok(None) => {
                tx.rollback().await?;
                return Ok(Step::CaughtUp);
            }
            Err(LockOutcome::Elsewhere) => {
                tx.rollback().await?;
                return Ok(Step::Elsewhere);
            }
            Err(LockOutcome::Failed(error)) => {
                let _ = tx.rollback().await;
                return Err(error);
            }
        };
        tx.commit().await?;
        tracing::Span::current().record("events", applied);
        metrics::counter!("relations_projector_events_total", "projector" => name)
            .increment(applied as u64);
        Ok(Step::Applied(applied))
    }

    /// Inside the step's transaction: lock the checkpoint (or find it taken), apply a batch.
    async fn locked_batch(&self, tx: &mut PgConnection) -> Result<Option<usize>, LockOutcome> {
        let name = self.projector.name();
        let row = sqlx::query(
            "SELECT transaction_id, global_position FROM projector_checkpoints
              WHERE name = $1 FOR UPDATE SKIP LOCKED",
        )
        .bind(name)
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| LockOutcome::Failed(e.into()))?;
        let Some(row) = row else {
            return Err(LockOutcome::Elsewhere);
        };
        let after = LogPosition {
            transaction_id: row
                .try_get("transaction_id")
                .map_err(|e| LockOutcome::Failed(e.into()))?,
            global_position: row
                .try_get("global_position")
                .map_err(|e| LockOutcome::Failed(e.into()))?,
        };
        let mut until: Option<LogPosition> = None;
        for upstream in self.projector.upstreams() {
            let at = checkpoint(&mut *tx, upstream)
                .await
                .map_err(|e| LockOutcome::Failed(e.into()))?;
            until = Some(until.map_or(at, |u| u.min(at)));
        }
        apply_batch(tx, self.projector.as_ref(), after, until, self.batch_size)
            .await
            .map_err(LockOutcome::Failed)
    }

    /// Steps until `shutdown`: straight on while there is work, otherwise waiting for a
    /// wake-up or the poll interval; after a failure, backing off up to 30 s.
    pub async fn run(self, wakeup: Wakeup, shutdown: CancellationToken) {
        let name = self.projector.name();
        tracing::info!(projector = name, "projector started");
        let mut backoff = Duration::from_millis(100);
        while !shutdown.is_cancelled() {
            let step = self.step().await;
            self.health.stepped(format!("{step:?}"));
            let pause = match step {
                Ok(Step::Applied(_)) => {
                    self.health.succeeded();
                    backoff = Duration::from_millis(100);
                    continue;
                }
                Ok(Step::CaughtUp | Step::Elsewhere) => {
                    self.health.succeeded();
                    None
                }
                Err(error) => {
                    self.health.failed(&error);
                    metrics::counter!("relations_projector_errors_total", "projector" => name)
                        .increment(1);
                    tracing::error!(projector = name, %error, retry_in = ?backoff, "projector step failed");
                    let pause = backoff;
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    Some(pause)
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = async {
                    match pause {
                        Some(pause) => tokio::time::sleep(pause).await,
                        None => wakeup.wait(self.poll_interval).await,
                    }
                } => {}
            }
        }
        tracing::info!(projector = name, "projector stopped");
    }
}

/// Reads the batch after `after`, applies it and advances the checkpoint, all on `conn` (the
/// caller's transaction, which holds the checkpoint row). Table names are unqualified, so a
/// rebuild's `search_path` points the same code at its shadow tables. `None` when caught up;
/// otherwise how many events were applied.
pub(crate) async fn apply_batch(
    conn: &mut PgConnection,
    projector: &dyn Projector,
    after: LogPosition,
    until: Option<LogPosition>,
    batch_size: i64,
) -> Result<Option<usize>, ProjectionError> {
    let mut events = log::read_after(conn, after, batch_size).await?;
    if let Some(until) = until {
        // Checkpoints sit at transaction boundaries, so this never splits a transaction.
        events.retain(|e| e.position <= until);
    }
    let Some(last) = events.last().map(|e: &RecordedEvent| e.position) else {
        return Ok(None);
    };
    projector.apply_batch(conn, &events).await?;
    sqlx::query(
        "UPDATE projector_checkpoints
            SET transaction_id = $2, global_position = $3,
                events_applied = events_applied + $4, updated_at = now()
          WHERE name = $1",
    )
    .bind(projector.name())
    .bind(last.transaction_id)
    .bind(last.global_position)
    .bind(events.len() as i64)
    .execute(&mut *conn)
    .await?;
    Ok(Some(events.len()))
}

/// A projector's progress as the admin endpoint reports it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectorStatus {
    /// The projector's name.
    pub name: String,
    /// Its checkpoint.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub position: LogPosition,
    /// Events below the horizon not applied yet.
    pub lag_events: i64,
    /// Age of the oldest event not applied yet (0 when caught up).
    pub lag_seconds: f64,
    /// `caught_up`, `catching_up` or `failing`.
    pub state: &'static str,
    /// The last error, while failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Seconds since this process's runner last finished a step, and what it found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_step: Option<(f64, String)>,
}

impl ProjectorStatus {
    /// Reads `name`'s checkpoint and lag; `health` is this process's runner, if it runs one.
    pub async fn read(
        pool: &PgPool,
        name: &str,
        health: Option<&Health>,
    ) -> Result<Self, sqlx::Error> {
        let position = checkpoint(pool, name).await?;
        let row = sqlx::query(
            "SELECT count(*) AS lag_events,
                    COALESCE(EXTRACT(EPOCH FROM now() - min(occurred_at))::float8, 0) AS lag_seconds
               FROM events
              WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
                AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())",
        )
        .bind(position.transaction_id.to_string())
        .bind(position.global_position)
        .fetch_one(pool)
        .await?;
        let lag_events: i64 = row.try_get("lag_events")?;
        let failing = health.is_some_and(|h| h.failures() > 0);
        Ok(Self {
            name: name.to_owned(),
            position,
            lag_events,
            lag_seconds: row.try_get::<f64, _>("lag_seconds")?.max(0.0),
            state: if failing {
                "failing"
            } else if lag_events > 0 {
                "catching_up"
            } else {
                "caught_up"
            },
            last_error: health.and_then(|h| h.last_error()),
            last_step: health
                .and_then(|h| h.last_step())
                .map(|(ago, what)| (ago.as_secs_f64(), what)),
        })
    }
}

/// A projector's checkpoint (the start of the log when it never ran).
pub async fn checkpoint<'e>(
    pool: impl sqlx::PgExecutor<'e>,
    name: &str,
) -> Result<LogPosition, sqlx::Error> {
    let row = sqlx::query(
        "SELECT transaction_id, global_position FROM projector_checkpoints WHERE name = $1",
    )
    .bind(name)
    .fetch_optional(pool)
    .await?;
    Ok(match row {
        Some(row) => LogPosition {
            transaction_id: row.try_get("transaction_id")?,
            global_position: row.try_get("global_position")?,
        },
        None => LogPosition::START,
    })
}

/// Waits until every projector in `names` has applied `position`, polling, for at most
/// `timeout`. True when they have.
pub async fn wait_for(
    pool: &PgPool,
    names: &[&str],
    position: LogPosition,
    timeout: Duration,
) -> Result<bool, sqlx::Error> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(2);
    loop {
        let behind: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM unnest($1::text[]) AS n(name)
               LEFT JOIN projector_checkpoints c USING (name)
              WHERE (COALESCE(c.transaction_id, 0), COALESCE(c.global_position, 0)) < ($2, $3)",
        )
        .bind(names)
        .bind(position.transaction_id)
        .bind(position.global_position)
        .fetch_one(pool)
        .await?;
        if behind == 0 {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

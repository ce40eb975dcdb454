//! The Redis connection: made lazily and remade after failures, so the service starts and keeps
//! answering while Redis is down (callers degrade: the limiter falls back to per-instance
//! buckets, caches are skipped).
//!
//! A circuit breaker stands in front of it: the first failed call opens it, and while it is
//! open every call is refused at once (no connect attempt, no time-out to wait for) except one
//! probe every [`PROBE_EVERY`]; the probe's success closes it. Each change of state is logged
//! once and shown by the gauge `relations_redis_up`, not logged per request.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::Mutex;

/// How long one Redis call may take before the caller gives up on it.
pub const CALL_TIMEOUT: Duration = Duration::from_millis(250);
/// While Redis is down, how often one call is let through to see whether it is back.
pub const PROBE_EVERY: Duration = Duration::from_millis(500);

/// A shared, lazily connected Redis handle.
#[derive(Clone)]
pub struct Redis {
    client: Arc<redis::Client>,
    /// Every key this instance writes starts with this.
    pub prefix: Arc<str>,
    slot: Arc<Mutex<Option<ConnectionManager>>>,
    breaker: Arc<Breaker>,
}

/// Open while Redis is failing; see the module docs.
#[derive(Default)]
struct Breaker {
    open: AtomicBool,
    next_probe: std::sync::Mutex<Option<Instant>>,
}

impl Breaker {
    /// Whether a call may go to Redis now: always while closed; while open, one call per
    /// [`PROBE_EVERY`].
    fn admit(&self) -> bool {
        if !self.open.load(Ordering::Acquire) {
            return true;
        }
        let mut next = self.next_probe.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if next.is_none_or(|at| now >= at) {
            *next = Some(now + PROBE_EVERY);
            return true;
        }
        false
    }

    fn succeeded(&self) {
        if self.open.swap(false, Ordering::AcqRel) {
            tracing::info!("redis answers again: caches and shared rate limits are back");
            metrics::gauge!("relations_redis_up").set(1.0);
        }
    }

    fn failed(&self, error: &str) {
        *self.next_probe.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Instant::now() + PROBE_EVERY);
        if !self.open.swap(true, Ordering::AcqRel) {
            tracing::warn!(
                %error,
                probe_every = ?PROBE_EVERY,
                "redis is down: caches are skipped and rate limits are per instance until it answers"
            );
            metrics::gauge!("relations_redis_up").set(0.0);
        }
    }
}

/// Redis could not be used for this call.
#[derive(Debug, thiserror::Error)]
pub enum RedisUnavailable {
    /// Redis is known to be down (the breaker is open); not tried.
    #[error("redis is down (probing in the background)")]
    Paused,
    /// The call failed or timed out.
    #[error("redis: {0}")]
    Failed(String),
}

impl Redis {
    /// A handle for `url`; nothing is connected yet.
    pub fn new(url: &str, prefix: &str) -> anyhow::Result<Self> {
        metrics::gauge!("relations_redis_up").set(1.0);
        Ok(Self {
            client: Arc::new(redis::Client::open(url)?),
            prefix: prefix.into(),
            slot: Arc::default(),
            breaker: Arc::default(),
        })
    }

    /// A connection, or why there is none now (at once while the breaker is open).
    pub async fn connection(&self) -> Result<ConnectionManager, RedisUnavailable> {
        if !self.breaker.admit() {
            return Err(RedisUnavailable::Paused);
        }
        let mut slot = self.slot.lock().await;
        if let Some(manager) = &*slot {
            return Ok(manager.clone());
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CALL_TIMEOUT))
            .set_response_timeout(Some(CALL_TIMEOUT))
            .set_number_of_retries(1);
        match ConnectionManager::new_with_config(redis::Client::clone(&self.client), config).await {
            Ok(manager) => {
                *slot = Some(manager.clone());
                Ok(manager)
            }
            Err(e) => {
                self.breaker.failed(&e.to_string());
                Err(RedisUnavailable::Failed(e.to_string()))
            }
        }
    }

    /// Runs one call within `limit`, reporting its outcome to the breaker: a time-out or a
    /// broken connection opens it, an answer (even an error reply) closes it.
    pub async fn call<T>(
        &self,
        limit: Duration,
        call: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, RedisUnavailable> {
        match tokio::time::timeout(limit, call).await {
            Ok(Ok(value)) => {
                self.breaker.succeeded();
                Ok(value)
            }
            Ok(Err(error)) => {
                if error.is_io_error()
                    || error.is_timeout()
                    || error.is_connection_dropped()
                    || error.is_connection_refusal()
                {
                    self.breaker.failed(&error.to_string());
                } else {
                    self.breaker.succeeded();
                }
                Err(RedisUnavailable::Failed(error.to_string()))
            }
            Err(_) => {
                self.breaker.failed("timed out");
                Err(RedisUnavailable::Failed("timed out".into()))
            }
        }
    }

    /// Whether Redis is believed up (the breaker is closed).
    pub fn is_up(&self) -> bool {
        !self.breaker.open.load(Ordering::Acquire)
    }

    /// Whether Redis answers a PING now.
    pub async fn ping(&self) -> bool {
        let Ok(mut conn) = self.connection().await else {
            return false;
        };
        self.call(
            CALL_TIMEOUT,
            redis::cmd("PING").query_async::<String>(&mut conn),
        )
        .await
        .is_ok()
    }
}

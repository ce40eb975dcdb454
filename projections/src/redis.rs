//! The Redis connection: made lazily and remade after failures, so the service starts and keeps
//! answering while Redis is down (callers degrade: the limiter fails open, caches are skipped).

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::Mutex;

/// How long one Redis call may take before the caller gives up on it.
pub const CALL_TIMEOUT: Duration = Duration::from_millis(250);
/// After a failed connect, how long to wait before trying again.
const RECONNECT_PAUSE: Duration = Duration::from_secs(1);

/// A shared, lazily connected Redis handle.
#[derive(Clone)]
pub struct Redis {
    client: redis::Client,
    /// Every key this instance writes starts with this.
    pub prefix: Arc<str>,
    slot: Arc<Mutex<Slot>>,
}

#[derive(Default)]
struct Slot {
    manager: Option<ConnectionManager>,
    last_failure: Option<Instant>,
}

/// Redis could not be used for this call.
#[derive(Debug, thiserror::Error)]
pub enum RedisUnavailable {
    /// Connecting failed recently; not retried yet.
    #[error("redis is down (retrying in the background)")]
    Paused,
    /// The call failed or timed out.
    #[error("redis: {0}")]
    Failed(String),
}

impl Redis {
    /// A handle for `url`; nothing is connected yet.
    pub fn new(url: &str, prefix: &str) -> anyhow::Result<Self> {
        Ok(Self {
            client: redis::Client::open(url)?,
            prefix: prefix.into(),
            slot: Arc::default(),
        })
    }

    /// A connection, or why there is none now.
    pub async fn connection(&self) -> Result<ConnectionManager, RedisUnavailable> {
        let mut slot = self.slot.lock().await;
        if let Some(manager) = &slot.manager {
            return Ok(manager.clone());
        }
        if slot
            .last_failure
            .is_some_and(|t| t.elapsed() < RECONNECT_PAUSE)
        {
            return Err(RedisUnavailable::Paused);
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CALL_TIMEOUT))
            .set_response_timeout(Some(CALL_TIMEOUT))
            .set_number_of_retries(1);
        match ConnectionManager::new_with_config(self.client.clone(), config).await {
            Ok(manager) => {
                slot.manager = Some(manager.clone());
                slot.last_failure = None;
                Ok(manager)
            }
            Err(e) => {
                slot.last_failure = Some(Instant::now());
                Err(RedisUnavailable::Failed(e.to_string()))
            }
        }
    }

    /// Whether Redis answers a PING now.
    pub async fn ping(&self) -> bool {
        let Ok(mut conn) = self.connection().await else {
            return false;
        };
        let pong: Result<Result<String, _>, _> =
            tokio::time::timeout(CALL_TIMEOUT, redis::cmd("PING").query_async(&mut conn)).await;
        matches!(pong, Ok(Ok(_)))
    }
}

//! Rule 7: a token bucket per user in Redis, taken and refilled by one Lua script, so that
//! concurrent requests on any number of instances never over-spend a bucket.
//!
//! When Redis is down the limiter fails open: commands go through, a warning is logged and
//! `relations_rate_limiter_unavailable_total` counts them. A limiter must not take the write path
//! down with it; the database's own limits still bound the load.

use std::sync::Arc;

use redis::Script;
use relations_domain::UserId;

use relations_projections::redis::{Redis, CALL_TIMEOUT};

/// KEYS[1] the bucket; ARGV capacity, refill per second. Time is Redis's own clock, so every
/// instance agrees. Returns {allowed, microseconds until the next token}.
const TOKEN_BUCKET: &str = r#"
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = capacity
  at = now
end
if now > at then
  tokens = math.min(capacity, tokens + (now - at) * rate / 1000000)
end
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = math.ceil((1 - tokens) * 1000000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate * 1000) + 1000)
return {allowed, wait}
"#;

/// The limiter's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead.
    Allowed,
    /// Refused; a token will be there in this many seconds (rounded up).
    Limited {
        /// Seconds until the next token.
        retry_after_secs: u64,
    },
}

/// The per-user write limiter.
#[derive(Clone)]
pub struct RateLimiter {
    redis: Redis,
    script: Arc<Script>,
    capacity: u32,
    refill_per_sec: f64,
}

impl RateLimiter {
    /// A limiter with buckets of `capacity` refilled at `refill_per_sec`.
    pub fn new(redis: Redis, capacity: u32, refill_per_sec: f64) -> Self {
        Self {
            redis,
            script: Arc::new(Script::new(TOKEN_BUCKET)),
            capacity,
            refill_per_sec,
        }
    }

    /// Takes one token from `user`'s bucket.
    pub async fn check(&self, user: UserId) -> Decision {
        match self.try_check(user).await {
            Ok(decision) => decision,
            Err(error) => {
                metrics::counter!("relations_rate_limiter_unavailable_total").increment(1);
                tracing::warn!(%error, "rate limiter unavailable; failing open");
                Decision::Allowed
            }
        }
    }

    /// Takes one token from `user`'s bucket, or answers 429 `RATE_LIMITED`.
    pub async fn enforce(&self, user: UserId) -> Result<(), crate::error::ApiError> {
        match self.check(user).await {
            Decision::Allowed => Ok(()),
            Decision::Limited { retry_after_secs } => {
                Err(crate::error::ApiError::RateLimited { retry_after_secs })
            }
        }
    }

    async fn try_check(&self, user: UserId) -> Result<Decision, String> {
        let mut conn = self.redis.connection().await.map_err(|e| e.to_string())?;
        let key = format!("{}rl:{}", self.redis.prefix, user);
        let mut invocation = self.script.key(key);
        invocation.arg(self.capacity).arg(self.refill_per_sec);
        let call = invocation.invoke_async::<(i64, i64)>(&mut conn);
        let (allowed, wait_us) = tokio::time::timeout(CALL_TIMEOUT, call)
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        Ok(if allowed == 1 {
            Decision::Allowed
        } else {
            let secs = (wait_us.max(1) as u64).div_ceil(1_000_000);
            Decision::Limited {
                retry_after_secs: secs.max(1),
            }
        })
    }
}

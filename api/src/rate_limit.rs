//! Rule 7: a token bucket per user in Redis, taken and refilled by one Lua script, so that
//! concurrent requests on any number of instances never over-spend a bucket.
//!
//! When Redis is down (or its circuit breaker is open) the limiter falls back to a bucket per
//! user in this instance's memory, with the same capacity and refill:
//! `relations_rate_limiter_unavailable_total` counts those decisions. Rule 7 then holds per
//! instance (n instances allow up to n times the rate) until Redis answers again; a spammer
//! gains nothing unlimited from an outage, and the write path does not go down with the
//! limiter.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

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
    local: Arc<Mutex<LocalBuckets>>,
}

/// This instance's buckets, used while Redis is down: user -> (tokens, when last refilled).
#[derive(Default)]
struct LocalBuckets(HashMap<i64, (f64, Instant)>);

/// Beyond this many local buckets, full ones are dropped (a full bucket is the same as none).
const LOCAL_BUCKETS_MAX: usize = 100_000;

impl LocalBuckets {
    fn take(&mut self, user: UserId, capacity: f64, rate: f64) -> Decision {
        let now = Instant::now();
        if self.0.len() >= LOCAL_BUCKETS_MAX {
            self.0.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() * rate < capacity
            });
        }
        let (tokens, at) = self.0.entry(user.get()).or_insert((capacity, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * rate).min(capacity);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Decision::Allowed
        } else {
            Decision::Limited {
                retry_after_secs: (((1.0 - *tokens) / rate).ceil() as u64).max(1),
            }
        }
    }
}

impl RateLimiter {
    /// A limiter with buckets of `capacity` refilled at `refill_per_sec`.
    pub fn new(redis: Redis, capacity: u32, refill_per_sec: f64) -> Self {
        Self {
            redis,
            script: Arc::new(Script::new(TOKEN_BUCKET)),
            capacity,
            refill_per_sec,
            local: Arc::default(),
        }
    }

    /// Takes one token from `user`'s bucket.
    pub async fn check(&self, user: UserId) -> Decision {
        match self.try_check(user).await {
            Ok(decision) => decision,
            // Redis's breaker logs the outage once; each decision is counted.
            Err(_) => {
                metrics::counter!("relations_rate_limiter_unavailable_total").increment(1);
                let mut local = self.local.lock().unwrap_or_else(|e| e.into_inner());
                local.take(user, f64::from(self.capacity), self.refill_per_sec)
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
        let (allowed, wait_us) = self
            .redis
            .call(CALL_TIMEOUT, call)
            .await
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

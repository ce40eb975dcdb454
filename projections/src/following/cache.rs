//! Redis caches of hot reads (counts, first pages), kept honest by projector `cache`.
//!
//! Cache-aside with generations: every user has a generation counter. A reader takes the
//! generation with the cached value (one MGET); on a miss it loads from PostgreSQL and stores the
//! value only if the generation has not moved meanwhile (one script). Projector `cache` follows
//! projector `following` (never passes its checkpoint) and, for each event, bumps the
//! generation of the users it touches and drops their entries. So an entry is never older than
//! the read model by more than the cache projector's lag, and a reader that raced an
//! invalidation never writes back what it read before it. Empty results are cached like any
//! other (the sentinel against penetration). When Redis is down, readers go to PostgreSQL.

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use relations_store::log::RecordedEvent;
use serde::de::DeserializeOwned;
use serde::Serialize;
use sqlx::PgConnection;

use crate::error::ProjectionError;
use crate::redis::{Redis, CALL_TIMEOUT};
use crate::runtime::projector::Projector;

/// The cache projector's name.
pub const NAME: &str = "cache";

/// How long an entry lives without invalidation.
const TTL: Duration = Duration::from_secs(600);

const SET_IF_GENERATION: &str = r#"
local g = redis.call('GET', KEYS[2])
if (g or '0') == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
  return 1
end
return 0
"#;

/// What is cached for a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// `{following, followers, friends, posts}`.
    Counts,
    /// The first page of followers (default size, no viewer).
    FirstFollowers,
    /// The first page of following (default size, no viewer).
    FirstFollowing,
    /// The first page of friends (default size, no viewer).
    FirstFriends,
}

impl Entry {
    const ALL: [Entry; 4] = [
        Entry::Counts,
        Entry::FirstFollowers,
        Entry::FirstFollowing,
        Entry::FirstFriends,
    ];

    fn suffix(self) -> &'static str {
        match self {
            Entry::Counts => "counts",
            Entry::FirstFollowers => "followers:0",
            Entry::FirstFollowing => "following:0",
            Entry::FirstFriends => "friends:0",
        }
    }
}

/// The read cache.
#[derive(Clone)]
pub struct Cache {
    redis: Redis,
    script: std::sync::Arc<Script>,
}

impl Cache {
    /// A cache on `redis`.
    pub fn new(redis: Redis) -> Self {
        Self {
            redis,
            script: std::sync::Arc::new(Script::new(SET_IF_GENERATION)),
        }
    }

    fn key(&self, user: i64, entry: Entry) -> String {
        format!("{}c:{}:{}", self.redis.prefix, user, entry.suffix())
    }

    fn generation_key(&self, user: i64) -> String {
        format!("{}c:{}:gen", self.redis.prefix, user)
    }

    /// The cached value, or `load`'s, stored for the next reader when no invalidation raced it.
    pub async fn get_or_load<T, E, F>(&self, user: i64, entry: Entry, load: F) -> Result<T, E>
    where
        T: Serialize + DeserializeOwned,
        F: Future<Output = Result<T, E>>,
    {
        let Ok(mut conn) = self.redis.connection().await else {
            return load.await;
        };
        let (key, generation_key) = (self.key(user, entry), self.generation_key(user));
        let mut mget = redis::cmd("MGET");
        mget.arg(&key).arg(&generation_key);
        let read = mget.query_async::<(Option<String>, Option<String>)>(&mut conn);
        let generation = match tokio::time::timeout(CALL_TIMEOUT, read).await {
            Ok(Ok((Some(cached), _))) => {
                if let Ok(value) = serde_json::from_str(&cached) {
                    metrics::counter!("relations_cache_hits_total", "entry" => entry.suffix())
                        .increment(1);
                    return Ok(value);
                }
                None
            }
            Ok(Ok((None, generation))) => Some(generation.unwrap_or_else(|| "0".into())),
            _ => None,
        };
        metrics::counter!("relations_cache_misses_total", "entry" => entry.suffix()).increment(1);
        let value = load.await?;
        if let (Some(generation), Ok(json)) = (generation, serde_json::to_string(&value)) {
            let mut invocation = self.script.key(&key);
            invocation
                .key(&generation_key)
                .arg(generation)
                .arg(json)
                .arg(TTL.as_secs());
            let _ =
                tokio::time::timeout(CALL_TIMEOUT, invocation.invoke_async::<i64>(&mut conn)).await;
        }
        Ok(value)
    }

    /// Bumps the users' generations and drops their entries, atomically per call.
    pub async fn invalidate(&self, users: &[i64]) -> Result<(), String> {
        let mut conn = self.redis.connection().await.map_err(|e| e.to_string())?;
        let mut pipe = redis::pipe();
        pipe.atomic();
        for &user in users {
            pipe.incr(self.generation_key(user), 1).ignore();
            pipe.expire(self.generation_key(user), (TTL.as_secs() * 2) as i64)
                .ignore();
            for entry in Entry::ALL {
                pipe.del(self.key(user, entry)).ignore();
            }
        }
        tokio::time::timeout(CALL_TIMEOUT, pipe.query_async::<()>(&mut conn))
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|e| e.to_string())
    }
}

/// Projector `cache`: invalidates the cached reads of every user an event touches, never ahead
/// of projector `following`.
pub struct CacheInvalidator {
    cache: Cache,
}

impl CacheInvalidator {
    /// An invalidator for `cache`.
    pub fn new(cache: Cache) -> Self {
        Self { cache }
    }
}

#[async_trait]
impl Projector for CacheInvalidator {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tables(&self) -> &'static [&'static str] {
        &[]
    }

    fn upstreams(&self) -> &'static [&'static str] {
        // Counts hold `following`'s counters and `feed`'s post counts.
        &[super::NAME, crate::feed::NAME]
    }

    fn essential(&self) -> bool {
        false
    }

    async fn apply(
        &self,
        _: &mut PgConnection,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        let users: Vec<i64> = event
            .data()
            .as_object()
            .map(|o| o.values().filter_map(|v| v.as_i64()).collect())
            .unwrap_or_default();
        if users.is_empty() {
            return Ok(());
        }
        self.cache
            .invalidate(&users)
            .await
            .map_err(ProjectionError::Cache)
    }
}

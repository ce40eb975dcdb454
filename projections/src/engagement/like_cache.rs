//! Seed 002's like-state cache: per user, the ids of the posts they like that are newer than a
//! threshold, in a Redis set, so "did I like this?" for recent content never misses to the
//! database, and older content asks the database.
//!
//! Why not a plain cache of (user, post) answers: most checks are for posts the user did not
//! like, and a plain cache misses on each of those (the seed measured about 90% misses). A set
//! of everything a user liked above the threshold answers "no" as surely as "yes". Post ids are
//! UUID v7, so "newer than the threshold" is an id comparison: the threshold is the id made at
//! `now - window`.
//!
//! A user's set is loaded lazily on their first check (everything they like above the
//! threshold at that moment, and a sentinel so an empty set is cached too), and projector
//! `likes_cache`, never ahead of projector `engagement`, keeps loaded sets current from the
//! log. As with the inbox cache, every change also sets the user's generation, and a load
//! stores what it read only if the generation did not move meanwhile. A set loaded at one
//! threshold stays complete for every later (higher) threshold.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use relations_domain::{LikeEvent, LikeTarget, LogEvent, PostId, UserId};
use relations_store::log::RecordedEvent;
use sqlx::{PgConnection, PgPool};

use super::query;
use crate::error::ProjectionError;
use crate::redis::{Redis, CALL_TIMEOUT};
use crate::runtime::projector::{erased_user, Projector};

/// The cache projector's name.
pub const NAME: &str = "likes_cache";

/// How long a user's set stays cached without being read or changed.
const TTL: Duration = Duration::from_secs(3600);

/// KEYS: the set. ARGV: ids. Answers false when the set is not loaded, else a 0/1 per id.
const READ: &str = r#"
if redis.call('SISMEMBER', KEYS[1], '~') == 0 then return false end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
local found = {}
for i = 2, #ARGV do found[i - 1] = redis.call('SISMEMBER', KEYS[1], ARGV[i]) end
return found
"#;

/// KEYS: the set, its generation. ARGV: the generation read before the load, ttl, ids.
const LOAD: &str = r#"
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SADD', KEYS[1], '~')
for i = 3, #ARGV do redis.call('SADD', KEYS[1], ARGV[i]) end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
"#;

/// KEYS: the set, its generation. ARGV: id, 1 (liked) or 0, generation, ttl.
const CHANGE: &str = r#"
if redis.call('SISMEMBER', KEYS[1], '~') == 1 then
  if ARGV[2] == '1' then redis.call('SADD', KEYS[1], ARGV[1])
  else redis.call('SREM', KEYS[1], ARGV[1]) end
end
redis.call('SET', KEYS[2], ARGV[3], 'EX', tonumber(ARGV[4]))
return 1
"#;

/// The like-state cache.
#[derive(Clone)]
pub struct LikeCache {
    redis: Redis,
    window: Duration,
    scripts: Arc<[Script; 3]>,
}

impl LikeCache {
    /// A cache on `redis` of each user's likes of posts newer than `window`.
    pub fn new(redis: Redis, window: Duration) -> Self {
        Self {
            redis,
            window,
            scripts: Arc::new([READ, LOAD, CHANGE].map(Script::new)),
        }
    }

    fn key(&self, user: i64) -> String {
        format!("{}likes:{user}", self.redis.prefix)
    }

    fn generation_key(&self, user: i64) -> String {
        format!("{}likes:{user}:gen", self.redis.prefix)
    }

    /// The lowest post id the sets hold now: the UUID v7 of `now - window`, random bits zero.
    pub fn threshold(&self) -> uuid::Uuid {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let millis = now.saturating_sub(self.window).as_millis() as u64;
        let mut bytes = [0u8; 16];
        bytes[..6].copy_from_slice(&millis.to_be_bytes()[2..]);
        bytes[6] = 0x70;
        bytes[8] = 0x80;
        uuid::Uuid::from_bytes(bytes)
    }

    /// Whether `user` likes each of `posts`, in order: recent posts from the cache (loaded on
    /// a miss), older ones from the read model.
    pub async fn liked(
        &self,
        pool: &PgPool,
        user: UserId,
        posts: &[PostId],
    ) -> Result<Vec<bool>, ProjectionError> {
        let threshold = self.threshold();
        let (recent, old): (Vec<PostId>, Vec<PostId>) =
            posts.iter().copied().partition(|p| p.uuid() >= threshold);
        let mut liked: HashSet<PostId> = HashSet::new();
        if !old.is_empty() {
            metrics::counter!("relations_like_checks_total", "answered_by" => "database")
                .increment(old.len() as u64);
            let targets: Vec<LikeTarget> = old.iter().map(|&p| LikeTarget::Post(p)).collect();
            for target in query::liked(pool, user, &targets).await? {
                liked.insert(target.post());
            }
        }
        if !recent.is_empty() {
            liked.extend(self.recent(pool, user, &recent, threshold).await?);
        }
        Ok(posts.iter().map(|p| liked.contains(p)).collect())
    }

    /// Which of `posts` (all above `threshold`) `user` likes, from the cache.
    async fn recent(
        &self,
        pool: &PgPool,
        user: UserId,
        posts: &[PostId],
        threshold: uuid::Uuid,
    ) -> Result<Vec<PostId>, ProjectionError> {
        let from_database = || async {
            let targets: Vec<LikeTarget> = posts.iter().map(|&p| LikeTarget::Post(p)).collect();
            let liked = query::liked(pool, user, &targets).await?;
            Ok::<_, ProjectionError>(liked.into_iter().map(LikeTarget::post).collect())
        };
        let Ok(mut conn) = self.redis.connection().await else {
            return from_database().await;
        };
        let mut call = self.scripts[0].key(self.key(user.get()));
        call.arg(TTL.as_secs());
        for post in posts {
            call.arg(post.to_string());
        }
        let cached: Result<Option<Vec<i64>>, _> = self
            .redis
            .call(CALL_TIMEOUT, call.invoke_async(&mut conn))
            .await;
        match cached {
            Ok(Some(found)) => {
                metrics::counter!("relations_like_checks_total", "answered_by" => "cache")
                    .increment(posts.len() as u64);
                Ok(posts
                    .iter()
                    .zip(found)
                    .filter(|(_, f)| *f == 1)
                    .map(|(p, _)| *p)
                    .collect())
            }
            Ok(None) => {
                metrics::counter!("relations_like_checks_total", "answered_by" => "cache_load")
                    .increment(posts.len() as u64);
                let all = self.load(&mut conn, pool, user, threshold).await?;
                Ok(posts.iter().filter(|p| all.contains(p)).copied().collect())
            }
            // The breaker logs the outage once; this request just reads PostgreSQL.
            Err(_) => from_database().await,
        }
    }

    /// Loads `user`'s likes above `threshold` and caches them unless a change raced the load.
    async fn load(
        &self,
        conn: &mut redis::aio::ConnectionManager,
        pool: &PgPool,
        user: UserId,
        threshold: uuid::Uuid,
    ) -> Result<HashSet<PostId>, ProjectionError> {
        let generation_key = self.generation_key(user.get());
        let generation: Option<String> = self
            .redis
            .call(
                CALL_TIMEOUT,
                redis::cmd("GET")
                    .arg(&generation_key)
                    .query_async::<Option<String>>(conn),
            )
            .await
            .ok()
            .flatten();
        let posts = query::liked_posts_since(pool, user, threshold).await?;
        let mut call = self.scripts[1].key(self.key(user.get()));
        call.key(generation_key)
            .arg(generation.unwrap_or_default())
            .arg(TTL.as_secs());
        for post in &posts {
            call.arg(PostId::from_uuid(*post).to_string());
        }
        let _ = self
            .redis
            .call(CALL_TIMEOUT, call.invoke_async::<i64>(conn))
            .await;
        Ok(posts.into_iter().map(PostId::from_uuid).collect())
    }

    /// Records a like (or unlike) of `post` by `user` in a loaded set, and moves the user's
    /// generation.
    async fn change(
        &self,
        user: i64,
        post: PostId,
        liked: bool,
        generation: &str,
    ) -> Result<(), ProjectionError> {
        let mut conn = self
            .redis
            .connection()
            .await
            .map_err(|e| ProjectionError::Cache(e.to_string()))?;
        let mut call = self.scripts[2].key(self.key(user));
        call.key(self.generation_key(user))
            .arg(post.to_string())
            .arg(if liked { "1" } else { "0" })
            .arg(generation)
            .arg(TTL.as_secs() * 2);
        self.redis
            .call(CALL_TIMEOUT, call.invoke_async::<i64>(&mut conn))
            .await
            .map_err(|e| ProjectionError::Cache(e.to_string()))?;
        Ok(())
    }
}

impl LikeCache {
    /// Drops `user`'s set (an erasure: their likes are void) and moves their generation, so a
    /// load racing this stores nothing.
    async fn forget(&self, user: i64, generation: &str) -> Result<(), ProjectionError> {
        let mut conn = self
            .redis
            .connection()
            .await
            .map_err(|e| ProjectionError::Cache(e.to_string()))?;
        let mut pipe = redis::pipe();
        pipe.atomic()
            .del(self.key(user))
            .ignore()
            .set_ex(self.generation_key(user), generation, TTL.as_secs() * 2)
            .ignore();
        self.redis
            .call(CALL_TIMEOUT, pipe.query_async::<()>(&mut conn))
            .await
            .map_err(|e| ProjectionError::Cache(e.to_string()))?;
        Ok(())
    }
}

/// Projector `likes_cache`: keeps loaded sets current, never ahead of projector `engagement`.
pub struct LikeCacheProjector {
    cache: LikeCache,
}

impl LikeCacheProjector {
    /// A projector maintaining `cache`.
    pub fn new(cache: LikeCache) -> Self {
        Self { cache }
    }
}

#[async_trait]
impl Projector for LikeCacheProjector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tables(&self) -> &'static [&'static str] {
        &[]
    }

    fn upstreams(&self) -> &'static [&'static str] {
        &[super::NAME]
    }

    fn essential(&self) -> bool {
        false
    }

    async fn apply(
        &self,
        _conn: &mut PgConnection,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        if let Some(user) = erased_user(event) {
            return self.cache.forget(user, &event.position.to_string()).await;
        }
        let (user, target, liked) = match event.event {
            LogEvent::Like(LikeEvent::Liked { user, target, .. }) => (user, target, true),
            LogEvent::Like(LikeEvent::Unliked { user, target, .. }) => (user, target, false),
            LogEvent::Relation(_)
            | LogEvent::Post(_)
            | LogEvent::Thread(_)
            | LogEvent::Repost(_)
            | LogEvent::Bookmark(_)
            | LogEvent::Lists(_)
            | LogEvent::Filters(_)
            | LogEvent::Account(_) => return Ok(()),
        };
        let LikeTarget::Post(post) = target else {
            return Ok(());
        };
        self.cache
            .change(user.get(), post, liked, &event.position.to_string())
            .await
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_threshold_is_a_uuid_v7_that_sorts_below_ids_made_after_it() {
        let redis = crate::redis::Redis::new("redis://127.0.0.1:1", "t:").unwrap();
        let cache = super::LikeCache::new(redis, std::time::Duration::from_secs(3600));
        let threshold = cache.threshold();
        assert_eq!(threshold.get_version_num(), 7);
        assert!(uuid::Uuid::now_v7() > threshold);
        let older = uuid::Uuid::new_v7(uuid::Timestamp::from_unix(
            uuid::NoContext,
            (chrono::Utc::now().timestamp() - 7200) as u64,
            0,
        ));
        assert!(older < threshold);
    }
}

//! Hot inboxes in Redis sorted sets (seed 004), in front of `feed_inbox` in PostgreSQL.
//!
//! A reader's inbox is loaded lazily on their first feed read: the newest `cap` entries (member
//! and score both the post's seq) and a sentinel member `w` whose score is the watermark, so
//! an empty inbox is cached too (the sentinel against cache penetration). Projector
//! `feed_cache`, never ahead of projector `feed`, keeps loaded inboxes current from the log:
//! a pushed post is added where PostgreSQL added it (and the set trimmed to the cap, raising the
//! sentinel), a deleted post removed, a follow, an unfollow or an author's switch to push mode
//! drops the inboxes it changed. Every change also sets the inbox's generation, and a loader
//! stores what it read only if the generation did not move meanwhile, so a load that raced a
//! change never caches what it read before it. Readers filter every cached entry again (rules 8
//! and 9), so a cache behind the model can only cost a refill, never show what it must not; and
//! they page with the higher of the cached and PostgreSQL's watermarks, so a post PostgreSQL
//! trimmed before this projector heard of it is pulled, not lost.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use relations_domain::{LogEvent, PostEvent, RelationEvent, RepostEvent, UserId};
use relations_store::log::RecordedEvent;
use relations_store::LogPosition;
use sqlx::{PgConnection, PgPool};

use super::query::{inbox_head, Inbox, InboxEntries, InboxRange, PgInbox};
use crate::error::ProjectionError;
use crate::redis::{Redis, CALL_TIMEOUT};
use crate::runtime::projector::{erased_user, Projector};

/// The inbox cache projector's name.
pub const NAME: &str = "feed_cache";

/// How long an inbox stays cached without being read or changed.
const TTL: Duration = Duration::from_secs(3600);

/// Keys per script call when a change touches many inboxes.
const CHUNK: usize = 500;

const READ: &str = r#"
local w = redis.call('ZSCORE', KEYS[1], 'w')
if not w then return false end
local items = redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '(' .. w, 'LIMIT', 0, tonumber(ARGV[2]))
return {w, items}
"#;

const LOAD: &str = r#"
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZADD', KEYS[1], ARGV[3], 'w')
for i = 4, #ARGV do redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i]) end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
"#;

/// KEYS: n inbox keys then their n generation keys. ARGV: seq, cap, generation, ttl, n.
const PUSH: &str = r#"
local n = tonumber(ARGV[5])
local seq = tonumber(ARGV[1])
for i = 1, n do
  local key = KEYS[i]
  local w = redis.call('ZSCORE', key, 'w')
  if w and seq > tonumber(w) then
    redis.call('ZADD', key, ARGV[1], ARGV[1])
    local over = redis.call('ZCARD', key) - 1 - tonumber(ARGV[2])
    if over > 0 then
      local gone = redis.call('ZRANGE', key, 1, over, 'WITHSCORES')
      redis.call('ZREMRANGEBYRANK', key, 1, over)
      redis.call('ZADD', key, gone[#gone], 'w')
    end
  end
  redis.call('SET', KEYS[n + i], ARGV[3], 'EX', tonumber(ARGV[4]))
end
return n
"#;

/// KEYS: n inbox keys then their n generation keys. ARGV: seq (or '' to drop the whole
/// inbox), generation, ttl, n.
const REMOVE: &str = r#"
local n = tonumber(ARGV[4])
for i = 1, n do
  if ARGV[1] == '' then
    redis.call('DEL', KEYS[i])
  else
    redis.call('ZREM', KEYS[i], ARGV[1])
  end
  redis.call('SET', KEYS[n + i], ARGV[2], 'EX', tonumber(ARGV[3]))
end
return n
"#;

/// The inbox cache: an [`Inbox`] that reads Redis and falls back to PostgreSQL.
#[derive(Clone)]
pub struct InboxCache {
    redis: Redis,
    cap: i64,
    scripts: Arc<[Script; 4]>,
}

impl InboxCache {
    /// A cache of inboxes of at most `cap` entries on `redis`.
    pub fn new(redis: Redis, cap: i64) -> Self {
        Self {
            redis,
            cap,
            scripts: Arc::new([READ, LOAD, PUSH, REMOVE].map(Script::new)),
        }
    }

    fn key(&self, reader: i64) -> String {
        format!("{}feed:{}", self.redis.prefix, reader)
    }

    fn generation_key(&self, reader: i64) -> String {
        format!("{}feed:{}:gen", self.redis.prefix, reader)
    }

    async fn cached(
        &self,
        conn: &mut redis::aio::ConnectionManager,
        reader: i64,
        before: i64,
        limit: i64,
    ) -> Result<Option<(Vec<i64>, i64)>, String> {
        let mut call = self.scripts[0].key(self.key(reader));
        call.arg(before).arg(limit);
        let answer: Option<(String, Vec<i64>)> = self
            .redis
            .call(CALL_TIMEOUT, call.invoke_async(conn))
            .await
            .map_err(|e| e.to_string())?;
        Ok(answer.map(|(w, seqs)| (seqs, w.parse::<f64>().unwrap_or(0.0) as i64)))
    }

    /// Loads `reader`'s inbox from PostgreSQL and caches it unless a change raced the load.
    async fn load(
        &self,
        conn: &mut redis::aio::ConnectionManager,
        pool: &PgPool,
        reader: UserId,
    ) -> Result<(Vec<i64>, i64), ProjectionError> {
        let generation_key = self.generation_key(reader.get());
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
        let (mut seqs, mut watermark) = inbox_head(pool, reader, self.cap + 1).await?;
        if seqs.len() as i64 > self.cap {
            watermark = watermark.max(seqs.pop().unwrap_or(0));
        }
        let mut call = self.scripts[1].key(self.key(reader.get()));
        call.key(generation_key)
            .arg(generation.unwrap_or_default())
            .arg(TTL.as_secs())
            .arg(watermark);
        for seq in &seqs {
            call.arg(seq);
        }
        let _ = self
            .redis
            .call(CALL_TIMEOUT, call.invoke_async::<i64>(conn))
            .await;
        Ok((seqs, watermark))
    }

    /// Runs `script` over `readers` in chunks: KEYS are their inboxes then their generations,
    /// ARGV `args` then the chunk's length.
    async fn each_chunk(
        &self,
        script: usize,
        readers: &[i64],
        args: &[String],
    ) -> Result<(), ProjectionError> {
        if readers.is_empty() {
            return Ok(());
        }
        let mut conn = self
            .redis
            .connection()
            .await
            .map_err(|e| ProjectionError::Cache(e.to_string()))?;
        for chunk in readers.chunks(CHUNK) {
            let mut call = self.scripts[script].prepare_invoke();
            for &reader in chunk {
                call.key(self.key(reader));
            }
            for &reader in chunk {
                call.key(self.generation_key(reader));
            }
            for arg in args {
                call.arg(arg);
            }
            call.arg(chunk.len());
            self.redis
                .call(CALL_TIMEOUT * 4, call.invoke_async::<i64>(&mut conn))
                .await
                .map_err(|e| ProjectionError::Cache(e.to_string()))?;
        }
        Ok(())
    }

    /// Adds post `seq` to the loaded inboxes of `readers`.
    pub async fn push(
        &self,
        readers: &[i64],
        seq: i64,
        generation: &str,
    ) -> Result<(), ProjectionError> {
        let args = [
            seq.to_string(),
            self.cap.to_string(),
            generation.to_owned(),
            (TTL.as_secs() * 2).to_string(),
        ];
        self.each_chunk(2, readers, &args).await
    }

    /// Removes post `seq` from `readers`' inboxes, or (`None`) drops their inboxes.
    pub async fn remove(
        &self,
        readers: &[i64],
        seq: Option<i64>,
        generation: &str,
    ) -> Result<(), ProjectionError> {
        let args = [
            seq.map(|s| s.to_string()).unwrap_or_default(),
            generation.to_owned(),
            (TTL.as_secs() * 2).to_string(),
        ];
        self.each_chunk(3, readers, &args).await
    }
}

#[async_trait]
impl Inbox for InboxCache {
    async fn entries(
        &self,
        pool: &PgPool,
        range: InboxRange,
    ) -> Result<InboxEntries, ProjectionError> {
        let InboxRange {
            reader,
            before,
            limit,
        } = range;
        let Ok(mut conn) = self.redis.connection().await else {
            return PgInbox.entries(pool, range).await;
        };
        match self.cached(&mut conn, reader.get(), before, limit).await {
            Ok(Some(hit)) => {
                metrics::counter!("relations_cache_hits_total", "entry" => "feed_inbox")
                    .increment(1);
                Ok(hit)
            }
            Ok(None) => {
                metrics::counter!("relations_cache_misses_total", "entry" => "feed_inbox")
                    .increment(1);
                let (mut seqs, watermark) = self.load(&mut conn, pool, reader).await?;
                seqs.retain(|&s| s < before);
                seqs.truncate(limit.max(0) as usize);
                Ok((seqs, watermark))
            }
            // The breaker logs the outage once; this request just reads PostgreSQL.
            Err(_) => PgInbox.entries(pool, range).await,
        }
    }
}

/// Projector `feed_cache`: keeps the cached inboxes current, never ahead of projector `feed`.
pub struct FeedCacheProjector {
    cache: InboxCache,
}

impl FeedCacheProjector {
    /// A projector maintaining `cache`.
    pub fn new(cache: InboxCache) -> Self {
        Self { cache }
    }
}

async fn seq_of(conn: &mut PgConnection, post_id: uuid::Uuid) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar("SELECT seq FROM rm_posts WHERE post_id = $1")
        .bind(post_id)
        .fetch_optional(conn)
        .await
}

async fn followers(conn: &mut PgConnection, author: i64) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar("SELECT follower FROM feed_follows WHERE followee = $1")
        .bind(author)
        .fetch_all(conn)
        .await
}

#[async_trait]
impl Projector for FeedCacheProjector {
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

    /// Each event in order, then the inboxes of any author it switched to push mode; the
    /// batch's switches are read in one statement (they are rare: one look-up per event was a
    /// round trip for every command of every kind).
    async fn apply_batch(
        &self,
        conn: &mut PgConnection,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        let (Some(first), Some(last)) = (events.first(), events.last()) else {
            return Ok(());
        };
        let mut switched = switches_to_push(conn, first.position, last.position).await?;
        for event in events {
            self.apply_event(conn, event).await?;
            // An author who switched to push mode here had their posts backfilled into every
            // follower's inbox: drop those inboxes.
            let generation = event.position.to_string();
            for author in switched.remove(&event.position).unwrap_or_default() {
                let readers = followers(conn, author).await?;
                self.cache.remove(&readers, None, &generation).await?;
            }
        }
        Ok(())
    }
}

impl FeedCacheProjector {
    /// Folds one event's own changes into the cached inboxes.
    async fn apply_event(
        &self,
        conn: &mut PgConnection,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        let generation = event.position.to_string();
        match &event.event {
            LogEvent::Relation(relation) => {
                let reader = match *relation {
                    RelationEvent::Followed { follower, .. }
                    | RelationEvent::Unfollowed { follower, .. } => follower.get(),
                    RelationEvent::Blocked { .. }
                    | RelationEvent::Unblocked { .. }
                    | RelationEvent::Muted { .. }
                    | RelationEvent::Unmuted { .. }
                    | RelationEvent::FollowRequested { .. }
                    | RelationEvent::FollowRequestApproved { .. }
                    | RelationEvent::FollowRequestRejected { .. }
                    | RelationEvent::FollowRequestWithdrawn { .. }
                    | RelationEvent::SuggestionDismissed { .. }
                    // Preferences are read at read time; inboxes keep every repost.
                    | RelationEvent::FollowPreferencesChanged { .. } => return Ok(()),
                };
                self.cache.remove(&[reader], None, &generation).await?;
            }
            LogEvent::Post(post) => match *post {
                PostEvent::PostPublished { post_id, .. } => {
                    let seq = seq_of(conn, post_id.uuid()).await?;
                    self.push_where_pushed(conn, seq, &generation).await?;
                }
                PostEvent::PostDeleted { post_id, author } => {
                    if let Some(seq) = seq_of(conn, post_id.uuid()).await? {
                        let readers = followers(conn, author.get()).await?;
                        self.cache.remove(&readers, Some(seq), &generation).await?;
                    }
                }
                // Inboxes hold seqs; a post's quoting is read with its row.
                PostEvent::QuotePolicyChanged { .. }
                | PostEvent::CommentPolicyChanged { .. }
                | PostEvent::QuoteDetached { .. } => {}
            },
            // The erased user's own inbox goes. Other readers' cached entries of their posts
            // are only seqs: every read resolves them against `rm_posts`, where the posts are
            // deleted, so none shows.
            LogEvent::Account(_) => {
                if let Some(user) = erased_user(event) {
                    self.cache.remove(&[user], None, &generation).await?;
                }
            }
            // A repost is pushed as a post is (issue 44), under the seq of the reposter's
            // newest repost of it (a later one, when projector `feed` is ahead, is pushed where
            // it went: what PostgreSQL holds).
            LogEvent::Repost(RepostEvent::Reposted { user, post, .. }) => {
                let seq: Option<i64> = sqlx::query_scalar(
                    "SELECT max(seq) FROM rm_posts
                      WHERE repost_of = $1 AND author = $2 AND NOT deleted",
                )
                .bind(post.uuid())
                .bind(user.get())
                .fetch_one(&mut *conn)
                .await?;
                self.push_where_pushed(conn, seq, &generation).await?;
            }
            // An unrepost's entries, and a deleted post's reposts', stay cached as seqs: every
            // read resolves them against `rm_posts`, where they are deleted, so none shows.
            // Likes, comments and bookmarks are not in inboxes.
            LogEvent::Repost(RepostEvent::Unreposted { .. })
            | LogEvent::Thread(_)
            | LogEvent::Like(_)
            | LogEvent::Bookmark(_)
            | LogEvent::Lists(_)
            | LogEvent::Filters(_) => {}
        }
        Ok(())
    }

    /// Adds item `seq` to the cached inboxes PostgreSQL pushed it to (at the feed's position).
    async fn push_where_pushed(
        &self,
        conn: &mut PgConnection,
        seq: Option<i64>,
        generation: &str,
    ) -> Result<(), ProjectionError> {
        let Some(seq) = seq else { return Ok(()) };
        let readers: Vec<i64> = sqlx::query_scalar("SELECT reader FROM feed_inbox WHERE seq = $1")
            .bind(seq)
            .fetch_all(&mut *conn)
            .await?;
        self.cache.push(&readers, seq, generation).await
    }
}

/// The authors projector `feed` switched to push mode at each position from `first` to
/// `last`.
async fn switches_to_push(
    conn: &mut PgConnection,
    first: LogPosition,
    last: LogPosition,
) -> Result<HashMap<LogPosition, Vec<i64>>, sqlx::Error> {
    let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT transaction_id, global_position, author FROM feed_mode_changes
          WHERE (transaction_id, global_position) BETWEEN ($1, $2) AND ($3, $4) AND NOT pulled",
    )
    .bind(first.transaction_id)
    .bind(first.global_position)
    .bind(last.transaction_id)
    .bind(last.global_position)
    .fetch_all(conn)
    .await?;
    let mut switched: HashMap<LogPosition, Vec<i64>> = HashMap::new();
    for (transaction_id, global_position, author) in rows {
        let at = LogPosition {
            transaction_id,
            global_position,
        };
        switched.entry(at).or_default().push(author);
    }
    Ok(switched)
}

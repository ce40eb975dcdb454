//! The read side: independent projectors that fold the global log into read models.
//!
//! Each projector has its own checkpoint, advanced in the same transaction as its read-model
//! rows, so its effect is exactly once whatever crashes. Projectors never see cqrs-es's
//! in-process query dispatch; they read the log (`relations_store::log`) like any other reader.
//! This crate depends on the domain and the store, never on the web layer.
//!
//! - [`runtime`]: what every projector runs on (runner, checkpoints, wake-ups, health, status,
//!   read-your-writes, rebuild, verify);
//! - [`relations`]: the relation fold (follows, blocks, requests, mutes), projector
//!   `following`'s tables and counts, their queries, and the graph-read contract;
//! - [`replica`]: the same graph in memory, kept current from the log, answering without a
//!   round trip;
//! - [`history`]: relations as of a moment (the log's pair streams, folded) and follower
//!   changes (each follow's start and end);
//! - [`feed`]: posts, timelines and the push/pull inbox, their queries, the inbox cache;
//! - [`engagement`]: likes and comments, their counts and queries, the like-state cache;
//! - [`notifications`]: what happened to each user (follows, requests, likes, comments),
//!   grouped, with exact undo;
//! - [`privacy`]: the private-content rules (issue 26) with their facts from one graph state;
//! - [`archive`]: a user's own data from every read model, for their archive;
//! - [`views`]: a post and a comment as a reader sees them;
//! - [`redis`]: the one Redis connection that the caches and the API's rate limiter share.

pub mod accounts;
pub mod archive;
pub mod engagement;
pub mod error;
pub mod feed;
pub mod filters;
pub mod history;
pub mod lists;
pub mod notifications;
pub mod privacy;
pub mod redis;
pub mod relations;
pub mod replica;
pub mod runtime;
pub mod views;

use std::sync::Arc;

pub use error::ProjectionError;
use relations_store::Keyring;
use runtime::verify::{Check, Scope};
pub use runtime::{Projector, ProjectorStatus, Runner, SharedLog, Wakeup};

/// The Redis caches projectors keep current.
#[derive(Clone)]
pub struct Caches {
    /// Feed inboxes.
    pub inboxes: feed::inbox_cache::InboxCache,
    /// Each user's likes of recent posts.
    pub likes: engagement::like_cache::LikeCache,
}

/// How far back the like-state cache holds each user's likes.
pub const LIKE_CACHE_WINDOW: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

impl Caches {
    /// The caches on `redis`; inboxes hold at most `feed.inbox_cap` entries; like sets hold the
    /// likes of posts up to [`LIKE_CACHE_WINDOW`] old.
    pub fn new(redis: redis::Redis, feed: feed::Settings) -> Self {
        Self {
            inboxes: feed::inbox_cache::InboxCache::new(redis.clone(), feed.inbox_cap),
            likes: engagement::like_cache::LikeCache::new(redis, LIKE_CACHE_WINDOW),
        }
    }
}

/// The projectors' tunables (every process that runs or rebuilds them needs the same values).
#[derive(Debug, Clone, Copy, Default)]
pub struct Settings {
    /// Projector `feed`'s.
    pub feed: feed::Settings,
    /// Projector `following`'s.
    pub relations: relations::Settings,
}

/// Every projector, in the order they are reported; the cache projectors only with caches.
/// `keys` open the content the feed and engagement read models keep.
pub fn all(settings: Settings, keys: &Keyring, caches: Option<&Caches>) -> Vec<Arc<dyn Projector>> {
    let mut projectors: Vec<Arc<dyn Projector>> = vec![
        Arc::new(relations::Relations {
            settings: settings.relations,
        }),
        Arc::new(feed::Feed {
            settings: settings.feed,
            keys: keys.clone(),
        }),
        Arc::new(history::History),
        Arc::new(engagement::Engagement { keys: keys.clone() }),
        Arc::new(notifications::Notifications),
        Arc::new(lists::Lists),
        Arc::new(filters::Filters { keys: keys.clone() }),
    ];
    if let Some(caches) = caches {
        projectors.push(Arc::new(feed::inbox_cache::FeedCacheProjector::new(
            caches.inboxes.clone(),
        )));
        projectors.push(Arc::new(engagement::like_cache::LikeCacheProjector::new(
            caches.likes.clone(),
        )));
    }
    projectors
}

/// The read-model projector called `name` (the ones `rebuild` can rebuild).
pub fn by_name(name: &str, settings: Settings, keys: &Keyring) -> Option<Arc<dyn Projector>> {
    all(settings, keys, None)
        .into_iter()
        .find(|p| p.name() == name)
}

/// Every difference between the read models in `scope` (and always the write side's guard
/// rows) and a fresh fold of the log; empty when they agree. Each model runs its own check.
/// `keys` open the content the engagement check compares.
pub async fn verify(
    pool: &sqlx::PgPool,
    feed: feed::Settings,
    keys: &Keyring,
    scope: &Scope,
) -> Result<Vec<String>, ProjectionError> {
    let mut checks: Vec<Box<dyn Check>> =
        vec![Box::new(relations::verify::FollowingCheck::guards())];
    if scope.covers(relations::NAME) {
        checks.push(Box::new(relations::verify::FollowingCheck::read_model()));
    }
    if scope.covers(feed::NAME) {
        checks.push(Box::new(feed::verify::FeedCheck::new(feed)));
    }
    if scope.covers(history::NAME) {
        checks.push(Box::<history::verify::HistoryCheck>::default());
    }
    if scope.covers(engagement::NAME) {
        checks.push(Box::<engagement::verify::EngagementCheck>::default());
    }
    if scope.covers(lists::NAME) {
        checks.push(Box::<lists::verify::ListsCheck>::default());
    }
    if scope.covers(filters::NAME) {
        checks.push(Box::<filters::verify::FiltersCheck>::default());
    }
    if scope.covers(notifications::NAME) {
        checks.push(Box::<notifications::verify::NotificationsCheck>::default());
    }
    runtime::verify::run(pool, keys, checks, scope).await
}

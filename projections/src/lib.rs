//! The read side: independent projectors that fold the global log into read models.
//!
//! Each projector has its own checkpoint, advanced in the same transaction as its read-model
//! rows, so its effect is exactly once whatever crashes. Projectors never see cqrs-es's
//! in-process query dispatch; they read the log (`relations_store::log`) like any other reader.
//! This crate depends on the domain and the store, never on the web layer.

pub mod cache;
pub mod error;
pub mod feed;
pub mod feed_cache;
pub mod feed_read;
pub mod following;
pub mod projector;
pub mod read;
pub mod rebuild;
pub mod redis_conn;
pub mod runner;
pub mod verify;

use std::sync::Arc;

pub use error::ProjectionError;
pub use projector::Projector;
pub use runner::{wait_for, ProjectorStatus, Runner, Wakeup};

/// The Redis caches projectors keep current.
#[derive(Clone)]
pub struct Caches {
    /// Counts and first pages of lists.
    pub reads: cache::Cache,
    /// Feed inboxes.
    pub inboxes: feed_cache::InboxCache,
}

impl Caches {
    /// Both caches on `redis`; inboxes hold at most `feed.inbox_cap` entries.
    pub fn new(redis: redis_conn::Redis, feed: feed::Feed) -> Self {
        Self {
            reads: cache::Cache::new(redis.clone()),
            inboxes: feed_cache::InboxCache::new(redis, feed.inbox_cap),
        }
    }
}

/// Every projector, in the order they are reported; the cache projectors only with caches.
pub fn all(feed: feed::Feed, caches: Option<&Caches>) -> Vec<Arc<dyn Projector>> {
    let mut projectors: Vec<Arc<dyn Projector>> =
        vec![Arc::new(following::Following), Arc::new(feed)];
    if let Some(caches) = caches {
        projectors.push(Arc::new(cache::CacheInvalidator::new(caches.reads.clone())));
        projectors.push(Arc::new(feed_cache::FeedCacheProjector::new(
            caches.inboxes.clone(),
        )));
    }
    projectors
}

/// The read-model projector called `name` (the ones `rebuild` can rebuild).
pub fn by_name(name: &str, feed: feed::Feed) -> Option<Arc<dyn Projector>> {
    all(feed, None).into_iter().find(|p| p.name() == name)
}

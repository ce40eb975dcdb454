//! The state every handler shares.

use std::sync::Arc;

use metrics_exporter_prometheus::PrometheusHandle;
use relations_projections::engagement::like_cache::LikeCache;
use relations_projections::feed::inbox_cache::InboxCache;
use relations_projections::feed::read_marks::ReadMarks;
use relations_projections::replica::live::LiveGraph;
use relations_projections::runtime::{Health, LogWatch};
use relations_store::{
    AccountStore, EngagementStore, FilterStore, ListStore, PostStore, RelationStore, SettingsStore,
};
use sqlx::PgPool;

use crate::config::Config;
use crate::jwt::JwtKeys;
use crate::rate_limit::RateLimiter;
use relations_projections::redis::Redis;

/// A projector as this process knows it.
#[derive(Clone)]
pub struct ProjectorEntry {
    /// Its name.
    pub name: &'static str,
    /// Whether `/readyz` fails while it is stuck, and `min_position` waits for it.
    pub essential: bool,
    /// Its runner's health, when this process runs it.
    pub health: Option<Arc<Health>>,
}

/// What handlers need: one [`Shared`] behind an `Arc`. axum clones the state for every
/// handler and every extractor that asks for it, so a clone must be one reference count, not
/// one per field: cloning and dropping the fields one by one was 13% of a feed page's CPU
/// from memory (BENCHMARKS.md, ninth round).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    /// The state handlers share.
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What [`AppState`] shares.
pub struct Shared {
    /// The primary: the event store, the projectors, and whatever must see the newest state
    /// (authentication, the caches' loads).
    pub pool: PgPool,
    /// Where the reads that go to PostgreSQL are served: the hot standby of
    /// `DATABASE_READ_URL`, else the primary (a clone of `pool`). Handlers get it from
    /// [`crate::routes::query::wait_for_projectors`] (or its siblings), which waits on its
    /// checkpoints for `min_position`, never from here.
    pub read_pool: PgPool,
    /// The write path: relation commands.
    pub relations: RelationStore,
    /// The write path: post commands.
    pub posts: PostStore,
    /// The write path: account commands (token revocations, bans).
    pub accounts: AccountStore,
    /// The write path: account settings (locking, which approves pending requests).
    pub settings: SettingsStore,
    /// Token verification (and issuing, for the CLI).
    pub jwt: JwtKeys,
    /// Redis: rate-limit buckets and caches.
    pub redis: Redis,
    /// Rule 7's per-user limiter.
    pub limiter: RateLimiter,
    /// The master key and the data keys this process has unwrapped: what seals and opens post
    /// and comment content (`forget` a user when their key is destroyed).
    pub keys: relations_store::Keyring,
    /// Renders `/metrics`.
    pub metrics: PrometheusHandle,
    /// Every projector by name, with this process's runner health when it runs that projector.
    pub projectors: Arc<Vec<ProjectorEntry>>,
    /// The follow graph in memory, kept current from the log: relation reads, lists, counts.
    pub graph: LiveGraph,
    /// Cached feed inboxes.
    pub inboxes: InboxCache,
    /// Each user's likes of recent posts (seed 002's like-state cache).
    pub likes: LikeCache,
    /// The write path: comments and likes.
    pub engagement: EngagementStore,
    /// The write path: lists (issue 46).
    pub lists: ListStore,
    /// Filter commands (issue 47).
    pub filters: FilterStore,
    /// The live feed stream's connected readers.
    pub hub: relations_projections::feed::stream::FeedHub,
    /// Each user's open live streams on this instance, bounded.
    pub stream_slots: crate::stream_slots::StreamSlots,
    /// The live notification streams' listeners.
    pub notify_hub: relations_projections::notifications::live::NotificationHub,
    /// Cancelled when HTTP shutdown begins: long-lived answers (the feed stream) end then, so
    /// draining does not wait on them.
    pub closing: tokio_util::sync::CancellationToken,
    /// Read marks waiting to be written.
    pub read_marks: ReadMarks,
    /// The log watch: the horizon, the head and every reader's lag, looked at every second
    /// (what `/metrics` serves from memory).
    pub log_watch: LogWatch,
    /// The configuration the service started with.
    pub config: Arc<Config>,
}

//! The read side: independent projectors that fold the global log into read models.
//!
//! Each projector has its own checkpoint, advanced in the same transaction as its read-model
//! rows, so its effect is exactly once whatever crashes. Projectors never see cqrs-es's
//! in-process query dispatch; they read the log (`relations_store::log`) like any other reader.
//! This crate depends on the domain and the store, never on the web layer.

pub mod cache;
pub mod error;
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

/// Every projector, in the order they are reported; projector `cache` only with a cache.
pub fn all(cache: Option<cache::Cache>) -> Vec<Arc<dyn Projector>> {
    let mut projectors: Vec<Arc<dyn Projector>> = vec![Arc::new(following::Following)];
    if let Some(cache) = cache {
        projectors.push(Arc::new(cache::CacheInvalidator::new(cache)));
    }
    projectors
}

/// The read-model projector called `name` (the ones `rebuild` can rebuild).
pub fn by_name(name: &str) -> Option<Arc<dyn Projector>> {
    all(None).into_iter().find(|p| p.name() == name)
}

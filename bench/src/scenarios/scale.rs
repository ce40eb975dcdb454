//! How big and how long the scenarios run: `--quick`, the full run, or a graph of a given size.

use std::time::Duration;

/// How big and how long.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub(super) graph_users: i64,
    pub(super) rebuild_users: i64,
    pub(super) run: Duration,
    pub(super) lag_rate: u32,
    pub(super) lag_for: Duration,
    pub(super) feed_posts_per_author: usize,
    pub(super) feed_readers: i64,
}

impl Scale {
    pub fn quick() -> Self {
        Self {
            graph_users: 3_000,
            rebuild_users: 8_000,
            run: Duration::from_millis(1500),
            lag_rate: 300,
            lag_for: Duration::from_secs(3),
            feed_posts_per_author: 1,
            feed_readers: 2,
        }
    }

    pub fn full() -> Self {
        Self {
            graph_users: 50_000,
            rebuild_users: 120_000,
            run: Duration::from_secs(8),
            lag_rate: 1000,
            lag_for: Duration::from_secs(10),
            feed_posts_per_author: 10,
            feed_readers: 20,
        }
    }

    /// The same scale on a graph of `users` (the rebuild graph 2.4 times as large).
    pub fn with_users(self, users: i64) -> Self {
        Self {
            graph_users: users,
            rebuild_users: users * 12 / 5,
            ..self
        }
    }
}

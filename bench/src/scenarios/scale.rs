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
    /// With `--users`: every scenario runs on a copy of one loaded world of this many users
    /// (their follows and a post each, folded by every projector), its own users numbered
    /// after the world's.
    pub(super) world: Option<i64>,
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
            world: None,
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
            world: None,
        }
    }

    /// The same scale in a world of `users`: every scenario runs on a copy of it.
    pub fn with_users(self, users: i64) -> Self {
        Self {
            graph_users: users,
            rebuild_users: users,
            world: Some(users),
            ..self
        }
    }

    /// The world's size, when the scenarios share one.
    pub fn world(&self) -> Option<i64> {
        self.world
    }

    /// The first id a scenario's own users may take: after the world's, when there is one.
    pub(super) fn base(&self) -> i64 {
        self.world.unwrap_or(0)
    }
}

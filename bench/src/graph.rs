//! Synthetic graphs with LinkBench's shape, loaded through the event log.
//!
//! Out-degrees follow a power law (Zipf over 1..=1000, exponent 1.7: most users follow a few,
//! some follow hundreds, none more than the follow limit), and whom they follow is drawn from
//! a Zipf popularity over all users (exponent 1.0), so a few users have very many followers,
//! as in seed 001's statistics. The loader appends exactly the events the service appends for
//! these follows and posts (`Followed` on the pair's stream, `PostPublished` on the post's), in
//! transactions of 1,000, plus the guard rows; the projectors then fold them like any others.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use relations_projections::runtime::wait_for;
use relations_store::bulk;
use sqlx::PgPool;

/// Follow edges `(follower, followee)` among users `1..=users`, deterministic for a seed.
pub fn follows(users: i64, seed: u64) -> Vec<(i64, i64)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let degree = Zipf::new(1000.0, 1.7).expect("valid");
    let popularity = Zipf::new(users as f64, 1.0).expect("valid");
    // Popularity ranks are shuffled onto ids, so the popular users are spread out.
    let mut ids: Vec<i64> = (1..=users).collect();
    for i in (1..ids.len()).rev() {
        ids.swap(i, rng.random_range(0..=i));
    }
    let mut edges = Vec::new();
    for follower in 1..=users {
        let wanted = (degree.sample(&mut rng) as usize).min(users as usize - 1);
        let mut chosen = HashSet::with_capacity(wanted);
        let mut tries = 0;
        while chosen.len() < wanted && tries < wanted * 20 {
            tries += 1;
            let followee = ids[popularity.sample(&mut rng) as usize - 1];
            if followee != follower {
                chosen.insert(followee);
            }
        }
        edges.extend(chosen.into_iter().map(|followee| (follower, followee)));
    }
    edges
}

/// Appends a `Followed` per edge, then settles the database as an operator would after a bulk
/// load (README, "Bulk loads"); how many events.
pub async fn load_follows(pool: &PgPool, edges: &[(i64, i64)]) -> Result<u64, sqlx::Error> {
    let events = bulk::append_follows(pool, edges).await?;
    bulk::settle(pool).await?;
    Ok(events)
}

/// Appends a `PostPublished` per author, then settles the database; how many events.
pub async fn load_posts(pool: &PgPool, authors: &[i64]) -> anyhow::Result<u64> {
    let events = bulk::append_posts(pool, &crate::harness::keyring(pool)?, authors).await?;
    bulk::settle(pool).await?;
    Ok(events)
}

/// Appends a `Liked` per `(user, post index)`, then settles the database; how many events.
pub async fn load_likes(pool: &PgPool, likes: &[(i64, usize)]) -> anyhow::Result<u64> {
    let events = bulk::append_likes(pool, likes).await?;
    bulk::settle(pool).await?;
    Ok(events)
}

/// Appends a `Reposted` per `(user, post index)`, then settles the database; how many events.
pub async fn load_reposts(pool: &PgPool, reposts: &[(i64, usize)]) -> anyhow::Result<u64> {
    let events = bulk::append_reposts(pool, reposts).await?;
    bulk::settle(pool).await?;
    Ok(events)
}

/// Waits until every projector in `names` has applied the whole log; how long it took.
pub async fn caught_up(pool: &PgPool, names: &[&str]) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let head = relations_store::log::head(pool).await?;
    // A live fold of a 1M-user world took 48 minutes on this machine class (BENCHMARKS.md).
    let done = wait_for(pool, names, head, Duration::from_secs(7200)).await?;
    anyhow::ensure!(done, "projectors {names:?} never caught up");
    Ok(start.elapsed())
}

//! Synthetic graphs with LinkBench's shape, loaded through the event log.
//!
//! Out-degrees follow a power law (Zipf over 1..=1000, exponent 1.7: most users follow a few,
//! some follow hundreds, none more than the follow limit), and whom they follow is drawn from
//! a Zipf popularity over all users (exponent 1.0), so a few users have very many followers,
//! as in seed 001's statistics. The loader appends exactly the events the service appends for
//! these follows and posts (`Followed` on the pair's stream, `PostPublished` on the post's), in
//! transactions of 1,000, plus the guard rows; the projectors then fold them like any others.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
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

/// Appends a `Followed` event per edge (a pair followed both ways gets versions 1 and 2 of its
/// stream) and sets the followers' guard rows. Returns the events appended.
pub async fn load_follows(pool: &PgPool, edges: &[(i64, i64)]) -> anyhow::Result<u64> {
    let mut versions: HashMap<(i64, i64), i64> = HashMap::new();
    let rows: Vec<(i64, i64, i64)> = edges
        .iter()
        .map(|&(a, b)| {
            let version = versions.entry((a.min(b), a.max(b))).or_insert(0);
            *version += 1;
            (a, b, *version)
        })
        .collect();
    for chunk in rows.chunks(1000) {
        let (followers, rest): (Vec<i64>, Vec<(i64, i64)>) =
            chunk.iter().map(|&(a, b, v)| (a, (b, v))).unzip();
        let (followees, sequences): (Vec<i64>, Vec<i64>) = rest.into_iter().unzip();
        sqlx::query(
            "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
             SELECT 'relation', least(f, t) || ':' || greatest(f, t), s, 'Followed', '1',
                    json_build_object('Followed', json_build_object('follower', f, 'followee', t)),
                    json_build_object('request_id', 'bench', 'actor', f::text)
               FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS x(f, t, s)",
        )
        .bind(&followers)
        .bind(&followees)
        .bind(&sequences)
        .execute(pool)
        .await?;
    }
    sqlx::query(
        "INSERT INTO follow_guard (user_id, following)
         SELECT (payload->'Followed'->>'follower')::bigint, count(*) FROM events
          WHERE event_type = 'Followed' GROUP BY 1
         ON CONFLICT (user_id) DO UPDATE SET following = excluded.following",
    )
    .execute(pool)
    .await?;
    Ok(rows.len() as u64)
}

/// Appends a `PostPublished` per author in `authors` (one post each, in order).
pub async fn load_posts(pool: &PgPool, authors: &[i64]) -> anyhow::Result<u64> {
    for chunk in authors.chunks(1000) {
        let ids: Vec<uuid::Uuid> = chunk.iter().map(|_| uuid::Uuid::now_v7()).collect();
        sqlx::query(
            "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
             SELECT 'post', id::text, 1, 'PostPublished', '1',
                    json_build_object('PostPublished', json_build_object(
                        'post_id', id, 'author', a, 'content', 'a benchmark post',
                        'created_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'))),
                    json_build_object('request_id', 'bench', 'actor', a::text)
               FROM unnest($1::uuid[], $2::bigint[]) AS x(id, a)",
        )
        .bind(&ids)
        .bind(chunk)
        .execute(pool)
        .await?;
    }
    Ok(authors.len() as u64)
}

/// Waits until every projector in `names` has applied the whole log; how long it took.
pub async fn caught_up(pool: &PgPool, names: &[&str]) -> anyhow::Result<Duration> {
    let start = Instant::now();
    loop {
        let behind: i64 = sqlx::query_scalar(
            "WITH head AS (SELECT transaction_id::text::bigint AS t, global_position AS g FROM events
                            ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1)
             SELECT count(*) FROM unnest($1::text[]) AS n(name) CROSS JOIN head
               LEFT JOIN projector_checkpoints c ON c.name = n.name
              WHERE (COALESCE(c.transaction_id, 0), COALESCE(c.global_position, 0)) < (head.t, head.g)",
        )
        .bind(names)
        .fetch_one(pool)
        .await?;
        if behind == 0 {
            return Ok(start.elapsed());
        }
        anyhow::ensure!(
            start.elapsed() < Duration::from_secs(1800),
            "projectors {names:?} never caught up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

//! Loading a synthetic graph straight into the log, for benchmarks: the same events, with the
//! same stream versions, that commands would append, written set-based without deciding them
//! (no rule is checked). Never used by the service itself.

use std::collections::HashMap;

use sqlx::PgPool;

use crate::error::StoreError;
use crate::keys::Keyring;
use crate::log::content::{self, Unsealed};

/// Appends a `Followed` event per `(follower, followee)` edge (a pair followed both ways gets
/// versions 1 and 2 of its stream) and sets the followers' guard rows. Returns the events
/// appended. The log must hold no relation events yet.
pub async fn append_follows(pool: &PgPool, edges: &[(i64, i64)]) -> Result<u64, sqlx::Error> {
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

/// Appends a `PostPublished` per author in `authors` (one post each, in order), its content
/// sealed with the author's key as a publish command seals it (version 2; each chunk's keys are
/// made in the chunk's transaction).
pub async fn append_posts(
    pool: &PgPool,
    keys: &Keyring,
    authors: &[i64],
) -> Result<u64, StoreError> {
    for chunk in authors.chunks(1000) {
        let ids: Vec<String> = chunk
            .iter()
            .map(|_| uuid::Uuid::now_v7().to_string())
            .collect();
        let created_at = crate::metadata::now();
        let mut payloads: Vec<serde_json::Value> = chunk
            .iter()
            .zip(&ids)
            .map(|(author, id)| {
                serde_json::json!({"PostPublished": {
                    "post_id": id, "author": author, "content": "a benchmark post",
                    "created_at": created_at,
                }})
            })
            .collect();
        let mut versions = vec!["1".to_owned(); chunk.len()];
        let mut tx = pool.begin().await?;
        let mut unsealed: Vec<Unsealed<'_>> = ids
            .iter()
            .zip(versions.iter_mut().zip(payloads.iter_mut()))
            .map(|(id, (version, payload))| Unsealed {
                stream_type: "post",
                stream_id: id,
                sequence: 1,
                event_type: "PostPublished",
                version,
                payload,
            })
            .collect();
        content::seal(&mut tx, keys, &mut unsealed).await?;
        sqlx::query(
            "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
             SELECT 'post', id, 1, 'PostPublished', v, p::json,
                    json_build_object('request_id', 'bench', 'actor', a::text)
               FROM unnest($1::text[], $2::bigint[], $3::text[], $4::jsonb[]) AS x(id, a, v, p)",
        )
        .bind(&ids)
        .bind(chunk)
        .bind(&versions)
        .bind(&payloads)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
    }
    Ok(authors.len() as u64)
}

/// Appends a `Liked` event for each `(user, post)` of `likes`, `post` being the index of a post
/// in log order among the log's `PostPublished` events (the liker must not be its author, nor
/// like it twice: nothing is checked), 1,000 a transaction. Returns the events appended.
pub async fn append_likes(pool: &PgPool, likes: &[(i64, usize)]) -> Result<u64, sqlx::Error> {
    append_on_posts(pool, likes, LIKED).await
}

/// Appends a `Reposted` per `(user, post index)` (issue 44's bench worlds); how many.
pub async fn append_reposts(pool: &PgPool, reposts: &[(i64, usize)]) -> Result<u64, sqlx::Error> {
    append_on_posts(pool, reposts, REPOSTED).await
}

/// A `Liked` of post `p` by user `u` of author `a`, in its stream.
const LIKED: &str = "SELECT 'like', 'post:' || p || ':' || u, 1, 'Liked', '1',
        json_build_object('Liked', json_build_object('user', u, 'target', 'post:' || p, 'author', a)),
        json_build_object('request_id', 'bench', 'actor', u::text)";

/// A `Reposted` of post `p` by user `u` of author `a`, in its stream.
const REPOSTED: &str = "SELECT 'repost', p || ':' || u, 1, 'Reposted', '1',
        json_build_object('Reposted', json_build_object('user', u, 'post', p, 'author', a)),
        json_build_object('request_id', 'bench', 'actor', u::text)";

/// Appends the event `select` makes of each `(user, post index)` (posts in publication order).
async fn append_on_posts(
    pool: &PgPool,
    pairs: &[(i64, usize)],
    select: &str,
) -> Result<u64, sqlx::Error> {
    let posts: Vec<(String, i64)> = sqlx::query_as(
        "SELECT aggregate_id, (payload->'PostPublished'->>'author')::bigint FROM events
          WHERE aggregate_type = 'post' AND event_type = 'PostPublished'
          ORDER BY transaction_id, global_position",
    )
    .fetch_all(pool)
    .await?;
    let sql = format!(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
         {select} FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS x(u, p, a)"
    );
    let mut appended = 0;
    for chunk in pairs.chunks(1000) {
        let mut columns: (Vec<i64>, Vec<&str>, Vec<i64>) = Default::default();
        for &(user, post) in chunk {
            let Some((id, author)) = posts.get(post) else {
                continue;
            };
            columns.0.push(user);
            columns.1.push(id);
            columns.2.push(*author);
        }
        appended += sqlx::query(&sql)
            .bind(&columns.0)
            .bind(&columns.1)
            .bind(&columns.2)
            .execute(pool)
            .await?
            .rows_affected();
    }
    Ok(appended)
}

/// What an operator runs after a bulk load, before serving: `VACUUM (ANALYZE)` of the log and
/// the guard rows (statistics for the planner, hint bits and the visibility map set once here
/// rather than by the first readers, so index-only scans work), then a `CHECKPOINT` (the load's
/// dirty pages written now, not in the middle of the projectors' catch-up).
pub async fn settle(pool: &PgPool) -> Result<(), sqlx::Error> {
    sqlx::query("VACUUM (ANALYZE) events, follow_guard")
        .execute(pool)
        .await?;
    sqlx::query("CHECKPOINT").execute(pool).await?;
    Ok(())
}

//! Loading a synthetic graph straight into the log, for benchmarks: the same events, with the
//! same stream versions, that commands would append, written set-based without deciding them
//! (no rule is checked). Never used by the service itself.

use std::collections::HashMap;

use sqlx::PgPool;

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

/// Appends a `PostPublished` per author in `authors` (one post each, in order).
pub async fn append_posts(pool: &PgPool, authors: &[i64]) -> Result<u64, sqlx::Error> {
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

//! The per-user locks of the write side (issue 25): every command group locks each user its
//! commands name (shared; an erasure exclusively) before any stream, and learns in the same
//! round trip which of them are erased (see [`crate::guards::erasure`] for the invariant). The
//! executor, the account settings and the erasure guard share it; it depends on none of them.

use std::collections::HashSet;

use cqrs_es::Aggregate;
use relations_domain::UserId;
use sqlx::PgConnection;

use crate::error::StoreError;

/// Locks `users` for the caller's transaction (exclusively those in `exclusive`, shared the
/// rest), in one order every writer shares, and answers which of them are erased.
pub(crate) async fn lock_users(
    conn: &mut PgConnection,
    users: &[UserId],
    exclusive: &[UserId],
) -> Result<HashSet<UserId>, StoreError> {
    if users.is_empty() && exclusive.is_empty() {
        return Ok(HashSet::new());
    }
    lock(conn, users, exclusive, None).await
}

/// [`lock_users`], then `streams` of aggregate type `A` exclusively (the keys of
/// `append::lock_and_catch_up`), in the same round trip: a writer's locks in the order every
/// writer takes them.
pub(crate) async fn lock_users_then<A: Aggregate>(
    conn: &mut PgConnection,
    users: &[UserId],
    exclusive: &[UserId],
    streams: &[&str],
) -> Result<HashSet<UserId>, StoreError> {
    lock(conn, users, exclusive, Some((A::TYPE, streams))).await
}

async fn lock(
    conn: &mut PgConnection,
    users: &[UserId],
    exclusive: &[UserId],
    streams: Option<(&str, &[&str])>,
) -> Result<HashSet<UserId>, StoreError> {
    let mut all: Vec<i64> = users.iter().chain(exclusive).map(|u| u.get()).collect();
    all.sort_unstable();
    all.dedup();
    let modes: Vec<bool> = all
        .iter()
        .map(|u| exclusive.iter().any(|e| e.get() == *u))
        .collect();
    // Keys in the same space as the stream locks (SQL `lock_streams`), per schema.
    let sql = match streams {
        None => "SELECT lock_users($1, $2)",
        Some(_) => "SELECT lock_writers($1, $2, $3, $4)",
    };
    let mut query = sqlx::query_scalar(sql).bind(&all).bind(&modes);
    if let Some((stream_type, ids)) = streams {
        query = query.bind(stream_type).bind(ids);
    }
    let erased: Vec<i64> = query.fetch_all(&mut *conn).await?;
    erased
        .into_iter()
        .map(|u| UserId::try_from(u).map_err(|e| StoreError::Corrupt(e.to_string())))
        .collect()
}

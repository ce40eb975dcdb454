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
/// rest), then `streams` of aggregate type `A` exclusively (the keys of
/// `append::lock_and_catch_up`), each set in one order every writer shares, in one round trip;
/// answers which of the users are erased.
pub(crate) async fn lock_users_then<A: Aggregate>(
    conn: &mut PgConnection,
    users: &[UserId],
    exclusive: &[UserId],
    streams: &[&str],
) -> Result<HashSet<UserId>, StoreError> {
    let mut all: Vec<i64> = users.iter().chain(exclusive).map(|u| u.get()).collect();
    all.sort_unstable();
    all.dedup();
    let modes: Vec<bool> = all
        .iter()
        .map(|u| exclusive.iter().any(|e| e.get() == *u))
        .collect();
    // Keys in the same space as the stream locks (SQL `lock_streams`), per schema.
    let erased = sqlx::query_scalar("SELECT lock_writers($1, $2, $3, $4)")
        .bind(&all)
        .bind(&modes)
        .bind(A::TYPE)
        .bind(streams)
        .fetch_all(&mut *conn)
        .await?;
    to_users(erased)
}

/// Locks `users` shared without waiting, for a writer that learns of them only after taking
/// locks every other writer takes later (an unlock's requests that arrived after it read them
/// first; migration `20261124000024_try_lock_users.sql`): `None` when one is held exclusively
/// (an erasure runs: decide again), else which of them are erased.
pub(crate) async fn try_lock_users(
    conn: &mut PgConnection,
    users: &[UserId],
) -> Result<Option<HashSet<UserId>>, StoreError> {
    if users.is_empty() {
        return Ok(Some(HashSet::new()));
    }
    let ids: Vec<i64> = users.iter().map(|u| u.get()).collect();
    let erased: Option<Vec<i64>> = sqlx::query_scalar("SELECT try_lock_users_shared($1)")
        .bind(&ids)
        .fetch_one(&mut *conn)
        .await?;
    erased.map(to_users).transpose()
}

fn to_users(ids: Vec<i64>) -> Result<HashSet<UserId>, StoreError> {
    ids.into_iter()
        .map(|u| UserId::try_from(u).map_err(|e| StoreError::Corrupt(e.to_string())))
        .collect()
}

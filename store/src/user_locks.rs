//! The per-user locks of the write side (issue 25): every command group locks each user its
//! commands name (shared; an erasure, and a command that changes the user's guarded count,
//! exclusively) before any stream, and learns in the same round trip which of them are erased
//! (see [`crate::guards::erasure`] for the invariant). The
//! executor and the account settings share it; it reads streams as `append` does.

use std::collections::{HashMap, HashSet};

use cqrs_es::Aggregate;
use relations_domain::UserId;
use sqlx::{PgConnection, Row};

use crate::append::{self, Loaded};
use crate::error::StoreError;

/// Locks `users` for the caller's transaction (exclusively those in `exclusive`, shared the
/// rest), then `streams` of aggregate type `A` exclusively, each set in one order every writer
/// shares, and brings the streams up to date (as `append::catch_up`), in one round trip (SQL
/// `lock_writers_and_load`); answers which of the users are erased.
pub(crate) async fn lock_writers_and_load<A: Aggregate>(
    conn: &mut PgConnection,
    users: &[UserId],
    exclusive: &[UserId],
    streams: &mut HashMap<String, Loaded<A>>,
) -> Result<HashSet<UserId>, StoreError> {
    let mut all: Vec<i64> = users.iter().chain(exclusive).map(|u| u.get()).collect();
    all.sort_unstable();
    all.dedup();
    let modes: Vec<bool> = all
        .iter()
        .map(|u| exclusive.iter().any(|e| e.get() == *u))
        .collect();
    let (ids, versions): (Vec<&str>, Vec<i64>) = append::versions(streams)
        .into_iter()
        .map(|(id, version)| (id, version as i64))
        .unzip();
    // Each stream's events are applied in order: said here, not left to the function.
    let rows = sqlx::query(
        "SELECT * FROM lock_writers_and_load($1, $2, $3, $4, $5)
          ORDER BY erased, aggregate_id, sequence",
    )
    .bind(&all)
    .bind(&modes)
    .bind(A::TYPE)
    .bind(&ids)
    .bind(&versions)
    .fetch_all(&mut *conn)
    .await?;
    let mut erased = Vec::new();
    let mut events = Vec::with_capacity(rows.len());
    for row in &rows {
        match row.try_get::<Option<i64>, _>("erased")? {
            Some(user) => erased.push(user),
            None => events.push(append::event_of::<A>(row)?),
        }
    }
    append::apply(streams, events);
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

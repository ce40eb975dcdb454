//! The `data_keys` table: each user's data key, wrapped by the master key. Never part of the
//! log; the erasure deletes a user's row in its own transaction (crypto-shredding).

use sqlx::{PgConnection, PgPool};

/// One user's row as a writer sees it.
pub(super) struct Stored {
    /// The user.
    pub user: i64,
    /// Their wrapped key, if they have one.
    pub wrapped: Option<Vec<u8>>,
    /// Whether the user was erased (their key is gone for good and must not come back).
    pub erased: bool,
}

/// `users`' rows and whether each is erased, as the caller's transaction sees them.
pub(super) async fn for_writing(
    conn: &mut PgConnection,
    users: &[i64],
) -> Result<Vec<Stored>, sqlx::Error> {
    let rows: Vec<(i64, Option<Vec<u8>>, bool)> = sqlx::query_as(
        "SELECT u, k.wrapped, e.user_id IS NOT NULL
           FROM unnest($1::bigint[]) AS u
           LEFT JOIN data_keys k ON k.user_id = u
           LEFT JOIN erased_users e ON e.user_id = u",
    )
    .bind(users)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(user, wrapped, erased)| Stored {
            user,
            wrapped,
            erased,
        })
        .collect())
}

/// Stores fresh wrapped keys for users who had none, in ascending user order (so two writers
/// adding keys for the same users never deadlock); a user who got one meanwhile keeps theirs.
pub(super) async fn insert(
    conn: &mut PgConnection,
    users: &[i64],
    wrapped: &[Vec<u8>],
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO data_keys (user_id, wrapped)
         SELECT u, w FROM unnest($1::bigint[], $2::bytea[]) AS x(u, w) ORDER BY u
         ON CONFLICT (user_id) DO NOTHING",
    )
    .bind(users)
    .bind(wrapped)
    .execute(conn)
    .await?;
    Ok(())
}

/// `users`' wrapped keys, as committed now; an absent user has none (erased).
pub(super) async fn committed(
    pool: &PgPool,
    users: &[i64],
) -> Result<Vec<(i64, Vec<u8>)>, sqlx::Error> {
    sqlx::query_as("SELECT user_id, wrapped FROM data_keys WHERE user_id = ANY($1::bigint[])")
        .bind(users)
        .fetch_all(pool)
        .await
}

//! Erasure on the write side (issue 25): what an erasure removes from the write side's indexes
//! in its transaction. The per-user locks every command takes, and the refusal of a command that
//! names an erased user, are [`crate::user_locks`].
//!
//! The invariant: no command can slip in after an erasure commits. Each group first locks every
//! user its commands name (a transaction-level advisory lock: shared for a command, exclusive
//! for an erasure), before any stream, then reads `erased_users` with a fresh snapshot, taken
//! after any erasure it waited for committed: the SQL function `lock_users` (migration
//! `20261124000017_erasure.sql`), which a group calls through `lock_writers` in the same round
//! trip as its stream locks (`20261124000020_group_locks.sql`). An erasure
//! holds its user's lock exclusively until it commits, so a command naming the user either
//! committed before it (and the erasure's readers fold it away) or sees the row and is refused.
//! Locks on users come before stream locks in every writer, so the order has no cycle.

use relations_domain::{AccountEvent, UserId};
use sqlx::PgConnection;

use crate::error::StoreError;
use crate::executor::Guard;

/// What an account command group erases: the users whose `UserErased` it appended.
#[derive(Debug, Default)]
pub(crate) struct ErasureGuard {
    erased: Vec<UserId>,
}

impl Guard<AccountEvent> for ErasureGuard {
    type Ask = ();

    async fn lock(_conn: &mut PgConnection, _asks: Vec<()>) -> Result<Self, StoreError> {
        Ok(Self::default())
    }

    fn decided(&mut self, events: &[AccountEvent]) {
        self.erased.extend(events.iter().filter_map(|e| match e {
            AccountEvent::UserErased { user } => Some(*user),
            _ => None,
        }));
    }

    /// Records the group's erasures and removes their users from the write side, set-based.
    async fn write(self, conn: &mut PgConnection) -> Result<(), StoreError> {
        if self.erased.is_empty() {
            return Ok(());
        }
        erase(conn, &self.erased).await
    }
}

/// The erasure's write-side statements for `users`, in its transaction: the `erased_users`
/// rows (what refuses every later command), the users' data keys (crypto-shredding: their
/// sealed content becomes unreadable wherever it went), their own follows, their pending
/// requests both ways with the requesters' counts they held, their account locks and their
/// own guard rows. Their followers' rule-3 counts are settled right after, by the store
/// ([`settle_followers`]): an account with 100,000 followers would otherwise hold the answer
/// for seconds; until then each is over by one, which only errs on the safe side of the limit.
///
/// Every guard row the erasures change (their requesters' and their own) is locked first, in
/// one statement and in ascending order, as the follow guard locks them: locked a user at a
/// time, or the users' own rows last, two erasures or a follow group could each hold a row the
/// other waits for.
async fn erase(conn: &mut PgConnection, users: &[UserId]) -> Result<(), StoreError> {
    let users: Vec<i64> = users.iter().map(|u| u.get()).collect();
    let statements = [
        "INSERT INTO erased_users (user_id) SELECT unnest($1::bigint[]) ON CONFLICT DO NOTHING",
        "DELETE FROM data_keys WHERE user_id = ANY($1)",
        // One set of ids probed by key: an `OR` of the two conditions read every row of
        // `follow_guard` (151 ms at 1M users, against 0.17 ms; BENCHMARKS.md, twentieth round).
        "SELECT 1 FROM follow_guard
          WHERE user_id IN (SELECT unnest($1::bigint[])
                            UNION SELECT requester FROM pending_requests WHERE target = ANY($1))
          ORDER BY user_id FOR NO KEY UPDATE",
        // Their own follows; the follows of them are settled by `settle_followers`.
        "DELETE FROM follow_edges WHERE follower = ANY($1)",
        // A requester asking two of the users loses one count per request.
        "WITH r AS (DELETE FROM pending_requests WHERE target = ANY($1) RETURNING requester),
              n AS (SELECT requester, count(*) AS n FROM r GROUP BY requester)
         UPDATE follow_guard g SET following = g.following - n.n FROM n WHERE g.user_id = n.requester",
        "DELETE FROM pending_requests WHERE requester = ANY($1)",
        "DELETE FROM account_locks WHERE user_id = ANY($1)",
        "DELETE FROM hidden_graphs WHERE user_id = ANY($1)",
        "DELETE FROM follow_guard WHERE user_id = ANY($1)",
        // Their lists' members and their memberships of others' lists (issue 46).
        "DELETE FROM list_member_edges WHERE owner = ANY($1)",
        "DELETE FROM list_member_edges WHERE member = ANY($1)",
    ];
    for sql in statements {
        sqlx::query(sql).bind(&users).execute(&mut *conn).await?;
    }
    Ok(())
}

/// Followers settled per transaction.
const SETTLE_CHUNK: i64 = 2_000;

/// Settles every erasure's followers (see [`erase`]): each follow of an erased user still in
/// `follow_edges` is taken out, and its follower's rule-3 count with it, a chunk of followers
/// per transaction (their guard rows locked in ascending order first, as every writer of them
/// does); an erasure with none left is marked settled. Each follow is settled once whoever
/// runs this, and however many run it at once: the delete that takes the follow out is what
/// decrements. The store runs it after each erasure and when it starts (an erasure whose
/// settling was cut short); the number of follows settled.
pub async fn settle_followers(pool: &sqlx::PgPool) -> Result<u64, StoreError> {
    let mut settled = 0;
    loop {
        let user: Option<i64> = sqlx::query_scalar(
            "SELECT user_id FROM erased_users WHERE NOT guard_settled ORDER BY erased_at LIMIT 1",
        )
        .fetch_optional(pool)
        .await?;
        let Some(user) = user else {
            return Ok(settled);
        };
        loop {
            let chunk = settle_chunk(pool, user).await?;
            if chunk == 0 {
                break;
            }
            settled += chunk;
        }
        sqlx::query(
            "UPDATE erased_users SET guard_settled = true
              WHERE user_id = $1 AND NOT EXISTS (SELECT 1 FROM follow_edges WHERE followee = $1)",
        )
        .bind(user)
        .execute(pool)
        .await?;
    }
}

/// Settles up to [`SETTLE_CHUNK`] followers of erased `user` in one transaction; how many.
async fn settle_chunk(pool: &sqlx::PgPool, user: i64) -> Result<u64, StoreError> {
    let mut tx = pool.begin().await?;
    let result = async {
        let followers: Vec<i64> = sqlx::query_scalar(
            "SELECT follower FROM follow_edges WHERE followee = $1 ORDER BY follower LIMIT $2",
        )
        .bind(user)
        .bind(SETTLE_CHUNK)
        .fetch_all(&mut *tx)
        .await?;
        if followers.is_empty() {
            return Ok(0);
        }
        sqlx::query(
            "SELECT 1 FROM follow_guard WHERE user_id = ANY($1) ORDER BY user_id FOR NO KEY UPDATE",
        )
        .bind(&followers)
        .execute(&mut *tx)
        .await?;
        // A follower erased too has no guard row left: their follow is taken out all the same.
        let done: i64 = sqlx::query_scalar(
            "WITH f AS (DELETE FROM follow_edges WHERE followee = $1 AND follower = ANY($2)
                        RETURNING follower),
                  u AS (UPDATE follow_guard g SET following = g.following - 1 FROM f
                         WHERE g.user_id = f.follower)
             SELECT count(*) FROM f",
        )
        .bind(user)
        .bind(&followers)
        .fetch_one(&mut *tx)
        .await?;
        Ok::<_, sqlx::Error>(done as u64)
    }
    .await;
    Ok(crate::db::end_transaction(tx, result, |_| true).await?)
}

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
/// sealed content becomes unreadable wherever it went), their follows both ways with the
/// followers' rule-3 counts that held one of them (found by the write side's own index of
/// follows, `follow_edges`), their pending requests both ways with the requesters' counts they
/// held, their account locks and their own guard rows.
///
/// Every guard row the erasures change (their followers', their requesters' and their own) is
/// locked first, in one statement and in ascending order, as the follow guard locks them:
/// locked a user at a time, or the users' own rows last, two erasures or a follow group could
/// each hold a row the other waits for.
async fn erase(conn: &mut PgConnection, users: &[UserId]) -> Result<(), StoreError> {
    let users: Vec<i64> = users.iter().map(|u| u.get()).collect();
    let statements = [
        "INSERT INTO erased_users (user_id) SELECT unnest($1::bigint[]) ON CONFLICT DO NOTHING",
        "DELETE FROM data_keys WHERE user_id = ANY($1)",
        "SELECT 1 FROM follow_guard WHERE user_id = ANY($1)
             OR user_id IN (SELECT requester FROM pending_requests WHERE target = ANY($1))
             OR user_id IN (SELECT follower FROM follow_edges WHERE followee = ANY($1))
          ORDER BY user_id FOR NO KEY UPDATE",
        // A follower of two of the users loses one count per follow.
        "WITH f AS (DELETE FROM follow_edges WHERE followee = ANY($1) RETURNING follower),
              n AS (SELECT follower, count(*) AS n FROM f GROUP BY follower)
         UPDATE follow_guard g SET following = g.following - n.n FROM n WHERE g.user_id = n.follower",
        "DELETE FROM follow_edges WHERE follower = ANY($1)",
        // A requester asking two of the users loses one count per request.
        "WITH r AS (DELETE FROM pending_requests WHERE target = ANY($1) RETURNING requester),
              n AS (SELECT requester, count(*) AS n FROM r GROUP BY requester)
         UPDATE follow_guard g SET following = g.following - n.n FROM n WHERE g.user_id = n.requester",
        "DELETE FROM pending_requests WHERE requester = ANY($1)",
        "DELETE FROM account_locks WHERE user_id = ANY($1)",
        "DELETE FROM hidden_graphs WHERE user_id = ANY($1)",
        "DELETE FROM follow_guard WHERE user_id = ANY($1)",
    ];
    for sql in statements {
        sqlx::query(sql).bind(&users).execute(&mut *conn).await?;
    }
    Ok(())
}

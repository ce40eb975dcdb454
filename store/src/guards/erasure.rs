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

    /// Records each erasure and removes the user from the write side, set-based.
    async fn write(self, conn: &mut PgConnection) -> Result<(), StoreError> {
        for user in self.erased {
            erase(conn, user).await?;
        }
        Ok(())
    }
}

/// The erasure's write-side statements for `user`, in its transaction: the `erased_users` row
/// (what refuses every later command), the user's data key (crypto-shredding: their sealed
/// content becomes unreadable wherever it went), their pending requests both ways with the
/// requesters' rule-3 counts they held, their account lock and their own guard row. The
/// followers' counts that include a follow of the user are settled by projector `following`
/// when it folds the erasure (`guard_settled`); until then they are over by one, which keeps
/// rule 3 safe.
async fn erase(conn: &mut PgConnection, user: UserId) -> Result<(), StoreError> {
    let user = user.get();
    let statements = [
        "INSERT INTO erased_users (user_id) VALUES ($1) ON CONFLICT DO NOTHING",
        "DELETE FROM data_keys WHERE user_id = $1",
        // Guard rows in ascending order, as the follow guard locks them.
        "SELECT 1 FROM follow_guard WHERE user_id IN
             (SELECT requester FROM pending_requests WHERE target = $1)
          ORDER BY user_id FOR NO KEY UPDATE",
        "WITH r AS (DELETE FROM pending_requests WHERE target = $1 RETURNING requester)
         UPDATE follow_guard g SET following = g.following - 1 FROM r WHERE g.user_id = r.requester",
        "DELETE FROM pending_requests WHERE requester = $1",
        "DELETE FROM account_locks WHERE user_id = $1",
        "DELETE FROM hidden_graphs WHERE user_id = $1",
        "DELETE FROM follow_guard WHERE user_id = $1",
    ];
    for sql in statements {
        sqlx::query(sql).bind(user).execute(&mut *conn).await?;
    }
    Ok(())
}

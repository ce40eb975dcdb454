//! The rows that guard the follow rules beyond a pair's own stream: each user's following
//! count (`follow_guard`, rule 3), the locked accounts a follow asks about (`account_locks`),
//! and the index of pending follow requests an unlock approves (`pending_requests`).
//!
//! The guard rows are locked in ascending order after the group's streams; locked accounts are
//! read after them under a shared lock held to commit. Unlocking an account takes its row
//! exclusively and no guard row, so the order has no cycle (see the `settings` module).

use std::collections::{BTreeMap, HashMap, HashSet};

use relations_domain::{following_deltas, RelationEvent, UserId};
use sqlx::PgConnection;

use crate::error::StoreError;
use crate::executor::Guard;

/// A change to the write side's index of pending follow requests: `(target, requester)`, and
/// whether the request is now pending.
pub(crate) type RequestChange = ((UserId, UserId), bool);

/// What one relation command asks of the guard.
#[derive(Debug, Default)]
pub(crate) struct FollowAsk {
    /// The users whose following count the command's rules read or its events change.
    pub guarded: Vec<UserId>,
    /// The user whose account lock the decision reads (a follow's target).
    pub locked_target: Option<UserId>,
}

/// What a group of relation commands is decided against, as its decisions leave it.
#[derive(Debug, Default)]
pub(crate) struct FollowGuard {
    /// The follow counts of the guard rows the group holds.
    following: HashMap<UserId, i64>,
    /// Which of the users asked about have a locked account.
    locked: HashSet<UserId>,
    /// The group's net changes to the follow counts.
    deltas: BTreeMap<UserId, i64>,
    /// The group's changes to the pending requests, the last one per request.
    requests: BTreeMap<(UserId, UserId), bool>,
}

impl FollowGuard {
    /// How many users `user` follows or has asked to follow, as the group has left it.
    pub fn following(&self, user: UserId) -> i64 {
        self.following.get(&user).copied().unwrap_or(0)
    }

    /// Whether `user`'s account is locked (asked by the group, read under lock).
    pub fn locked(&self, user: UserId) -> bool {
        self.locked.contains(&user)
    }
}

impl Guard<RelationEvent> for FollowGuard {
    type Ask = FollowAsk;

    /// Locks the guard rows of every user the group's commands guard, in ascending order, and
    /// reads which of the users they ask about have locked accounts, under a shared lock; one
    /// statement. The guard rows' DO UPDATE (to the same value) takes their locks (no-key-update
    /// strength, so it never waits on a shared lock) and returns the counts; rows are made for
    /// users seen for the first time.
    async fn lock(conn: &mut PgConnection, asks: Vec<FollowAsk>) -> Result<Self, StoreError> {
        let sorted = |users: Vec<UserId>| {
            let mut users: Vec<i64> = users.into_iter().map(UserId::get).collect();
            users.sort_unstable();
            users.dedup();
            users
        };
        let asked = sorted(asks.iter().filter_map(|a| a.locked_target).collect());
        let guarded = sorted(asks.into_iter().flat_map(|a| a.guarded).collect());
        if guarded.is_empty() && asked.is_empty() {
            return Ok(Self::default());
        }
        let rows: Vec<(i64, i32, bool)> = sqlx::query_as(
            "WITH g AS (
                 INSERT INTO follow_guard (user_id) SELECT u FROM unnest($1::bigint[]) AS u ORDER BY u
                 ON CONFLICT (user_id) DO UPDATE SET following = follow_guard.following
                 RETURNING user_id, following),
             l AS (SELECT user_id FROM account_locks WHERE user_id = ANY($2) ORDER BY user_id FOR SHARE)
             SELECT user_id, following, false FROM g
             UNION ALL SELECT user_id, 0, true FROM l",
        )
        .bind(&guarded)
        .bind(&asked)
        .fetch_all(conn)
        .await?;
        let mut guard = Self::default();
        for (user, following, locked) in rows {
            let user = UserId::try_from(user).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            if locked {
                guard.locked.insert(user);
            } else {
                guard.following.insert(user, i64::from(following.max(0)));
            }
        }
        Ok(guard)
    }

    fn decided(&mut self, events: &[RelationEvent]) {
        for (user, delta) in following_deltas(events) {
            *self.following.entry(user).or_default() += i64::from(delta);
            *self.deltas.entry(user).or_default() += i64::from(delta);
        }
        self.requests.extend(request_changes(events));
    }

    /// Adds the net changes to the guard rows, then writes the pending requests.
    async fn write(self, conn: &mut PgConnection) -> Result<(), StoreError> {
        update_counts(conn, &self.deltas).await?;
        update_requests(conn, self.requests).await
    }
}

/// How `events` change the pending follow requests, in order: `((target, requester), pending)`.
pub(crate) fn request_changes(events: &[RelationEvent]) -> Vec<RequestChange> {
    events
        .iter()
        .filter_map(RelationEvent::request)
        .map(|((requester, target), pending)| ((target, requester), pending))
        .collect()
}

/// Writes net changes to the pending follow requests (`pending_requests`), in ascending key
/// order.
pub(crate) async fn update_requests(
    conn: &mut PgConnection,
    changes: impl IntoIterator<Item = RequestChange>,
) -> Result<(), StoreError> {
    let (mut added, mut ended): (Vec<_>, Vec<_>) = (Vec::new(), Vec::new());
    for ((target, requester), pending) in changes {
        match pending {
            true => added.push((target.get(), requester.get())),
            false => ended.push((target.get(), requester.get())),
        }
    }
    for (rows, sql) in [
        (
            added,
            "INSERT INTO pending_requests (target, requester)
             SELECT * FROM unnest($1::bigint[], $2::bigint[]) ORDER BY 1, 2
             ON CONFLICT DO NOTHING",
        ),
        (
            ended,
            "DELETE FROM pending_requests p USING unnest($1::bigint[], $2::bigint[]) AS k(t, r)
              WHERE p.target = k.t AND p.requester = k.r",
        ),
    ] {
        if rows.is_empty() {
            continue;
        }
        let (targets, requesters): (Vec<i64>, Vec<i64>) = rows.into_iter().unzip();
        sqlx::query(sql)
            .bind(&targets)
            .bind(&requesters)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Adds the group's net changes to the guard rows, in one statement.
async fn update_counts(
    conn: &mut PgConnection,
    deltas: &BTreeMap<UserId, i64>,
) -> Result<(), StoreError> {
    let (users, changes): (Vec<i64>, Vec<i32>) = deltas
        .iter()
        .filter(|(_, d)| **d != 0)
        .map(|(u, d)| (u.get(), *d as i32))
        .unzip();
    if users.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "UPDATE follow_guard g SET following = g.following + d.change
           FROM unnest($1::bigint[], $2::int[]) AS d(user_id, change)
          WHERE g.user_id = d.user_id",
    )
    .bind(&users)
    .bind(&changes)
    .execute(conn)
    .await?;
    Ok(())
}

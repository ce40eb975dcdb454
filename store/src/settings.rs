//! Locking and unlocking an account: the one command that spans aggregates. Unlocking approves
//! every pending request, so it appends to the user's `account` stream and to the stream of
//! every pair with a pending request, in one transaction.
//!
//! How it stays exact under concurrency (see [`relations_domain::pair`]'s module docs):
//! - A follow reads its target's `account_locks` row under a shared lock held to its commit.
//!   Unlocking first takes that row exclusively: every request decided against the lock has
//!   committed by then, and no new one can be decided until the unlock commits (a follow that
//!   waited then finds no row and follows). So the pending requests read after the row lock are
//!   all there are.
//! - A pending request can still end meanwhile (withdrawn, rejected, ended by a block). The
//!   pairs are folded in this transaction and appended to with their versions, as every writer
//!   does, so such a race makes the append fail on the version, and the whole unlock is decided
//!   again. Pair streams are not locked up front: an account may have thousands of pending
//!   requests, and an advisory lock per pair would exhaust PostgreSQL's lock table.
//! - Approvals do not change a requester's following count (a request already counted), so no
//!   guard row is taken and every requester's limit holds as it did.

use std::collections::HashMap;

use relations_domain::{
    following_deltas, Account, AccountCommand, FollowBudget, PairId, RelationCommand, RelationPair,
    UserId,
};
use sqlx::{PgConnection, PgPool};

use crate::append::{self, Decided, Loaded};
use crate::db::end_transaction;
use crate::error::StoreError;
use crate::guards::follows::{request_changes, update_requests};
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::retry;
use crate::signal::CommitSignal;

/// Carries out settings changes against the event store.
#[derive(Clone)]
pub struct SettingsStore {
    pool: PgPool,
    signal: CommitSignal,
}

impl SettingsStore {
    /// A store on `pool` that wakes log readers through `signal` after each commit.
    pub fn new(pool: PgPool, signal: CommitSignal) -> Self {
        Self { pool, signal }
    }

    /// Locks or unlocks `user`'s account; unlocking approves every pending request in the same
    /// transaction. Where the change's last event sits in the log; none when nothing changed.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = "settings", user.id = %user, locked
    ))]
    pub async fn set_locked(
        &self,
        user: UserId,
        locked: bool,
        metadata: &EventMetadata,
    ) -> Result<Option<LogPosition>, StoreError> {
        let position = retry::until_committed(|| async {
            let mut tx = self.pool.begin().await?;
            let result = set_locked(&mut tx, user, locked, metadata).await;
            end_transaction(tx, result, |o| matches!(o, Some(Some(_)))).await
        })
        .await?;
        if position.is_some() {
            self.signal.committed();
        }
        Ok(position)
    }
}

/// One attempt in `conn`'s transaction: `Some(position)` to commit (`Some(None)`: nothing
/// changed, roll back), `None` after a lost race (roll back and decide again).
async fn set_locked(
    conn: &mut PgConnection,
    user: UserId,
    locked: bool,
    metadata: &EventMetadata,
) -> Result<Option<Option<LogPosition>>, StoreError> {
    let stream = user.to_string();
    append::lock::<Account>(conn, &[&stream]).await?;
    if !locked {
        sqlx::query("SELECT 1 FROM account_locks WHERE user_id = $1 FOR UPDATE")
            .bind(user.get())
            .execute(&mut *conn)
            .await?;
    }
    let mut accounts = HashMap::from([(stream.clone(), Loaded::<Account>::default())]);
    append::catch_up(conn, &mut accounts).await?;
    let account = &accounts[&stream];
    let command = AccountCommand::SetLocked { user, locked };
    let account_events = account
        .aggregate
        .decide(command)
        .unwrap_or_else(|e| match e {});
    if account_events.is_empty() {
        return Ok(Some(None));
    }
    let decided = Decided::<Account> {
        stream: &stream,
        version: account.version,
        events: &account_events,
        metadata,
    };
    let Some(mut positions) = append::append_decided(conn, &[decided]).await? else {
        return Ok(None);
    };
    if locked {
        sqlx::query("INSERT INTO account_locks (user_id) VALUES ($1) ON CONFLICT DO NOTHING")
            .bind(user.get())
            .execute(&mut *conn)
            .await?;
    } else {
        sqlx::query("DELETE FROM account_locks WHERE user_id = $1")
            .bind(user.get())
            .execute(&mut *conn)
            .await?;
        match approve_all(conn, user, metadata).await? {
            Some(approved) => positions.extend(approved),
            None => return Ok(None),
        }
    }
    Ok(Some(positions.into_iter().flatten().max()))
}

/// Approves every request pending to `user`, each on its pair; each approval's last position,
/// or `None` when a pair changed under the unlock.
async fn approve_all(
    conn: &mut PgConnection,
    user: UserId,
    metadata: &EventMetadata,
) -> Result<Option<Vec<Option<LogPosition>>>, StoreError> {
    let requesters: Vec<i64> =
        sqlx::query_scalar("SELECT requester FROM pending_requests WHERE target = $1")
            .bind(user.get())
            .fetch_all(&mut *conn)
            .await?;
    let mut pairs: HashMap<String, Loaded<RelationPair>> = HashMap::new();
    let mut requests = Vec::with_capacity(requesters.len());
    for requester in requesters {
        let requester =
            UserId::try_from(requester).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let stream = PairId::new(user, requester)
            .map_err(|_| StoreError::Corrupt(format!("{user} has a request from themselves")))?
            .stream_id();
        pairs.insert(stream.clone(), Loaded::default());
        requests.push((requester, stream));
    }
    append::catch_up(conn, &mut pairs).await?;
    let mut approvals = Vec::with_capacity(requests.len());
    for (requester, stream) in &requests {
        let loaded = &pairs[stream];
        let approve = RelationCommand::ApproveRequest {
            actor: user,
            target: *requester,
        };
        let events = loaded
            .aggregate
            .decide(approve, FollowBudget::unlimited())?;
        debug_assert!(
            following_deltas(&events).is_empty(),
            "approvals count nothing"
        );
        approvals.push((stream.as_str(), loaded.version, events));
    }
    let decided: Vec<Decided<'_, RelationPair>> = approvals
        .iter()
        .map(|(stream, version, events)| Decided {
            stream,
            version: *version,
            events,
            metadata,
        })
        .collect();
    let Some(positions) = append::append_decided(conn, &decided).await? else {
        return Ok(None);
    };
    let changes = approvals
        .iter()
        .flat_map(|(_, _, events)| request_changes(events));
    update_requests(conn, changes).await?;
    Ok(Some(positions))
}

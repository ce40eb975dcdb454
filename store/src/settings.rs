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
use serde::Serialize;
use sqlx::{PgConnection, PgPool};

use crate::append::{self, Appended, Loaded, NewEvent};
use crate::db::end_transaction;
use crate::error::StoreError;
use crate::group::update_requests;
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::relations::request_changes;
use crate::signal::CommitSignal;

/// How many times an unlock is decided again after a pending request changed under it.
const MAX_ATTEMPTS: u32 = 12;

/// The answer to `PUT /me/settings`: `{locked, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Settings {
    /// Whether the account approves its followers.
    pub locked: bool,
    /// Where the last event of the change sits in the log; null when nothing changed.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub position: Option<LogPosition>,
}

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
    /// transaction.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = "settings", user.id = %user, locked
    ))]
    pub async fn set_locked(
        &self,
        user: UserId,
        locked: bool,
        metadata: &EventMetadata,
    ) -> Result<Settings, StoreError> {
        for attempt in 1..=MAX_ATTEMPTS {
            let mut tx = self.pool.begin().await?;
            let result = set_locked(&mut tx, user, locked, metadata).await;
            let outcome = end_transaction(tx, result, |o| matches!(o, Some(Some(_)))).await?;
            match outcome {
                Some(position) => {
                    if position.is_some() {
                        self.signal.committed();
                    }
                    return Ok(Settings { locked, position });
                }
                None => {
                    metrics::counter!("relations_command_conflicts_total").increment(1);
                    tracing::debug!(attempt, "a pending request changed under an unlock");
                }
            }
        }
        Err(StoreError::Contended {
            attempts: MAX_ATTEMPTS,
        })
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
    let mut new_account = Vec::new();
    for (offset, event) in account_events.iter().enumerate() {
        new_account.push(NewEvent::<Account> {
            stream: &stream,
            version: account.version + 1 + offset,
            event,
            metadata,
        });
    }
    let Appended::At(mut positions) = append::append(conn, &new_account).await? else {
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
    Ok(Some(positions.into_iter().max()))
}

/// Approves every request pending to `user`, each on its pair; the approvals' positions, or
/// `None` when a pair changed under the unlock.
async fn approve_all(
    conn: &mut PgConnection,
    user: UserId,
    metadata: &EventMetadata,
) -> Result<Option<Vec<LogPosition>>, StoreError> {
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
    let mut decided = Vec::with_capacity(requests.len());
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
        decided.push((stream.as_str(), loaded.version, events));
    }
    let mut new = Vec::new();
    let mut changes = Vec::new();
    for (stream, version, events) in &decided {
        changes.extend(request_changes(events));
        for (offset, event) in events.iter().enumerate() {
            new.push(NewEvent::<RelationPair> {
                stream,
                version: version + 1 + offset,
                event,
                metadata,
            });
        }
    }
    let Appended::At(positions) = append::append(conn, &new).await? else {
        return Ok(None);
    };
    update_requests(conn, changes).await?;
    Ok(Some(positions))
}

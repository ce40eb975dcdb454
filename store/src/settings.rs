//! An account's settings: locking and unlocking it, hiding its graph (issue 26), and whose
//! notifications reach it (issue 47). Locking
//! is the one command that spans aggregates. Unlocking approves
//! every pending request, so it appends to the user's `account` stream and to the stream of
//! every pair with a pending request, in one transaction.
//!
//! How it stays exact under concurrency (see [`relations_domain::pair`]'s module docs):
//! - A follow reads its target's `account_locks` row under a shared lock held to its commit.
//!   Unlocking first takes that row exclusively: every request decided against the lock has
//!   committed by then, and no new one can be decided until the unlock commits (a follow that
//!   waited then finds no row and follows). So the pending requests read after the row lock are
//!   all there are.
//! - Pair streams are not locked: an account may have thousands of pending requests, and an
//!   advisory lock per pair would exhaust PostgreSQL's lock table. Unlocking holds its user
//!   exclusively instead, and every command on a pair holds both its users (shared), so no
//!   request ends (withdrawn, rejected, ended by a block) while the unlock decides: the pairs
//!   folded in this transaction stay as read until it commits. The pairs are still appended
//!   to with their versions, as every writer does. This is what keeps a stream's versions
//!   unique across the log's partitions, where no index spans them (issue 48; a version
//!   race used to be caught by the primary key alone).
//! - Unlocking locks every requester's user (shared: none can be erased under it), and takes
//!   those locks before its stream and its `account_locks` row, in the order every writer
//!   takes them: the requesters are read first, with no lock. A request that arrives before
//!   the row lock is only seen after it; its requester is locked without waiting
//!   ([`user_locks::try_lock_users`]), and if an erasure holds them the unlock is decided
//!   again. Waiting there could close a cycle: an erasure holding that user's lock waits for
//!   a follow's guard row, and the follow waits for the account's row.
//! - Approvals do not change a requester's following count (a request already counted), so no
//!   guard row is taken and every requester's limit holds as it did.

use std::collections::{HashMap, HashSet};

use relations_domain::{
    following_deltas, Account, AccountCommand, AccountEvent, Disposition, FollowBudget,
    NotificationPolicy, PairId, RelationCommand, RelationPair, UserId,
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
use crate::user_locks;

/// The settings asked for: each one omitted stays as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SettingsAsk {
    /// Lock (`true`) or unlock the account.
    pub locked: Option<bool>,
    /// Hide (`true`) or show the account's graph.
    pub hide_graph: Option<bool>,
    /// The notification policy's `not_following` (issue 47).
    pub not_following: Option<Disposition>,
    /// The notification policy's `not_followers` (issue 47).
    pub not_followers: Option<Disposition>,
}

impl SettingsAsk {
    /// The account commands it asks of `user`'s account, in order.
    fn commands(self, user: UserId) -> impl Iterator<Item = AccountCommand> {
        let policy = self.not_following.is_some() || self.not_followers.is_some();
        [
            self.locked
                .map(|locked| AccountCommand::SetLocked { user, locked }),
            self.hide_graph
                .map(|hide| AccountCommand::SetHideGraph { user, hide }),
            policy.then_some(AccountCommand::SetNotificationPolicy {
                user,
                not_following: self.not_following,
                not_followers: self.not_followers,
            }),
        ]
        .into_iter()
        .flatten()
    }
}

/// The account's settings after a change, and where the change's last event sits in the log
/// (none when nothing changed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingsChange {
    /// Locked now.
    pub locked: bool,
    /// Graph hidden now.
    pub hide_graph: bool,
    /// The notification policy now.
    pub notification_policy: NotificationPolicy,
    /// Where the change's last event sits; none when nothing changed.
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

    /// Changes `user`'s settings in one transaction: locks or unlocks the account (unlocking
    /// approves every pending request), hides or shows its graph. The settings as they are
    /// then, and where the change's last event sits in the log.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = "settings", user.id = %user, locked = ?ask.locked, hide_graph = ?ask.hide_graph
    ))]
    pub async fn set(
        &self,
        user: UserId,
        ask: SettingsAsk,
        metadata: &EventMetadata,
    ) -> Result<SettingsChange, StoreError> {
        let change = retry::until_committed(|| async {
            let mut tx = self.pool.begin().await?;
            let result = set(&mut tx, user, ask, metadata).await;
            end_transaction(tx, result, |o| matches!(o, Some(c) if c.position.is_some())).await
        })
        .await?;
        if change.position.is_some() {
            self.signal.committed();
        }
        Ok(change)
    }
}

/// One attempt in `conn`'s transaction: `Some(change)` to commit (with no position: nothing
/// changed, roll back), `None` after a lost race (roll back and decide again).
async fn set(
    conn: &mut PgConnection,
    user: UserId,
    ask: SettingsAsk,
    metadata: &EventMetadata,
) -> Result<Option<SettingsChange>, StoreError> {
    // The users' locks before the stream's, as every writer takes them (`user_locks`): the
    // user's, and an unlock's requesters' as last committed.
    let stream = user.to_string();
    let unlocking = ask.locked == Some(false);
    let requesters = if unlocking {
        pending_requesters(conn, user).await?
    } else {
        Vec::new()
    };
    let named: Vec<UserId> = std::iter::once(user)
        .chain(requesters.iter().copied())
        .collect();
    let mut accounts = HashMap::from([(stream.clone(), Loaded::<Account>::default())]);
    // An unlock holds its user exclusively: no command on one of its pairs runs beside it.
    let exclusive: &[UserId] = if unlocking { &[user] } else { &[] };
    if user_locks::lock_writers_and_load(conn, &named, exclusive, &mut accounts)
        .await?
        .contains(&user)
    {
        return Err(StoreError::Erased);
    }
    if unlocking {
        sqlx::query("SELECT 1 FROM account_locks WHERE user_id = $1 FOR UPDATE")
            .bind(user.get())
            .execute(&mut *conn)
            .await?;
    }
    let account = &accounts[&stream];
    let mut after = account.aggregate.clone();
    let mut account_events = Vec::new();
    for command in ask.commands(user) {
        for event in after.decide(command)? {
            after.apply(event.clone());
            account_events.push(event);
        }
    }
    let unchanged = |position| SettingsChange {
        locked: after.locked,
        hide_graph: after.hide_graph,
        notification_policy: after.notification_policy,
        position,
    };
    if account_events.is_empty() {
        return Ok(Some(unchanged(None)));
    }
    let decided = Decided::<Account> {
        stream: &stream,
        version: account.version,
        events: &account_events,
        metadata,
    };
    let Some(mut positions) = append::append_decided(conn, None, &[decided]).await? else {
        return Ok(None);
    };
    write_rows(conn, user, &account_events).await?;
    if account_events
        .iter()
        .any(|e| matches!(e, AccountEvent::AccountUnlocked { .. }))
    {
        match approve_all(conn, user, &requesters, metadata).await? {
            Some(approved) => positions.extend(approved),
            None => return Ok(None),
        }
    }
    Ok(Some(unchanged(positions.into_iter().flatten().max())))
}

/// The write side's rows the account's new events change (`account_locks`, `hidden_graphs`).
async fn write_rows(
    conn: &mut PgConnection,
    user: UserId,
    events: &[AccountEvent],
) -> Result<(), StoreError> {
    for event in events {
        let sql = match event {
            AccountEvent::AccountLocked { .. } => {
                "INSERT INTO account_locks (user_id) VALUES ($1) ON CONFLICT DO NOTHING"
            }
            AccountEvent::AccountUnlocked { .. } => "DELETE FROM account_locks WHERE user_id = $1",
            AccountEvent::GraphHidden { .. } => {
                "INSERT INTO hidden_graphs (user_id) VALUES ($1) ON CONFLICT DO NOTHING"
            }
            AccountEvent::GraphShown { .. } => "DELETE FROM hidden_graphs WHERE user_id = $1",
            _ => continue,
        };
        sqlx::query(sql)
            .bind(user.get())
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// The users with a request pending to `user`, as last committed.
async fn pending_requesters(
    conn: &mut PgConnection,
    user: UserId,
) -> Result<Vec<UserId>, StoreError> {
    let requesters: Vec<i64> =
        sqlx::query_scalar("SELECT requester FROM pending_requests WHERE target = $1")
            .bind(user.get())
            .fetch_all(&mut *conn)
            .await?;
    requesters
        .into_iter()
        .map(|r| UserId::try_from(r).map_err(|e| StoreError::Corrupt(e.to_string())))
        .collect()
}

/// Approves every request pending to `user`, each on its pair, with the users of those read
/// before (`locked`) locked already; each approval's last position, or `None` when a pair
/// changed under the unlock or a later requester is being erased.
async fn approve_all(
    conn: &mut PgConnection,
    user: UserId,
    locked: &[UserId],
    metadata: &EventMetadata,
) -> Result<Option<Vec<Option<LogPosition>>>, StoreError> {
    // Read after the account's row lock: every request there is.
    let requesters = pending_requesters(conn, user).await?;
    let locked: HashSet<&UserId> = locked.iter().collect();
    let late: Vec<UserId> = requesters
        .iter()
        .filter(|r| !locked.contains(r))
        .copied()
        .collect();
    // A requester erased meanwhile has no request left (its erasure deleted them), except one
    // erased between that read and its lock; none can be erased while these locks are held.
    let Some(erased) = user_locks::try_lock_users(conn, &late).await? else {
        return Ok(None);
    };
    let mut pairs: HashMap<String, Loaded<RelationPair>> = HashMap::new();
    let mut requests = Vec::with_capacity(requesters.len());
    for requester in requesters.into_iter().filter(|r| !erased.contains(r)) {
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
    let Some(positions) = append::append_decided(conn, None, &decided).await? else {
        return Ok(None);
    };
    let changes = approvals
        .iter()
        .flat_map(|(_, _, events)| request_changes(events));
    update_requests(conn, changes).await?;
    Ok(Some(positions))
}

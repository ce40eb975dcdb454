//! Account commands (token revocations, bans), each on the user's `account` stream, through the
//! same group-commit executor as every other command.

use relations_domain::{Account, AccountCommand, UserId};
use sqlx::PgPool;

use crate::error::StoreError;
use crate::executor::{Executed, Executor, Render, StoreCommand, Workers};
use crate::guards::erasure::{settle_followers, ErasureGuard};
use crate::idempotency::Idempotency;
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::signal::CommitSignal;

/// What an account command decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountOutcome {
    /// Whether the command changed the account (a lower revocation, a second ban or an unban of
    /// someone not banned change nothing).
    pub changed: bool,
    /// Where its event sits in the log; none when nothing changed.
    pub position: Option<LogPosition>,
}

/// Carries out account commands against the event store.
#[derive(Clone)]
pub struct AccountStore {
    executor: Executor<AccountCommandOf>,
    pool: PgPool,
}

impl AccountStore {
    /// A store on `pool`; see [`crate::PostStore::new`].
    pub fn new(
        pool: PgPool,
        signal: CommitSignal,
        workers: Workers,
        render: Render<AccountOutcome>,
    ) -> Self {
        // An erasure whose followers' settling a stopped process cut short is settled now.
        settle_in_background(&pool);
        Self {
            executor: Executor::spawn(pool.clone(), None, signal, workers, render),
            pool,
        }
    }

    /// Decides `command` on behalf of `actor` (an admin, or the user logging out).
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = "account", user.id = %command.user(), actor = %actor
    ))]
    pub async fn execute(
        &self,
        actor: UserId,
        command: AccountCommand,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<AccountOutcome>, StoreError> {
        let erasure = matches!(command, AccountCommand::Erase { .. });
        let command = AccountCommandOf {
            stream: command.user().to_string(),
            actor,
            command,
        };
        let executed = self
            .executor
            .execute(command, metadata, idempotency)
            .await?;
        if erasure {
            // The erased user's followers' rule-3 counts, right after the answer.
            settle_in_background(&self.pool);
        }
        Ok(executed)
    }
}

/// Runs [`settle_followers`] on a task of its own, when there is a runtime to run it on.
fn settle_in_background(pool: &PgPool) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let pool = pool.clone();
    runtime.spawn(async move {
        match settle_followers(&pool).await {
            Ok(0) => {}
            Ok(settled) => tracing::info!(settled, "erased users' followers settled"),
            // The next erasure or start settles what is left.
            Err(error) => tracing::warn!(%error, "settling erased users' followers failed"),
        }
    });
}

/// `user`'s account, folded from its stream (for a reader that has no replica of the log yet).
pub async fn load(pool: &PgPool, user: UserId) -> Result<Account, StoreError> {
    let mut streams = std::collections::HashMap::from([(
        user.to_string(),
        crate::append::Loaded::<Account>::default(),
    )]);
    let mut conn = pool.acquire().await?;
    crate::append::catch_up(&mut conn, &mut streams).await?;
    Ok(streams
        .into_values()
        .next()
        .map(|loaded| loaded.aggregate)
        .unwrap_or_default())
}

struct AccountCommandOf {
    stream: String,
    actor: UserId,
    command: AccountCommand,
}

impl StoreCommand for AccountCommandOf {
    type Aggregate = Account;
    type Guard = ErasureGuard;
    type Outcome = AccountOutcome;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.actor
    }

    /// The account's user (the admin acting on it is not named: an erased admin's token is
    /// refused before any command).
    fn users(&self) -> Vec<UserId> {
        vec![self.command.user()]
    }

    fn erases(&self) -> Option<UserId> {
        match self.command {
            AccountCommand::Erase { user } => Some(user),
            _ => None,
        }
    }

    fn command(&self) -> AccountCommand {
        self.command.clone()
    }

    fn ask(&self) {}

    fn services(&self, _guard: &ErasureGuard) {}

    fn outcome(&self, _account: &Account, position: Option<LogPosition>) -> AccountOutcome {
        AccountOutcome {
            changed: position.is_some(),
            position,
        }
    }
}

//! Filter commands (issue 47): each decided on its user's `filters` stream alone. A filter's
//! phrase is sealed in the log with the user's data key, as a post's content is
//! (`crate::log::content`).

use chrono::{DateTime, Utc};
use relations_domain::{FilterCommand, FilterId, FilterSpec, UserFilters, UserId};
use sqlx::PgPool;

use crate::error::StoreError;
use crate::executor::{Executed, Executor, Render, StoreCommand, Workers};
use crate::idempotency::Idempotency;
use crate::keys::Keyring;
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::signal::CommitSignal;

/// A filter command decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterChange {
    /// The command's verb ([`FilterCommand::name`]).
    pub command: &'static str,
    /// The filter.
    pub filter: FilterId,
    /// What a creation made, and when (none for a deletion).
    pub created: Option<(FilterSpec, DateTime<Utc>)>,
    /// Where the event sits in the log; none when nothing changed.
    pub position: Option<LogPosition>,
}

/// Carries out filter commands against the event store.
#[derive(Clone)]
pub struct FilterStore {
    filters: Executor<FilterCommandOf>,
}

impl FilterStore {
    /// A store on `pool`, sealing phrases with `keys`; see [`crate::PostStore::new`].
    pub fn new(
        pool: PgPool,
        keys: Keyring,
        signal: CommitSignal,
        workers: Workers,
        render: Render<FilterChange>,
    ) -> Self {
        Self {
            filters: Executor::spawn(pool, Some(keys), signal, workers, render),
        }
    }

    /// Decides `command` on its user's filters and appends its event.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = command.name(), user.id = %command.user()
    ))]
    pub async fn execute(
        &self,
        command: FilterCommand,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<FilterChange>, StoreError> {
        let command = FilterCommandOf {
            stream: command.user().get().to_string(),
            command,
        };
        self.filters.execute(command, metadata, idempotency).await
    }
}

struct FilterCommandOf {
    command: FilterCommand,
    stream: String,
}

impl FilterCommandOf {
    fn filter(&self) -> FilterId {
        match &self.command {
            FilterCommand::Create { filter, .. } | FilterCommand::Delete { filter, .. } => *filter,
        }
    }
}

impl StoreCommand for FilterCommandOf {
    type Aggregate = UserFilters;
    type Guard = ();
    type Outcome = FilterChange;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.user()
    }

    /// The user: an erased one is refused.
    fn users(&self) -> Vec<UserId> {
        vec![self.command.user()]
    }

    fn command(&self) -> FilterCommand {
        self.command.clone()
    }

    fn ask(&self) {}

    fn services(&self, _: &()) {}

    fn outcome(&self, _: &UserFilters, position: Option<LogPosition>) -> FilterChange {
        FilterChange {
            command: self.command.name(),
            filter: self.filter(),
            created: match &self.command {
                FilterCommand::Create { spec, at, .. } => Some((spec.clone(), *at)),
                FilterCommand::Delete { .. } => None,
            },
            position,
        }
    }
}

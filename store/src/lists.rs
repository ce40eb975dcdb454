//! List commands (issue 46): each decided on its owner's `lists` stream, beside the write
//! side's index of members read under the owner's lock (`guards::lists`).

use relations_domain::{ListCommand, ListEvent, ListId, ListState, UserId, UserLists};
use sqlx::PgPool;

use crate::error::StoreError;
use crate::executor::{Executed, Executor, Render, StoreCommand, Workers};
use crate::guards::lists::{ListAsk, ListGuard};
use crate::idempotency::Idempotency;
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::signal::CommitSignal;

/// A list command decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListChange {
    /// The command's verb ([`ListCommand::name`]): what the answer shows.
    pub command: &'static str,
    /// The list.
    pub list: ListId,
    /// The list as the command left it (none once deleted).
    pub state: Option<ListState>,
    /// How many members it has now.
    pub members: i64,
    /// How many members the command added or removed.
    pub changed: usize,
    /// Where the event sits in the log; none when nothing changed.
    pub position: Option<LogPosition>,
}

/// Carries out list commands against the event store.
#[derive(Clone)]
pub struct ListStore {
    lists: Executor<ListCommandOf>,
}

impl ListStore {
    /// A store on `pool`; see [`crate::PostStore::new`]. Outcomes are kept under their
    /// idempotency keys as `render` says.
    pub fn new(
        pool: PgPool,
        signal: CommitSignal,
        workers: Workers,
        render: Render<ListChange>,
    ) -> Self {
        Self {
            lists: Executor::spawn(pool, None, signal, workers, render),
        }
    }

    /// Decides `command` on its owner's lists and appends its event.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = command.name(), user.id = %command.owner(), list.id = %command.list()
    ))]
    pub async fn execute(
        &self,
        command: ListCommand,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<ListChange>, StoreError> {
        let command = ListCommandOf {
            stream: command.stream(),
            command,
        };
        self.lists.execute(command, metadata, idempotency).await
    }
}

struct ListCommandOf {
    command: ListCommand,
    stream: String,
}

impl StoreCommand for ListCommandOf {
    type Aggregate = UserLists;
    type Guard = ListGuard;
    type Outcome = ListChange;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.owner()
    }

    /// The owner and the users named: an erased one is refused.
    fn users(&self) -> Vec<UserId> {
        let mut users = vec![self.command.owner()];
        users.extend_from_slice(self.command.named());
        users
    }

    /// The owner, exclusively: every end of a follow of theirs (whose counts move) is ordered
    /// with a members call before either writes (`guards::lists`).
    fn counted(&self) -> Vec<UserId> {
        vec![self.command.owner()]
    }

    fn command(&self) -> ListCommand {
        self.command.clone()
    }

    fn ask(&self) -> ListAsk {
        ListAsk {
            owner: self.command.owner(),
            list: self.command.list(),
            named: self.command.named().to_vec(),
        }
    }

    fn services(&self, guard: &ListGuard) -> relations_domain::ListServices {
        guard.services(self.command.list())
    }

    fn outcome(&self, lists: &UserLists, position: Option<LogPosition>) -> ListChange {
        self.outcome_after(lists, &[], &ListGuard::default(), position)
    }

    /// The members it has as the group left it, and how many this decision added or removed.
    fn outcome_after(
        &self,
        lists: &UserLists,
        events: &[ListEvent],
        guard: &ListGuard,
        position: Option<LogPosition>,
    ) -> ListChange {
        let list = self.command.list();
        let changed = events
            .iter()
            .map(|event| match event {
                ListEvent::ListMembersAdded { members, .. }
                | ListEvent::ListMembersRemoved { members, .. } => members.len(),
                ListEvent::ListCreated { .. }
                | ListEvent::ListUpdated { .. }
                | ListEvent::ListDeleted { .. } => 0,
            })
            .sum();
        ListChange {
            command: self.command.name(),
            list,
            state: lists.get(list).cloned(),
            members: guard.count(list),
            changed,
            position,
        }
    }
}

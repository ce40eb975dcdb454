//! What the executor needs of a kind of command ([`StoreCommand`]), of the rules it is decided
//! against beyond its stream ([`Guard`]), and what it answers ([`Executed`]).

use std::future::Future;

use cqrs_es::Aggregate;
use relations_domain::UserId;
use sqlx::PgConnection;
use tokio::sync::oneshot;

use crate::error::StoreError;
use crate::idempotency::{self, Idempotency, StoredAnswer};
use crate::metadata::EventMetadata;
use crate::position::LogPosition;

/// A command's result: decided now, or the answer stored under its idempotency key.
#[derive(Debug, Clone, PartialEq)]
pub enum Executed<T> {
    /// Decided by this call.
    Fresh(T),
    /// A retry: the first answer, unchanged; nothing was appended.
    Replayed(StoredAnswer),
}

impl<T> Executed<T> {
    /// The fresh outcome turned by `f`; a replay stays as it was stored.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Executed<U> {
        match self {
            Executed::Fresh(outcome) => Executed::Fresh(f(outcome)),
            Executed::Replayed(stored) => Executed::Replayed(stored),
        }
    }
}

/// How the caller keeps a fresh outcome under its idempotency key: the answer it gives the
/// client, which a retry is given again as it was stored. The store never reads it.
pub type Render<O> = fn(&O) -> StoredAnswer;

/// The events of an aggregate.
pub(crate) type Event<A> = <A as Aggregate>::Event;

/// What a group's commands are decided against beyond their own streams (rows or streams of
/// other kinds). It plugs a kind of command's rules into the executor, which calls it in the
/// group's transaction: [`Guard::lock`] after the streams are locked and before the
/// idempotency keys are claimed, [`Guard::decided`] after each decision (so the next sees it),
/// and [`Guard::write`] after the group's events are appended.
pub(crate) trait Guard<E>: Sized + Send + Sync {
    /// What one command asks the guard to lock and read.
    type Ask: Send;

    /// Locks and reads, in the group's transaction, what the commands asked.
    fn lock(
        conn: &mut PgConnection,
        asks: Vec<Self::Ask>,
    ) -> impl Future<Output = Result<Self, StoreError>> + Send;

    /// Takes in one decided command's events.
    fn decided(&mut self, events: &[E]);

    /// Writes what the group's decisions changed, in its transaction.
    fn write(self, conn: &mut PgConnection) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The guard of commands decided on their own stream alone.
impl<E> Guard<E> for () {
    type Ask = ();

    async fn lock(_conn: &mut PgConnection, _asks: Vec<()>) -> Result<(), StoreError> {
        Ok(())
    }

    fn decided(&mut self, _events: &[E]) {}

    async fn write(self, _conn: &mut PgConnection) -> Result<(), StoreError> {
        Ok(())
    }
}

/// What the executor needs to know of a command beyond its aggregate.
pub(crate) trait StoreCommand: Send + Sync + 'static {
    /// The aggregate the command is decided on.
    type Aggregate: Aggregate + Clone + Send + Sync + 'static;
    /// What the command's rules read beyond its stream.
    type Guard: Guard<Event<Self::Aggregate>>;
    /// What was decided, as the command answers it.
    type Outcome: Send + Sync + 'static;

    /// The stream the command is decided on.
    fn stream(&self) -> &str;
    /// Who issues it (idempotency keys are per actor).
    fn actor(&self) -> UserId;
    /// The users the command names (its actor and whom it acts on): the group locks each
    /// (shared) before its streams and refuses the command if any is erased
    /// (`guards::erasure`).
    fn users(&self) -> Vec<UserId>;
    /// The user the command erases, if it is an erasure: locked exclusively, and never refused
    /// for being erased (erasing again changes nothing).
    fn erases(&self) -> Option<UserId> {
        None
    }
    /// The users whose guarded count (rule 3's following count) the command may change: locked
    /// exclusively with the users, before any write. A transaction takes its id at its first
    /// write, and the log is ordered by that id; so every writer of one count must be ordered
    /// before either writes, or a group that took its id first and then waited on the count's
    /// row would sit earlier in the log than the group it waited for, and a prefix of the log
    /// would hold a count no decision saw (found by the fault trial: a user following five
    /// under a limit of four, after a follow and an unfollow decided the other way round).
    fn counted(&self) -> Vec<UserId> {
        Vec::new()
    }
    /// The aggregate's command.
    fn command(&self) -> <Self::Aggregate as Aggregate>::Command;
    /// What the command asks its guard to lock and read.
    fn ask(&self) -> <Self::Guard as Guard<Event<Self::Aggregate>>>::Ask;
    /// What the aggregate decides with, given the guard as the group has left it.
    fn services(&self, guard: &Self::Guard) -> <Self::Aggregate as Aggregate>::Services;
    /// The outcome, from the aggregate as the decision left it and where its events ended.
    fn outcome(&self, aggregate: &Self::Aggregate, position: Option<LogPosition>) -> Self::Outcome;
    /// The outcome, also from the decision's events and the guard as the group left it
    /// (before it writes): by default [`StoreCommand::outcome`].
    fn outcome_after(
        &self,
        aggregate: &Self::Aggregate,
        _events: &[Event<Self::Aggregate>],
        _guard: &Self::Guard,
        position: Option<LogPosition>,
    ) -> Self::Outcome {
        self.outcome(aggregate, position)
    }
}

/// A command's result as the executor delivers it.
pub(crate) type Reply<C> = Result<Executed<<C as StoreCommand>::Outcome>, StoreError>;

/// A command waiting for its group.
pub(crate) struct Pending<C: StoreCommand> {
    pub command: C,
    pub metadata: EventMetadata,
    pub idempotency: Option<Idempotency>,
    pub reply: oneshot::Sender<Reply<C>>,
}

impl<C: StoreCommand> Pending<C> {
    /// The idempotency key's identity, if the command has one.
    pub fn key(&self) -> Option<(i64, String)> {
        self.idempotency.as_ref().map(|idem| {
            let (actor, key) = idempotency::key_of(self.command.actor(), idem);
            (actor, key.to_owned())
        })
    }
}

//! One group's transaction, each step one statement for all its commands. The locks are taken
//! in one order by every writer (streams, then what the guard locks, then idempotency keys,
//! each sorted), so groups running side by side never deadlock.

use std::collections::HashMap;

use cqrs_es::event_sink::EventSink;
use cqrs_es::Aggregate;
use relations_domain::UserId;
use sqlx::PgConnection;

use super::command::{Event, Executed, Guard, Pending, Render, Reply, StoreCommand};
use crate::append::{self, Decided, Loaded};
use crate::error::StoreError;
use crate::faults;
use crate::idempotency::{self, Claim, Claimed, Record};
use crate::keys::Keyring;
use crate::position::LogPosition;
use crate::user_locks;

/// A committed group's replies, in the group's order, and its streams as it left them.
pub(crate) type Committed<C> = (
    Vec<Reply<C>>,
    HashMap<String, Loaded<<C as StoreCommand>::Aggregate>>,
);

/// A command decided in memory, waiting for the append.
struct Decision<C: StoreCommand> {
    /// Its place in the group.
    index: usize,
    /// Its events, at versions `first_version..`.
    events: Vec<Event<C::Aggregate>>,
    /// The stream's version they were decided on.
    version: usize,
    /// The aggregate as this decision left it (a later command on the stream moves on).
    after: C::Aggregate,
}

/// A group on its way through one transaction.
pub(crate) struct Group<'g, C: StoreCommand> {
    commands: &'g [Pending<C>],
    streams: HashMap<String, Loaded<C::Aggregate>>,
    /// How a fresh outcome is kept under its key.
    render: Render<C::Outcome>,
    /// What seals content, for a kind whose events carry it.
    keys: Option<&'g Keyring>,
    replies: Vec<Option<Reply<C>>>,
    /// The keys this transaction claimed, by place in the group.
    claimed: Vec<bool>,
}

impl<'g, C: StoreCommand> Group<'g, C>
where
    StoreError: From<<C::Aggregate as Aggregate>::Error>,
{
    /// `commands`, with their streams as last known (version 0 when unknown), whose fresh
    /// outcomes are kept as `render` gives them and whose content `keys` seals.
    pub fn new(
        commands: &'g [Pending<C>],
        streams: HashMap<String, Loaded<C::Aggregate>>,
        render: Render<C::Outcome>,
        keys: Option<&'g Keyring>,
    ) -> Self {
        Self {
            commands,
            streams,
            render,
            keys,
            replies: commands.iter().map(|_| None).collect(),
            claimed: vec![false; commands.len()],
        }
    }

    /// Runs the group in `conn`'s transaction; `None` when another writer took a version
    /// first (the transaction is aborted: roll back and decide again).
    pub async fn decide(
        mut self,
        conn: &mut PgConnection,
    ) -> Result<Option<Committed<C>>, StoreError> {
        self.lock_refusing_erased(conn).await?;
        // A command refused already asks its guard for nothing (no row of an erased user).
        let asks = self
            .commands
            .iter()
            .zip(&self.replies)
            .filter(|(_, reply)| reply.is_none())
            .map(|(p, _)| p.command.ask())
            .collect();
        let mut guard = C::Guard::lock(conn, asks).await?;
        self.claim(conn).await?;
        let mut decisions = Vec::new();
        for index in 0..self.commands.len() {
            if self.replies[index].is_some() {
                continue;
            }
            match self.decide_one(index, &guard).await {
                Ok(decision) => {
                    guard.decided(&decision.events);
                    decisions.push(decision);
                }
                Err(refused) => self.replies[index] = Some(Err(refused)),
            }
        }
        let Some(positions) = self.append(conn, &decisions).await? else {
            return Ok(None);
        };
        let outcomes: Vec<(usize, C::Outcome)> = decisions
            .into_iter()
            .zip(positions)
            .map(|(decision, position)| {
                let command = &self.commands[decision.index].command;
                let outcome =
                    command.outcome_after(&decision.after, &decision.events, &guard, position);
                (decision.index, outcome)
            })
            .collect();
        guard.write(conn).await?;
        faults::point(faults::BEFORE_ANSWERS_STORED).await?;
        self.answer(conn, outcomes).await?;
        let replies = self
            .replies
            .into_iter()
            .map(|o| o.expect("every command is decided"))
            .collect();
        Ok(Some((replies, self.streams)))
    }

    /// Locks every user the group's commands name, then their streams, and brings the streams
    /// up to date (one round trip); refuses the commands that name an erased user (an erasure
    /// of an erased user goes on: it decides nothing).
    async fn lock_refusing_erased(&mut self, conn: &mut PgConnection) -> Result<(), StoreError> {
        // Exclusively: the erased users, and those whose guarded counts the commands change.
        let exclusive: Vec<UserId> = self
            .commands
            .iter()
            .flat_map(|p| p.command.erases().into_iter().chain(p.command.counted()))
            .collect();
        let named: Vec<UserId> = self
            .commands
            .iter()
            .flat_map(|p| p.command.users())
            .collect();
        let erased =
            user_locks::lock_writers_and_load(conn, &named, &exclusive, &mut self.streams).await?;
        if erased.is_empty() {
            return Ok(());
        }
        for (index, pending) in self.commands.iter().enumerate() {
            let command = &pending.command;
            if command.erases().is_none() && command.users().iter().any(|u| erased.contains(u)) {
                self.replies[index] = Some(Err(StoreError::Erased));
            }
        }
        Ok(())
    }

    /// Claims the group's keys; a key answered before answers its command now.
    async fn claim(&mut self, conn: &mut PgConnection) -> Result<(), StoreError> {
        let (places, claims): (Vec<usize>, Vec<Claim>) = self
            .commands
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let idem = p.idempotency.as_ref()?;
                let actor = p.command.actor();
                Some((i, Claim { actor, idem }))
            })
            .unzip();
        for (place, claimed) in places
            .into_iter()
            .zip(idempotency::claim(conn, &claims).await?)
        {
            match claimed {
                Claimed::New => self.claimed[place] = true,
                Claimed::Answered(answer) => {
                    self.replies[place] = Some(Ok(Executed::Replayed(answer)))
                }
                Claimed::Reused => {
                    self.replies[place] = Some(Err(StoreError::IdempotencyKeyReused))
                }
            }
        }
        Ok(())
    }

    /// Decides command `index` on its stream as the group has left it.
    async fn decide_one(
        &mut self,
        index: usize,
        guard: &C::Guard,
    ) -> Result<Decision<C>, StoreError> {
        let command = &self.commands[index].command;
        let loaded = self
            .streams
            .get_mut(command.stream())
            .expect("every stream is loaded");
        let mut aggregate = loaded.aggregate.clone();
        let sink = EventSink::default();
        aggregate
            .handle(command.command(), &command.services(guard), &sink)
            .await?;
        let events = sink.collect().await;
        let version = loaded.version;
        loaded.version += events.len();
        loaded.aggregate = aggregate.clone();
        Ok(Decision {
            index,
            events,
            version,
            after: aggregate,
        })
    }

    /// Appends every decision's events; each decision's last position, or `None` on a conflict.
    async fn append(
        &self,
        conn: &mut PgConnection,
        decisions: &[Decision<C>],
    ) -> Result<Option<Vec<Option<LogPosition>>>, StoreError> {
        let decided: Vec<Decided<'_, C::Aggregate>> = decisions
            .iter()
            .map(|decision| {
                let pending = &self.commands[decision.index];
                Decided {
                    stream: pending.command.stream(),
                    version: decision.version,
                    events: &decision.events,
                    metadata: &pending.metadata,
                }
            })
            .collect();
        append::append_decided(conn, self.keys, &decided).await
    }

    /// Answers each decision with its outcome, records the answers under their keys, and gives back the keys of
    /// refused commands (only successful answers are stored).
    async fn answer(
        &mut self,
        conn: &mut PgConnection,
        outcomes: Vec<(usize, C::Outcome)>,
    ) -> Result<(), StoreError> {
        let mut records = Vec::new();
        for (index, outcome) in outcomes {
            let pending = &self.commands[index];
            if let Some(idem) = &pending.idempotency {
                records.push(Record {
                    actor: pending.command.actor(),
                    idem,
                    answer: (self.render)(&outcome),
                });
            }
            self.replies[index] = Some(Ok(Executed::Fresh(outcome)));
        }
        idempotency::record(conn, &records).await?;
        let refused: Vec<Claim> = self
            .commands
            .iter()
            .enumerate()
            .filter(|(i, _)| self.claimed[*i] && matches!(self.replies[*i], Some(Err(_))))
            .filter_map(|(_, p)| {
                let idem = p.idempotency.as_ref()?;
                Some(Claim {
                    actor: p.command.actor(),
                    idem,
                })
            })
            .collect();
        idempotency::release(conn, &refused).await
    }
}

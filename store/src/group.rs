//! One group's transaction, each step one statement for all its commands. The locks are taken
//! in one order by every writer (streams, then guard rows, then idempotency keys, each sorted),
//! so groups running side by side never deadlock.

use std::collections::{BTreeMap, HashMap};

use cqrs_es::event_sink::EventSink;
use cqrs_es::Aggregate;
use relations_domain::{RelationPair, UserId};
use sqlx::PgConnection;

use crate::append::{self, Appended, Loaded, NewEvent};
use crate::command::{Executed, Guards, Outcome, Pending, RequestChange, StoreCommand};
use crate::error::StoreError;
use crate::idempotency::{self, Claim, Claimed, Record};

/// A committed group's outcomes, in the group's order, and its streams as it left them.
pub(crate) type Decided<C> = (
    Vec<Outcome<C>>,
    HashMap<String, Loaded<<C as StoreCommand>::Aggregate>>,
);

type Event<C> = <<C as StoreCommand>::Aggregate as Aggregate>::Event;

/// A command decided in memory, waiting for the append.
struct Decision<C: StoreCommand> {
    /// Its place in the group.
    index: usize,
    /// Its events, at versions `first_version..`.
    events: Vec<Event<C>>,
    first_version: usize,
    /// The aggregate as this decision left it (a later command on the stream moves on).
    after: C::Aggregate,
}

/// A group on its way through one transaction.
pub(crate) struct Group<'g, C: StoreCommand> {
    commands: &'g [Pending<C>],
    streams: HashMap<String, Loaded<C::Aggregate>>,
    outcomes: Vec<Option<Outcome<C>>>,
    /// The keys this transaction claimed, by place in the group.
    claimed: Vec<bool>,
}

impl<'g, C: StoreCommand> Group<'g, C>
where
    StoreError: From<<C::Aggregate as Aggregate>::Error>,
{
    /// `commands`, with their streams as last known (version 0 when unknown).
    pub fn new(commands: &'g [Pending<C>], streams: HashMap<String, Loaded<C::Aggregate>>) -> Self {
        Self {
            commands,
            streams,
            outcomes: commands.iter().map(|_| None).collect(),
            claimed: vec![false; commands.len()],
        }
    }

    /// Runs the group in `conn`'s transaction; `None` when another writer took a version
    /// first (the transaction is aborted: roll back and decide again).
    pub async fn decide(
        mut self,
        conn: &mut PgConnection,
    ) -> Result<Option<Decided<C>>, StoreError> {
        let ids: Vec<&str> = self.commands.iter().map(|p| p.command.stream()).collect();
        append::lock::<C::Aggregate>(conn, &ids).await?;
        let pairs = lock_pairs(conn, self.commands).await?;
        let mut guards = lock_guards(conn, self.commands).await?;
        guards.pairs = pairs;
        self.claim(conn).await?;
        append::catch_up(conn, &mut self.streams).await?;
        let mut decisions = Vec::new();
        let mut deltas: BTreeMap<UserId, i64> = BTreeMap::new();
        let mut requests: BTreeMap<(UserId, UserId), bool> = BTreeMap::new();
        for index in 0..self.commands.len() {
            if self.outcomes[index].is_some() {
                continue;
            }
            match self.decide_one(index, &guards).await {
                Ok(decision) => {
                    let pending = &self.commands[index];
                    for (user, delta) in pending.command.deltas(&decision.events) {
                        *guards.following.entry(user).or_default() += i64::from(delta);
                        *deltas.entry(user).or_default() += i64::from(delta);
                    }
                    requests.extend(pending.command.requests(&decision.events));
                    decisions.push(decision);
                }
                Err(refused) => self.outcomes[index] = Some(Err(refused)),
            }
        }
        let Some(positions) = self.append(conn, &decisions).await? else {
            return Ok(None);
        };
        update_guards(conn, &deltas).await?;
        update_requests(conn, requests).await?;
        self.answer(conn, decisions, positions).await?;
        let outcomes = self
            .outcomes
            .into_iter()
            .map(|o| o.expect("every command is decided"))
            .collect();
        Ok(Some((outcomes, self.streams)))
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
                    self.outcomes[place] = Some(Ok(Executed::Replayed(answer)))
                }
                Claimed::Reused => {
                    self.outcomes[place] = Some(Err(StoreError::IdempotencyKeyReused))
                }
            }
        }
        Ok(())
    }

    /// Decides command `index` on its stream as the group has left it.
    async fn decide_one(
        &mut self,
        index: usize,
        guards: &Guards,
    ) -> Result<Decision<C>, StoreError> {
        let command = &self.commands[index].command;
        let loaded = self
            .streams
            .get_mut(command.stream())
            .expect("every stream is loaded");
        let mut aggregate = loaded.aggregate.clone();
        let sink = EventSink::default();
        aggregate
            .handle(command.command(), &command.services(guards), &sink)
            .await?;
        let events = sink.collect().await;
        let first_version = loaded.version + 1;
        loaded.version += events.len();
        loaded.aggregate = aggregate.clone();
        Ok(Decision {
            index,
            events,
            first_version,
            after: aggregate,
        })
    }

    /// Appends every decision's events; each decision's last position, or `None` on a conflict.
    async fn append(
        &self,
        conn: &mut PgConnection,
        decisions: &[Decision<C>],
    ) -> Result<Option<Vec<Option<crate::LogPosition>>>, StoreError> {
        let mut new = Vec::new();
        for decision in decisions {
            let pending = &self.commands[decision.index];
            for (offset, event) in decision.events.iter().enumerate() {
                new.push(NewEvent::<C::Aggregate> {
                    stream: pending.command.stream(),
                    version: decision.first_version + offset,
                    event,
                    metadata: &pending.metadata,
                });
            }
        }
        let positions = match append::append(conn, &new).await? {
            Appended::At(positions) => positions,
            Appended::Conflict => return Ok(None),
        };
        let mut positions = positions.into_iter();
        Ok(Some(
            decisions
                .iter()
                .map(|d| positions.by_ref().take(d.events.len()).last())
                .collect(),
        ))
    }

    /// Answers each decision, records the answers under their keys, and gives back the keys of
    /// refused commands (only successful answers are stored).
    async fn answer(
        &mut self,
        conn: &mut PgConnection,
        decisions: Vec<Decision<C>>,
        positions: Vec<Option<crate::LogPosition>>,
    ) -> Result<(), StoreError> {
        let mut records = Vec::new();
        for (decision, position) in decisions.into_iter().zip(positions) {
            let pending = &self.commands[decision.index];
            let answer = pending.command.answer(&decision.after, position);
            if let Some(idem) = &pending.idempotency {
                records.push(Record {
                    actor: pending.command.actor(),
                    idem,
                    status: pending.command.status(),
                    body: serde_json::to_value(&answer)
                        .map_err(|e| StoreError::Corrupt(e.to_string()))?,
                });
            }
            self.outcomes[decision.index] = Some(Ok(Executed::Fresh(answer)));
        }
        idempotency::record(conn, &records).await?;
        let refused: Vec<Claim> = self
            .commands
            .iter()
            .enumerate()
            .filter(|(i, _)| self.claimed[*i] && matches!(self.outcomes[*i], Some(Err(_))))
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

/// Locks the guard rows of every user the group's commands guard, in ascending order, and
/// reads which of the users they ask about have locked accounts, under a shared lock; one
/// statement. The guard rows' DO UPDATE (to the same value) takes their locks (no-key-update
/// strength, so it never waits on a shared lock) and returns the counts; rows are made for
/// users seen for the first time. Locked rows are taken after the guard rows, in ascending
/// order; unlocking takes one exclusively and no guard row, so the order has no cycle.
async fn lock_guards<C: StoreCommand>(
    conn: &mut PgConnection,
    commands: &[Pending<C>],
) -> Result<Guards, StoreError> {
    let sorted = |users: Vec<UserId>| {
        let mut users: Vec<i64> = users.into_iter().map(UserId::get).collect();
        users.sort_unstable();
        users.dedup();
        users
    };
    let guarded = sorted(commands.iter().flat_map(|p| p.command.guarded()).collect());
    let asked = sorted(
        commands
            .iter()
            .filter_map(|p| p.command.locked_target())
            .collect(),
    );
    if guarded.is_empty() && asked.is_empty() {
        return Ok(Guards::default());
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
    let mut guards = Guards::default();
    for (user, following, locked) in rows {
        let user = UserId::try_from(user).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        if locked {
            guards.locked.insert(user);
        } else {
            guards.following.insert(user, i64::from(following.max(0)));
        }
    }
    Ok(guards)
}

/// Locks the relation pairs the group's commands read, after their own streams (so a relation
/// command, which locks pairs only, never waits in a cycle with them), and folds them.
async fn lock_pairs<C: StoreCommand>(
    conn: &mut PgConnection,
    commands: &[Pending<C>],
) -> Result<HashMap<String, RelationPair>, StoreError> {
    let ids: Vec<String> = commands
        .iter()
        .flat_map(|p| p.command.pairs())
        .map(|pair| pair.stream_id())
        .collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    append::lock::<RelationPair>(conn, &refs).await?;
    let mut pairs: HashMap<String, Loaded<RelationPair>> =
        ids.into_iter().map(|id| (id, Loaded::default())).collect();
    append::catch_up(conn, &mut pairs).await?;
    Ok(pairs
        .into_iter()
        .map(|(id, loaded)| (id, loaded.aggregate))
        .collect())
}

/// Writes the group's net changes to the pending follow requests (`pending_requests`), in
/// ascending key order.
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
async fn update_guards(
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

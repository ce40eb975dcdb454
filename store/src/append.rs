//! Loading an aggregate with cqrs-es and appending its events in the caller's transaction.
//!
//! postgres-es commits one aggregate's events per transaction of its own. A relation command
//! must append, in one transaction, the pair's events, the guard rows they change and the
//! idempotency answer; so loading goes through cqrs-es's repository and `Aggregate::apply`, and
//! the append is written here against the same `events` table, with the same optimistic
//! concurrency (the primary key on (aggregate_type, aggregate_id, sequence)).

use cqrs_es::persist::PersistedEventRepository;
use cqrs_es::{Aggregate, DomainEvent, EventEnvelope};
use postgres_es::PostgresEventRepository;
use sqlx::{FromRow, PgConnection};

use crate::command::Attempt;
use crate::error::StoreError;
use crate::metadata::EventMetadata;
use crate::position::LogPosition;

/// An aggregate folded from its stream, and the stream's version (0 when empty).
pub(crate) struct Loaded<A> {
    pub aggregate: A,
    pub version: usize,
}

/// Folds the stream `id` of aggregate type `A`.
pub(crate) async fn load<A: Aggregate>(
    repo: &PostgresEventRepository,
    id: &str,
) -> Result<Loaded<A>, StoreError> {
    let mut aggregate = A::default();
    let mut version = 0;
    for serialized in repo.get_events::<A>(id).await? {
        let envelope = EventEnvelope::<A>::try_from(serialized)?;
        version = envelope.sequence;
        aggregate.apply(envelope.payload);
    }
    Ok(Loaded { aggregate, version })
}

/// Appends `events` after `version` in the caller's transaction and returns the last one's
/// place in the log ([`Attempt::Decided`]), or [`Attempt::Conflict`] when another writer appended
/// to the stream since it was loaded: that aborts the transaction, and the caller rolls back and
/// decides again.
pub(crate) async fn append<A: Aggregate>(
    conn: &mut PgConnection,
    id: &str,
    version: usize,
    events: &[A::Event],
    metadata: &EventMetadata,
) -> Result<Attempt<LogPosition>, StoreError> {
    let metadata = metadata.to_json();
    let mut last = LogPosition::START;
    for (offset, event) in events.iter().enumerate() {
        let payload =
            serde_json::to_value(event).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let inserted = sqlx::query(
            "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             RETURNING transaction_id::text::bigint AS transaction_id, global_position",
        )
        .bind(A::TYPE)
        .bind(id)
        .bind((version + offset + 1) as i64)
        .bind(event.event_type())
        .bind(event.event_version())
        .bind(&payload)
        .bind(&metadata)
        .fetch_one(&mut *conn)
        .await;
        match inserted {
            Ok(row) => {
                last = LogPosition::from_row(&row)?;
            }
            Err(sqlx::Error::Database(e)) if e.constraint() == Some("events_pkey") => {
                return Ok(Attempt::Conflict)
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Attempt::Decided(last))
}

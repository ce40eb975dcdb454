//! Streams as a group of commands sees them: locked, brought up to date, and appended to, each
//! step one statement for the whole group, in the caller's transaction.
//!
//! postgres-es commits one aggregate's events per transaction of its own. A group of commands
//! must append, in one transaction, the streams' events, the guard rows they change and the
//! idempotency answers; so the append is written here against postgres-es's `events` table,
//! with the same optimistic concurrency (a unique index on (aggregate_type, aggregate_id,
//! sequence) in each of the log's partitions, behind the streams' locks), and events are
//! folded with cqrs-es's `Aggregate::apply`.

use std::collections::HashMap;

use cqrs_es::{Aggregate, DomainEvent};
use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgConnection, Row};

use crate::error::StoreError;
use crate::keys::Keyring;
use crate::log::content::{self, Unsealed, CONTENT_TYPES};
use crate::metadata::EventMetadata;
use crate::position::LogPosition;

/// An aggregate folded from its stream, and the stream's version (0 when empty).
#[derive(Debug, Clone, Default)]
pub(crate) struct Loaded<A> {
    pub aggregate: A,
    pub version: usize,
}

/// How a stream is locked: exclusively by a writer that appends to it; shared by one that only
/// reads it and must find it unchanged until it commits (a like reads its post's stream).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode {
    Exclusive,
    Shared,
}

/// Locks `streams` (of aggregate type `A`) for the caller's transaction, then brings each up
/// to date, in one statement (SQL `lock_and_load`). The locks are taken in one order every
/// writer shares (so groups never deadlock on them). While a writer holds a stream's lock, no
/// other writer of this service appends to it, so what it loads stays current until it
/// commits. Each partition's unique index on the stream's versions stays the authority against
/// any other writer whose events fall in the same partition; across partitions, the lock is.
pub(crate) async fn lock_and_catch_up<A: Aggregate>(
    conn: &mut PgConnection,
    streams: &mut HashMap<String, Loaded<A>>,
    mode: Mode,
) -> Result<(), StoreError> {
    load(conn, streams, Some(mode)).await
}

/// Brings each of `streams` (of aggregate type `A`) up to date in one statement (SQL
/// `load_streams`: one probe of each partition's stream index per stream): the events after each one's
/// known version are read and applied.
pub(crate) async fn catch_up<A: Aggregate>(
    conn: &mut PgConnection,
    streams: &mut HashMap<String, Loaded<A>>,
) -> Result<(), StoreError> {
    load(conn, streams, None).await
}

/// Reads and applies the events after each stream's version, having locked the streams first
/// when `lock` says how.
async fn load<A: Aggregate>(
    conn: &mut PgConnection,
    streams: &mut HashMap<String, Loaded<A>>,
    lock: Option<Mode>,
) -> Result<(), StoreError> {
    let events = read::<A>(conn, &versions(streams), lock).await?;
    apply(streams, events);
    Ok(())
}

/// Each stream's id and known version, as the SQL functions that load streams take them.
pub(crate) fn versions<A>(streams: &HashMap<String, Loaded<A>>) -> Vec<(&str, usize)> {
    streams
        .iter()
        .map(|(id, loaded)| (id.as_str(), loaded.version))
        .collect()
}

/// Applies `events` (each stream's in order) to their streams.
pub(crate) fn apply<A: Aggregate>(
    streams: &mut HashMap<String, Loaded<A>>,
    events: Vec<(String, usize, A::Event)>,
) {
    for (id, sequence, event) in events {
        let loaded = streams.get_mut(&id).expect("only the streams asked for");
        loaded.aggregate.apply(event);
        loaded.version = sequence;
    }
}

/// Locks `streams` (of aggregate type `A`, each with the version its reader knows) as `mode`
/// says, and answers the events after each version, each stream's in order: for a reader that
/// needs only what changed since, not the aggregate (a comment's like asks whether the comment
/// was deleted since it was found live).
pub(crate) async fn lock_and_read<A: Aggregate>(
    conn: &mut PgConnection,
    streams: &[(&str, usize)],
    mode: Mode,
) -> Result<Vec<(String, A::Event)>, StoreError> {
    let events = read::<A>(conn, streams, Some(mode)).await?;
    Ok(events
        .into_iter()
        .map(|(id, _, event)| (id, event))
        .collect())
}

/// The events after each stream's version, with their versions, in stream and version order;
/// the streams locked first when `lock` says how.
async fn read<A: Aggregate>(
    conn: &mut PgConnection,
    streams: &[(&str, usize)],
    lock: Option<Mode>,
) -> Result<Vec<(String, usize, A::Event)>, StoreError> {
    let (ids, versions): (Vec<&str>, Vec<i64>) =
        streams.iter().map(|(id, v)| (*id, *v as i64)).unzip();
    let sql = match lock {
        // Each stream's events are applied in order: said here, not left to the functions.
        None => "SELECT * FROM load_streams($1, $2, $3) ORDER BY aggregate_id, sequence",
        Some(_) => "SELECT * FROM lock_and_load($1, $2, $3, $4) ORDER BY aggregate_id, sequence",
    };
    let mut query = sqlx::query(sql).bind(A::TYPE).bind(&ids).bind(&versions);
    if let Some(mode) = lock {
        query = query.bind(matches!(mode, Mode::Shared));
    }
    let rows = query.fetch_all(&mut *conn).await?;
    rows.iter().map(event_of::<A>).collect()
}

/// A row of SQL `load_streams` (or of a function answering as it does): the stream, the
/// event's version and the event.
pub(crate) fn event_of<A: Aggregate>(row: &PgRow) -> Result<(String, usize, A::Event), StoreError> {
    let id: String = row.try_get("aggregate_id")?;
    let payload: serde_json::Value = row.try_get("payload")?;
    let event: A::Event = serde_json::from_value(payload)
        .map_err(|e| StoreError::Corrupt(format!("{} {id}: {e}", A::TYPE)))?;
    let sequence = row.try_get::<i64, _>("sequence")? as usize;
    Ok((id, sequence, event))
}

/// The events one decision appends to its stream.
pub(crate) struct Decided<'a, A: Aggregate> {
    /// Its stream.
    pub stream: &'a str,
    /// The stream's version the events were decided on (they take the versions after it).
    pub version: usize,
    /// The events, in order.
    pub events: &'a [A::Event],
    /// Who caused them and through which request.
    pub metadata: &'a EventMetadata,
}

/// Appends every decision's events in one statement, each at its version: each decision's last
/// place in the log (none when it decided nothing), or `None` when another writer took one of
/// the versions first (the transaction is aborted: roll back, load again and decide again).
pub(crate) async fn append_decided<A: Aggregate>(
    conn: &mut PgConnection,
    keys: Option<&Keyring>,
    decisions: &[Decided<'_, A>],
) -> Result<Option<Vec<Option<LogPosition>>>, StoreError> {
    let new: Vec<NewEvent<'_, A>> = decisions
        .iter()
        .flat_map(|decided| {
            decided
                .events
                .iter()
                .enumerate()
                .map(|(offset, event)| NewEvent {
                    stream: decided.stream,
                    version: decided.version + 1 + offset,
                    event,
                    metadata: decided.metadata,
                })
        })
        .collect();
    let Appended::At(positions) = append(conn, keys, &new).await? else {
        return Ok(None);
    };
    let mut positions = positions.into_iter();
    Ok(Some(
        decisions
            .iter()
            .map(|d| positions.by_ref().take(d.events.len()).last())
            .collect(),
    ))
}

/// One event to append.
struct NewEvent<'a, A: Aggregate> {
    /// Its stream.
    pub stream: &'a str,
    /// Its version in the stream.
    pub version: usize,
    /// The event.
    pub event: &'a A::Event,
    /// Who caused it and through which request.
    pub metadata: &'a EventMetadata,
}

/// How an append ended.
enum Appended {
    /// Every event is in; each one's place in the log, in the order given.
    At(Vec<LogPosition>),
    /// Another writer took one of the versions: the transaction is aborted; roll back, load
    /// again and decide again.
    Conflict,
}

/// Appends `events` in one statement, their content sealed with `keys`, and returns each
/// one's place in the log.
async fn append<A: Aggregate>(
    conn: &mut PgConnection,
    keys: Option<&Keyring>,
    events: &[NewEvent<'_, A>],
) -> Result<Appended, StoreError> {
    if events.is_empty() {
        return Ok(Appended::At(Vec::new()));
    }
    // Inserted in (stream, version) order, as every append inserts: an unlock appends to pair
    // streams it does not lock (`settings`), so two appends that share versions must meet
    // them in one order, or each could wait on the other's unfinished insert.
    let mut ordered: Vec<&NewEvent<'_, A>> = events.iter().collect();
    ordered.sort_unstable_by_key(|e| (e.stream, e.version));
    let mut columns = Columns::default();
    for new in ordered {
        let payload =
            serde_json::to_value(new.event).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        columns.streams.push(new.stream);
        columns.versions.push(new.version as i64);
        columns.types.push(new.event.event_type());
        columns.type_versions.push(new.event.event_version());
        columns.payloads.push(payload);
        columns.metadata.push(new.metadata.to_json());
    }
    columns.seal(conn, A::TYPE, keys).await?;
    let inserted = sqlx::query(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
         SELECT $1, s, v, t, tv, p::json, m::json
           FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::jsonb[], $7::jsonb[])
                WITH ORDINALITY AS x(s, v, t, tv, p, m, n)
          ORDER BY n
         RETURNING aggregate_id, sequence, transaction_id::text::bigint AS transaction_id, global_position",
    )
    .bind(A::TYPE)
    .bind(&columns.streams)
    .bind(&columns.versions)
    .bind(&columns.types)
    .bind(&columns.type_versions)
    .bind(&columns.payloads)
    .bind(&columns.metadata)
    .fetch_all(&mut *conn)
    .await;
    let rows = match inserted {
        Ok(rows) => rows,
        Err(sqlx::Error::Database(e)) if e.constraint().is_some_and(is_stream_index) => {
            return Ok(Appended::Conflict)
        }
        Err(e) => return Err(e.into()),
    };
    // RETURNING promises no order: place each row by its (stream, version).
    let mut at: HashMap<(String, i64), LogPosition> = HashMap::with_capacity(rows.len());
    for row in &rows {
        let key = (row.try_get("aggregate_id")?, row.try_get("sequence")?);
        at.insert(key, LogPosition::from_row(row)?);
    }
    Ok(Appended::At(
        events
            .iter()
            .map(|e| at[&(e.stream.to_owned(), e.version as i64)])
            .collect(),
    ))
}

/// Whether `constraint` is a partition's unique index on (aggregate_type, aggregate_id,
/// sequence): `<partition>_stream` (migration `20261130000041_log_partitions.sql`, which this
/// binary applies before it appends).
fn is_stream_index(constraint: &str) -> bool {
    constraint.starts_with("events_") && constraint.ends_with("_stream")
}

impl Columns<'_> {
    /// Seals the content the events carry (their payload version becomes 2); only a kind
    /// whose events carry none may come without keys.
    async fn seal(
        &mut self,
        conn: &mut PgConnection,
        stream_type: &str,
        keys: Option<&Keyring>,
    ) -> Result<(), StoreError> {
        let Some(keys) = keys else {
            return match self
                .types
                .iter()
                .find(|t| CONTENT_TYPES.contains(&t.as_str()))
            {
                Some(t) => Err(StoreError::Failed(format!("{t} appended without keys"))),
                None => Ok(()),
            };
        };
        let mut unsealed: Vec<Unsealed<'_>> = self
            .streams
            .iter()
            .zip(&self.versions)
            .zip(&self.types)
            .zip(self.type_versions.iter_mut().zip(self.payloads.iter_mut()))
            .map(
                |(((stream, sequence), event_type), (version, payload))| Unsealed {
                    stream_type,
                    stream_id: stream,
                    sequence: *sequence,
                    event_type,
                    version,
                    payload,
                },
            )
            .collect();
        Ok(content::seal(conn, keys, &mut unsealed).await?)
    }
}

/// The columns of an append, as arrays.
#[derive(Default)]
struct Columns<'a> {
    streams: Vec<&'a str>,
    versions: Vec<i64>,
    types: Vec<String>,
    type_versions: Vec<String>,
    payloads: Vec<serde_json::Value>,
    metadata: Vec<serde_json::Value>,
}

//! The SQL every read of the log shares, written once: the horizon, a position bound, the
//! columns of a recorded event. Macros, so that each query stays one `concat!`ed literal
//! (sqlx prepares it once).

/// The horizon: events of transactions below the oldest one still open, which have all
/// committed or aborted. Written once; every read of the log below the horizon uses it.
macro_rules! below_horizon {
    () => {
        "transaction_id < pg_snapshot_xmin(pg_current_snapshot())"
    };
}

/// Events after `($1, $2)`, a position bound as `(text, bigint)` (xid8 has no binary form
/// sqlx knows).
macro_rules! after_position {
    () => {
        "(transaction_id, global_position) > ($1::text::xid8, $2)"
    };
}

/// The log's size on disk with its indexes, in bytes: every partition's (a partitioned table
/// has no storage of its own).
#[macro_export]
macro_rules! log_bytes {
    () => {
        "(SELECT sum(pg_total_relation_size(relid))::bigint FROM pg_partition_tree('events'))"
    };
}

/// The columns of [`RecordedEvent`]. `transaction_id` comes out as a bigint under its own name,
/// so an ORDER BY must name `events.transaction_id` (the indexed xid8), not the alias: ordering
/// by the alias sorts the whole rest of the log on every read. The payload and metadata come as
/// stored (`json` is text; the cast to `text` only renames the type, so that the decoder borrows
/// the row's bytes and decodes each event once into its type, with no JSON tree): a cast to
/// `jsonb` made PostgreSQL parse every event once more for each reader, half of a batch read's
/// execution time (1.5 µs an event).
macro_rules! columns {
    () => {
        "event_id, transaction_id::text::bigint AS transaction_id, global_position, \
         aggregate_type, aggregate_id, sequence, event_type, event_version, occurred_at, \
         payload::text AS payload, metadata::text AS metadata"
    };
}

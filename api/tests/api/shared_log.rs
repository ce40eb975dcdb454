//! The window a process's readers share (`SharedLog`, issue 28) against the log itself: every
//! batch it gives is what a read of the log gives (a prefix of it, at whole transactions),
//! across a transaction held open, readers at different paces and one left behind the window.

use std::time::Duration;

use relations_projections::SharedLog;
use relations_store::log::{self, RecordedEvent};
use relations_store::LogPosition;
use sqlx::PgPool;

use crate::helpers::{hold_open_follow, spawn_app, TestApp};

/// A reader of the window: where it stands, what it asks for at most, what it got.
struct Reader {
    at: LogPosition,
    limit: i64,
    got: Vec<RecordedEvent>,
}

impl Reader {
    fn new(limit: i64) -> Self {
        Self {
            at: LogPosition::START,
            limit,
            got: Vec::new(),
        }
    }

    /// One step as a runner takes it (look, then the batch), checked against the log read just
    /// before and just after: the batch is a prefix of the later read and ends at a whole
    /// transaction; it is empty only when the earlier read was.
    async fn step(&mut self, shared: &SharedLog, pool: &PgPool) -> usize {
        let before = read(pool, self.at, self.limit).await;
        let mut conn = pool.acquire().await.unwrap();
        let ahead = shared.ahead(&mut conn, self.at).await.unwrap();
        let mut tx = pool.begin().await.unwrap();
        let batch = shared.batch(&mut tx, self.at, self.limit).await.unwrap();
        tx.commit().await.unwrap();
        let after = read(pool, self.at, i64::MAX).await;
        assert!(
            after.starts_with(&batch),
            "the batch after {} is not what the log holds there",
            self.at
        );
        if let (Some(last), Some(next)) = (batch.last(), after.get(batch.len())) {
            assert_ne!(
                last.position.transaction_id, next.position.transaction_id,
                "a batch split a transaction"
            );
        }
        assert!(
            before.is_empty() || !batch.is_empty(),
            "the log had events after {} but the window gave none",
            self.at
        );
        assert!(!ahead.settled || !after.is_empty());
        if let Some(last) = batch.last() {
            self.at = last.position;
        }
        self.got.extend_from_slice(&batch);
        batch.len()
    }
}

async fn read(pool: &PgPool, after: LogPosition, limit: i64) -> Vec<RecordedEvent> {
    let mut conn = pool.acquire().await.unwrap();
    log::read_after(&mut conn, after, limit).await.unwrap()
}

/// Commits a few events in transactions of one and of several events (a block ends follows).
async fn write(app: &TestApp, round: i64) {
    let (a, b) = (1_000 + 2 * round, 1_001 + 2 * round);
    for (verb, actor, target) in [("follow", a, b), ("follow", b, a), ("block", a, b)] {
        let (status, body) = app.command(verb, actor, target).await;
        assert!(
            status.is_success(),
            "{verb} {actor} {target}: {status} {body}"
        );
    }
}

#[tokio::test]
async fn a_shared_window_gives_each_reader_what_the_log_holds_across_an_open_transaction() {
    let app = spawn_app().await;
    // A small window, so that its oldest reads go and the slowest reader falls behind it.
    let shared = SharedLog::with_capacity(12);
    let mut readers = [Reader::new(1), Reader::new(4), Reader::new(500)];
    let mut held = None;
    for round in 0..24 {
        write(&app, round).await;
        match round {
            6 => held = Some(hold_open_follow(&app).await),
            14 => held.take().unwrap().commit().await.unwrap(),
            _ => {}
        }
        // The first reader steps once a round and falls behind; the others keep up.
        readers[0].step(&shared, &app.pool).await;
        for reader in &mut readers[1..] {
            while reader.step(&shared, &app.pool).await > 0 {}
        }
    }
    // The horizon is cluster-wide: another test's open transaction may keep the released one
    // above it for a while. Wait until the log's readable part holds it.
    let held = |events: &[RecordedEvent]| {
        events
            .iter()
            .any(|e| e.stream_id == "100:200" && e.event_type() == "Followed")
    };
    let started = std::time::Instant::now();
    while !held(&read(&app.pool, LogPosition::START, i64::MAX).await) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the horizon never moved"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for reader in &mut readers {
        while reader.step(&shared, &app.pool).await > 0 {}
    }
    let log = read(&app.pool, LogPosition::START, i64::MAX).await;
    let ids = |events: &[RecordedEvent]| events.iter().map(|e| e.event_id).collect::<Vec<_>>();
    for reader in &readers {
        assert_eq!(
            ids(&reader.got),
            ids(&log),
            "a reader of {} at a time skipped or repeated events",
            reader.limit
        );
    }
    assert!(
        held(&readers[0].got),
        "the held transaction's event was skipped"
    );
}

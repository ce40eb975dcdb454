//! One read of the log per process, shared by the readers in it (issue 28). The projectors of
//! a process follow the same stretch of the log, and every read of it costs PostgreSQL a walk
//! of the log's index and each event's transfer: eight readers read each event eight times.
//! Here the first reader to find nothing new in memory reads the next batch (below the horizon,
//! whole transactions, as [`log::read_after`] always does) into a window, and the others take
//! their batches from the window.
//!
//! **Why a batch from the window is the batch the log would give.** Events below the horizon
//! belong to transactions that have all ended: no event can later appear at a position below
//! one that was read there. The window grows only by reads that start where it ends, so it
//! holds every event of the log between its two ends, in log order. A reader whose position
//! lies inside it gets what a read of the log would give it then (whole transactions, perhaps
//! fewer than it asked for). A reader behind it reads the log itself; a read past its end (a
//! checkpoint moved on another instance) starts it again there when it finds events. An empty
//! look is never cached: "nothing new" is always asked of PostgreSQL.

use std::collections::VecDeque;
use std::ops::{Deref, Range};
use std::sync::Arc;

use relations_store::log::{self, Ahead, RecordedEvent};
use relations_store::LogPosition;
use sqlx::PgConnection;
use tokio::sync::Mutex;

/// Events the window keeps at most, by default: its oldest reads go once it holds more (a
/// reader further behind reads the log itself).
const CAPACITY: usize = 5_000;

/// Events a read into the window asks for at least.
const READ: i64 = 1_000;

/// The window of the log a process's readers share; clones share it.
#[derive(Clone)]
pub struct SharedLog {
    window: Arc<Mutex<Window>>,
}

impl Default for SharedLog {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

/// Reads of the log, each as it came (whole transactions), holding every event after `from`
/// up to the last one read.
struct Window {
    /// Events held at most (the newest read stays whatever its size).
    capacity: usize,
    reads: VecDeque<Arc<Vec<RecordedEvent>>>,
    /// Where the window starts (exclusive); `None` before its first read.
    from: Option<LogPosition>,
    /// Events held.
    held: usize,
}

/// A batch of events: a stretch of one read the window holds, or events of the reader's own.
pub enum Batch {
    /// Events `range` of a read the window holds (others may be applying them too).
    Shared(Arc<Vec<RecordedEvent>>, Range<usize>),
    /// Events of this reader's own.
    Own(Vec<RecordedEvent>),
}

impl Deref for Batch {
    type Target = [RecordedEvent];

    fn deref(&self) -> &[RecordedEvent] {
        match self {
            Batch::Shared(read, range) => &read[range.clone()],
            Batch::Own(events) => events,
        }
    }
}

impl Batch {
    /// The batch without the events after `until` (checkpoints sit at whole transactions, so
    /// this never splits one).
    pub fn until(self, until: LogPosition) -> Batch {
        let keep = self.partition_point(|e| e.position <= until);
        match self {
            Batch::Shared(read, range) => Batch::Shared(read, range.start..range.start + keep),
            Batch::Own(mut events) => {
                events.truncate(keep);
                Batch::Own(events)
            }
        }
    }
}

impl SharedLog {
    /// A window that keeps about `capacity` events.
    pub fn with_capacity(capacity: usize) -> Self {
        let window = Window {
            capacity,
            reads: VecDeque::new(),
            from: None,
            held: 0,
        };
        Self {
            window: Arc::new(Mutex::new(window)),
        }
    }

    /// What lies after `after`: settled without a round trip when the window holds events
    /// after it. Otherwise PostgreSQL is asked, and when there is something new right where
    /// the window ends, the first reader to ask reads it in for the others (who wait on the
    /// window meanwhile, then find it there).
    pub async fn ahead(
        &self,
        conn: &mut PgConnection,
        after: LogPosition,
    ) -> Result<Ahead, sqlx::Error> {
        let mut window = self.window.lock().await;
        if window.holds_after(after) {
            metrics::counter!("relations_log_looks_total", "answered" => "memory").increment(1);
            return Ok(Ahead {
                settled: true,
                unsettled: false,
            });
        }
        metrics::counter!("relations_log_looks_total", "answered" => "database").increment(1);
        if !window.extends_from(after) {
            // Behind the window: what this reader finds can never fill it, so it looks
            // without holding the others up.
            drop(window);
            return log::ahead(&mut *conn, after).await;
        }
        let ahead = log::ahead(&mut *conn, after).await?;
        if ahead.settled {
            window.read(conn, after, READ).await?;
        }
        Ok(ahead)
    }

    /// Up to about `limit` events after `after`, below the horizon, whole transactions: from
    /// the window when it holds `after`, else read from the log on `conn` (into the window
    /// when the read starts where the window ends, or past it).
    pub async fn batch(
        &self,
        conn: &mut PgConnection,
        after: LogPosition,
        limit: i64,
    ) -> Result<Batch, sqlx::Error> {
        let limit = limit.max(1) as usize;
        let mut window = self.window.lock().await;
        if let Some(batch) = window.after(after, limit) {
            metrics::counter!("relations_log_batches_total", "read" => "memory").increment(1);
            return Ok(batch);
        }
        metrics::counter!("relations_log_batches_total", "read" => "database").increment(1);
        if window.extends_from(after) {
            window.read(conn, after, (limit as i64).max(READ)).await?;
            return Ok(window.after(after, limit).unwrap_or(Batch::Own(Vec::new())));
        }
        drop(window);
        Ok(Batch::Own(
            log::read_after(conn, after, limit as i64).await?,
        ))
    }
}

impl Window {
    /// The position of the last event held (where the window ends).
    fn to(&self) -> Option<LogPosition> {
        match self.reads.back().and_then(|read| read.last()) {
            Some(last) => Some(last.position),
            None => self.from,
        }
    }

    /// Whether events after `after` are held.
    fn holds_after(&self, after: LogPosition) -> bool {
        matches!((self.from, self.to()), (Some(from), Some(to)) if from <= after && after < to)
    }

    /// Whether a read after `after` belongs in the window: it starts where the window ends, or
    /// past it (the window starts again there), or the window has not started.
    fn extends_from(&self, after: LogPosition) -> bool {
        self.to().is_none_or(|to| after >= to)
    }

    /// Reads up to `limit` events after `after` (where the window ends, or past it) into the
    /// window, letting its oldest reads go beyond its capacity.
    async fn read(
        &mut self,
        conn: &mut PgConnection,
        after: LogPosition,
        limit: i64,
    ) -> Result<(), sqlx::Error> {
        let events = log::read_after(conn, after, limit).await?;
        if events.is_empty() {
            // Nothing to hold: a reader past the window's end (its checkpoint moved on another
            // instance) leaves it to the others.
            return Ok(());
        }
        if self.to() != Some(after) {
            self.reads.clear();
            self.held = 0;
            self.from = Some(after);
        }
        self.held += events.len();
        self.reads.push_back(Arc::new(events));
        while self.held > self.capacity && self.reads.len() > 1 {
            let oldest = self.reads.pop_front().expect("more than one read");
            self.held -= oldest.len();
            self.from = oldest.last().map(|e| e.position);
        }
        Ok(())
    }

    /// Up to about `limit` events after `after` from the window (whole transactions), `None`
    /// when it holds none. Within one read they are shared; a batch running into later reads
    /// (a reader catching up) is copied out.
    fn after(&self, after: LogPosition, limit: usize) -> Option<Batch> {
        if !self.holds_after(after) {
            return None;
        }
        // The first read holding an event after `after`.
        let first = self
            .reads
            .partition_point(|read| read.last().is_some_and(|e| e.position <= after));
        let read = &self.reads[first];
        let start = read.partition_point(|e| e.position <= after);
        if read.len() - start >= limit || first + 1 == self.reads.len() {
            let end = whole_transactions(read, (start + limit).min(read.len()));
            return Some(Batch::Shared(read.clone(), start..end));
        }
        let mut events: Vec<RecordedEvent> = read[start..].to_vec();
        for read in self.reads.iter().skip(first + 1) {
            if events.len() >= limit {
                break;
            }
            let end = whole_transactions(read, (limit - events.len()).min(read.len()));
            events.extend_from_slice(&read[..end]);
        }
        Some(Batch::Own(events))
    }
}

/// `end`, moved on to the end of the transaction of the event before it (a read holds whole
/// transactions, so it ends within the read).
fn whole_transactions(read: &[RecordedEvent], mut end: usize) -> usize {
    while end > 0
        && end < read.len()
        && read[end].position.transaction_id == read[end - 1].position.transaction_id
    {
        end += 1;
    }
    end
}

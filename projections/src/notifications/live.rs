//! Notifications, live: each connected user is sent every notification the projector makes for
//! them, on every instance.
//!
//! While anyone is connected here, the hub follows projector `notifications`' checkpoint in
//! PostgreSQL (every [`POLL`]): when it has moved, the causes it added since, for the users
//! connected here, are read in one statement and sent. So what a stream sends is exactly what the projector kept
//! in the main list, with every filter it applies (own actions, blocks, mutes while they last,
//! the recipient's notification policy: a filtered cause is never sent, issue 47), and every
//! instance sees it whichever instance folded it. A cause undone before the hub looks is never
//! sent. Each item carries its log position: a client that reconnects with it
//! (`Last-Event-ID`) is sent what it missed first.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use relations_store::LogPosition;
use sqlx::PgPool;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::change::Kind;
use crate::runtime::checkpoint;

/// How often the hub looks at the projector's checkpoint.
pub const POLL: Duration = Duration::from_millis(200);

/// Items buffered per connection; a reader further behind is sent what it missed from the
/// table instead.
const BUFFER: usize = 256;

/// Notifications read back at most for one reconnection.
pub const MAX_REPLAY: i64 = 1_000;

/// One notification, as a stream sends it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LiveNotification {
    /// Who is notified.
    pub recipient: i64,
    /// Its type (the group key's first part: [`Kind::of_group`]).
    #[sqlx(default)]
    pub kind: String,
    /// The group it joined.
    pub grp: String,
    /// The post it is about.
    pub post: Option<Uuid>,
    /// The comment it is about.
    pub comment: Option<i32>,
    /// Who did it.
    pub actor: i64,
    /// Its place in the log.
    pub tx: i64,
    /// (with `tx`)
    pub gp: i64,
    /// When.
    pub at: DateTime<Utc>,
}

impl LiveNotification {
    /// Its place in the log.
    pub fn position(&self) -> LogPosition {
        LogPosition {
            transaction_id: self.tx,
            global_position: self.gp,
        }
    }
}

/// What a listener is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveItem {
    /// A notification.
    Notification(LiveNotification),
    /// Items were dropped (the reader was too slow): read what followed the last one.
    Resync,
}

type Listeners = HashMap<i64, Vec<(u64, mpsc::Sender<LiveItem>)>>;

/// This instance's notification listeners. Cheap to clone.
#[derive(Clone, Default)]
pub struct NotificationHub {
    listeners: Arc<Mutex<Listeners>>,
    next: Arc<AtomicU64>,
}

/// One listener: its items, and its place in the hub (left when dropped).
pub struct Listener {
    /// The notifications sent to this listener.
    pub items: mpsc::Receiver<LiveItem>,
    hub: NotificationHub,
    user: i64,
    id: u64,
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut listeners = self.hub.listeners.lock().expect("not poisoned");
        if let Some(list) = listeners.get_mut(&self.user) {
            list.retain(|(id, _)| *id != self.id);
            if list.is_empty() {
                listeners.remove(&self.user);
            }
        }
    }
}

impl NotificationHub {
    /// Listens for `user`'s notifications.
    pub fn listen(&self, user: i64) -> Listener {
        let (sender, items) = mpsc::channel(BUFFER);
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.listeners
            .lock()
            .expect("not poisoned")
            .entry(user)
            .or_default()
            .push((id, sender));
        Listener {
            items,
            hub: self.clone(),
            user,
            id,
        }
    }

    /// Sends every notification the projector adds to the connected users, until `shutdown`.
    pub async fn run(self, pool: PgPool, shutdown: CancellationToken) {
        let mut last: Option<LogPosition> = None;
        loop {
            match self.step(&pool, last).await {
                Ok(at) => last = at,
                Err(error) => tracing::warn!(%error, "notification stream look failed; retrying"),
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(POLL) => {}
            }
        }
    }

    /// One look: sends what the projector added after `last` to the connected users; where it
    /// stands now. With nobody connected it asks the database nothing (and forgets where it
    /// stood); the first look after that only finds where the projector stands and tells every
    /// listener to read what it missed since its own start (`Resync`), so nothing falls between.
    async fn step(
        &self,
        pool: &PgPool,
        last: Option<LogPosition>,
    ) -> Result<Option<LogPosition>, sqlx::Error> {
        let users: Vec<i64> = self
            .listeners
            .lock()
            .expect("not poisoned")
            .keys()
            .copied()
            .collect();
        if users.is_empty() {
            return Ok(None);
        }
        let now = checkpoint::read(pool, super::NAME).await?;
        let Some(last) = last else {
            self.send(|_| vec![LiveItem::Resync]);
            return Ok(Some(now));
        };
        if last >= now {
            return Ok(Some(now));
        }
        let mut added: HashMap<i64, Vec<LiveItem>> = HashMap::new();
        for notification in since(pool, &users, last, now, i64::MAX).await? {
            let items = added.entry(notification.recipient).or_default();
            items.push(LiveItem::Notification(notification));
        }
        self.send(|user| added.remove(&user).unwrap_or_default());
        Ok(Some(now))
    }

    /// Sends each connected user's listeners `items(user)`, in order; a listener too far
    /// behind is told to resync instead.
    fn send(&self, mut items: impl FnMut(i64) -> Vec<LiveItem>) {
        let listeners = self.listeners.lock().expect("not poisoned");
        for (user, senders) in listeners.iter() {
            let items = items(*user);
            for (_, sender) in senders {
                for item in &items {
                    if sender.try_send(item.clone()).is_err() {
                        let _ = sender.try_send(LiveItem::Resync);
                        break;
                    }
                }
            }
        }
    }
}

/// The live notifications of `users` after `after`, up to `until`, oldest first (at most
/// `limit`); never a filtered one (issue 47: the stream shows the main list).
pub async fn since(
    pool: &PgPool,
    users: &[i64],
    after: LogPosition,
    until: LogPosition,
    limit: i64,
) -> Result<Vec<LiveNotification>, sqlx::Error> {
    let mut rows: Vec<LiveNotification> = sqlx::query_as(
        "SELECT recipient, grp, post, comment, actor, tx, gp, at FROM notify_causes
          WHERE recipient = ANY($1) AND (tx, gp) > ($2, $3) AND (tx, gp) <= ($4, $5)
            AND grp NOT LIKE '%|filtered'
          ORDER BY tx, gp, recipient LIMIT $6",
    )
    .bind(users)
    .bind(after.transaction_id)
    .bind(after.global_position)
    .bind(until.transaction_id)
    .bind(until.global_position)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    for row in &mut rows {
        let kind = Kind::of_group(&row.grp).ok_or_else(|| {
            sqlx::Error::Decode(format!("a group of no type: {}", row.grp).into())
        })?;
        row.kind = kind.name().to_owned();
    }
    Ok(rows)
}

/// Where projector `notifications` stands: a stream starts there.
pub async fn head(pool: &PgPool) -> Result<LogPosition, sqlx::Error> {
    checkpoint::read(pool, super::NAME).await
}

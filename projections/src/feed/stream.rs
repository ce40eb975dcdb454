//! The live feed stream: each connected reader is pushed every post that enters their feed,
//! and every deletion, as the instance's graph replica applies them (Mastodon's streaming API,
//! on this service's log).
//!
//! The replica sends each batch of the log it applies, after it reflects it
//! ([`LiveGraph::subscribe`]); the hub picks out the post events and decides, for each connected reader, with the
//! replica in that same state, whether the post is in their feed: its author is followed (or,
//! for a reader who follows nobody, recommended, with no block either way), not muted by the
//! reader, not banned. Every item carries its log position; a reader who reconnects with it
//! (`Last-Event-ID`) is sent what they missed, read back from the log, before the live items.
//!
//! Each connection holds its token's stamp. When a batch holds an account event, the hub
//! re-checks the connections of that account's user against the replica, which already folds
//! it, and ends those whose token is now refused or whose user is banned, before delivering
//! the batch's posts: every instance does so as its own replica applies the event, so a
//! revocation or a ban answered anywhere ends the streams everywhere within the replica's lag.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use relations_domain::privacy;
use relations_domain::{
    FilterContext, LogEvent, PostEvent, PostId, RepostEvent, TokenStamp, UserId, Visibility,
};
use relations_store::log::{self, RecordedEvent};
use relations_store::{Keyring, LogPosition};
use sqlx::PgPool;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::quotes::one_level;
use crate::error::ProjectionError;
use crate::filters::screen::Screening;
use crate::replica::live::LiveGraph;
use crate::replica::Replica;
use crate::runtime::projector::erased_user;
use crate::runtime::wait;
use crate::views::{PostView, QuoteView};

/// Items buffered per connection before it is told to catch up from the log instead.
const BUFFER: usize = 256;

/// Events read back at most for one reconnection; a reader further behind reloads the feed.
pub const MAX_REPLAY: i64 = 10_000;

/// How long the stream waits for projector `feed` to fold a batch's reposts and quotes: the
/// hub's one loop waits with it (the batches behind, their erasures and refusals too), so
/// briefly; the projector is usually milliseconds behind the replica.
const PROJECTOR_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// What a reader is sent.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamItem {
    /// A post entered their feed.
    Post(LogPosition, PostView),
    /// A post that may be in their feed was deleted.
    Deleted(LogPosition, PostId),
    /// Items were dropped (the reader was too slow): catch up from the log after the last
    /// item received.
    Resync,
    /// More happened than a reconnection reads back: reload the feed.
    Reset,
}

/// A post event the replica has applied, at its place in the log.
#[derive(Debug, Clone)]
struct PostSignal {
    /// Where it sits in the log.
    position: LogPosition,
    /// The event.
    event: Signal,
}

/// What enters or leaves feeds.
#[derive(Debug, Clone)]
enum Signal {
    /// A post published or deleted, and a quoting post's quoted post as read when the batch
    /// came (`None`: not found live; the reader is shown it `unavailable`).
    Post(PostEvent, Option<PostView>),
    /// `reposter` reposted a post (issue 44): the post as read when the batch came (`None`:
    /// not found live, so it enters no feed), and the post it quotes, read likewise.
    Reposted {
        reposter: UserId,
        post: Option<PostView>,
        quoted: Option<PostView>,
    },
}

/// `post` with `quoted` (the post it quotes, read live) embedded when `reader` may see it now
/// ([`Replica::shows_quoted`]); else its quote stays as its row says (`unavailable`).
fn with_quote(
    graph: &Replica,
    reader: UserId,
    mut post: PostView,
    quoted: &Option<PostView>,
) -> PostView {
    let shown = quoted
        .as_ref()
        .filter(|q| graph.shows_quoted(reader, q.author, q.visibility));
    if let Some(quoted) = shown {
        post.quote = QuoteView::shown(quoted.clone());
    }
    post
}

/// Why the hub ended a connection: what any other request with its token would now get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The token was revoked (a logout or the sign-on service's revocation): 401.
    TokenRevoked,
    /// The user was banned: 403.
    UserBanned,
    /// The user was erased: 401, for good.
    AccountErased,
}

impl EndReason {
    /// The error code a request with the token gets now.
    pub fn code(self) -> &'static str {
        match self {
            Self::TokenRevoked => "TOKEN_REVOKED",
            Self::UserBanned => "USER_BANNED",
            Self::AccountErased => "ACCOUNT_ERASED",
        }
    }

    /// Why `stamp`'s stream of `user` may not go on, as the replica stands; revocation first,
    /// as the request check orders them.
    pub fn of(graph: &Replica, user: UserId, stamp: &TokenStamp) -> Option<Self> {
        if graph.accounts().erased(user) {
            Some(Self::AccountErased)
        } else if graph.accounts().refuses(user, stamp) {
            Some(Self::TokenRevoked)
        } else if graph.accounts().banned(user) {
            Some(Self::UserBanned)
        } else {
            None
        }
    }
}

/// One connected reader, as the hub holds it.
struct Connection {
    id: u64,
    /// The token's client, version and batch, re-checked when the user's account changes.
    stamp: TokenStamp,
    items: mpsc::Sender<StreamItem>,
    /// Told once, when the hub ends the connection.
    end: oneshot::Sender<EndReason>,
}

type Connections = HashMap<UserId, Vec<Connection>>;

/// The connected readers of this instance. Cheap to clone.
#[derive(Clone)]
pub struct FeedHub {
    connections: Arc<Mutex<Connections>>,
    next: Arc<AtomicU64>,
    recommended: Arc<Vec<UserId>>,
    /// What opens the posts' content.
    keys: Keyring,
    /// Where reposted posts are read (`rm_posts`).
    pool: PgPool,
}

/// A reader's connection: its items, and its place in the hub (left when dropped).
pub struct Subscription {
    /// The items pushed to this reader.
    pub items: mpsc::Receiver<StreamItem>,
    /// Why the hub ended this connection (its token refused, its user banned); no item comes
    /// after it. Closed without a reason only when the hub itself is gone.
    pub ended: oneshot::Receiver<EndReason>,
    hub: FeedHub,
    user: UserId,
    id: u64,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut connections = self.hub.connections.lock().expect("not poisoned");
        if let Some(list) = connections.get_mut(&self.user) {
            list.retain(|connection| connection.id != self.id);
            if list.is_empty() {
                connections.remove(&self.user);
            }
        }
        metrics::gauge!("relations_feed_stream_connections").decrement(1.0);
    }
}

impl FeedHub {
    /// A hub whose readers who follow nobody get `recommended` authors' posts, as the feed
    /// does; `keys` open the posts' content; reposted posts are read from `pool`.
    pub fn new(recommended: Vec<UserId>, keys: Keyring, pool: PgPool) -> Self {
        Self {
            connections: Arc::default(),
            next: Arc::default(),
            recommended: Arc::new(recommended),
            keys,
            pool,
        }
    }

    /// Connects `user`, whose token carries `stamp`. A revocation or a ban that the replica
    /// applied since the token was checked ends the connection at once: the hub only
    /// re-checks on account events it is sent after the connection joined.
    pub fn subscribe(&self, graph: &LiveGraph, user: UserId, stamp: TokenStamp) -> Subscription {
        let (sender, items) = mpsc::channel(BUFFER);
        let (end, ended) = oneshot::channel();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.connections
            .lock()
            .expect("not poisoned")
            .entry(user)
            .or_default()
            .push(Connection {
                id,
                stamp,
                items: sender,
                end,
            });
        metrics::gauge!("relations_feed_stream_connections").increment(1.0);
        let subscription = Subscription {
            items,
            ended,
            hub: self.clone(),
            user,
            id,
        };
        self.end_refused(graph, Some(user));
        subscription
    }

    /// Ends the connections of `users` (every reader's when `None`) whose token the replica
    /// now refuses or whose user it holds banned. The hub's lock is taken before the
    /// replica's, as [`FeedHub::deliver`] takes them.
    fn end_refused(&self, graph: &LiveGraph, user: Option<UserId>) {
        let mut connections = self.connections.lock().expect("not poisoned");
        let users: Vec<UserId> = match user {
            Some(user) => vec![user],
            None => connections.keys().copied().collect(),
        };
        graph.with(|g| Self::end_refused_in(&mut connections, g, users));
    }

    /// Ends the connections of `users` whose token `graph` refuses or whose user it holds
    /// banned: each is told why, then dropped (no item follows).
    fn end_refused_in(
        connections: &mut Connections,
        graph: &Replica,
        users: impl IntoIterator<Item = UserId>,
    ) {
        for user in users {
            let Some(list) = connections.get_mut(&user) else {
                continue;
            };
            for connection in std::mem::take(list) {
                match EndReason::of(graph, user, &connection.stamp) {
                    None => list.push(connection),
                    Some(reason) => {
                        metrics::counter!("relations_feed_stream_ended_total", "reason" => reason.code())
                            .increment(1);
                        // A reader gone since is fine.
                        let _ = connection.end.send(reason);
                    }
                }
            }
            if list.is_empty() {
                connections.remove(&user);
            }
        }
    }

    /// Whether a post of `visibility` by `author` belongs in `reader`'s feed now (the feed's
    /// rules 8 and 9, mutes, bans, and who may read it: issue 26, by the replica's state as it
    /// applies the post, so a follow that ended before it sends nothing).
    fn in_feed(
        &self,
        graph: &Replica,
        reader: UserId,
        author: UserId,
        visibility: Visibility,
        now: DateTime<Utc>,
    ) -> bool {
        let gone = graph.accounts().banned(author) || graph.accounts().erased(author);
        if reader == author || gone || graph.relations().muting(reader, author, now) {
            return false;
        }
        let facts = graph.relations().facts(reader, author);
        if facts.following {
            // A member of one of the reader's exclusive lists is read there (issue 46).
            if graph.lists().excludes(reader, author) {
                return false;
            }
            let privacy = graph.privacy(author);
            return privacy::may_read(visibility, privacy, privacy::Reader::Follower);
        }
        graph.counts(reader).following == 0
            && self.recommended.contains(&author)
            && !facts.blocking
            && !facts.blocked_by
            && privacy::recommendable(visibility, graph.privacy(author))
    }

    /// Whether `reposter`'s repost of `post` belongs in `reader`'s feed now (issue 44): the
    /// reader follows the reposter and keeps their reposts, the reposter is neither banned,
    /// erased nor muted by the reader, and the post may be shown by a repost
    /// ([`Replica::shows_reposted`]), by the replica's state as it applies the repost.
    fn repost_in_feed(
        graph: &Replica,
        reader: UserId,
        reposter: UserId,
        post: &PostView,
        now: DateTime<Utc>,
    ) -> bool {
        let (accounts, relations) = (graph.accounts(), graph.relations());
        let reposter_shown = reader != reposter
            && !accounts.banned(reposter)
            && !accounts.erased(reposter)
            && !relations.muting(reader, reposter, now)
            && relations.facts(reader, reposter).following
            && relations.prefs(reader, reposter).show_reposts
            && !graph.lists().excludes(reader, reposter);
        reposter_shown && graph.shows_reposted(reader, post.author, post.visibility, now)
    }

    /// What `signal` sends `reader`, if anything: a post their home filters hide is not sent,
    /// one a `warn` filter matches is marked (issue 47), by their filters as of the same state.
    fn item_for(
        &self,
        graph: &Replica,
        reader: UserId,
        position: LogPosition,
        signal: &Signal,
        now: DateTime<Utc>,
    ) -> Option<StreamItem> {
        let item = self.unscreened_item(graph, reader, position, signal, now)?;
        let StreamItem::Post(at, mut post) = item else {
            return Some(item);
        };
        let screen = graph.filters().screen(reader);
        let screening = Screening::new(screen.as_deref(), FilterContext::Home, now);
        post.filtered = screening.shown(&post.content)?;
        Some(StreamItem::Post(at, post))
    }

    /// What `signal` would send `reader` but for their filters.
    fn unscreened_item(
        &self,
        graph: &Replica,
        reader: UserId,
        position: LogPosition,
        signal: &Signal,
        now: DateTime<Utc>,
    ) -> Option<StreamItem> {
        let (event, quoted) = match signal {
            Signal::Post(event, quoted) => (event, quoted),
            Signal::Reposted { post: None, .. } => return None,
            Signal::Reposted {
                reposter,
                post: Some(post),
                quoted,
            } => {
                let shown = Self::repost_in_feed(graph, reader, *reposter, post, now);
                return shown.then(|| {
                    let reposted_by = Some(vec![*reposter]);
                    let post = PostView {
                        reposted_by,
                        ..post.clone()
                    };
                    StreamItem::Post(position, with_quote(graph, reader, post, quoted))
                });
            }
        };
        match event {
            // An erased author's post enters no feed.
            PostEvent::PostPublished { content: None, .. } => None,
            PostEvent::PostPublished {
                post_id,
                author,
                content: Some(content),
                created_at,
                visibility,
                quote_of,
                quote_policy,
                comment_policy,
                ..
            } => self
                .in_feed(graph, reader, *author, *visibility, now)
                .then(|| {
                    let post = PostView {
                        id: *post_id,
                        author: *author,
                        content: content.as_str().to_owned(),
                        created_at: *created_at,
                        visibility: *visibility,
                        like_count: 0,
                        comment_count: 0,
                        liked: None,
                        repost_count: 0,
                        reposted: None,
                        bookmarked: None,
                        reposted_by: Some(Vec::new()),
                        quote_policy: *quote_policy,
                        comment_policy: *comment_policy,
                        quote_count: 0,
                        quote: QuoteView::pending(*quote_of, false),
                        filtered: None,
                    };
                    StreamItem::Post(position, with_quote(graph, reader, post, quoted))
                }),
            PostEvent::PostDeleted { post_id, author } => {
                let related = graph.relations().facts(reader, *author).following
                    || self.recommended.contains(author);
                related.then_some(StreamItem::Deleted(position, *post_id))
            }
            // A policy change or a detach shows on the next page, not as a stream item.
            PostEvent::QuotePolicyChanged { .. }
            | PostEvent::CommentPolicyChanged { .. }
            | PostEvent::QuoteDetached { .. } => None,
        }
    }

    /// The signals of `events` (applied by the replica): their post events, and their reposts
    /// with the posts they bring, read from projector `feed`'s `rm_posts` once it has folded
    /// them ([`Self::with_posts`]).
    async fn signals<'e>(
        &self,
        events: impl Iterator<Item = &'e RecordedEvent>,
    ) -> Result<Vec<PostSignal>, ProjectionError> {
        let mut signals = Vec::new();
        let mut reposted = Vec::new();
        let mut quoted = Vec::new();
        let mut newest = LogPosition::START;
        for event in events {
            let signal = match &event.event {
                LogEvent::Post(post) => {
                    if let PostEvent::PostPublished {
                        quote_of: Some(q), ..
                    } = post
                    {
                        quoted.push(q.uuid());
                    }
                    Signal::Post(post.clone(), None)
                }
                LogEvent::Repost(RepostEvent::Reposted { user, post, .. }) => {
                    reposted.push(post.uuid());
                    Signal::Reposted {
                        reposter: *user,
                        post: None,
                        quoted: None,
                    }
                }
                LogEvent::Repost(RepostEvent::Unreposted { .. })
                | LogEvent::Relation(_)
                | LogEvent::Thread(_)
                | LogEvent::Like(_)
                | LogEvent::Bookmark(_)
                | LogEvent::Lists(_)
                | LogEvent::Filters(_)
                | LogEvent::Account(_) => continue,
            };
            newest = newest.max(event.position);
            signals.push(PostSignal {
                position: event.position,
                event: signal,
            });
        }
        if reposted.is_empty() && quoted.is_empty() {
            return Ok(signals);
        }
        self.with_posts(signals, (reposted, quoted), newest).await
    }

    /// `signals` with the posts their reposts bring and their quotes show (`ids`: the reposted
    /// and the quoted posts, in the signals' order), `newest` the last signal's position.
    async fn with_posts(
        &self,
        mut signals: Vec<PostSignal>,
        ids: (Vec<uuid::Uuid>, Vec<uuid::Uuid>),
        newest: LogPosition,
    ) -> Result<Vec<PostSignal>, ProjectionError> {
        let (reposted, quoted) = ids;
        // The posts they show are read from projector `feed`'s `rm_posts`, and the replica
        // may be ahead of it: a post published just before its repost would be missing, and
        // the repost would reach nobody. Once the projector has folded the batch, every post
        // it reposts or quotes (published earlier in the log) is there. Past the wait, what
        // is missing is left out, as a deleted post is (the reader's next page shows it).
        wait::wait_for(&self.pool, &[super::NAME], newest, PROJECTOR_WAIT).await?;
        let read = [reposted.as_slice(), quoted.as_slice()].concat();
        let posts = super::query::live_posts(&self.pool, &read).await?;
        let (mut reposted, mut quoted) = (reposted.iter(), quoted.iter());
        let found = |ids: &mut std::slice::Iter<'_, uuid::Uuid>| {
            ids.next().and_then(|id| posts.get(id)).cloned()
        };
        let mut quoted_by_reposts = Vec::new();
        for signal in &mut signals {
            match &mut signal.event {
                Signal::Reposted { post, .. } => {
                    *post = found(&mut reposted);
                    quoted_by_reposts.extend(post.as_ref().and_then(PostView::quoting));
                }
                Signal::Post(
                    PostEvent::PostPublished {
                        quote_of: Some(_), ..
                    },
                    quoted_post,
                ) => *quoted_post = found(&mut quoted).map(one_level),
                Signal::Post(..) => {}
            }
        }
        // A reposted post that quotes: the post it quotes, read once for the batch.
        if !quoted_by_reposts.is_empty() {
            let ids: Vec<uuid::Uuid> = quoted_by_reposts.iter().map(|p| p.uuid()).collect();
            let quoted = super::query::live_posts(&self.pool, &ids).await?;
            for signal in &mut signals {
                if let Signal::Reposted {
                    post: Some(post),
                    quoted: slot,
                    ..
                } = &mut signal.event
                {
                    let of = post.quoting().and_then(|id| quoted.get(&id.uuid()));
                    *slot = of.cloned().map(one_level);
                }
            }
        }
        Ok(signals)
    }

    /// After batches this hub never saw (`missed` of them, if it fell behind; or a reload of
    /// the replica): they may have revoked or banned, so every reader is re-checked, and told
    /// to resync.
    fn resync(&self, graph: &LiveGraph, missed: u64) {
        tracing::warn!(
            missed,
            "feed stream missed batches of the replica; readers resync"
        );
        self.end_refused(graph, None);
        self.to_everyone(StreamItem::Resync);
    }

    /// Pushes every post event the replica applies to the connected readers whose feed it
    /// concerns, until `shutdown`.
    pub async fn run(self, graph: LiveGraph, shutdown: CancellationToken) {
        let mut signals = graph.subscribe();
        loop {
            let batch = tokio::select! {
                _ = shutdown.cancelled() => return,
                batch = signals.recv() => batch,
            };
            match batch {
                // An empty batch: the replica was loaded again, and the batches it applied
                // meanwhile were never sent. As if this hub had fallen behind.
                Ok(batch) if batch.is_empty() => self.resync(&graph, 0),
                Ok(batch) => {
                    self.forget_erased(&batch);
                    let batch = self.reveal(&batch).await;
                    let signals = match self.connected() {
                        true => self.signals(batch.iter()).await.unwrap_or_else(|error| {
                            tracing::warn!(%error, "feed stream cannot read a batch's reposts");
                            Vec::new()
                        }),
                        false => Vec::new(),
                    };
                    self.deliver(&graph, &batch, &signals)
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => self.resync(&graph, missed),
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// The batch with its posts' content opened, when anyone is connected to be sent it. A
    /// batch that cannot be opened goes as it is (its posts, unreadable, reach nobody), so
    /// the batch's account events still end the streams they refuse.
    async fn reveal<'b>(&self, batch: &'b [RecordedEvent]) -> Cow<'b, [RecordedEvent]> {
        if !self.connected() {
            return Cow::Borrowed(batch);
        }
        log::revealed(&self.keys, batch)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "feed stream cannot open a batch's posts");
                Cow::Borrowed(batch)
            })
    }

    /// Whether anyone is connected.
    fn connected(&self) -> bool {
        !self.connections.lock().expect("not poisoned").is_empty()
    }

    /// The users whose account an applied batch changed.
    fn accounts(batch: &[RecordedEvent]) -> Vec<UserId> {
        let mut users: Vec<UserId> = batch
            .iter()
            .filter_map(|event| match &event.event {
                LogEvent::Account(account) => Some(account.user()),
                LogEvent::Relation(_)
                | LogEvent::Post(_)
                | LogEvent::Thread(_)
                | LogEvent::Like(_)
                | LogEvent::Repost(_)
                | LogEvent::Bookmark(_)
                | LogEvent::Lists(_)
                | LogEvent::Filters(_) => None,
            })
            .collect();
        users.sort_unstable();
        users.dedup();
        users
    }

    /// Stops opening the content of the users a batch erases, at once: every serving instance
    /// sees every erasure here, within a second of its commit (projector processes forget in
    /// the feed's and engagement's folds).
    fn forget_erased(&self, batch: &[RecordedEvent]) {
        for event in batch {
            if let Some(user) = erased_user(event) {
                if let Ok(user) = UserId::try_from(user) {
                    self.keys.forget(user);
                }
            }
        }
    }

    /// Ends the connections a batch's account events refuse, then delivers its posts.
    fn deliver(&self, graph: &LiveGraph, batch: &[RecordedEvent], signals: &[PostSignal]) {
        let mut connections = self.connections.lock().expect("not poisoned");
        if connections.is_empty() {
            return;
        }
        let accounts = Self::accounts(batch);
        // An erased user's posts leave every feed at once: the replica no longer knows who
        // followed them, so every reader reloads (erasures are rare).
        let erasure = batch.iter().any(|e| erased_user(e).is_some());
        let batch = signals;
        if batch.is_empty() && accounts.is_empty() {
            return;
        }
        let now = Utc::now();
        graph.with(|g| {
            Self::end_refused_in(&mut connections, g, accounts);
            if erasure {
                for connection in connections.values().flatten() {
                    let _ = connection.items.try_send(StreamItem::Reset);
                }
            }
            for signal in batch {
                for (reader, list) in connections.iter_mut() {
                    let Some(item) = self.item_for(g, *reader, signal.position, &signal.event, now)
                    else {
                        continue;
                    };
                    for connection in list.iter() {
                        if connection.items.try_send(item.clone()).is_err() {
                            // Full: the reader catches up from the log once it drains.
                            let _ = connection.items.try_send(StreamItem::Resync);
                        }
                    }
                    metrics::counter!("relations_feed_stream_items_total").increment(1);
                }
            }
        });
    }

    fn to_everyone(&self, item: StreamItem) {
        let connections = self.connections.lock().expect("not poisoned");
        for list in connections.values() {
            for connection in list {
                let _ = connection.items.try_send(item.clone());
            }
        }
    }

    /// What `reader` missed after `after`, read back from the log up to the replica's
    /// position: the same items the live stream would have sent (judged by the replica as it
    /// is now), or a [`StreamItem::Reset`] when more than [`MAX_REPLAY`] events passed.
    pub async fn replay(
        &self,
        pool: &PgPool,
        graph: &LiveGraph,
        reader: UserId,
        after: LogPosition,
    ) -> Result<VecDeque<StreamItem>, ProjectionError> {
        let Some(until) = graph.position() else {
            return Ok(VecDeque::new());
        };
        let mut events: Vec<RecordedEvent> = {
            let mut conn = pool.acquire().await?;
            log::read_after(&mut conn, after, MAX_REPLAY + 1).await?
        };
        log::reveal(&self.keys, &mut events).await?;
        if events.len() as i64 > MAX_REPLAY && events.last().is_some_and(|e| e.position <= until) {
            return Ok(VecDeque::from([StreamItem::Reset]));
        }
        let signals = self
            .signals(events.iter().filter(|e| e.position <= until))
            .await?;
        let now = Utc::now();
        Ok(graph
            .with(|g| {
                signals
                    .iter()
                    .filter_map(|s| self.item_for(g, reader, s.position, &s.event, now))
                    .collect()
            })
            .unwrap_or_default())
    }
}

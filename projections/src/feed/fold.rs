//! The feed fold, written once (issue 43): what each event does to posts, follows, authors'
//! modes and inboxes. Projector `feed`'s batches ([`super::sql::SqlTables`]), its rebuild in
//! memory and `verify` ([`super::memory::FeedMemory`]) fold with it, each into its own tables;
//! the replica's held timelines fold the posts' part ([`fold_posts`] over [`PostTables`]).
//!
//! The rules (see the `feed` module docs for why):
//! - a post is numbered with the next seq; a deletion or an erasure drops its content;
//! - a repost is an item of the reposter's, numbered with the next seq like a post (issue 44):
//!   it travels as the reposter's posts do (pushed or pulled by the reposter's mode,
//!   backfilled on a follow, purged on an unfollow); an unrepost, the post's deletion or its
//!   author's erasure takes it out of every inbox, and the reposter's erasure as their posts;
//! - an author below the threshold is pushed: each post goes to every follower's inbox; at or
//!   over it, pulled. A change of count settles the mode at once ([`settle_mode`]), recorded at
//!   the event that caused it; a switch to push backfills every follower;
//! - a follow backfills the followee's recent posts (unless pulled), an unfollow purges them, a
//!   deletion takes the post out of every inbox;
//! - an erasure ends the user's follows both ways, takes their posts out of every inbox,
//!   deletes them, forgets the user's rows and settles each followee's mode ([`erase`]);
//! - bans and mutes are kept for the readers.
//!
//! Runs of follows and of publishes ([`fold_events`]) are folded at once where the tables can
//! do better than one by one; the tables' methods that take many are defined as the same
//! methods applied one after the other, so a run's result is the one event-by-event folding
//! gives. [`FeedTables`]'s methods document what each table operation keeps (the inbox cap and
//! watermark), and the rebuild tests compare the SQL tables with the ones in memory.

use std::collections::{HashMap, HashSet};
use std::future::Future;

use chrono::{DateTime, Utc};
use futures::FutureExt as _;
use relations_domain::{
    AccountEvent, CommentPolicy, LogEvent, PostEvent, QuotePolicy, RelationEvent, RepostEvent,
    Visibility,
};
use relations_store::log::RecordedEvent;
use relations_store::LogPosition;

use super::Settings;
use crate::error::ProjectionError;
use crate::relations::fold::{RelationChange, UserPair};

/// What the tables answer.
pub type Folded<T> = Result<T, ProjectionError>;

/// A post as published.
#[derive(Debug, Clone, Copy)]
pub struct NewPost<'a> {
    /// Its id.
    pub id: uuid::Uuid,
    /// Who wrote it.
    pub author: i64,
    /// Its text (`None`: its author's key is gone).
    pub content: Option<&'a str>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// Who may read it.
    pub visibility: Visibility,
    /// The post it quotes (issue 44).
    pub quote_of: Option<uuid::Uuid>,
    /// Who may quote it.
    pub quote_policy: QuotePolicy,
    /// Who may comment on it (issue 47).
    pub comment_policy: CommentPolicy,
}

/// What a post's author (or the quoted post's) changed of it after publishing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// Who may quote it (issue 44).
    Quotes(QuotePolicy),
    /// Who may comment on it (issue 47).
    Comments(CommentPolicy),
    /// Its quote was detached by the quoted post's author (issue 44).
    Detached,
}

/// A change to a post's settings: what a post shows of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingChange {
    /// The post.
    pub post: uuid::Uuid,
    /// Its author.
    pub author: i64,
    /// What changed.
    pub setting: Setting,
}

/// A repost as made: an item of the reposter's in the feed (issue 44).
#[derive(Debug, Clone, Copy)]
pub struct NewRepost {
    /// The reposted post.
    pub post: uuid::Uuid,
    /// Its author.
    pub author: i64,
    /// Who reposted it.
    pub reposter: i64,
    /// When.
    pub created_at: DateTime<Utc>,
}

impl NewRepost {
    /// The id of the item numbered `seq`: never a post's (theirs are version 4 or 7), and
    /// PostgreSQL's `lpad(to_hex(seq), 32, '0')::uuid`.
    pub fn item_id(seq: i64) -> uuid::Uuid {
        uuid::Uuid::from_u64_pair(0, seq as u64)
    }
}

/// Whose reposts a deletion takes out.
#[derive(Debug, Clone, Copy)]
pub enum RepostsOf {
    /// Of one post.
    Post(uuid::Uuid),
    /// Of every post of an author.
    Author(i64),
}

/// What one event changes of the feed.
#[derive(Debug, Clone, Copy)]
pub enum FeedChange<'a> {
    /// `(follower, followee)` began.
    Followed(UserPair),
    /// `(follower, followee)` ended (an unfollow, a block's, a removal's).
    Unfollowed(UserPair),
    /// A post was published.
    Published(NewPost<'a>),
    /// `author` deleted `post`.
    Deleted {
        /// The post.
        post: uuid::Uuid,
        /// Its author.
        author: i64,
    },
    /// A post was reposted.
    Reposted(NewRepost),
    /// `reposter` took their repost of `post` back.
    Unreposted {
        /// The post.
        post: uuid::Uuid,
        /// Who.
        reposter: i64,
    },
    /// The user was banned (`true`) or unbanned.
    Banned(i64, bool),
    /// The user was erased.
    Erased(i64),
    /// A mute began (`RelationChange::Mute`) or was lifted (`RelationChange::Unmute`).
    Mute(RelationChange),
    /// Whether a follow keeps the followee's reposts (issue 44's `show_reposts`; the feed
    /// reads no other preference).
    ShowReposts(UserPair, bool),
    /// A post's quote or comment policy changed, or its quote was detached.
    Setting(SettingChange),
}

impl<'a> FeedChange<'a> {
    /// What `event` changes of the feed, if anything.
    pub fn of(event: &'a RecordedEvent) -> Option<Self> {
        Self::of_event(&event.event, event.occurred_at)
    }

    /// What a post's event changes of the feed.
    fn of_post(event: &'a PostEvent) -> Self {
        match event {
            PostEvent::PostPublished {
                post_id,
                author,
                content,
                created_at,
                visibility,
                quote_of,
                quote_policy,
                comment_policy,
                ..
            } => Self::Published(NewPost {
                id: post_id.uuid(),
                author: author.get(),
                content: content.as_ref().map(|c| c.as_str()),
                created_at: *created_at,
                visibility: *visibility,
                quote_of: quote_of.map(|q| q.uuid()),
                quote_policy: *quote_policy,
                comment_policy: *comment_policy,
            }),
            PostEvent::QuotePolicyChanged {
                post_id,
                author,
                quote_policy,
            } => Self::setting(*post_id, *author, Setting::Quotes(*quote_policy)),
            PostEvent::CommentPolicyChanged {
                post_id,
                author,
                comment_policy,
            } => Self::setting(*post_id, *author, Setting::Comments(*comment_policy)),
            PostEvent::QuoteDetached {
                post_id, author, ..
            } => Self::setting(*post_id, *author, Setting::Detached),
            PostEvent::PostDeleted { post_id, author } => Self::Deleted {
                post: post_id.uuid(),
                author: author.get(),
            },
        }
    }

    /// `author`'s `post` changed `setting`.
    fn setting(
        post: relations_domain::PostId,
        author: relations_domain::UserId,
        setting: Setting,
    ) -> Self {
        Self::Setting(SettingChange {
            post: post.uuid(),
            author: author.get(),
            setting,
        })
    }

    /// What `event`, decided at `occurred_at`, changes of the feed, if anything.
    pub fn of_event(event: &'a LogEvent, occurred_at: DateTime<Utc>) -> Option<Self> {
        Some(match event {
            LogEvent::Relation(relation) => match *relation {
                RelationEvent::Followed { follower, followee } => {
                    Self::Followed((follower.get(), followee.get()))
                }
                RelationEvent::Unfollowed {
                    follower, followee, ..
                } => Self::Unfollowed((follower.get(), followee.get())),
                RelationEvent::Muted { .. }
                | RelationEvent::Unmuted { .. }
                | RelationEvent::FollowPreferencesChanged { .. } => {
                    match RelationChange::of(relation, occurred_at) {
                        RelationChange::Prefs(pair, prefs) => {
                            Self::ShowReposts(pair, prefs.show_reposts)
                        }
                        change => Self::Mute(change),
                    }
                }
                // Requests change no feed (an approval's `Followed` does), nor do blocks (a
                // block's `Unfollowed` does), nor dismissed suggestions.
                RelationEvent::Blocked { .. }
                | RelationEvent::Unblocked { .. }
                | RelationEvent::FollowRequested { .. }
                | RelationEvent::FollowRequestApproved { .. }
                | RelationEvent::FollowRequestRejected { .. }
                | RelationEvent::FollowRequestWithdrawn { .. }
                | RelationEvent::SuggestionDismissed { .. } => return None,
            },
            LogEvent::Post(post) => Self::of_post(post),
            LogEvent::Account(account) => match *account {
                AccountEvent::UserBanned { user } => Self::Banned(user.get(), true),
                AccountEvent::UserUnbanned { user } => Self::Banned(user.get(), false),
                AccountEvent::UserErased { user } => Self::Erased(user.get()),
                // Locks and hidden graphs are read at read time from the replica
                // (`crate::privacy`), so every feed reader sees them at once.
                AccountEvent::TokensRevoked { .. }
                | AccountEvent::AccountLocked { .. }
                | AccountEvent::AccountUnlocked { .. }
                | AccountEvent::GraphHidden { .. }
                | AccountEvent::GraphShown { .. }
                | AccountEvent::NotificationPolicyChanged { .. } => return None,
            },
            LogEvent::Repost(RepostEvent::Reposted { user, post, author }) => {
                Self::Reposted(NewRepost {
                    post: post.uuid(),
                    author: author.get(),
                    reposter: user.get(),
                    created_at: occurred_at,
                })
            }
            LogEvent::Repost(RepostEvent::Unreposted { user, post, .. }) => Self::Unreposted {
                post: post.uuid(),
                reposter: user.get(),
            },
            // Likes, comments and bookmarks are shown from projector `engagement`'s tables.
            LogEvent::Thread(_)
            | LogEvent::Like(_)
            | LogEvent::Bookmark(_)
            | LogEvent::Lists(_)
            | LogEvent::Filters(_) => return None,
        })
    }
}

/// Where posts are kept: `rm_posts`, the rebuild's rows, the replica's held timelines.
#[allow(async_fn_in_trait)] // each implementation is used by its concrete type, Send or not
pub trait PostTables {
    /// Numbers `post` with the next seq (one above every seq given), live; its seq.
    async fn publish(&mut self, post: &NewPost<'_>) -> Folded<i64>;
    /// Deletes `post` of `author` if it is live, its content dropped; its seq if it was.
    async fn delete(&mut self, post: uuid::Uuid, author: i64) -> Folded<Option<i64>>;
    /// Deletes every live post of `author`, their content dropped, and their live reposts.
    async fn delete_all(&mut self, author: i64) -> Folded<()>;
    /// Numbers `repost` with the next seq, an item of the reposter's; its seq when it is live
    /// (`None`: the post is not, and the item is kept deleted: seqs count every repost).
    async fn repost(&mut self, repost: &NewRepost) -> Folded<Option<i64>>;
    /// Deletes `reposter`'s live repost of `post`; its seq if there was one.
    async fn unrepost(&mut self, post: uuid::Uuid, reposter: i64) -> Folded<Option<i64>>;
    /// Deletes the live reposts of `of`; each one's `(seq, reposter)`.
    async fn delete_reposts(&mut self, of: RepostsOf) -> Folded<Vec<(i64, i64)>>;
    /// Keeps a change to a post's settings (a post not kept changes nothing).
    async fn setting(&mut self, change: SettingChange) -> Folded<()>;

    /// Numbers `posts` in order, as [`PostTables::publish`] one after the other; their seqs.
    async fn publish_all(&mut self, posts: &[NewPost<'_>]) -> Folded<Vec<i64>> {
        let mut seqs = Vec::with_capacity(posts.len());
        for post in posts {
            seqs.push(self.publish(post).await?);
        }
        Ok(seqs)
    }
}

/// An author's row: `(followers, pulled)`.
pub type Author = (i64, bool);

/// The feed's tables: its own copy of the follows, the authors' counts and modes, the inboxes
/// and their watermarks, bans and mutes.
///
/// An inbox holds `(seq, author)` entries, at most `inbox_cap`, and a watermark: every entry
/// the inbox ever dropped is at or below it. Dropping the oldest entries and raising the
/// watermark to the newest dropped is the trim every write ends with.
#[allow(async_fn_in_trait)] // as PostTables
pub trait FeedTables: PostTables {
    /// The threshold and the cap.
    fn settings(&self) -> Settings;
    /// Whether runs are folded at once ([`fold_changes`]): what saves round trips to
    /// PostgreSQL only costs tables in memory their bookkeeping.
    fn in_runs(&self) -> bool {
        true
    }
    /// Adds each follow unless it is there; the ones added.
    async fn follow(&mut self, pairs: &[UserPair]) -> Folded<HashSet<UserPair>>;
    /// Removes the follow if it is there; whether it was.
    async fn unfollow(&mut self, pair: UserPair) -> Folded<bool>;
    /// Who follows `author`.
    async fn followers(&mut self, author: i64) -> Folded<Vec<i64>>;
    /// The rows of `authors` that have one.
    async fn authors(&mut self, authors: &[i64]) -> Folded<HashMap<i64, Author>>;
    /// Adds `(author, followers, posts)` to each author's counts, making the row.
    async fn count(&mut self, counts: &[(i64, i64, i64)]) -> Folded<()>;
    /// Puts `author` in pull mode (or push), recorded at `at` (the first record of `at`
    /// stands).
    async fn set_mode(&mut self, author: i64, pulled: bool, at: LogPosition) -> Folded<()>;
    /// Each `(seq, author)` goes to the inbox of every follower of its author, unless there,
    /// each inbox then trimmed.
    async fn push(&mut self, entries: &[(i64, i64)]) -> Folded<()>;
    /// For each `(reader, author)` in order: the author's newest `inbox_cap` live posts above
    /// the reader's watermark go to its inbox; when there were more, the watermark rises to
    /// the newest left out; the inbox is then trimmed.
    async fn backfill(&mut self, pairs: &[UserPair]) -> Folded<()>;
    /// `author`'s entries leave `reader`'s inbox.
    async fn purge(&mut self, reader: i64, author: i64) -> Folded<()>;
    /// Each item `(seq, author)` leaves every inbox.
    async fn unpush(&mut self, items: &[(i64, i64)]) -> Folded<()>;
    /// Bans (`true`) or unbans `author`.
    async fn ban(&mut self, author: i64, banned: bool) -> Folded<()>;
    /// Keeps a mute or lifts it (other changes keep nothing).
    async fn mute(&mut self, change: RelationChange) -> Folded<()>;
    /// Whether the follow `pair`, if it is there, keeps the followee's reposts (a follow
    /// starts keeping them; an unfollow ends what was set).
    async fn show_reposts(&mut self, pair: UserPair, on: bool) -> Folded<()>;
    /// Ends every follow by `user`, each followee's count down by one; the followees.
    async fn end_follows_by(&mut self, user: i64) -> Folded<Vec<i64>>;
    /// Every live post of `author` leaves every inbox.
    async fn unpush_all(&mut self, author: i64) -> Folded<()>;
    /// Forgets `user`: the follows of them, their inbox, their rows, bans and mutes.
    async fn forget(&mut self, user: i64) -> Folded<()>;
}

/// Folds one change into post tables: what the replica's held timelines keep.
pub async fn fold_posts<T: PostTables>(tables: &mut T, change: &FeedChange<'_>) -> Folded<()> {
    match change {
        FeedChange::Published(post) => {
            tables.publish(post).await?;
        }
        FeedChange::Deleted { post, author } => {
            tables.delete(*post, *author).await?;
        }
        FeedChange::Erased(user) => {
            tables.delete_reposts(RepostsOf::Author(*user)).await?;
            tables.delete_all(*user).await?;
        }
        FeedChange::Reposted(repost) => {
            tables.repost(repost).await?;
        }
        FeedChange::Unreposted { post, reposter } => {
            tables.unrepost(*post, *reposter).await?;
        }
        FeedChange::Setting(change) => tables.setting(*change).await?,
        FeedChange::Followed(_)
        | FeedChange::Unfollowed(_)
        | FeedChange::Banned(..)
        | FeedChange::Mute(_)
        | FeedChange::ShowReposts(..) => {}
    }
    Ok(())
}

/// Folds one change, made by the event at `at`.
pub async fn fold<T: FeedTables>(
    tables: &mut T,
    at: LogPosition,
    change: FeedChange<'_>,
) -> Folded<()> {
    match change {
        FeedChange::Followed(pair) => {
            if tables.follow(&[pair]).await?.is_empty() {
                return Ok(());
            }
            tables.count(&[(pair.1, 1, 0)]).await?;
            if !settle_mode(tables, at, pair.1).await? {
                tables.backfill(&[pair]).await?;
            }
        }
        FeedChange::Unfollowed((follower, followee)) => {
            if !tables.unfollow((follower, followee)).await? {
                return Ok(());
            }
            tables.purge(follower, followee).await?;
            tables.count(&[(followee, -1, 0)]).await?;
            settle_mode(tables, at, followee).await?;
        }
        FeedChange::Published(post) => {
            let seq = tables.publish(&post).await?;
            tables.count(&[(post.author, 0, 1)]).await?;
            if !settle_mode(tables, at, post.author).await? {
                tables.push(&[(seq, post.author)]).await?;
            }
        }
        FeedChange::Deleted { post, author } => {
            if let Some(seq) = tables.delete(post, author).await? {
                tables.count(&[(author, 0, -1)]).await?;
                let mut gone = tables.delete_reposts(RepostsOf::Post(post)).await?;
                gone.push((seq, author));
                tables.unpush(&gone).await?;
            }
        }
        FeedChange::Reposted(repost) => {
            if let Some(seq) = tables.repost(&repost).await? {
                if !settle_mode(tables, at, repost.reposter).await? {
                    tables.push(&[(seq, repost.reposter)]).await?;
                }
            }
        }
        FeedChange::Unreposted { post, reposter } => {
            if let Some(seq) = tables.unrepost(post, reposter).await? {
                tables.unpush(&[(seq, reposter)]).await?;
            }
        }
        FeedChange::Banned(user, banned) => tables.ban(user, banned).await?,
        FeedChange::Erased(user) => erase(tables, at, user).await?,
        FeedChange::Mute(change) => tables.mute(change).await?,
        FeedChange::ShowReposts(pair, on) => tables.show_reposts(pair, on).await?,
        FeedChange::Setting(change) => tables.setting(change).await?,
    }
    Ok(())
}

/// Folds `user`'s erasure: their follows end both ways (each followee loses a follower and is
/// put in the mode its count now calls for: at most the follow limit of them), their live posts
/// and reposts leave every inbox and are deleted, so do others' reposts of their posts, and
/// their own rows go.
async fn erase<T: FeedTables>(tables: &mut T, at: LogPosition, user: i64) -> Folded<()> {
    let followees = tables.end_follows_by(user).await?;
    // Others' reposts of their posts, found by the posts still live; then their own items'
    // entries, found by the items still live.
    let reposts = tables.delete_reposts(RepostsOf::Author(user)).await?;
    tables.unpush(&reposts).await?;
    tables.unpush_all(user).await?;
    tables.delete_all(user).await?;
    tables.forget(user).await?;
    for followee in followees {
        settle_mode(tables, at, followee).await?;
    }
    Ok(())
}

/// Puts `author` in the mode their follower count calls for, recorded at `at`; a switch to
/// push backfills every follower's inbox. Whether the author is pulled.
async fn settle_mode<T: FeedTables>(tables: &mut T, at: LogPosition, author: i64) -> Folded<bool> {
    let Some(&(followers, pulled)) = tables.authors(&[author]).await?.get(&author) else {
        return Ok(false);
    };
    let after = followers >= tables.settings().big_v_threshold;
    if pulled == after {
        return Ok(after);
    }
    tables.set_mode(author, after, at).await?;
    tracing::info!(author, pulled = after, "feed mode switched");
    if !after {
        let pairs: Vec<UserPair> = tables
            .followers(author)
            .await?
            .into_iter()
            .map(|reader| (reader, author))
            .collect();
        tables.backfill(&pairs).await?;
    }
    Ok(after)
}

/// The kinds of changes folded in runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    Follows,
    Publishes,
}

impl Run {
    fn of(change: &Option<FeedChange<'_>>) -> Option<Self> {
        match change {
            Some(FeedChange::Followed(_)) => Some(Self::Follows),
            Some(FeedChange::Published(_)) => Some(Self::Publishes),
            _ => None,
        }
    }
}

/// Folds `events`, in log order: runs of follows and of publishes at once where they can be
/// ([`follow_run`], [`publish_run`]), everything else one by one.
pub async fn fold_events<T, E>(tables: &mut T, events: &[E]) -> Folded<()>
where
    T: FeedTables,
    E: std::borrow::Borrow<RecordedEvent>,
{
    let changes: Vec<Change<'_>> = events
        .iter()
        .map(|e| (e.borrow().position, FeedChange::of(e.borrow())))
        .collect();
    fold_changes(tables, &changes).await
}

/// A change and the position of the event that made it (`None`: the event changes nothing).
pub type Change<'a> = (LogPosition, Option<FeedChange<'a>>);

/// [`fold_events`], of the events' changes.
pub async fn fold_changes<T: FeedTables>(tables: &mut T, changes: &[Change<'_>]) -> Folded<()> {
    let mut rest = changes;
    while let Some(((_, first), _)) = rest.split_first() {
        let kind = Run::of(first).filter(|_| tables.in_runs());
        let len = match kind {
            Some(_) => rest.iter().take_while(|(_, c)| Run::of(c) == kind).count(),
            None => 1,
        };
        let (run, after) = rest.split_at(len);
        rest = after;
        let folded = match kind {
            Some(Run::Follows) => follow_run(tables, run).await?,
            Some(Run::Publishes) => publish_run(tables, run).await?,
            None => false,
        };
        if !folded {
            for (at, change) in run.iter().filter_map(|(at, c)| Some((at, (*c)?))) {
                fold(tables, *at, change).await?;
            }
        }
    }
    Ok(())
}

/// Whether every author of `rows` is in the mode its count calls for (an author without a row
/// has no followers: push, as it will be made). When one is not (the threshold changed since
/// the last fold), a run is folded one by one, which settles it first.
fn settled(rows: &HashMap<i64, Author>, threshold: i64) -> bool {
    rows.values()
        .all(|&(followers, pulled)| pulled == (followers >= threshold))
}

/// A run of follows at once; `false`, having changed nothing, when it must be folded one by
/// one. An author's count only grows in such a run, so the only switch is to pull, at the
/// follow that reaches the threshold (recorded at that event); the follows before it
/// backfill, the ones from it on do not. The backfills of one reader, done one after the
/// other, are what [`FeedTables::backfill`] of them all does.
async fn follow_run<T: FeedTables>(tables: &mut T, run: &[Change<'_>]) -> Folded<bool> {
    let follows: Vec<(UserPair, LogPosition)> = run
        .iter()
        .filter_map(|(at, c)| match c {
            Some(FeedChange::Followed(pair)) => Some((*pair, *at)),
            _ => None,
        })
        .collect();
    let mut followees: Vec<i64> = follows.iter().map(|(p, _)| p.1).collect();
    followees.sort_unstable();
    followees.dedup();
    let before = tables.authors(&followees).await?;
    let threshold = tables.settings().big_v_threshold;
    if !settled(&before, threshold) {
        return Ok(false);
    }
    let pairs: Vec<UserPair> = follows.iter().map(|(p, _)| *p).collect();
    let mut added = tables.follow(&pairs).await?;
    let mut counts: HashMap<i64, i64> = before.iter().map(|(&a, &(n, _))| (a, n)).collect();
    let mut per_author: HashMap<i64, i64> = HashMap::new();
    let mut backfills = Vec::new();
    let mut switches = Vec::new();
    // Each follow added counts once, at its first event (a second, which the log never holds
    // without an unfollow between, would change nothing).
    for &(pair, at) in follows.iter().filter(|(p, _)| added.remove(p)) {
        *per_author.entry(pair.1).or_default() += 1;
        let count = counts.entry(pair.1).or_default();
        *count += 1;
        if *count == threshold {
            switches.push((pair.1, at));
        } else if *count < threshold {
            backfills.push(pair);
        }
    }
    let mut per_author: Vec<(i64, i64, i64)> =
        per_author.into_iter().map(|(a, n)| (a, n, 0)).collect();
    per_author.sort_unstable();
    tables.count(&per_author).await?;
    for (author, at) in switches {
        tables.set_mode(author, true, at).await?;
        tracing::info!(author, pulled = true, "feed mode switched");
    }
    tables.backfill(&backfills).await?;
    Ok(true)
}

/// A run of publishes at once; `false`, having changed nothing, when it must be folded one by
/// one. Posts do not change follower counts, so every author keeps its mode through the run,
/// and each post of a pushed author goes to every follower's inbox: what
/// [`FeedTables::push`] of them all does.
async fn publish_run<T: FeedTables>(tables: &mut T, run: &[Change<'_>]) -> Folded<bool> {
    let posts: Vec<NewPost<'_>> = run
        .iter()
        .filter_map(|(_, c)| match c {
            Some(FeedChange::Published(post)) => Some(*post),
            _ => None,
        })
        .collect();
    let mut authors: Vec<i64> = posts.iter().map(|p| p.author).collect();
    authors.sort_unstable();
    authors.dedup();
    let modes = tables.authors(&authors).await?;
    if !settled(&modes, tables.settings().big_v_threshold) {
        return Ok(false);
    }
    let seqs = tables.publish_all(&posts).await?;
    let mut per_author: HashMap<i64, i64> = HashMap::new();
    for post in &posts {
        *per_author.entry(post.author).or_default() += 1;
    }
    let mut counts: Vec<(i64, i64, i64)> = per_author.into_iter().map(|(a, n)| (a, 0, n)).collect();
    counts.sort_unstable();
    tables.count(&counts).await?;
    let pulled = |author: i64| modes.get(&author).is_some_and(|m| m.1);
    let pushes: Vec<(i64, i64)> = seqs
        .into_iter()
        .zip(&posts)
        .filter(|(_, post)| !pulled(post.author))
        .map(|(seq, post)| (seq, post.author))
        .collect();
    tables.push(&pushes).await?;
    Ok(true)
}

/// Runs a fold over tables in memory, which never wait.
pub fn in_memory<F: Future>(fold: F) -> F::Output {
    fold.now_or_never()
        .expect("tables in memory answer at once")
}

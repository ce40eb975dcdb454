//! A rebuild of the feed in memory (issue 28, item 4): the whole log folded into maps, then
//! every table written with one `COPY` each, in its key's order.
//!
//! The fold is the event-by-event application of [`Feed`](super::Feed) (`mod.rs`, `fan_out.rs`),
//! step for step: the same numbering of posts, the same counts and modes (a switch recorded at
//! the event that caused it, a switch to push backfilling every follower), the same backfills
//! (the newest `inbox_cap` live posts above the watermark, the watermark raised to the newest
//! left out), the same pushes and trims (the oldest entries dropped, the watermark raised to
//! them), the same erasure. The rebuild tests compare every table with what the runner wrote.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use relations_domain::{AccountEvent, LogEvent, PostEvent, RelationEvent, UserId};
use relations_store::log::{self, RecordedEvent};
use relations_store::{Keyring, LogPosition};
use sqlx::PgConnection;

use super::Settings;
use crate::error::ProjectionError;
use crate::relations::fold::RelationChange;
use crate::runtime::projector::BulkFold;
use crate::runtime::rebuild::{copy_in, copy_nullable_timestamp, copy_text, copy_timestamp};

/// One row of `rm_posts`; its seq is its index + 1.
struct PostRow {
    id: uuid::Uuid,
    author: i64,
    /// `None`: deleted, or its author erased.
    content: Option<String>,
    created_at: DateTime<Utc>,
    deleted: bool,
    visibility: &'static str,
}

/// One row of `feed_authors`.
#[derive(Default)]
struct AuthorRow {
    followers: i64,
    posts: i64,
    pulled: bool,
}

/// One reader's inbox (`feed_inbox`, ascending seq) and watermark (`feed_readers`).
#[derive(Default)]
struct Inbox {
    entries: VecDeque<(i64, i64)>,
    watermark: i64,
}

impl Inbox {
    /// Drops the oldest entries beyond `cap`, raising the watermark to the newest dropped.
    fn trim(&mut self, cap: usize) {
        while self.entries.len() > cap {
            if let Some((seq, _)) = self.entries.pop_front() {
                self.watermark = self.watermark.max(seq);
            }
        }
    }

    /// Adds `(seq, author)` where its seq belongs, unless that seq is there.
    fn insert(&mut self, entry: (i64, i64)) {
        if let Err(at) = self.entries.binary_search_by_key(&entry.0, |e| e.0) {
            self.entries.insert(at, entry);
        }
    }

    /// Removes the entry of `seq`, if there.
    fn remove(&mut self, seq: i64) {
        if let Ok(at) = self.entries.binary_search_by_key(&seq, |e| e.0) {
            self.entries.remove(at);
        }
    }
}

/// The second ids of `pairs` whose first is `first`.
fn paired_with(pairs: &BTreeSet<(i64, i64)>, first: i64) -> Vec<i64> {
    pairs
        .range((first, i64::MIN)..=(first, i64::MAX))
        .map(|&(_, second)| second)
        .collect()
}

/// The feed's read model, folded in memory.
pub(super) struct FeedBulk {
    settings: Settings,
    keys: Keyring,
    posts: Vec<PostRow>,
    seq_of: HashMap<uuid::Uuid, i64>,
    /// Each author's live posts, ascending seq.
    timelines: HashMap<i64, Vec<i64>>,
    /// (follower, followee)
    following: BTreeSet<(i64, i64)>,
    /// (followee, follower)
    followers: BTreeSet<(i64, i64)>,
    authors: HashMap<i64, AuthorRow>,
    /// (transaction_id, global_position, author) -> pulled
    mode_changes: BTreeMap<(i64, i64, i64), bool>,
    inboxes: HashMap<i64, Inbox>,
    banned: BTreeSet<i64>,
    /// (muter, muted) -> until
    mutes: BTreeMap<(i64, i64), Option<DateTime<Utc>>>,
}

impl FeedBulk {
    pub(super) fn new(settings: Settings, keys: Keyring) -> Self {
        Self {
            settings,
            keys,
            posts: Vec::new(),
            seq_of: HashMap::new(),
            timelines: HashMap::new(),
            following: BTreeSet::new(),
            followers: BTreeSet::new(),
            authors: HashMap::new(),
            mode_changes: BTreeMap::new(),
            inboxes: HashMap::new(),
            banned: BTreeSet::new(),
            mutes: BTreeMap::new(),
        }
    }

    fn cap(&self) -> usize {
        usize::try_from(self.settings.inbox_cap).unwrap_or(0)
    }

    /// Who follows `author` now.
    fn followers_of(&self, author: i64) -> Vec<i64> {
        paired_with(&self.followers, author)
    }

    /// Whom `user` follows now.
    fn followees_of(&self, user: i64) -> Vec<i64> {
        paired_with(&self.following, user)
    }

    fn followed(&mut self, position: LogPosition, follower: i64, followee: i64) {
        if !self.following.insert((follower, followee)) {
            return;
        }
        self.followers.insert((followee, follower));
        self.authors.entry(followee).or_default().followers += 1;
        if !self.settle_mode(position, followee) {
            self.backfill(follower, followee);
        }
    }

    fn unfollowed(&mut self, position: LogPosition, follower: i64, followee: i64) {
        if !self.following.remove(&(follower, followee)) {
            return;
        }
        self.followers.remove(&(followee, follower));
        if let Some(inbox) = self.inboxes.get_mut(&follower) {
            inbox.entries.retain(|&(_, author)| author != followee);
        }
        self.authors.entry(followee).or_default().followers -= 1;
        self.settle_mode(position, followee);
    }

    fn published(&mut self, position: LogPosition, post: PostRow) {
        let seq = self.posts.len() as i64 + 1;
        let author = post.author;
        self.seq_of.insert(post.id, seq);
        self.posts.push(post);
        self.timelines.entry(author).or_default().push(seq);
        self.authors.entry(author).or_default().posts += 1;
        if self.settle_mode(position, author) {
            return;
        }
        let cap = self.cap();
        for reader in self.followers_of(author) {
            let inbox = self.inboxes.entry(reader).or_default();
            // The newest seq, so at the back; already there if this publish switched its
            // author to push, which backfilled it (the runner's `ON CONFLICT DO NOTHING`).
            if inbox.entries.back().map(|e| e.0) != Some(seq) {
                inbox.entries.push_back((seq, author));
            }
            inbox.trim(cap);
        }
    }

    fn deleted(&mut self, post_id: uuid::Uuid, author: i64) {
        let Some(&seq) = self.seq_of.get(&post_id) else {
            return;
        };
        let post = &mut self.posts[(seq - 1) as usize];
        if post.deleted {
            return;
        }
        post.deleted = true;
        post.content = None;
        let owner = post.author;
        if let Some(timeline) = self.timelines.get_mut(&owner) {
            if let Ok(at) = timeline.binary_search(&seq) {
                timeline.remove(at);
            }
        }
        self.authors.entry(author).or_default().posts -= 1;
        // A post's entries are only in the inboxes of its author's followers (an unfollow
        // takes them out of the reader's).
        for reader in self.followers_of(owner) {
            if let Some(inbox) = self.inboxes.get_mut(&reader) {
                inbox.remove(seq);
            }
        }
    }

    /// `Feed::erase`, in memory.
    fn erase(&mut self, position: LogPosition, erased: UserId) {
        self.keys.forget(erased);
        let user = erased.get();
        let followees = self.followees_of(user);
        let mut settled = Vec::with_capacity(followees.len());
        for &followee in &followees {
            self.following.remove(&(user, followee));
            self.followers.remove(&(followee, user));
            if let Some(row) = self.authors.get_mut(&followee) {
                row.followers -= 1;
                settled.push(followee);
            }
        }
        let followers = self.followers_of(user);
        for &reader in &followers {
            if let Some(inbox) = self.inboxes.get_mut(&reader) {
                inbox.entries.retain(|&(_, author)| author != user);
            }
            self.following.remove(&(reader, user));
            self.followers.remove(&(user, reader));
        }
        for seq in self.timelines.remove(&user).unwrap_or_default() {
            let post = &mut self.posts[(seq - 1) as usize];
            post.deleted = true;
            post.content = None;
        }
        self.inboxes.remove(&user);
        self.authors.remove(&user);
        self.mode_changes
            .retain(|&(_, _, author), _| author != user);
        self.banned.remove(&user);
        self.mutes.retain(|&(a, b), _| a != user && b != user);
        for followee in settled {
            self.settle_mode(position, followee);
        }
    }

    /// `Feed::settle_mode`, in memory: whether `author` is pulled.
    fn settle_mode(&mut self, position: LogPosition, author: i64) -> bool {
        let threshold = self.settings.big_v_threshold;
        let Some(row) = self.authors.get_mut(&author) else {
            return false;
        };
        let after = row.followers >= threshold;
        if row.pulled == after {
            return after;
        }
        row.pulled = after;
        let key = (position.transaction_id, position.global_position, author);
        self.mode_changes.entry(key).or_insert(after);
        if !after {
            for reader in self.followers_of(author) {
                self.backfill(reader, author);
            }
        }
        after
    }

    /// `Feed::backfill`, in memory.
    fn backfill(&mut self, reader: i64, author: i64) {
        let cap = self.cap();
        let inbox = self.inboxes.entry(reader).or_default();
        let timeline = self.timelines.get(&author).map_or(&[][..], Vec::as_slice);
        let above = &timeline[timeline.partition_point(|&seq| seq <= inbox.watermark)..];
        let (left_out, newest) = match above.len().checked_sub(cap + 1) {
            Some(first) => (above[first], &above[first + 1..]),
            None => (0, above),
        };
        for &seq in newest {
            inbox.insert((seq, author));
        }
        inbox.watermark = inbox.watermark.max(left_out);
        inbox.trim(cap);
    }

    fn account(&mut self, event: &RecordedEvent, account: &AccountEvent) {
        let user = account.user();
        match *account {
            AccountEvent::UserBanned { .. } => {
                self.banned.insert(user.get());
            }
            AccountEvent::UserUnbanned { .. } => {
                self.banned.remove(&user.get());
            }
            AccountEvent::UserErased { .. } => self.erase(event.position, user),
            // Locks and hidden graphs are read at read time (see `Feed::apply_account`).
            AccountEvent::TokensRevoked { .. }
            | AccountEvent::AccountLocked { .. }
            | AccountEvent::AccountUnlocked { .. }
            | AccountEvent::GraphHidden { .. }
            | AccountEvent::GraphShown { .. } => {}
        }
    }

    fn relation(&mut self, event: &RecordedEvent, relation: RelationEvent) {
        match relation {
            RelationEvent::Followed { follower, followee } => {
                self.followed(event.position, follower.get(), followee.get())
            }
            RelationEvent::Unfollowed {
                follower, followee, ..
            } => self.unfollowed(event.position, follower.get(), followee.get()),
            RelationEvent::Muted { .. } | RelationEvent::Unmuted { .. } => {
                match RelationChange::of(&relation, event.occurred_at) {
                    RelationChange::Mute(pair, _, until) => {
                        self.mutes.insert(pair, until);
                    }
                    RelationChange::Unmute(pair) => {
                        self.mutes.remove(&pair);
                    }
                    RelationChange::Begin(..) | RelationChange::End(..) => {}
                }
            }
            // Requests change no feed; an approval's `Followed` does.
            RelationEvent::Blocked { .. }
            | RelationEvent::Unblocked { .. }
            | RelationEvent::FollowRequested { .. }
            | RelationEvent::FollowRequestApproved { .. }
            | RelationEvent::FollowRequestRejected { .. }
            | RelationEvent::FollowRequestWithdrawn { .. } => {}
        }
    }
}

#[async_trait]
impl BulkFold for FeedBulk {
    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        match &event.event {
            LogEvent::Relation(relation) => self.relation(event, *relation),
            LogEvent::Post(PostEvent::PostPublished {
                post_id,
                author,
                content,
                created_at,
                visibility,
            }) => self.published(
                event.position,
                PostRow {
                    id: post_id.uuid(),
                    author: author.get(),
                    content: content.as_ref().map(|c| c.as_str().to_owned()),
                    created_at: *created_at,
                    deleted: false,
                    visibility: visibility.as_str(),
                },
            ),
            LogEvent::Post(PostEvent::PostDeleted { post_id, author }) => {
                self.deleted(post_id.uuid(), author.get())
            }
            LogEvent::Account(account) => self.account(event, account),
            // Likes and comments are not the feed's.
            LogEvent::Thread(_) | LogEvent::Like(_) => {}
        }
        Ok(())
    }

    /// Posts' content is sealed in the log: each batch is revealed (as the runner's are)
    /// before it is folded, in place (a revealed copy of each batch, as `log::revealed` makes
    /// for borrowed events, cost the 50k rebuild 5%).
    async fn fold_batch(&mut self, mut events: Vec<RecordedEvent>) -> Result<(), ProjectionError> {
        log::reveal(&self.keys, &mut events).await?;
        for event in &events {
            self.fold(event)?;
        }
        Ok(())
    }

    async fn write(self: Box<Self>, conn: &mut PgConnection) -> Result<(), ProjectionError> {
        self.write_posts_and_follows(conn).await?;
        self.write_authors(conn).await?;
        self.write_inboxes(conn).await?;
        self.write_banned_and_mutes(conn).await
    }
}

impl FeedBulk {
    /// `rm_posts` in seq order, `feed_follows` in key order.
    async fn write_posts_and_follows(
        &self,
        conn: &mut PgConnection,
    ) -> Result<(), ProjectionError> {
        let mut rows = String::with_capacity(self.posts.len() * 96);
        for (at, post) in self.posts.iter().enumerate() {
            let content = post.content.as_deref().map(copy_text);
            writeln!(
                rows,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                post.id,
                at + 1,
                post.author,
                content.as_deref().unwrap_or("\\N"),
                copy_timestamp(post.created_at),
                post.deleted,
                post.visibility
            )
            .expect("a String");
        }
        copy_in(
            conn,
            "rm_posts (post_id, seq, author, content, created_at, deleted, visibility)",
            rows,
        )
        .await?;
        let mut rows = String::with_capacity(self.following.len() * 24);
        for (follower, followee) in &self.following {
            writeln!(rows, "{follower}\t{followee}").expect("a String");
        }
        copy_in(conn, "feed_follows (follower, followee)", rows).await?;
        Ok(())
    }

    /// `feed_authors` and `feed_mode_changes`, in key order.
    async fn write_authors(&self, conn: &mut PgConnection) -> Result<(), ProjectionError> {
        let mut authors: Vec<(&i64, &AuthorRow)> = self.authors.iter().collect();
        authors.sort_unstable_by_key(|(author, _)| **author);
        let mut rows = String::with_capacity(authors.len() * 24);
        for (author, row) in authors {
            let (followers, posts, pulled) = (row.followers, row.posts, row.pulled);
            writeln!(rows, "{author}\t{followers}\t{posts}\t{pulled}").expect("a String");
        }
        copy_in(
            conn,
            "feed_authors (author, followers, posts, pulled)",
            rows,
        )
        .await?;
        let mut rows = String::new();
        for ((tx, gp, author), pulled) in &self.mode_changes {
            writeln!(rows, "{tx}\t{gp}\t{author}\t{pulled}").expect("a String");
        }
        copy_in(
            conn,
            "feed_mode_changes (transaction_id, global_position, author, pulled)",
            rows,
        )
        .await?;
        Ok(())
    }

    /// `feed_inbox` and `feed_readers`, in reader order.
    async fn write_inboxes(&self, conn: &mut PgConnection) -> Result<(), ProjectionError> {
        let mut readers: Vec<(&i64, &Inbox)> = self.inboxes.iter().collect();
        readers.sort_unstable_by_key(|(reader, _)| **reader);
        let entries = readers
            .iter()
            .map(|(_, inbox)| inbox.entries.len())
            .sum::<usize>();
        let mut rows = String::with_capacity(entries * 24);
        for (reader, inbox) in &readers {
            for (seq, author) in &inbox.entries {
                writeln!(rows, "{reader}\t{seq}\t{author}").expect("a String");
            }
        }
        copy_in(conn, "feed_inbox (reader, seq, author)", rows).await?;
        let mut rows = String::with_capacity(readers.len() * 24);
        for (reader, inbox) in &readers {
            let (size, watermark) = (inbox.entries.len(), inbox.watermark);
            writeln!(rows, "{reader}\t{size}\t{watermark}").expect("a String");
        }
        copy_in(conn, "feed_readers (reader, size, watermark)", rows).await?;
        Ok(())
    }

    /// `feed_banned` and `feed_mutes`.
    async fn write_banned_and_mutes(&self, conn: &mut PgConnection) -> Result<(), ProjectionError> {
        let mut rows = String::new();
        for author in &self.banned {
            writeln!(rows, "{author}").expect("a String");
        }
        copy_in(conn, "feed_banned (author)", rows).await?;
        let mut rows = String::new();
        for ((muter, muted), until) in &self.mutes {
            let until = copy_nullable_timestamp(*until);
            writeln!(rows, "{muter}\t{muted}\t{until}").expect("a String");
        }
        copy_in(conn, "feed_mutes (muter, muted, until)", rows).await
    }
}

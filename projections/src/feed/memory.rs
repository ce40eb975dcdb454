//! The feed's tables in memory, as the fold ([`super::fold`]) sees them: what a rebuild folds the
//! whole log into before it writes each table with one `COPY` (`bulk.rs`), and what `verify`
//! folds to compare the tables with (without inboxes: it checks their invariant instead).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use chrono::{DateTime, Utc};
use relations_store::LogPosition;

use super::fold::{
    Author, FeedTables, Folded, NewPost, NewRepost, PostTables, RepostsOf, Setting, SettingChange,
};
use super::Settings;
use crate::relations::fold::{RelationChange, UserPair};

/// One row of `rm_posts`; its seq is its index + 1.
pub(super) struct PostRow {
    pub(super) id: uuid::Uuid,
    pub(super) author: i64,
    /// `None`: deleted, its author erased, or not kept.
    pub(super) content: Option<String>,
    pub(super) created_at: DateTime<Utc>,
    pub(super) deleted: bool,
    pub(super) visibility: &'static str,
    /// A repost's post (issue 44).
    pub(super) repost_of: Option<uuid::Uuid>,
    /// The post it quotes, who may quote it, and whether its quote was detached (issue 44).
    pub(super) quote_of: Option<uuid::Uuid>,
    pub(super) quote_policy: &'static str,
    pub(super) quote_detached: bool,
    /// Who may comment on it (issue 47).
    pub(super) comment_policy: &'static str,
}

/// One row of `feed_authors`.
#[derive(Default)]
pub(super) struct AuthorRow {
    pub(super) followers: i64,
    pub(super) posts: i64,
    pub(super) pulled: bool,
}

/// One reader's inbox (`feed_inbox`, ascending seq) and watermark (`feed_readers`).
#[derive(Default)]
pub(super) struct Inbox {
    pub(super) entries: VecDeque<(i64, i64)>,
    pub(super) watermark: i64,
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
fn paired_with(pairs: &BTreeSet<UserPair>, first: i64) -> Vec<i64> {
    pairs
        .range((first, i64::MIN)..=(first, i64::MAX))
        .map(|&(_, second)| second)
        .collect()
}

/// The feed's tables in memory.
pub(super) struct FeedMemory {
    settings: Settings,
    /// Whether inboxes and posts' text are kept (a rebuild's) or not (verify's).
    whole: bool,
    /// Whether runs are folded at once (the tests' way of checking them against one by one).
    runs: bool,
    pub(super) posts: Vec<PostRow>,
    seq_of: HashMap<uuid::Uuid, i64>,
    /// Each author's live posts and reposts, ascending seq.
    timelines: HashMap<i64, Vec<i64>>,
    /// Each post's live reposts' seqs, ascending.
    reposts: HashMap<uuid::Uuid, Vec<i64>>,
    /// (follower, followee)
    pub(super) following: BTreeSet<UserPair>,
    /// (followee, follower)
    followers: BTreeSet<UserPair>,
    pub(super) authors: HashMap<i64, AuthorRow>,
    /// (transaction_id, global_position, author) -> pulled
    pub(super) mode_changes: BTreeMap<(i64, i64, i64), bool>,
    pub(super) inboxes: HashMap<i64, Inbox>,
    pub(super) banned: BTreeSet<i64>,
    /// (muter, muted) -> until
    pub(super) mutes: BTreeMap<UserPair, Option<DateTime<Utc>>>,
    /// The follows that hide the followee's reposts (issue 44).
    pub(super) hiding_reposts: BTreeSet<UserPair>,
}

impl FeedMemory {
    /// Empty tables; `whole`: with inboxes and posts' text.
    pub(super) fn new(settings: Settings, whole: bool) -> Self {
        Self {
            settings,
            whole,
            runs: false,
            posts: Vec::new(),
            seq_of: HashMap::new(),
            timelines: HashMap::new(),
            reposts: HashMap::new(),
            following: BTreeSet::new(),
            followers: BTreeSet::new(),
            authors: HashMap::new(),
            mode_changes: BTreeMap::new(),
            inboxes: HashMap::new(),
            banned: BTreeSet::new(),
            mutes: BTreeMap::new(),
            hiding_reposts: BTreeSet::new(),
        }
    }

    /// Every table's rows, in order: what a test compares.
    #[cfg(test)]
    pub(super) fn rows(&self) -> String {
        let posts: Vec<_> = self
            .posts
            .iter()
            .map(|p| (p.id, p.author, p.deleted, &p.content, p.repost_of))
            .collect();
        let mut authors: Vec<_> = self
            .authors
            .iter()
            .map(|(a, r)| (*a, r.followers, r.posts, r.pulled))
            .collect();
        authors.sort_unstable();
        let mut inboxes: Vec<_> = self
            .inboxes
            .iter()
            .map(|(r, i)| (*r, &i.entries, i.watermark))
            .collect();
        inboxes.sort_unstable();
        format!(
            "{posts:?}\n{:?}\n{authors:?}\n{:?}\n{inboxes:?}\n{:?}\n{:?}\n{:?}",
            self.following, self.mode_changes, self.banned, self.mutes, self.hiding_reposts
        )
    }

    /// These tables, folding runs at once as PostgreSQL's do.
    #[cfg(test)]
    pub(super) fn folding_runs(mut self) -> Self {
        self.runs = true;
        self
    }

    fn cap(&self) -> usize {
        usize::try_from(self.settings.inbox_cap).unwrap_or(0)
    }

    /// Deletes the live item `seq` (a post or a repost): its row, its author's timeline, its
    /// post's reposts.
    fn delete_item(&mut self, seq: i64) {
        let row = &mut self.posts[(seq - 1) as usize];
        if row.deleted {
            return;
        }
        row.deleted = true;
        row.content = None;
        let (author, repost_of) = (row.author, row.repost_of);
        if let Some(timeline) = self.timelines.get_mut(&author) {
            if let Ok(at) = timeline.binary_search(&seq) {
                timeline.remove(at);
            }
        }
        if let Some(post) = repost_of {
            if let Some(seqs) = self.reposts.get_mut(&post) {
                seqs.retain(|&s| s != seq);
                if seqs.is_empty() {
                    self.reposts.remove(&post);
                }
            }
        }
    }

    /// One backfill of `author`'s posts into `reader`'s inbox.
    fn backfill_one(&mut self, reader: i64, author: i64) {
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
}

impl PostTables for FeedMemory {
    async fn publish(&mut self, post: &NewPost<'_>) -> Folded<i64> {
        let seq = self.posts.len() as i64 + 1;
        self.seq_of.insert(post.id, seq);
        self.posts.push(PostRow {
            id: post.id,
            author: post.author,
            content: post.content.filter(|_| self.whole).map(str::to_owned),
            created_at: post.created_at,
            deleted: false,
            visibility: post.visibility.as_str(),
            repost_of: None,
            quote_of: post.quote_of,
            quote_policy: post.quote_policy.as_str(),
            quote_detached: false,
            comment_policy: post.comment_policy.as_str(),
        });
        self.timelines.entry(post.author).or_default().push(seq);
        Ok(seq)
    }

    async fn delete(&mut self, post: uuid::Uuid, _author: i64) -> Folded<Option<i64>> {
        let Some(&seq) = self.seq_of.get(&post) else {
            return Ok(None);
        };
        if self.posts[(seq - 1) as usize].deleted {
            return Ok(None);
        }
        self.delete_item(seq);
        Ok(Some(seq))
    }

    async fn delete_all(&mut self, author: i64) -> Folded<()> {
        for seq in self.timelines.get(&author).cloned().unwrap_or_default() {
            self.delete_item(seq);
        }
        self.timelines.remove(&author);
        Ok(())
    }

    async fn repost(&mut self, repost: &NewRepost) -> Folded<Option<i64>> {
        let seq = self.posts.len() as i64 + 1;
        let post = self
            .seq_of
            .get(&repost.post)
            .map(|&s| &self.posts[(s - 1) as usize]);
        let post = post.filter(|p| !p.deleted && p.repost_of.is_none());
        let visibility = post.map_or("public", |p| p.visibility);
        let live = post.is_some();
        self.posts.push(PostRow {
            id: NewRepost::item_id(seq),
            author: repost.reposter,
            content: None,
            created_at: repost.created_at,
            deleted: !live,
            visibility,
            repost_of: Some(repost.post),
            quote_of: None,
            quote_policy: relations_domain::QuotePolicy::Anyone.as_str(),
            quote_detached: false,
            comment_policy: relations_domain::CommentPolicy::Everyone.as_str(),
        });
        if !live {
            return Ok(None);
        }
        self.timelines.entry(repost.reposter).or_default().push(seq);
        self.reposts.entry(repost.post).or_default().push(seq);
        Ok(Some(seq))
    }

    async fn unrepost(&mut self, post: uuid::Uuid, reposter: i64) -> Folded<Option<i64>> {
        let posts = &self.posts;
        let seq = self.reposts.get(&post).and_then(|seqs| {
            seqs.iter()
                .copied()
                .find(|&s| posts[(s - 1) as usize].author == reposter)
        });
        if let Some(seq) = seq {
            self.delete_item(seq);
        }
        Ok(seq)
    }

    async fn delete_reposts(&mut self, of: RepostsOf) -> Folded<Vec<(i64, i64)>> {
        let posts: Vec<uuid::Uuid> = match of {
            RepostsOf::Post(post) => vec![post],
            RepostsOf::Author(author) => self
                .timelines
                .get(&author)
                .into_iter()
                .flatten()
                .map(|&seq| &self.posts[(seq - 1) as usize])
                .filter(|row| row.repost_of.is_none())
                .map(|row| row.id)
                .collect(),
        };
        let mut gone = Vec::new();
        for post in posts {
            for seq in self.reposts.get(&post).cloned().unwrap_or_default() {
                gone.push((seq, self.posts[(seq - 1) as usize].author));
                self.delete_item(seq);
            }
        }
        gone.sort_unstable();
        Ok(gone)
    }

    async fn setting(&mut self, change: SettingChange) -> Folded<()> {
        if let Some(&seq) = self.seq_of.get(&change.post) {
            let row = &mut self.posts[(seq - 1) as usize];
            match change.setting {
                Setting::Quotes(policy) => row.quote_policy = policy.as_str(),
                Setting::Comments(policy) => row.comment_policy = policy.as_str(),
                Setting::Detached => row.quote_detached = true,
            }
        }
        Ok(())
    }
}

impl FeedTables for FeedMemory {
    fn settings(&self) -> Settings {
        self.settings
    }

    /// One by one: a run's sets and maps cost the rebuild about a fifth (BENCHMARKS.md,
    /// seventeenth round) and save no round trip here.
    fn in_runs(&self) -> bool {
        self.runs
    }

    async fn follow(&mut self, pairs: &[UserPair]) -> Folded<HashSet<UserPair>> {
        let mut added = HashSet::new();
        for &(follower, followee) in pairs {
            if self.following.insert((follower, followee)) {
                self.followers.insert((followee, follower));
                added.insert((follower, followee));
            }
        }
        Ok(added)
    }

    async fn unfollow(&mut self, (follower, followee): UserPair) -> Folded<bool> {
        self.hiding_reposts.remove(&(follower, followee));
        let was = self.following.remove(&(follower, followee));
        self.followers.remove(&(followee, follower));
        Ok(was)
    }

    async fn followers(&mut self, author: i64) -> Folded<Vec<i64>> {
        Ok(paired_with(&self.followers, author))
    }

    async fn authors(&mut self, authors: &[i64]) -> Folded<HashMap<i64, Author>> {
        Ok(authors
            .iter()
            .filter_map(|a| self.authors.get(a).map(|r| (*a, (r.followers, r.pulled))))
            .collect())
    }

    async fn count(&mut self, counts: &[(i64, i64, i64)]) -> Folded<()> {
        for &(author, followers, posts) in counts {
            let row = self.authors.entry(author).or_default();
            row.followers += followers;
            row.posts += posts;
        }
        Ok(())
    }

    async fn set_mode(&mut self, author: i64, pulled: bool, at: LogPosition) -> Folded<()> {
        self.authors.entry(author).or_default().pulled = pulled;
        let key = (at.transaction_id, at.global_position, author);
        self.mode_changes.entry(key).or_insert(pulled);
        Ok(())
    }

    async fn push(&mut self, entries: &[(i64, i64)]) -> Folded<()> {
        if !self.whole {
            return Ok(());
        }
        let cap = self.cap();
        for &(seq, author) in entries {
            for reader in paired_with(&self.followers, author) {
                let inbox = self.inboxes.entry(reader).or_default();
                inbox.insert((seq, author));
                inbox.trim(cap);
            }
        }
        Ok(())
    }

    async fn backfill(&mut self, pairs: &[UserPair]) -> Folded<()> {
        if self.whole {
            for &(reader, author) in pairs {
                self.backfill_one(reader, author);
            }
        }
        Ok(())
    }

    async fn purge(&mut self, reader: i64, author: i64) -> Folded<()> {
        if let Some(inbox) = self.inboxes.get_mut(&reader) {
            inbox.entries.retain(|&(_, a)| a != author);
        }
        Ok(())
    }

    async fn unpush(&mut self, items: &[(i64, i64)]) -> Folded<()> {
        // An item's entries are only in the inboxes of its author's followers (an unfollow
        // takes them out of the reader's).
        for &(seq, author) in items {
            for reader in paired_with(&self.followers, author) {
                if let Some(inbox) = self.inboxes.get_mut(&reader) {
                    inbox.remove(seq);
                }
            }
        }
        Ok(())
    }

    async fn ban(&mut self, author: i64, banned: bool) -> Folded<()> {
        match banned {
            true => self.banned.insert(author),
            false => self.banned.remove(&author),
        };
        Ok(())
    }

    async fn show_reposts(&mut self, pair: UserPair, on: bool) -> Folded<()> {
        if self.following.contains(&pair) {
            match on {
                true => self.hiding_reposts.remove(&pair),
                false => self.hiding_reposts.insert(pair),
            };
        }
        Ok(())
    }

    async fn mute(&mut self, change: RelationChange) -> Folded<()> {
        match change {
            RelationChange::Mute(pair, _, until) => {
                self.mutes.insert(pair, until);
            }
            RelationChange::Unmute(pair) => {
                self.mutes.remove(&pair);
            }
            RelationChange::Begin(..)
            | RelationChange::End(..)
            | RelationChange::Prefs(..)
            | RelationChange::Dismiss(..) => {}
        }
        Ok(())
    }

    async fn end_follows_by(&mut self, user: i64) -> Folded<Vec<i64>> {
        let mut counted = Vec::new();
        for followee in paired_with(&self.following, user) {
            self.hiding_reposts.remove(&(user, followee));
            self.following.remove(&(user, followee));
            self.followers.remove(&(followee, user));
            if let Some(row) = self.authors.get_mut(&followee) {
                row.followers -= 1;
                counted.push(followee);
            }
        }
        Ok(counted)
    }

    async fn unpush_all(&mut self, author: i64) -> Folded<()> {
        for reader in paired_with(&self.followers, author) {
            if let Some(inbox) = self.inboxes.get_mut(&reader) {
                inbox.entries.retain(|&(_, a)| a != author);
            }
        }
        Ok(())
    }

    async fn forget(&mut self, user: i64) -> Folded<()> {
        for reader in paired_with(&self.followers, user) {
            self.hiding_reposts.remove(&(reader, user));
            self.following.remove(&(reader, user));
            self.followers.remove(&(user, reader));
        }
        self.inboxes.remove(&user);
        self.authors.remove(&user);
        self.mode_changes.retain(|&(_, _, a), _| a != user);
        self.banned.remove(&user);
        self.mutes.retain(|&(a, b), _| a != user && b != user);
        Ok(())
    }
}

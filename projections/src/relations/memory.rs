//! The follow graph in memory (issue 43: each read model owns its memory): projector
//! `following`'s read model as every service instance's replica ([`crate::replica`]) holds
//! it, answering relation checks, lists and counts without a database round trip. It is loaded
//! from `rm_follows`, `rm_blocks`, `rm_follow_requests` and `rm_mutes` at the projector's
//! checkpoint and then folds every later relation event, and every erasure, with the one
//! relation fold ([`super::fold`]).
//!
//! Memory: a follow costs two 16-byte entries (in the follower's `following`, sorted by id, and
//! the followee's `followers`, sorted by time), about 32 bytes; a user about 100 bytes. The
//! follow limit bounds `following`, so a relation check is two binary searches of at most
//! `follow_limit` entries.

// Hashed with foldhash (seeded per process): a relation check or a known-followers walk is a
// handful to a thousand lookups, and SipHash would be most of their cost.
use foldhash::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use relations_domain::{AccountEvent, Facts, FollowPrefs, LogEvent, Relation, UserId};
use relations_store::LogPosition;
use sqlx::{PgConnection, Row};

use super::fold::{
    self, EdgeKind, ErasableTables, FollowCount, RelationChange, RelationTables, UserPair,
};
use super::query::{Counts, ListEntry};
use super::reads::KeyedList;
use crate::replica::MemoryModel;
use crate::runtime::checkpoint;

/// A time in microseconds since the epoch (the log's and PostgreSQL's precision).
pub(crate) type Micros = i64;

/// What one user's node holds.
#[derive(Debug, Default, Clone)]
struct Node {
    /// Whom they follow: `(followee, since)`, sorted by followee.
    following: Vec<(u64, Micros)>,
    /// Who follows them: `(since, follower)`, ascending.
    followers: Vec<(Micros, u64)>,
    /// Whom they block: `(since, blocked)`, ascending.
    blocking: Vec<(Micros, u64)>,
    /// Who asks to follow them: `(since, requester)`, ascending.
    requested_by: Vec<(Micros, u64)>,
    /// Users both ways.
    friends: i64,
}

impl Node {
    fn is_empty(&self) -> bool {
        self.following.is_empty()
            && self.followers.is_empty()
            && self.blocking.is_empty()
            && self.requested_by.is_empty()
            && self.friends == 0
    }

    /// Since when they follow `followee`, if they do.
    fn follows(&self, followee: u64) -> Option<Micros> {
        self.following
            .binary_search_by_key(&followee, |&(id, _)| id)
            .ok()
            .map(|i| self.following[i].1)
    }
}

/// The graph: every follow, block, request and mute, every user's counters.
#[derive(Debug, Default, Clone)]
pub struct RelationsMemory {
    users: HashMap<u64, Node>,
    /// Every block `(blocker, blocked)`, for checks from either side.
    blocks: HashSet<(u64, u64)>,
    /// Every pending follow request `(requester, target)`.
    requests: HashSet<(u64, u64)>,
    /// muter -> (muted, since, until), ended mutes included until replaced or lifted.
    mutes: HashMap<u64, Vec<(u64, Micros, Option<Micros>)>>,
    follows: u64,
    /// The preferences of follows and requests that are not the defaults (issue 44): few.
    prefs: HashMap<(u64, u64), FollowPrefs>,
    /// Relation events up to here were in the read model it was loaded from.
    loaded: LogPosition,
}

fn micros(t: Micros) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp_micros(t).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

pub(crate) fn user(id: u64) -> UserId {
    UserId::try_from(id as i64).expect("the graph holds only valid user ids")
}

fn edge((since, id): (Micros, u64)) -> ListEntry {
    ListEntry {
        user: user(id),
        since: micros(since),
    }
}

impl RelationsMemory {
    /// Users with any edge.
    pub fn users(&self) -> usize {
        self.users.len()
    }

    /// Follow edges.
    pub fn follows(&self) -> u64 {
        self.follows
    }

    /// An estimate of the heap the graph holds, in bytes: its vectors' capacities and its
    /// tables' slots (a hash table entry costs its key, its value and a control byte).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let entry = size_of::<(u64, Micros)>();
        let nodes: usize = self
            .users
            .values()
            .map(|n| {
                (n.following.capacity()
                    + n.followers.capacity()
                    + n.blocking.capacity()
                    + n.requested_by.capacity())
                    * entry
            })
            .sum();
        let slots = self.users.capacity() * (size_of::<(u64, Node)>() + 1)
            + (self.blocks.capacity() + self.requests.capacity()) * (size_of::<(u64, u64)>() + 1);
        nodes + slots
    }

    /// Block edges.
    pub fn blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Adds `(follower, followee, since)` edges to an empty graph at once (a load: sorting
    /// once is far cheaper than inserting each in place).
    pub fn load_follows(&mut self, follows: Vec<(u64, u64, Micros)>) {
        debug_assert!(self.users.is_empty());
        for &(a, b, since) in &follows {
            self.users.entry(a).or_default().following.push((b, since));
            self.users.entry(b).or_default().followers.push((since, a));
        }
        for node in self.users.values_mut() {
            node.following.sort_unstable();
            node.followers.sort_unstable();
        }
        self.follows = follows.len() as u64;
        let friends: Vec<u64> = follows
            .iter()
            .filter(|&&(a, b, _)| self.users.get(&b).and_then(|n| n.follows(a)).is_some())
            .map(|&(a, _, _)| a)
            .collect();
        for a in friends {
            self.users.entry(a).or_default().friends += 1;
        }
    }

    /// Folds one relation change. Changes that find the graph already so (a follow of someone
    /// followed) change nothing, as in the read model.
    pub fn change(&mut self, change: RelationChange) {
        if let Some(count) = fold::fold(self, change) {
            self.count(count);
        }
    }

    /// Moves the counters by a follow that began or ended.
    fn count(&mut self, count: FollowCount) {
        self.follows = self.follows.wrapping_add_signed(count.by);
        if count.mutual {
            for user in [count.follower, count.followee] {
                self.users.entry(user as u64).or_default().friends += count.by;
                // An erasure ends both follows before it counts (`fold::erase`): the node
                // kept its counter until now, and is dropped once nothing is left in it.
                self.forget_if_empty(user as u64);
            }
        }
    }

    /// Folds `user`'s erasure: every edge of theirs ends both ways, as the read model's fold
    /// ends them, and their node goes. Folding it again (the load may hold it already)
    /// changes nothing.
    pub fn erase(&mut self, user: i64) {
        for count in fold::erase(self, user) {
            self.count(count);
        }
        self.forget_if_empty(user as u64);
    }

    /// Whether `from` mutes `to` at `now`.
    pub fn muting(&self, from: UserId, to: UserId, now: DateTime<Utc>) -> bool {
        self.muter(from, now)(to.get() as u64)
    }

    /// Whom `from` mutes at `now`, asked of many users: `from`'s mutes are found once.
    pub(crate) fn muter(&self, from: UserId, now: DateTime<Utc>) -> impl Fn(u64) -> bool + '_ {
        let now = now.timestamp_micros();
        let mutes = self.mutes.get(&(from.get() as u64));
        move |to| {
            mutes.is_some_and(|mutes| {
                mutes
                    .iter()
                    .any(|&(b, _, until)| b == to && until.is_none_or(|u| u > now))
            })
        }
    }

    /// `user`'s mutes in force at `now`, newest first, strictly after the key `after`: each
    /// muted user, since when, and until when.
    pub fn mutes(
        &self,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
        now: DateTime<Utc>,
    ) -> Vec<(ListEntry, Option<DateTime<Utc>>)> {
        let now = now.timestamp_micros();
        let mut live: Vec<(Micros, u64, Option<Micros>)> = self
            .mutes
            .get(&(user.get() as u64))
            .map(|mutes| {
                mutes
                    .iter()
                    .filter(|m| m.2.is_none_or(|u| u > now))
                    .map(|&(b, since, until)| (since, b, until))
                    .collect()
            })
            .unwrap_or_default();
        live.sort_unstable_by_key(|m| std::cmp::Reverse((m.0, m.1)));
        let key = after.map(|(t, id)| (t.timestamp_micros(), id.max(0) as u64));
        live.into_iter()
            .filter(|m| key.is_none_or(|k| (m.0, m.1) < k))
            .take(limit.max(0) as usize)
            .map(|(since, b, until)| (edge((since, b)), until.map(micros)))
            .collect()
    }

    /// Adds follows(a, b) unless it holds; whether it was added.
    fn follow(&mut self, a: u64, b: u64, at: Micros) -> bool {
        let node = self.users.entry(a).or_default();
        let Err(i) = node.following.binary_search_by_key(&b, |&(id, _)| id) else {
            return false;
        };
        node.following.insert(i, (b, at));
        insert_sorted(&mut self.users.entry(b).or_default().followers, (at, a));
        true
    }

    /// Removes follows(a, b) if it holds; whether it did.
    fn unfollow(&mut self, a: u64, b: u64) -> bool {
        let Some(node) = self.users.get_mut(&a) else {
            return false;
        };
        let Ok(i) = node.following.binary_search_by_key(&b, |&(id, _)| id) else {
            return false;
        };
        let (_, since) = node.following.remove(i);
        if let Some(node) = self.users.get_mut(&b) {
            if let Ok(i) = node.followers.binary_search(&(since, a)) {
                node.followers.remove(i);
            }
        }
        true
    }

    /// Adds `(since, other)` to `user`'s list `list` unless `pair` is in `set`.
    fn list_insert(&mut self, kind: EdgeKind, (a, b): (u64, u64), since: Micros) -> bool {
        let (set, owner, other) = match kind {
            EdgeKind::Block => (&mut self.blocks, a, b),
            _ => (&mut self.requests, b, a),
        };
        if !set.insert((a, b)) {
            return false;
        }
        let node = self.users.entry(owner).or_default();
        let list = match kind {
            EdgeKind::Block => &mut node.blocking,
            _ => &mut node.requested_by,
        };
        insert_sorted(list, (since, other));
        true
    }

    /// Removes `pair` from `set` and `other` from its owner's list; whether it was there.
    fn list_remove(&mut self, kind: EdgeKind, (a, b): (u64, u64)) -> bool {
        let (set, owner, other) = match kind {
            EdgeKind::Block => (&mut self.blocks, a, b),
            _ => (&mut self.requests, b, a),
        };
        if !set.remove(&(a, b)) {
            return false;
        }
        if let Some(node) = self.users.get_mut(&owner) {
            let list = match kind {
                EdgeKind::Block => &mut node.blocking,
                _ => &mut node.requested_by,
            };
            list.retain(|&(_, id)| id != other);
        }
        self.forget_if_empty(owner);
        true
    }

    fn forget_if_empty(&mut self, user: u64) {
        if self.users.get(&user).is_some_and(Node::is_empty) {
            self.users.remove(&user);
        }
    }

    fn node(&self, user: UserId) -> Option<&Node> {
        self.users.get(&(user.get() as u64))
    }

    /// Whom `user` follows: `(followee, since)`, by followee.
    pub(crate) fn followees(&self, user: UserId) -> &[(u64, Micros)] {
        self.node(user).map_or(&[], |n| &n.following[..])
    }

    /// The facts between `from` and `to`, from `from`'s side.
    pub fn facts(&self, from: UserId, to: UserId) -> Facts {
        let (a, b) = (from.get() as u64, to.get() as u64);
        Facts {
            following: self.node(from).and_then(|n| n.follows(b)).is_some(),
            followed_by: self.node(to).and_then(|n| n.follows(a)).is_some(),
            blocking: self.blocks.contains(&(a, b)),
            blocked_by: self.blocks.contains(&(b, a)),
            requested: self.requests.contains(&(a, b)),
            requested_by: self.requests.contains(&(b, a)),
        }
    }

    /// `from`'s relation to each of `to`, in the order asked; `muting` only when `mutes_at`
    /// is given (answers to `from` themselves), as of that time.
    pub fn relations(
        &self,
        from: UserId,
        to: &[UserId],
        mutes_at: Option<DateTime<Utc>>,
    ) -> Vec<Relation> {
        to.iter()
            .map(|&to| {
                let muting = mutes_at.is_some_and(|now| self.muting(from, to, now));
                let facts = self.facts(from, to);
                let prefs = (mutes_at.is_some() && facts.following).then(|| self.prefs(from, to));
                Relation::new(from, to, facts)
                    .with_muting(muting)
                    .with_prefs(prefs)
            })
            .collect()
    }

    /// The preferences of `follower`'s follow (or request) of `followee`.
    pub fn prefs(&self, follower: UserId, followee: UserId) -> FollowPrefs {
        let key = (follower.get() as u64, followee.get() as u64);
        self.prefs.get(&key).copied().unwrap_or_default()
    }

    /// `user`'s counters, with `posts` (the held posts' model counts them).
    pub fn counts(&self, user: UserId, posts: i64) -> Counts {
        self.node(user).map_or(
            Counts {
                posts,
                ..Counts::default()
            },
            |n| Counts {
                following: n.following.len() as i64,
                followers: n.followers.len() as i64,
                friends: n.friends,
                posts,
            },
        )
    }

    /// Whom `user` follows, newest first, `limit` after skipping `offset`.
    pub fn following(&self, user: UserId, offset: i64, limit: i64) -> Vec<ListEntry> {
        let all = self.node(user).map_or_else(Vec::new, |n| {
            n.following.iter().map(|&(id, since)| (since, id)).collect()
        });
        newest(all, offset, limit)
    }

    /// `user`'s friends, newest friendship first (a friendship begins with the later of its
    /// two follows), `limit` after skipping `offset`.
    pub fn friends(&self, user: UserId, offset: i64, limit: i64) -> Vec<ListEntry> {
        let a = user.get() as u64;
        let all = self.node(user).map_or_else(Vec::new, |n| {
            n.following
                .iter()
                .filter_map(|&(b, since)| {
                    let back = self.users.get(&b)?.follows(a)?;
                    Some((since.max(back), b))
                })
                .collect()
        });
        newest(all, offset, limit)
    }

    /// Followers of `user` whom `viewer` follows, newest follow of `user` first, strictly
    /// after the key `after`; and how many there are. Walks `viewer`'s following (bounded by
    /// the follow limit) and looks each one up: no scan of `user`'s followers, however many.
    pub fn known_followers(
        &self,
        viewer: UserId,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
    ) -> (Vec<ListEntry>, i64) {
        let target = user.get() as u64;
        let mut known: Vec<(Micros, u64)> = self.node(viewer).map_or_else(Vec::new, |n| {
            n.following
                .iter()
                .filter_map(|&(f, _)| Some((self.users.get(&f)?.follows(target)?, f)))
                .collect()
        });
        let total = known.len() as i64;
        known.sort_unstable();
        (before(&known, after, limit), total)
    }

    /// A page of `list` for `user` (who follows them, whom they block, or who asks to follow
    /// them), newest first,
    /// strictly after the key `after` (from the newest when none).
    pub fn keyed(
        &self,
        list: KeyedList,
        user: UserId,
        after: Option<(DateTime<Utc>, i64)>,
        limit: i64,
    ) -> Vec<ListEntry> {
        self.node(user).map_or_else(Vec::new, |n| {
            let entries = match list {
                KeyedList::Followers => &n.followers,
                KeyedList::Blocking => &n.blocking,
                KeyedList::FollowRequests => &n.requested_by,
            };
            before(entries, after, limit)
        })
    }
}

impl RelationTables for RelationsMemory {
    fn begin(&mut self, kind: EdgeKind, (a, b): UserPair, since: DateTime<Utc>) -> bool {
        let (pair, at) = ((a as u64, b as u64), since.timestamp_micros());
        match kind {
            EdgeKind::Follow => self.follow(pair.0, pair.1, at),
            EdgeKind::Block | EdgeKind::Request => self.list_insert(kind, pair, at),
        }
    }

    fn end(&mut self, kind: EdgeKind, (a, b): UserPair) -> bool {
        let pair = (a as u64, b as u64);
        match kind {
            EdgeKind::Follow => {
                let ended = self.unfollow(pair.0, pair.1);
                self.forget_if_empty(pair.0);
                self.forget_if_empty(pair.1);
                ended
            }
            EdgeKind::Block | EdgeKind::Request => self.list_remove(kind, pair),
        }
    }

    fn follows(&self, (a, b): UserPair) -> bool {
        let node = self.users.get(&(a as u64));
        node.and_then(|n| n.follows(b as u64)).is_some()
    }

    fn mute(&mut self, (a, b): UserPair, since: DateTime<Utc>, until: Option<DateTime<Utc>>) {
        let mutes = self.mutes.entry(a as u64).or_default();
        mutes.retain(|m| m.0 != b as u64);
        let until = until.map(|t| t.timestamp_micros());
        mutes.push((b as u64, since.timestamp_micros(), until));
    }

    fn unmute(&mut self, (a, b): UserPair) {
        if let Some(mutes) = self.mutes.get_mut(&(a as u64)) {
            mutes.retain(|m| m.0 != b as u64);
            if mutes.is_empty() {
                self.mutes.remove(&(a as u64));
            }
        }
    }

    fn prefs(&mut self, (a, b): UserPair, prefs: FollowPrefs) {
        let key = (a as u64, b as u64);
        match prefs == FollowPrefs::default() {
            true => self.prefs.remove(&key),
            false => self.prefs.insert(key, prefs),
        };
    }
}

impl ErasableTables for RelationsMemory {
    fn edges_of(&self, user: i64) -> Vec<(EdgeKind, UserPair)> {
        let u = user as u64;
        let mut edges = Vec::new();
        if let Some(node) = self.users.get(&u) {
            let follows = node.following.iter().map(|&(b, _)| (user, b as i64));
            let followers = node.followers.iter().map(|&(_, a)| (a as i64, user));
            edges.extend(follows.chain(followers).map(|p| (EdgeKind::Follow, p)));
        }
        for (kind, set) in [
            (EdgeKind::Block, &self.blocks),
            (EdgeKind::Request, &self.requests),
        ] {
            let on = set.iter().filter(|&&(a, b)| a == u || b == u);
            edges.extend(on.map(|&(a, b)| (kind, (a as i64, b as i64))));
        }
        edges
    }

    fn unmute_all(&mut self, user: i64) {
        let u = user as u64;
        self.mutes.remove(&u);
        self.mutes.retain(|_, mutes| {
            mutes.retain(|m| m.0 != u);
            !mutes.is_empty()
        });
    }
}

impl MemoryModel for RelationsMemory {
    async fn checkpoint(
        &mut self,
        tx: &mut PgConnection,
    ) -> Result<Option<LogPosition>, sqlx::Error> {
        self.loaded = checkpoint::read(&mut *tx, super::NAME).await?;
        Ok(Some(self.loaded))
    }

    /// The read model's rows, as of the snapshot.
    async fn load(&mut self, tx: &mut PgConnection, _: LogPosition) -> Result<(), sqlx::Error> {
        let mut rows =
            sqlx::query("SELECT follower, followee, since FROM rm_follows").fetch(&mut *tx);
        let mut follows = Vec::new();
        while let Some(row) = rows.try_next().await? {
            let (a, b, since) = edge_row(&row)?;
            follows.push((a as u64, b as u64, since.timestamp_micros()));
        }
        drop(rows);
        self.load_follows(follows);
        let edges = [
            (
                EdgeKind::Block,
                "SELECT blocker, blocked, since FROM rm_blocks",
            ),
            (
                EdgeKind::Request,
                "SELECT requester, target, since FROM rm_follow_requests",
            ),
        ];
        for (kind, sql) in edges {
            let mut rows = sqlx::query(sql).fetch(&mut *tx);
            while let Some(row) = rows.try_next().await? {
                let (a, b, since) = edge_row(&row)?;
                self.change(RelationChange::Begin(kind, (a, b), since));
            }
        }
        let mut rows =
            sqlx::query("SELECT follower, followee, show_reposts, notify FROM rm_follow_prefs")
                .fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let pair: (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
            let prefs = FollowPrefs {
                show_reposts: row.try_get(2)?,
                notify: row.try_get(3)?,
            };
            RelationTables::prefs(self, pair, prefs);
        }
        drop(rows);
        let mut rows =
            sqlx::query("SELECT muter, muted, since, until FROM rm_mutes").fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let (a, b, since) = edge_row(&row)?;
            let until: Option<DateTime<Utc>> = row.try_get(3)?;
            self.change(RelationChange::Mute((a, b), since, until));
        }
        Ok(())
    }

    fn apply(&mut self, at: LogPosition, occurred_at: DateTime<Utc>, event: &LogEvent) {
        if at <= self.loaded {
            return;
        }
        match event {
            LogEvent::Relation(relation) => {
                self.change(RelationChange::of(relation, occurred_at));
            }
            LogEvent::Account(AccountEvent::UserErased { user }) => self.erase(user.get()),
            // Nothing else moves the graph.
            LogEvent::Account(_)
            | LogEvent::Post(_)
            | LogEvent::Thread(_)
            | LogEvent::Like(_)
            | LogEvent::Repost(_) => {}
        }
    }
}

/// `(from, to, since)` of an edge row.
fn edge_row(row: &sqlx::postgres::PgRow) -> Result<(i64, i64, DateTime<Utc>), sqlx::Error> {
    Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?))
}

/// Inserts `entry` into an ascending list at its place.
fn insert_sorted(list: &mut Vec<(Micros, u64)>, entry: (Micros, u64)) {
    let i = list.partition_point(|&e| e < entry);
    list.insert(i, entry);
}

/// The `limit` newest of `all` after skipping `offset`, by `(since, id)` descending.
fn newest(mut all: Vec<(Micros, u64)>, offset: i64, limit: i64) -> Vec<ListEntry> {
    let (offset, limit) = (offset.max(0) as usize, limit.max(0) as usize);
    if offset >= all.len() || limit == 0 {
        return vec![];
    }
    let wanted = (offset + limit).min(all.len());
    let desc = |x: &(Micros, u64), y: &(Micros, u64)| y.cmp(x);
    if wanted < all.len() {
        all.select_nth_unstable_by(wanted - 1, desc);
        all.truncate(wanted);
    }
    all.sort_unstable_by(desc);
    all.into_iter().skip(offset).map(edge).collect()
}

/// Up to `limit` entries of an ascending list, newest first, strictly below `after`.
fn before(
    list: &[(Micros, u64)],
    after: Option<(DateTime<Utc>, i64)>,
    limit: i64,
) -> Vec<ListEntry> {
    let end = match after {
        None => list.len(),
        Some((since, id)) => {
            let key = (since.timestamp_micros(), id.max(0) as u64);
            list.partition_point(|&e| e < key)
        }
    };
    list[..end]
        .iter()
        .rev()
        .take(limit.max(0) as usize)
        .copied()
        .map(edge)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(id: i64) -> UserId {
        UserId::try_from(id).unwrap()
    }

    fn edge(kind: EdgeKind, a: i64, b: i64, at: Option<Micros>) -> RelationChange {
        match at {
            Some(at) => RelationChange::Begin(kind, (a, b), micros(at)),
            None => RelationChange::End(kind, (a, b)),
        }
    }

    fn follow(a: i64, b: i64, at: Micros) -> RelationChange {
        edge(EdgeKind::Follow, a, b, Some(at))
    }

    fn unfollow(a: i64, b: i64) -> RelationChange {
        edge(EdgeKind::Follow, a, b, None)
    }

    fn block(a: i64, b: i64, at: Micros) -> RelationChange {
        edge(EdgeKind::Block, a, b, Some(at))
    }

    fn unblock(a: i64, b: i64) -> RelationChange {
        edge(EdgeKind::Block, a, b, None)
    }

    #[test]
    fn follows_blocks_and_counts_fold_like_the_read_model() {
        let mut g = RelationsMemory::default();
        g.change(follow(1, 2, 10));
        g.change(follow(2, 1, 20));
        g.change(follow(1, 3, 30));
        g.change(follow(1, 3, 40)); // already following: nothing
        assert_eq!(g.counts(u(1), 0).following, 2);
        assert_eq!(g.counts(u(1), 0).friends, 1);
        assert_eq!(g.counts(u(2), 0).friends, 1);
        assert_eq!(g.follows(), 3);
        let f = g.facts(u(1), u(2));
        assert!(f.following && f.followed_by && !f.blocking && !f.blocked_by);
        // Friends since the later follow.
        let friends = g.friends(u(1), 0, 10);
        assert_eq!(friends.len(), 1);
        assert_eq!(friends[0].since.timestamp_micros(), 20);
        // Newest first.
        let following: Vec<i64> = g
            .following(u(1), 0, 10)
            .iter()
            .map(|e| e.user.get())
            .collect();
        assert_eq!(following, vec![3, 2]);
        assert_eq!(g.following(u(1), 1, 10).len(), 1);
        assert!(g.following(u(1), 2, 10).is_empty());

        g.change(unfollow(2, 1));
        g.change(unfollow(1, 2));
        g.change(block(1, 2, 50));
        assert_eq!(g.counts(u(1), 0).friends, 0);
        assert_eq!(g.counts(u(2), 0), Counts::default());
        let f = g.facts(u(2), u(1));
        assert!(!f.following && !f.followed_by && !f.blocking && f.blocked_by);
        assert_eq!(g.keyed(KeyedList::Blocking, u(1), None, 10).len(), 1);
        g.change(unblock(1, 2));
        assert_eq!(g.blocks(), 0);
        g.change(unfollow(1, 3));
        assert_eq!(g.users(), 0, "empty nodes are dropped");
    }

    #[test]
    fn an_erasure_ends_a_friendship_once() {
        let mut g = RelationsMemory::default();
        g.change(follow(2, 5, 10));
        g.change(follow(5, 2, 20));
        g.change(follow(3, 5, 30));
        assert_eq!(g.counts(u(2), 0).friends, 1);
        g.erase(5);
        assert_eq!(g.counts(u(2), 0), Counts::default());
        assert_eq!(g.counts(u(3), 0), Counts::default());
        assert!(g.friends(u(2), 0, 10).is_empty());
        assert_eq!(g.follows(), 0);
        assert_eq!(g.users(), 0, "no node is left holding a counter");
    }

    #[test]
    fn followers_page_by_search_after_key() {
        let mut g = RelationsMemory::default();
        for (follower, at) in [(5, 100), (6, 100), (7, 200), (8, 300)] {
            g.change(follow(follower, 1, at));
        }
        let page = g.keyed(KeyedList::Followers, u(1), None, 2);
        let ids: Vec<i64> = page.iter().map(|e| e.user.get()).collect();
        assert_eq!(ids, vec![8, 7]);
        let last = page.last().unwrap();
        let page = g.keyed(
            KeyedList::Followers,
            u(1),
            Some((last.since, last.user.get())),
            10,
        );
        let ids: Vec<i64> = page.iter().map(|e| e.user.get()).collect();
        assert_eq!(ids, vec![6, 5], "ties on time by id, descending");
    }
}

//! The notifications folded in memory from [`Change`]s: what the SQL projector must hold,
//! row for row. `verify` folds the log with it, and a rebuild folds the whole log with it and
//! writes every table with one `COPY` ([`NotificationsBulk`]); it is written from the rules
//! (the module docs of `super`), not from the projector's SQL. Live causes are indexed by
//! actor, post and recipient, so that a block, a mute, a deletion or an erasure finds what it
//! removes without walking every cause.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;

use foldhash::{HashMap, HashSet}; // a rebuild folds millions: SipHash and B-tree keys of text cost

use async_trait::async_trait;

use chrono::{DateTime, Utc};
use relations_domain::{LogEvent, NotificationPolicy, PostId, RelationEvent};
use relations_store::log::RecordedEvent;
use relations_store::LogPosition;
use uuid::Uuid;

use super::change::{
    admits, comment_causes, disposed, is_filtered, Cause, Change, ChangeReader, GroupDelta,
};
use crate::error::ProjectionError;
use crate::runtime::copy_out::{copy_nullable_timestamp, copy_text, copy_timestamp, CopyOut};
use crate::runtime::projector::BulkFold;

/// A live cause's key: (recipient, cause), its text shared by the indexes.
type Key = (i64, Arc<str>);

/// Every live notification, comment author and mute, as folded.
#[derive(Debug, Default)]
pub struct Model {
    reader: ChangeReader,
    /// Live causes by (recipient, cause key).
    pub causes: HashMap<Key, Cause>,
    /// Each comment's (author, post author).
    pub comments: BTreeMap<(Uuid, i32), (i64, i64)>,
    /// Mutes: (muter, muted) → until.
    pub mutes: BTreeMap<(i64, i64), Option<DateTime<Utc>>>,
    /// Follows with `notify` (issue 44): (author, watcher).
    pub watchers: BTreeSet<(i64, i64)>,
    /// Notification policies that are not the default (issue 47), by user.
    pub policies: BTreeMap<i64, NotificationPolicy>,
    /// Every follow (follower, followee) as folded up to the event being folded: what a
    /// policy is judged against. An erased user's are left: nothing is caused by or for them
    /// again.
    follows: HashSet<(i64, i64)>,
    /// Each live group's place (the last cause that joined it) and its live causes, by
    /// recipient and group.
    places: HashMap<i64, HashMap<String, (LogPosition, usize)>>,
    /// Live causes' keys by actor, by post, by recipient.
    by_actor: HashMap<i64, HashSet<Key>>,
    by_post: HashMap<Uuid, HashSet<Key>>,
    by_recipient: HashMap<i64, HashSet<Key>>,
}

impl Model {
    /// Folds the next event, in log order: a follow's beginning or end first, so that what
    /// the event causes is judged with it (the SQL projector reads the pair's stream up to and
    /// with the cause's own event).
    pub fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        match event.event {
            LogEvent::Relation(RelationEvent::Followed { follower, followee }) => {
                self.follows.insert((follower.get(), followee.get()));
            }
            LogEvent::Relation(RelationEvent::Unfollowed {
                follower, followee, ..
            }) => {
                self.follows.remove(&(follower.get(), followee.get()));
            }
            _ => {}
        }
        for change in self.reader.changes(event)? {
            self.apply(change);
        }
        Ok(())
    }

    fn add(&mut self, cause: Cause) {
        let mute = self.mutes.get(&(cause.recipient, cause.actor)).copied();
        if !admits(&cause, mute) {
            return;
        }
        let cause = match self.policies.get(&cause.recipient) {
            None => cause,
            Some(policy) => {
                let (recipient, actor) = (cause.recipient, cause.actor);
                let follows = self.follows.contains(&(recipient, actor));
                let followed_by = self.follows.contains(&(actor, recipient));
                match disposed(cause, policy, follows, followed_by) {
                    Some(cause) => cause,
                    None => return,
                }
            }
        };
        let groups = self.places.entry(cause.recipient).or_default();
        match groups.get_mut(cause.group.as_str()) {
            Some(place) => *place = (place.0.max(cause.position), place.1 + 1),
            None => {
                groups.insert(cause.group.clone(), (cause.position, 1));
            }
        }
        let key: Key = (cause.recipient, Arc::from(cause.cause.as_str()));
        self.by_actor
            .entry(cause.actor)
            .or_default()
            .insert(key.clone());
        if let Some(post) = cause.post {
            self.by_post.entry(post).or_default().insert(key.clone());
        }
        self.by_recipient
            .entry(cause.recipient)
            .or_default()
            .insert(key.clone());
        if let Some(old) = self.causes.insert(key.clone(), cause) {
            // Never made by the reader: a cause is removed before it is made again.
            self.unindex(&key, &old);
        }
    }

    /// Takes `key` of `cause` out of the indexes.
    fn unindex(&mut self, key: &Key, cause: &Cause) {
        fn out<K: std::hash::Hash + Eq>(index: &mut HashMap<K, HashSet<Key>>, at: K, key: &Key) {
            if let std::collections::hash_map::Entry::Occupied(mut keys) = index.entry(at) {
                keys.get_mut().remove(key);
                if keys.get().is_empty() {
                    keys.remove();
                }
            }
        }
        out(&mut self.by_actor, cause.actor, key);
        if let Some(post) = cause.post {
            out(&mut self.by_post, post, key);
        }
        out(&mut self.by_recipient, cause.recipient, key);
    }

    /// The keys of the live causes by `actor`.
    fn of_actor(&self, actor: i64) -> Vec<Key> {
        self.by_actor
            .get(&actor)
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }

    /// The keys of the live causes about `post`.
    fn of_post(&self, post: Uuid) -> Vec<Key> {
        self.by_post
            .get(&post)
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }

    /// Removes those of the causes `keys` that `gone` picks; a group left without any loses
    /// its place.
    fn remove(&mut self, keys: Vec<Key>, gone: impl Fn(&Cause) -> bool) {
        for key in keys {
            if self.causes.get(&key).is_some_and(&gone) {
                self.forget(&key);
            }
        }
    }

    /// Removes one cause, if live.
    fn forget(&mut self, key: &Key) {
        let Some(cause) = self.causes.remove(key) else {
            return;
        };
        self.unindex(key, &cause);
        let Some(groups) = self.places.get_mut(&cause.recipient) else {
            return;
        };
        if let Some(place) = groups.get_mut(cause.group.as_str()) {
            place.1 -= 1;
            if place.1 == 0 {
                groups.remove(cause.group.as_str());
                if groups.is_empty() {
                    self.places.remove(&cause.recipient);
                }
            }
        }
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::Add(cause) => self.add(cause),
            Change::Comment(c) => {
                self.comments
                    .insert((c.post, c.n), (c.author, c.post_author));
                let parent_author = c
                    .parent
                    .and_then(|p| self.comments.get(&(c.post, p)).map(|a| a.0));
                for cause in comment_causes(&c, parent_author) {
                    self.add(cause);
                }
            }
            Change::Remove {
                recipient, cause, ..
            } => self.forget(&(recipient, Arc::from(cause))),
            Change::CommentDeleted { post, n } => {
                let key = format!("comment:{}.{n}", PostId::from_uuid(post));
                let about = self.of_post(post);
                self.remove(about, |c| c.cause == key || c.comment == Some(n));
            }
            Change::PostDeleted { post } => self.remove(self.of_post(post), |_| true),
            Change::Block(a, b) => {
                self.remove(self.of_actor(b), |c| c.recipient == a);
                self.remove(self.of_actor(a), |c| c.recipient == b);
            }
            Change::Mute {
                muter,
                muted,
                until,
            } => {
                self.mutes.insert((muter, muted), until);
                self.remove(self.of_actor(muted), |c| c.recipient == muter);
            }
            Change::Unmute { muter, muted } => {
                self.mutes.remove(&(muter, muted));
            }
            Change::Policy { user, policy } => {
                match policy.is_default() {
                    true => self.policies.remove(&user),
                    false => self.policies.insert(user, policy),
                };
            }
            Change::Watch {
                watcher,
                author,
                on,
            } => {
                match on {
                    true => self.watchers.insert((author, watcher)),
                    false => self.watchers.remove(&(author, watcher)),
                };
            }
            Change::Posted(post) => {
                let watchers = self
                    .watchers
                    .range((post.author, i64::MIN)..=(post.author, i64::MAX));
                let causes: Vec<Cause> = watchers.map(|&(_, w)| post.cause(w)).collect();
                for cause in causes {
                    self.add(cause);
                }
            }
            Change::Erase(user) => self.erase(user),
        }
    }

    /// An erasure: every notification to or from `user` or about their posts goes, and what
    /// the model keeps of them.
    fn erase(&mut self, user: i64) {
        let posts: BTreeSet<Uuid> = self
            .comments
            .iter()
            .filter(|(_, (_, post_author))| *post_author == user)
            .map(|((post, _), _)| *post)
            .collect();
        let mut keys = self.of_actor(user);
        keys.extend(self.by_recipient.get(&user).into_iter().flatten().cloned());
        keys.extend(posts.into_iter().flat_map(|post| self.of_post(post)));
        self.remove(keys, |_| true);
        self.comments
            .retain(|_, (author, post_author)| *author != user && *post_author != user);
        self.mutes
            .retain(|(muter, muted), _| *muter != user && *muted != user);
        self.watchers.retain(|&(a, w)| a != user && w != user);
        self.policies.remove(&user);
    }

    /// Every group the live causes make, with its place.
    pub fn groups(&self) -> Vec<(GroupDelta, LogPosition)> {
        let mut by_group: BTreeMap<(i64, &str), Vec<Cause>> = BTreeMap::new();
        for c in self.causes.values() {
            by_group
                .entry((c.recipient, c.group.as_str()))
                .or_default()
                .push(c.clone());
        }
        by_group
            .into_values()
            .flat_map(|mut causes| {
                causes.sort_by_key(|c| c.position);
                GroupDelta::of(&causes)
            })
            .map(|g| {
                let groups = self.places.get(&g.recipient);
                let place = groups.and_then(|groups| groups.get(g.group.as_str()));
                let place = place.map_or(g.position, |p| p.0);
                (g, place)
            })
            .collect()
    }
}

/// The whole log folded in memory for a rebuild ([`Model`], as `verify` folds it), then every
/// table's rows laid out for `COPY` ([`CopyOut`]).
#[derive(Debug, Default)]
pub(super) struct NotificationsBulk {
    model: Model,
}

/// A nullable column in `COPY`'s text format.
fn nullable(value: Option<impl std::fmt::Display>) -> String {
    value.map_or_else(|| "\\N".to_owned(), |v| v.to_string())
}

#[async_trait]
impl BulkFold for NotificationsBulk {
    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        self.model.fold(event)
    }

    fn write(self: Box<Self>, out: &CopyOut) -> Result<(), ProjectionError> {
        let model = &self.model;
        // `kind` for the previous release's instances only (see `insert_causes`).
        let mut rows = out
            .table("notify_causes (recipient, cause, grp, kind, actor, post, comment, tx, gp, at)");
        // Each recipient's causes together, in log order, as their reads find them (every
        // index is built after the rows, sorting for itself).
        let mut causes: Vec<&Cause> = model.causes.values().collect();
        causes.sort_unstable_by_key(|c| (c.recipient, c.position));
        for c in causes {
            let (tx, gp) = (c.position.transaction_id, c.position.global_position);
            writeln!(
                rows,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{tx}\t{gp}\t{}",
                c.recipient,
                copy_text(&c.cause),
                copy_text(&c.group),
                c.kind.name(),
                c.actor,
                nullable(c.post),
                nullable(c.comment),
                copy_timestamp(c.at),
            )
            .expect("rows in memory");
        }
        let mut rows = out.table(
            "notify_groups (recipient, grp, kind, post, comment, count, actors, tx, gp, \
             latest_at, place_tx, place_gp, filtered)",
        );
        for (g, place) in model.groups() {
            let actors: Vec<String> = g.actors.iter().map(i64::to_string).collect();
            let (tx, gp) = (g.position.transaction_id, g.position.global_position);
            let (place_tx, place_gp) = (place.transaction_id, place.global_position);
            writeln!(
                rows,
                "{}\t{}\t{}\t{}\t{}\t{}\t{{{}}}\t{tx}\t{gp}\t{}\t{place_tx}\t{place_gp}\t{}",
                g.recipient,
                copy_text(&g.group),
                g.kind.name(),
                nullable(g.post),
                nullable(g.comment),
                g.count,
                actors.join(","),
                copy_timestamp(g.at),
                is_filtered(&g.group),
            )
            .expect("rows in memory");
        }
        let mut rows = out.table("notify_comments (post, n, author, post_author)");
        for ((post, n), (author, post_author)) in &model.comments {
            writeln!(rows, "{post}\t{n}\t{author}\t{post_author}").expect("rows in memory");
        }
        let mut rows = out.table("notify_mutes (muter, muted, until)");
        for ((muter, muted), until) in &model.mutes {
            let until = copy_nullable_timestamp(*until);
            writeln!(rows, "{muter}\t{muted}\t{until}").expect("rows in memory");
        }
        let mut rows = out.table("notify_watchers (author, watcher)");
        for (author, watcher) in &model.watchers {
            writeln!(rows, "{author}\t{watcher}").expect("rows in memory");
        }
        let mut rows = out.table("notify_policies (user_id, not_following, not_followers)");
        for (user, policy) in &model.policies {
            let (a, b) = (policy.not_following.as_str(), policy.not_followers.as_str());
            writeln!(rows, "{user}\t{a}\t{b}").expect("rows in memory");
        }
        Ok(())
    }
}

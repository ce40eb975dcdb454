//! The notifications folded in memory from [`Change`]s: what the SQL projector must hold,
//! row for row. `verify` folds the log with it; it is written from the rules (the module docs
//! of `super`), not from the projector's SQL.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use relations_domain::PostId;
use relations_store::log::RecordedEvent;
use relations_store::LogPosition;
use uuid::Uuid;

use super::change::{admits, comment_causes, Cause, Change, ChangeReader, GroupDelta};
use crate::error::ProjectionError;

/// Every live notification, comment author and mute, as folded.
#[derive(Debug, Default)]
pub struct Model {
    reader: ChangeReader,
    /// Live causes by (recipient, cause key).
    pub causes: BTreeMap<(i64, String), Cause>,
    /// Each comment's (author, post author).
    pub comments: BTreeMap<(Uuid, i32), (i64, i64)>,
    /// Mutes: (muter, muted) → until.
    pub mutes: BTreeMap<(i64, i64), Option<DateTime<Utc>>>,
    /// Each live group's place (the last cause that joined it) and its live causes.
    pub places: BTreeMap<(i64, String), (LogPosition, usize)>,
}

impl Model {
    /// Folds the next event, in log order.
    pub fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
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
        let place = self
            .places
            .entry((cause.recipient, cause.group.clone()))
            .or_insert((cause.position, 0));
        place.0 = place.0.max(cause.position);
        place.1 += 1;
        self.causes
            .insert((cause.recipient, cause.cause.clone()), cause);
    }

    /// Removes the causes `gone` picks; a group left without any loses its place.
    fn remove(&mut self, gone: impl Fn(&Cause) -> bool) {
        let keys: Vec<(i64, String)> = self
            .causes
            .iter()
            .filter(|(_, c)| gone(c))
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            self.forget(&key);
        }
    }

    /// Removes one cause, if live.
    fn forget(&mut self, key: &(i64, String)) {
        let Some(cause) = self.causes.remove(key) else {
            return;
        };
        let group = (cause.recipient, cause.group);
        if let Some(place) = self.places.get_mut(&group) {
            place.1 -= 1;
            if place.1 == 0 {
                self.places.remove(&group);
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
            Change::Remove { recipient, cause } => self.forget(&(recipient, cause)),
            Change::CommentDeleted { post, n } => {
                let key = format!("comment:{}.{n}", PostId::from_uuid(post));
                self.remove(|c| c.post == Some(post) && (c.cause == key || c.comment == Some(n)));
            }
            Change::PostDeleted { post } => self.remove(|c| c.post == Some(post)),
            Change::Block(a, b) => self
                .remove(|c| (c.recipient, c.actor) == (a, b) || (c.recipient, c.actor) == (b, a)),
            Change::Mute {
                muter,
                muted,
                until,
            } => {
                self.mutes.insert((muter, muted), until);
                self.remove(|c| (c.recipient, c.actor) == (muter, muted));
            }
            Change::Unmute { muter, muted } => {
                self.mutes.remove(&(muter, muted));
            }
            Change::Erase(user) => {
                let posts: BTreeSet<Uuid> = self
                    .comments
                    .iter()
                    .filter(|(_, (_, post_author))| *post_author == user)
                    .map(|((post, _), _)| *post)
                    .collect();
                self.remove(|c| {
                    c.recipient == user
                        || c.actor == user
                        || c.post.is_some_and(|p| posts.contains(&p))
                });
                self.comments
                    .retain(|_, (author, post_author)| *author != user && *post_author != user);
                self.mutes
                    .retain(|(muter, muted), _| *muter != user && *muted != user);
            }
        }
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
                let place = self.places.get(&(g.recipient, g.group.clone()));
                let place = place.map_or(g.position, |p| p.0);
                (g, place)
            })
            .collect()
    }
}

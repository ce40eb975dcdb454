//! The relation fold, written once: what each relation event does to the relations between two
//! users. Projector `following`'s batches, its bulk rebuild, `verify` and the in-memory replica
//! all fold with [`fold`], each into its own tables ([`RelationTables`]: SQL rows touched by a
//! batch, maps in memory, the replica's nodes).
//!
//! The rules it keeps: a follow, block or follow request begins at its event's time unless it
//! holds already (the first `since` stands), and ends when its ending event comes, if it holds;
//! a mute replaces any mute of the same pair (its own `since` and `until`), and an unmute lifts
//! it; a follow moves the counters only when it changed the follows, and moves both users'
//! friends when the other way holds too. A user's erasure (`UserErased`, [`erase`]) ends every
//! edge of theirs both ways, each as its own ending event would, and lifts every mute of or by
//! them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use relations_domain::{FollowPrefs, LogEvent, RelationEvent};
use relations_store::log::RecordedEvent;

/// A directed pair of users `(from, to)`, by id.
pub type UserPair = (i64, i64);

/// A user's follow counters: `(following, followers, friends)`.
pub type FollowCounts = (i64, i64, i64);

/// The kinds of directed edge between two users. The numbers are stable: projector `history`
/// stores them (`rm_relation_history.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(i16)]
pub enum EdgeKind {
    /// `from` follows `to`.
    Follow = 0,
    /// `from` blocks `to`.
    Block = 1,
    /// `from` asks to follow `to` (pending).
    Request = 2,
}

/// One table per kind of edge, each found by its kind: how every [`RelationTables`] keeps its
/// follows, blocks and requests.
#[derive(Debug, Default)]
pub struct EdgeTables<T> {
    /// Follows: (follower, followee).
    pub follows: T,
    /// Blocks: (blocker, blocked).
    pub blocks: T,
    /// Pending follow requests: (requester, target).
    pub requests: T,
}

impl<T> EdgeTables<T> {
    /// Every edge `user` is on, either end, of every kind; `pairs` lists a table's pairs.
    pub fn touching<'a, I>(
        &'a self,
        user: i64,
        pairs: impl Fn(&'a T) -> I,
    ) -> Vec<(EdgeKind, UserPair)>
    where
        I: Iterator<Item = &'a UserPair>,
    {
        [
            (EdgeKind::Follow, &self.follows),
            (EdgeKind::Block, &self.blocks),
            (EdgeKind::Request, &self.requests),
        ]
        .into_iter()
        .flat_map(|(kind, table)| {
            pairs(table)
                .filter(move |&&(a, b)| a == user || b == user)
                .map(move |&pair| (kind, pair))
        })
        .collect()
    }

    /// The table of edges of `kind`.
    pub fn of(&mut self, kind: EdgeKind) -> &mut T {
        match kind {
            EdgeKind::Follow => &mut self.follows,
            EdgeKind::Block => &mut self.blocks,
            EdgeKind::Request => &mut self.requests,
        }
    }
}

/// What one relation event changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationChange {
    /// The edge begins at the time, unless it holds already.
    Begin(EdgeKind, UserPair, DateTime<Utc>),
    /// The edge ends, if it holds.
    End(EdgeKind, UserPair),
    /// `from` mutes `to` since the time, until the time (`None`: for good), replacing any mute.
    Mute(UserPair, DateTime<Utc>, Option<DateTime<Utc>>),
    /// `from`'s mute on `to` is lifted.
    Unmute(UserPair),
    /// `from`'s follow (or request) of `to` has these preferences (issue 44); they end with
    /// it.
    Prefs(UserPair, FollowPrefs),
    /// `from` dismissed `to` from their suggestions at the time, for good (issue 46): kept
    /// until an erasure of either.
    Dismiss(UserPair, DateTime<Utc>),
}

impl RelationChange {
    /// What a log event changes, if it is a relation event.
    pub fn of_recorded(event: &RecordedEvent) -> Option<Self> {
        match &event.event {
            LogEvent::Relation(relation) => Some(Self::of(relation, event.occurred_at)),
            LogEvent::Post(_)
            | LogEvent::Thread(_)
            | LogEvent::Like(_)
            | LogEvent::Repost(_)
            | LogEvent::Bookmark(_)
            | LogEvent::Lists(_)
            | LogEvent::Filters(_)
            | LogEvent::Account(_) => None,
        }
    }

    /// What `event`, which happened `at`, changes.
    pub fn of(event: &RelationEvent, at: DateTime<Utc>) -> Self {
        use EdgeKind::{Block, Follow, Request};
        let pair = |a: relations_domain::UserId, b: relations_domain::UserId| (a.get(), b.get());
        match *event {
            RelationEvent::Followed { follower, followee } => {
                Self::Begin(Follow, pair(follower, followee), at)
            }
            RelationEvent::Unfollowed {
                follower, followee, ..
            } => Self::End(Follow, pair(follower, followee)),
            RelationEvent::Blocked { blocker, blocked } => {
                Self::Begin(Block, pair(blocker, blocked), at)
            }
            RelationEvent::Unblocked { blocker, blocked } => {
                Self::End(Block, pair(blocker, blocked))
            }
            RelationEvent::Muted {
                muter,
                muted,
                until,
            } => Self::Mute(pair(muter, muted), at, until),
            RelationEvent::Unmuted { muter, muted } => Self::Unmute(pair(muter, muted)),
            RelationEvent::FollowRequested {
                requester, target, ..
            } => Self::Begin(Request, pair(requester, target), at),
            RelationEvent::FollowRequestApproved { requester, target }
            | RelationEvent::FollowRequestRejected {
                requester, target, ..
            }
            | RelationEvent::FollowRequestWithdrawn {
                requester, target, ..
            } => Self::End(Request, pair(requester, target)),
            RelationEvent::FollowPreferencesChanged {
                follower,
                followee,
                show_reposts,
                notify,
            } => Self::Prefs(
                pair(follower, followee),
                FollowPrefs {
                    show_reposts,
                    notify,
                },
            ),
            RelationEvent::SuggestionDismissed { user, dismissed } => {
                Self::Dismiss(pair(user, dismissed), at)
            }
        }
    }
}

/// The request `event` approves, `(requester, target)`, if it is an approval: the one thing
/// about a relation event that [`RelationChange`] does not say (an approval ends the request
/// as a rejection does; projector `notifications` tells the requester).
pub fn approval(event: &RelationEvent) -> Option<UserPair> {
    match *event {
        RelationEvent::FollowRequestApproved { requester, target } => {
            Some((requester.get(), target.get()))
        }
        RelationEvent::Followed { .. }
        | RelationEvent::Unfollowed { .. }
        | RelationEvent::Blocked { .. }
        | RelationEvent::Unblocked { .. }
        | RelationEvent::FollowRequested { .. }
        | RelationEvent::FollowRequestRejected { .. }
        | RelationEvent::FollowRequestWithdrawn { .. }
        | RelationEvent::Muted { .. }
        | RelationEvent::Unmuted { .. }
        | RelationEvent::FollowPreferencesChanged { .. }
        | RelationEvent::SuggestionDismissed { .. } => None,
    }
}

/// A follow that began or ended, as the counters see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowCount {
    /// Who follows.
    pub follower: i64,
    /// Whom.
    pub followee: i64,
    /// `1` when the follow began, `-1` when it ended.
    pub by: i64,
    /// Whether the followee follows back: a friendship began or ended with it.
    pub mutual: bool,
}

impl FollowCount {
    /// Adds this change to per-user counters.
    pub fn add_to(self, counts: &mut BTreeMap<i64, FollowCounts>) {
        let friends = if self.mutual { self.by } else { 0 };
        let follower = counts.entry(self.follower).or_default();
        follower.0 += self.by;
        follower.2 += friends;
        let followee = counts.entry(self.followee).or_default();
        followee.1 += self.by;
        followee.2 += friends;
    }
}

/// The tables a relation fold writes to; each reader of the log keeps its own.
pub trait RelationTables {
    /// Adds the edge unless it is there; whether it was added.
    fn begin(&mut self, kind: EdgeKind, pair: UserPair, since: DateTime<Utc>) -> bool;
    /// Removes the edge if it is there; whether it was.
    fn end(&mut self, kind: EdgeKind, pair: UserPair) -> bool;
    /// Whether `pair.0` follows `pair.1`.
    fn follows(&self, pair: UserPair) -> bool;
    /// Sets the mute of `pair`, replacing any.
    fn mute(&mut self, pair: UserPair, since: DateTime<Utc>, until: Option<DateTime<Utc>>);
    /// Lifts the mute of `pair`, if any.
    fn unmute(&mut self, pair: UserPair);
    /// Keeps the preferences of `pair`'s follow or request (the defaults: none kept); tables
    /// that answer none keep nothing. The fold gives the defaults when the follow or the
    /// request ends.
    fn prefs(&mut self, _pair: UserPair, _prefs: FollowPrefs) {}
    /// Keeps `pair.0`'s dismissal of `pair.1` (since the time) unless it is kept; tables that
    /// answer none keep nothing.
    fn dismiss(&mut self, _pair: UserPair, _since: DateTime<Utc>) {}
}

/// Tables that can list a user's edges: what a fold in memory keeps, so that it can fold an
/// erasure (the SQL projector folds one set-based instead, with the same result).
pub trait ErasableTables: RelationTables {
    /// Every edge `user` is on, either end, of every kind.
    fn edges_of(&self, user: i64) -> Vec<(EdgeKind, UserPair)>;
    /// Lifts every mute by or of `user`, and forgets every dismissal by or of them.
    fn lift_all(&mut self, user: i64);
}

/// Folds `user`'s erasure into `tables`: every edge of theirs ends, both ways, each as its own
/// ending event would, and every mute by or of them is lifted; the follows it ended, for the
/// counters. Every dismissal by or of them goes with the mutes. Nothing of the user is left, so
/// folding it again changes nothing.
pub fn erase(tables: &mut impl ErasableTables, user: i64) -> Vec<FollowCount> {
    let mut edges = tables.edges_of(user);
    // One order for every reader (follows before others, then by pair), so the counters'
    // friend changes come out the same.
    edges.sort_unstable();
    let ended = edges
        .into_iter()
        .filter_map(|(kind, pair)| fold(tables, RelationChange::End(kind, pair)))
        .collect();
    tables.lift_all(user);
    ended
}

/// Folds `change` into `tables`; the follow it began or ended, for the counters.
pub fn fold(tables: &mut impl RelationTables, change: RelationChange) -> Option<FollowCount> {
    let (pair, by) = match change {
        RelationChange::Begin(kind, pair, since) => {
            let began = tables.begin(kind, pair, since);
            (pair, (began && kind == EdgeKind::Follow).then_some(1)?)
        }
        RelationChange::End(kind, pair) => {
            let ended = tables.end(kind, pair);
            // A follow's or a request's preferences end with it (issue 44).
            if ended && kind != EdgeKind::Block {
                tables.prefs(pair, FollowPrefs::default());
            }
            (pair, (ended && kind == EdgeKind::Follow).then_some(-1)?)
        }
        RelationChange::Mute(pair, since, until) => {
            tables.mute(pair, since, until);
            return None;
        }
        RelationChange::Unmute(pair) => {
            tables.unmute(pair);
            return None;
        }
        RelationChange::Prefs(pair, prefs) => {
            tables.prefs(pair, prefs);
            return None;
        }
        RelationChange::Dismiss(pair, since) => {
            tables.dismiss(pair, since);
            return None;
        }
    };
    Some(FollowCount {
        follower: pair.0,
        followee: pair.1,
        by,
        mutual: tables.follows((pair.1, pair.0)),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use super::*;

    /// Tables as plain maps, to state the rules against.
    #[derive(Default)]
    struct Maps {
        edges: HashMap<(EdgeKind, UserPair), DateTime<Utc>>,
        mutes: HashMap<UserPair, (DateTime<Utc>, Option<DateTime<Utc>>)>,
        dismissals: HashMap<UserPair, DateTime<Utc>>,
    }

    impl RelationTables for Maps {
        fn begin(&mut self, kind: EdgeKind, pair: UserPair, since: DateTime<Utc>) -> bool {
            let new = !self.edges.contains_key(&(kind, pair));
            self.edges.entry((kind, pair)).or_insert(since);
            new
        }
        fn end(&mut self, kind: EdgeKind, pair: UserPair) -> bool {
            self.edges.remove(&(kind, pair)).is_some()
        }
        fn follows(&self, pair: UserPair) -> bool {
            self.edges.contains_key(&(EdgeKind::Follow, pair))
        }
        fn mute(&mut self, pair: UserPair, since: DateTime<Utc>, until: Option<DateTime<Utc>>) {
            self.mutes.insert(pair, (since, until));
        }
        fn unmute(&mut self, pair: UserPair) {
            self.mutes.remove(&pair);
        }
        fn dismiss(&mut self, pair: UserPair, since: DateTime<Utc>) {
            self.dismissals.entry(pair).or_insert(since);
        }
    }

    impl ErasableTables for Maps {
        fn edges_of(&self, user: i64) -> Vec<(EdgeKind, UserPair)> {
            let on = |&&(_, (a, b)): &&(EdgeKind, UserPair)| a == user || b == user;
            self.edges.keys().filter(on).copied().collect()
        }
        fn lift_all(&mut self, user: i64) {
            self.mutes.retain(|&(a, b), _| a != user && b != user);
            self.dismissals.retain(|&(a, b), _| a != user && b != user);
        }
    }

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(s, 0).unwrap()
    }

    #[test]
    fn a_follow_counts_once_and_friends_count_both_ways() {
        let mut t = Maps::default();
        let mut counts = BTreeMap::new();
        let changes = [
            RelationChange::Begin(EdgeKind::Follow, (1, 2), at(1)),
            RelationChange::Begin(EdgeKind::Follow, (1, 2), at(2)),
            RelationChange::Begin(EdgeKind::Follow, (2, 1), at(3)),
            RelationChange::End(EdgeKind::Follow, (3, 1)),
        ];
        for change in changes {
            if let Some(count) = fold(&mut t, change) {
                count.add_to(&mut counts);
            }
        }
        assert_eq!(counts[&1], (1, 1, 1));
        assert_eq!(counts[&2], (1, 1, 1));
        assert_eq!(
            t.edges[&(EdgeKind::Follow, (1, 2))],
            at(1),
            "the first since stands"
        );
        let ended = fold(&mut t, RelationChange::End(EdgeKind::Follow, (1, 2)));
        assert_eq!(
            ended,
            Some(FollowCount {
                follower: 1,
                followee: 2,
                by: -1,
                mutual: true
            })
        );
    }

    #[test]
    fn blocks_requests_and_mutes_move_no_counter() {
        let mut t = Maps::default();
        for change in [
            RelationChange::Begin(EdgeKind::Block, (1, 2), at(1)),
            RelationChange::Begin(EdgeKind::Request, (3, 1), at(1)),
            RelationChange::Mute((1, 4), at(1), None),
            RelationChange::Mute((1, 4), at(2), Some(at(9))),
            RelationChange::End(EdgeKind::Request, (3, 1)),
            RelationChange::Dismiss((1, 5), at(3)),
            RelationChange::Dismiss((1, 5), at(4)),
        ] {
            assert_eq!(fold(&mut t, change), None);
        }
        assert_eq!(t.dismissals[&(1, 5)], at(3), "the first dismissal stands");
        let kinds: BTreeSet<_> = t.edges.keys().map(|k| format!("{k:?}")).collect();
        assert_eq!(kinds.len(), 1, "only the block is left");
        assert_eq!(t.mutes[&(1, 4)], (at(2), Some(at(9))), "a mute replaces");
    }

    #[test]
    fn an_erasure_ends_every_edge_both_ways_and_counts_each_follow_once() {
        let mut t = Maps::default();
        let mut counts = BTreeMap::new();
        for change in [
            RelationChange::Begin(EdgeKind::Follow, (1, 2), at(1)),
            RelationChange::Begin(EdgeKind::Follow, (2, 1), at(1)),
            RelationChange::Begin(EdgeKind::Follow, (3, 1), at(1)),
            RelationChange::Begin(EdgeKind::Follow, (2, 3), at(1)),
            RelationChange::Begin(EdgeKind::Block, (1, 4), at(1)),
            RelationChange::Begin(EdgeKind::Request, (5, 1), at(1)),
            RelationChange::Mute((6, 1), at(1), None),
            RelationChange::Mute((1, 6), at(1), None),
            RelationChange::Dismiss((1, 7), at(1)),
            RelationChange::Dismiss((7, 1), at(1)),
            RelationChange::Dismiss((7, 2), at(1)),
        ] {
            if let Some(count) = fold(&mut t, change) {
                count.add_to(&mut counts);
            }
        }
        for count in erase(&mut t, 1) {
            count.add_to(&mut counts);
        }
        assert_eq!(counts[&1], (0, 0, 0));
        assert_eq!(
            counts[&2],
            (1, 0, 0),
            "2 lost a follower, a followee and a friend"
        );
        assert_eq!(counts[&3], (0, 1, 0));
        assert_eq!(t.edges.len(), 1, "only 2 -> 3 is left");
        assert!(t.mutes.is_empty());
        assert_eq!(
            t.dismissals.keys().collect::<Vec<_>>(),
            vec![&(7, 2)],
            "dismissals by and of the user go, others stay"
        );
        assert!(
            erase(&mut t, 1).is_empty(),
            "a second erasure changes nothing"
        );
    }
}

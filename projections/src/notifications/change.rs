//! What each event does to notifications, written once: [`Change::of`] reads an event, and
//! [`comment_causes`], [`admits`] and [`GroupDelta`] decide the rest. The SQL projector
//! (`super`) and the fold in memory (`super::model`: `verify`'s check) both apply these.

use std::collections::HashSet;

use chrono::{DateTime, SubsecRound, Utc};
use relations_domain::{
    AccountEvent, Disposition, LikeEvent, LikeTarget, LogEvent, NotificationPolicy, PostEvent,
    PostId, RelationEvent, RepostEvent, ThreadEvent,
};
use relations_store::log::RecordedEvent;
use relations_store::LogPosition;
use uuid::Uuid;

use crate::engagement::fold::EngagementChange;
use crate::error::ProjectionError;
use crate::relations::fold::{approval, EdgeKind, RelationChange};
use crate::runtime::projector::erased_user;

/// The notification types, as the API names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// Someone followed you.
    Followed,
    /// Someone asked to follow you (pending).
    FollowRequest,
    /// Your request was approved.
    FollowRequestApproved,
    /// Someone liked your post.
    LikedPost,
    /// Someone liked your comment.
    LikedComment,
    /// Someone commented on your post.
    Commented,
    /// Someone replied to your comment.
    Replied,
    /// Someone reposted your post (issue 44).
    Reposted,
    /// Someone you follow with `notify` posted (issue 44).
    Posted,
    /// Someone quoted your post (issue 44).
    Quoted,
}

impl Kind {
    /// Every type.
    pub const ALL: [Kind; 10] = [
        Kind::Followed,
        Kind::FollowRequest,
        Kind::FollowRequestApproved,
        Kind::LikedPost,
        Kind::LikedComment,
        Kind::Commented,
        Kind::Replied,
        Kind::Reposted,
        Kind::Posted,
        Kind::Quoted,
    ];

    /// The type's name (API and `kind` columns).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Followed => "followed",
            Kind::FollowRequest => "follow_request",
            Kind::FollowRequestApproved => "follow_request_approved",
            Kind::LikedPost => "liked_post",
            Kind::LikedComment => "liked_comment",
            Kind::Commented => "commented",
            Kind::Replied => "replied",
            Kind::Reposted => "reposted",
            Kind::Posted => "posted",
            Kind::Quoted => "quoted",
        }
    }

    /// The type called `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The type of the group keyed `group`: every group key begins with its type's name
    /// (`followed:{day}`, `liked_post:{post}`, ...), which is why no reader needs a cause's
    /// stored `kind`.
    pub fn of_group(group: &str) -> Option<Self> {
        Self::parse(group.split_once(':').map_or(group, |(kind, _)| kind))
    }
}

/// One notification: what caused it, for whom, in which group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cause {
    /// Who is notified.
    pub recipient: i64,
    /// The cause's key, unique per recipient (the module docs of `super` list them).
    pub cause: String,
    /// The group's key.
    pub group: String,
    /// The type.
    pub kind: Kind,
    /// Who did it.
    pub actor: i64,
    /// The post it is about (likes, comments, replies).
    pub post: Option<Uuid>,
    /// The comment it is about (a comment's likes, replies to it).
    pub comment: Option<i32>,
    /// Where its event sits in the log.
    pub position: LogPosition,
    /// When it happened.
    pub at: DateTime<Utc>,
}

/// A comment written, as notifications need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewComment {
    /// The post.
    pub post: Uuid,
    /// Its number in the thread.
    pub n: i32,
    /// Who wrote it.
    pub author: i64,
    /// The post's author.
    pub post_author: i64,
    /// The comment it replies to.
    pub parent: Option<i32>,
    /// Where it sits in the log.
    pub position: LogPosition,
    /// When.
    pub at: DateTime<Utc>,
}

/// What one event changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A notification, unless its actor is its recipient or the recipient mutes the actor.
    Add(Cause),
    /// A comment: remembered (a reply to it notifies its author) and notifying
    /// ([`comment_causes`], once its parent's author is known).
    Comment(NewComment),
    /// The notification `cause` of `recipient` by `actor` goes (an unlike, an unfollow, a
    /// request's end, a quote's detaching).
    Remove {
        /// Whose.
        recipient: i64,
        /// Who caused it (a removal finds the cause through its actor).
        actor: i64,
        /// Which ([`Cause::cause`]).
        cause: String,
    },
    /// A comment was deleted: its own notifications go, and those about it.
    CommentDeleted {
        /// The post.
        post: Uuid,
        /// The comment's number.
        n: i32,
    },
    /// A post was deleted: every notification about it goes.
    PostDeleted {
        /// The post.
        post: Uuid,
    },
    /// A block: every notification between the two goes, both ways.
    Block(i64, i64),
    /// `muter` mutes `muted` until the time (`None`: for good): the muted user's
    /// notifications to the muter go, and none come while the mute lasts.
    Mute {
        /// Who mutes.
        muter: i64,
        /// Whom.
        muted: i64,
        /// When it ends by itself.
        until: Option<DateTime<Utc>>,
    },
    /// The mute is lifted.
    Unmute {
        /// Who muted.
        muter: i64,
        /// Whom.
        muted: i64,
    },
    /// The user was erased: every notification to or from them, or about their posts, goes.
    Erase(i64),
    /// A post was published (issue 44): each follower who asked to be notified is, once.
    Posted(NewPost),
    /// `user`'s notification policy is now `policy` (issue 47): it disposes of the causes that
    /// come after it.
    Policy {
        /// Whose.
        user: i64,
        /// As it is now.
        policy: NotificationPolicy,
    },
    /// `watcher` follows `author` with `notify` (`true`), or no more (an unfollow, or the
    /// preference switched off).
    Watch {
        /// The follower.
        watcher: i64,
        /// The followee.
        author: i64,
        /// Whether each new post of the followee notifies the follower.
        on: bool,
    },
}

/// A post published, as notifications need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewPost {
    /// The post.
    pub post: Uuid,
    /// Its author.
    pub author: i64,
    /// Where it sits in the log.
    pub position: LogPosition,
    /// When.
    pub at: DateTime<Utc>,
}

/// The cause of a `quoted` notification: the quoting post.
fn quote_cause(post: PostId) -> String {
    format!("quoted:{post}")
}

impl NewPost {
    /// The `quoted` notification of the quoted post's author, `recipient` (one per quoting
    /// post, never grouped; its `post` is the quoting post).
    fn quoted(&self, recipient: i64) -> Cause {
        let key = quote_cause(PostId::from_uuid(self.post));
        Cause {
            recipient,
            cause: key.clone(),
            group: key,
            kind: Kind::Quoted,
            actor: self.author,
            post: Some(self.post),
            comment: None,
            position: self.position,
            at: self.at,
        }
    }

    /// The `posted` notification of `watcher` (one per post, never grouped).
    pub fn cause(&self, watcher: i64) -> Cause {
        let key = format!("posted:{}", PostId::from_uuid(self.post));
        Cause {
            recipient: watcher,
            cause: key.clone(),
            group: key,
            kind: Kind::Posted,
            actor: self.author,
            post: Some(self.post),
            comment: None,
            position: self.position,
            at: self.at,
        }
    }
}

/// Reads events into changes. It remembers the approvals of the transaction being read: the
/// `Followed` an approval brings in the same transaction notifies nobody (the followed user
/// approved it themselves; the requester is told by `follow_request_approved`).
#[derive(Debug, Default)]
pub struct ChangeReader {
    approved: HashSet<(i64, i64)>,
    transaction: i64,
}

impl ChangeReader {
    /// The changes `event` makes, in order.
    pub fn changes(&mut self, event: &RecordedEvent) -> Result<Vec<Change>, ProjectionError> {
        if event.position.transaction_id != self.transaction {
            self.transaction = event.position.transaction_id;
            self.approved.clear();
        }
        if let Some(user) = erased_user(event) {
            return Ok(vec![Change::Erase(user)]);
        }
        let (position, at) = (event.position, event.occurred_at);
        Ok(match &event.event {
            LogEvent::Relation(relation) => self.relation(*relation, position, at),
            LogEvent::Like(liked) => vec![like(*liked, position, at)],
            LogEvent::Repost(reposted) => vec![repost(*reposted, position, at)],
            // Bookmarks are private (issue 46): nobody is notified of one.
            LogEvent::Bookmark(_) => vec![],
            // Lists are private (issue 46): nobody is notified of being listed.
            LogEvent::Lists(_) | LogEvent::Filters(_) => vec![],
            LogEvent::Thread(threaded) => thread(threaded, position, at),
            // A deletion takes every notification about the post: a quote's among them.
            LogEvent::Post(PostEvent::PostDeleted { post_id, .. }) => vec![Change::PostDeleted {
                post: post_id.uuid(),
            }],
            LogEvent::Post(
                published @ PostEvent::PostPublished {
                    post_id, author, ..
                },
            ) => {
                let post = NewPost {
                    post: post_id.uuid(),
                    author: author.get(),
                    position,
                    at,
                };
                let quoted = published.quote().filter(|q| q.author != *author);
                let quoted = quoted.map(|q| Change::Add(post.quoted(q.author.get())));
                [Change::Posted(post)].into_iter().chain(quoted).collect()
            }
            LogEvent::Post(PostEvent::QuoteDetached {
                post_id,
                author,
                quote_author,
                ..
            }) => vec![Change::Remove {
                recipient: quote_author.get(),
                actor: author.get(),
                cause: quote_cause(*post_id),
            }],
            LogEvent::Post(
                PostEvent::QuotePolicyChanged { .. } | PostEvent::CommentPolicyChanged { .. },
            ) => vec![],
            LogEvent::Account(AccountEvent::NotificationPolicyChanged {
                user,
                not_following,
                not_followers,
            }) => vec![Change::Policy {
                user: user.get(),
                policy: NotificationPolicy {
                    not_following: *not_following,
                    not_followers: *not_followers,
                },
            }],
            // An erasure is handled above; no other account event notifies anybody.
            LogEvent::Account(_) => vec![],
        })
    }

    /// A relation event, as the one relation fold reads it ([`RelationChange::of`]).
    fn relation(
        &mut self,
        event: RelationEvent,
        position: LogPosition,
        at: DateTime<Utc>,
    ) -> Vec<Change> {
        let day = at.format("%Y-%m-%d");
        let add = |kind: Kind, recipient: i64, actor: i64, cause: String| {
            Change::Add(Cause {
                recipient,
                cause,
                group: format!("{}:{day}", kind.name()),
                kind,
                actor,
                post: None,
                comment: None,
                position,
                at,
            })
        };
        if let Some((requester, target)) = approval(&event) {
            self.approved.insert((requester, target));
            return vec![
                request_ended(requester, target),
                add(
                    Kind::FollowRequestApproved,
                    requester,
                    target,
                    format!("approved:{target}:{position}"),
                ),
            ];
        }
        match RelationChange::of(&event, at) {
            RelationChange::Begin(EdgeKind::Follow, (follower, followee), _) => {
                // Once: a later follow of the pair in the same transaction is a follow.
                match self.approved.remove(&(follower, followee)) {
                    true => vec![],
                    false => vec![add(
                        Kind::Followed,
                        followee,
                        follower,
                        format!("follow:{follower}"),
                    )],
                }
            }
            RelationChange::End(EdgeKind::Follow, (follower, followee)) => {
                unfollowed(follower, followee)
            }
            RelationChange::Begin(EdgeKind::Request, (requester, target), _) => vec![add(
                Kind::FollowRequest,
                target,
                requester,
                format!("request:{requester}"),
            )],
            RelationChange::End(EdgeKind::Request, (requester, target)) => {
                vec![request_ended(requester, target)]
            }
            RelationChange::Begin(EdgeKind::Block, (blocker, blocked), _) => {
                vec![Change::Block(blocker, blocked)]
            }
            RelationChange::End(EdgeKind::Block, _) => vec![],
            RelationChange::Mute((muter, muted), _, until) => vec![Change::Mute {
                muter,
                muted,
                // As PostgreSQL keeps it (microseconds), so every fold compares the same end.
                until: until.map(|u| u.trunc_subsecs(6)),
            }],
            RelationChange::Unmute((muter, muted)) => vec![Change::Unmute { muter, muted }],
            RelationChange::Prefs((watcher, author), prefs) => vec![Change::Watch {
                watcher,
                author,
                on: prefs.notify,
            }],
            // A dismissal is the dismisser's own business: nobody is told.
            RelationChange::Dismiss(..) => vec![],
        }
    }
}

/// A follow's end: its `followed` notification goes, and so does its `notify`.
fn unfollowed(follower: i64, followee: i64) -> Vec<Change> {
    vec![
        Change::Remove {
            recipient: followee,
            actor: follower,
            cause: format!("follow:{follower}"),
        },
        Change::Watch {
            watcher: follower,
            author: followee,
            on: false,
        },
    ]
}

fn request_ended(requester: i64, target: i64) -> Change {
    Change::Remove {
        recipient: target,
        actor: requester,
        cause: format!("request:{requester}"),
    }
}

fn like(event: LikeEvent, position: LogPosition, at: DateTime<Utc>) -> Change {
    let (user, target, author, liked) = event.parts();
    let cause = format!("like:{target}:{user}");
    if !liked {
        return Change::Remove {
            recipient: author.get(),
            actor: user.get(),
            cause,
        };
    }
    let (kind, group, post, comment) = match target {
        LikeTarget::Post(post) => (
            Kind::LikedPost,
            format!("liked_post:{post}"),
            post.uuid(),
            None,
        ),
        LikeTarget::Comment(c) => (
            Kind::LikedComment,
            format!("liked_comment:{c}"),
            c.post.uuid(),
            Some(c.n as i32),
        ),
    };
    Change::Add(Cause {
        recipient: author.get(),
        cause,
        group,
        kind,
        actor: user.get(),
        post: Some(post),
        comment,
        position,
        at,
    })
}

/// A repost notifies the post's author (`reposted`, grouped per post); an unrepost takes it
/// back (issue 44).
fn repost(event: RepostEvent, position: LogPosition, at: DateTime<Utc>) -> Change {
    let (user, post, author, reposted) = event.parts();
    let cause = format!("repost:{post}:{user}");
    if !reposted {
        return Change::Remove {
            recipient: author.get(),
            actor: user.get(),
            cause,
        };
    }
    Change::Add(Cause {
        recipient: author.get(),
        cause,
        group: format!("reposted:{post}"),
        kind: Kind::Reposted,
        actor: user.get(),
        post: Some(post.uuid()),
        comment: None,
        position,
        at,
    })
}

/// A thread event's change, read as the engagement fold reads it.
fn thread(event: &ThreadEvent, position: LogPosition, at: DateTime<Utc>) -> Vec<Change> {
    match EngagementChange::of_thread(event) {
        EngagementChange::Commented(c) => vec![Change::Comment(NewComment {
            post: c.key.0,
            n: c.key.1,
            author: c.author,
            post_author: c.post_author,
            parent: c.parent,
            position,
            at,
        })],
        EngagementChange::Uncommented((post, n)) => vec![Change::CommentDeleted { post, n }],
        // Pins notify nobody; a thread event is no like, repost, bookmark, quote or erasure.
        EngagementChange::Pinned(..)
        | EngagementChange::Like(_)
        | EngagementChange::Repost(_)
        | EngagementChange::Bookmark(_)
        | EngagementChange::Quoted(_)
        | EngagementChange::Unquoted(_)
        | EngagementChange::Erased(_) => vec![],
    }
}

/// The notifications a comment makes, given its parent's author (for a reply): a reply
/// notifies the parent comment's author (`replied`, grouped per parent); every comment
/// notifies the post's author (`commented`, grouped per post), except a reply to the post
/// author's own comment, which notifies them once, as `replied`. Nobody is notified of their
/// own comment.
pub fn comment_causes(comment: &NewComment, parent_author: Option<i64>) -> Vec<Cause> {
    let post_id = relations_domain::PostId::from_uuid(comment.post);
    let make = |recipient: i64, kind: Kind, group: String, about: Option<i32>| Cause {
        recipient,
        cause: format!("comment:{post_id}.{}", comment.n),
        group,
        kind,
        actor: comment.author,
        post: Some(comment.post),
        comment: about,
        position: comment.position,
        at: comment.at,
    };
    let mut causes = Vec::new();
    if let (Some(parent), Some(parent_author)) = (comment.parent, parent_author) {
        causes.push(make(
            parent_author,
            Kind::Replied,
            format!("replied:{post_id}.{parent}"),
            Some(parent),
        ));
    }
    if parent_author.is_none() || parent_author != Some(comment.post_author) {
        causes.push(make(
            comment.post_author,
            Kind::Commented,
            format!("commented:{post_id}"),
            None,
        ));
    }
    causes.retain(|c| c.recipient != c.actor);
    causes
}

/// Whether a cause is kept: never one's own action, never from a user the recipient mutes at
/// the cause's time (`mute`: the recipient's mute of the actor, if any, with its end).
pub fn admits(cause: &Cause, mute: Option<Option<DateTime<Utc>>>) -> bool {
    let muted = match mute {
        None => false,
        Some(None) => true,
        Some(Some(until)) => until > cause.at,
    };
    cause.recipient != cause.actor && !muted
}

/// What ends a filtered notification's group key (issue 47): a filtered cause joins a group of
/// its own, beside the one it would have joined, listed only at `?filtered=true`. The key
/// still begins with its type ([`Kind::of_group`]).
pub const FILTERED: &str = "|filtered";

/// Whether `group` is a filtered notification's group.
pub fn is_filtered(group: &str) -> bool {
    group.ends_with(FILTERED)
}

/// `cause` as its recipient's notification `policy` disposes of it (issue 47): kept, kept in
/// the filtered list, or (`None`) dropped. It is judged against whether the recipient
/// `follows` its actor and is `followed_by` them at the cause's own event, in log order (a
/// follow is judged as made); an approval of the recipient's request counts as the follow it
/// brings (its `Followed` is the next event of the pair, in the same transaction).
pub fn disposed(
    mut cause: Cause,
    policy: &NotificationPolicy,
    follows: bool,
    followed_by: bool,
) -> Option<Cause> {
    let follows = follows || cause.kind == Kind::FollowRequestApproved;
    match policy.judge(follows, followed_by) {
        Disposition::Accept => Some(cause),
        Disposition::Filter => {
            cause.group.push_str(FILTERED);
            Some(cause)
        }
        Disposition::Drop => None,
    }
}

/// A group as new causes change it: how many joined, the newest distinct actors (newest
/// first, at most [`ACTORS`]), and the newest cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDelta {
    /// Who is notified.
    pub recipient: i64,
    /// The group's key.
    pub group: String,
    /// The type.
    pub kind: Kind,
    /// The post it is about.
    pub post: Option<Uuid>,
    /// The comment it is about.
    pub comment: Option<i32>,
    /// Causes that joined.
    pub count: i64,
    /// Their distinct actors, newest first, at most [`ACTORS`].
    pub actors: Vec<i64>,
    /// The newest cause's position.
    pub position: LogPosition,
    /// And its time.
    pub at: DateTime<Utc>,
}

/// Actors a group shows.
pub const ACTORS: usize = 5;

impl GroupDelta {
    /// The groups `causes` (in log order) make or join.
    pub fn of(causes: &[Cause]) -> Vec<GroupDelta> {
        let mut groups: std::collections::BTreeMap<(i64, &str), GroupDelta> = Default::default();
        for c in causes.iter().rev() {
            let g = groups
                .entry((c.recipient, c.group.as_str()))
                .or_insert_with(|| GroupDelta {
                    recipient: c.recipient,
                    group: c.group.clone(),
                    kind: c.kind,
                    post: c.post,
                    comment: c.comment,
                    count: 0,
                    actors: Vec::new(),
                    position: c.position,
                    at: c.at,
                });
            g.count += 1;
            if g.actors.len() < ACTORS && !g.actors.contains(&c.actor) {
                g.actors.push(c.actor);
            }
        }
        groups.into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn comment(author: i64, post_author: i64, parent: Option<i32>) -> NewComment {
        NewComment {
            post: Uuid::nil(),
            n: 2,
            author,
            post_author,
            parent,
            position: LogPosition::START,
            at: DateTime::UNIX_EPOCH,
        }
    }

    fn kinds(causes: &[Cause]) -> Vec<(i64, Kind)> {
        causes.iter().map(|c| (c.recipient, c.kind)).collect()
    }

    #[test]
    fn a_root_comment_notifies_the_post_author() {
        let causes = comment_causes(&comment(2, 1, None), None);
        assert_eq!(kinds(&causes), vec![(1, Kind::Commented)]);
        assert!(comment_causes(&comment(1, 1, None), None).is_empty());
    }

    #[test]
    fn a_reply_notifies_the_parent_author_and_the_post_author_once_each() {
        let causes = comment_causes(&comment(3, 1, Some(1)), Some(2));
        assert_eq!(
            kinds(&causes),
            vec![(2, Kind::Replied), (1, Kind::Commented)]
        );
        let to_post_author = comment_causes(&comment(3, 1, Some(1)), Some(1));
        assert_eq!(kinds(&to_post_author), vec![(1, Kind::Replied)]);
        let own_thread = comment_causes(&comment(3, 1, Some(1)), Some(3));
        assert_eq!(kinds(&own_thread), vec![(1, Kind::Commented)]);
    }

    #[test]
    fn a_mute_drops_causes_while_it_lasts() {
        let mut cause = comment_causes(&comment(2, 1, None), None).remove(0);
        assert!(admits(&cause, None));
        assert!(!admits(&cause, Some(None)));
        let end = DateTime::UNIX_EPOCH + chrono::Duration::seconds(10);
        assert!(!admits(&cause, Some(Some(end))));
        cause.at = end;
        assert!(admits(&cause, Some(Some(end))));
    }

    /// A relation event at `position` in transaction `tx`.
    fn relation_event(
        tx: i64,
        position: i64,
        event_type: &str,
        data: serde_json::Value,
    ) -> RecordedEvent {
        RecordedEvent::from_stored(
            Uuid::nil(),
            LogPosition {
                transaction_id: tx,
                global_position: position,
            },
            (relations_domain::RelationPair::TYPE, "1:2", position),
            (event_type, "1"),
            DateTime::UNIX_EPOCH,
            &serde_json::json!({ event_type: data }),
            &serde_json::json!({}),
        )
        .expect("a relation event")
    }

    fn added(changes: &[Change]) -> Vec<(i64, Kind, &str)> {
        changes
            .iter()
            .filter_map(|c| match c {
                Change::Add(c) => Some((c.recipient, c.kind, c.group.as_str())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_approvals_follow_notifies_nobody_once_and_a_later_follow_notifies() {
        let pair = serde_json::json!({ "requester": 1, "target": 2 });
        let follow = serde_json::json!({ "follower": 1, "followee": 2 });
        let unfollow = serde_json::json!({ "follower": 1, "followee": 2, "cause": "unfollow" });
        let mut reader = ChangeReader::default();
        let mut changes = Vec::new();
        for (n, (kind, data)) in [
            ("FollowRequestApproved", &pair),
            ("Followed", &follow),
            ("Unfollowed", &unfollow),
            ("Followed", &follow),
        ]
        .into_iter()
        .enumerate()
        {
            let event = relation_event(7, n as i64 + 1, kind, data.clone());
            changes.push(reader.changes(&event).unwrap());
        }
        assert_eq!(
            changes[0][0],
            Change::Remove {
                recipient: 2,
                actor: 1,
                cause: "request:1".to_owned()
            }
        );
        let day = "1970-01-01";
        let approved = format!("follow_request_approved:{day}");
        assert_eq!(
            added(&changes[0]),
            vec![(1, Kind::FollowRequestApproved, approved.as_str())]
        );
        assert!(changes[1].is_empty(), "the approval's follow");
        let followed = format!("followed:{day}");
        assert_eq!(
            added(&changes[3]),
            vec![(2, Kind::Followed, followed.as_str())]
        );
        // In another transaction, a follow of the pair notifies as any follow.
        let later = reader
            .changes(&relation_event(8, 9, "Followed", follow))
            .unwrap();
        assert_eq!(added(&later), vec![(2, Kind::Followed, followed.as_str())]);
    }

    #[test]
    fn every_cause_s_group_key_names_its_type() {
        let mut causes = comment_causes(&comment(3, 1, Some(1)), Some(2));
        causes.extend(comment_causes(&comment(3, 1, None), None));
        let post = NewPost {
            post: Uuid::nil(),
            author: 1,
            position: LogPosition::START,
            at: DateTime::UNIX_EPOCH,
        };
        causes.extend([post.cause(2), post.quoted(2)]);
        let mut reader = ChangeReader::default();
        let pair = serde_json::json!({ "requester": 1, "target": 2 });
        for (n, (kind, data)) in [
            ("FollowRequested", pair.clone()),
            ("FollowRequestApproved", pair),
            (
                "Followed",
                serde_json::json!({ "follower": 2, "followee": 1 }),
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let event = relation_event(n as i64 + 1, n as i64 + 1, kind, data);
            for change in reader.changes(&event).unwrap() {
                if let Change::Add(cause) = change {
                    causes.push(cause);
                }
            }
        }
        let kinds: BTreeSet<Kind> = causes.iter().map(|c| c.kind).collect();
        assert_eq!(kinds.len(), 7, "{kinds:?}");
        for cause in &causes {
            assert_eq!(Kind::of_group(&cause.group), Some(cause.kind), "{cause:?}");
        }
        for kind in Kind::ALL {
            assert_eq!(Kind::of_group(&format!("{}:x", kind.name())), Some(kind));
        }
        assert_eq!(Kind::of_group("follow:1"), None);
    }

    #[test]
    fn groups_take_the_newest_distinct_actors() {
        let mut causes = Vec::new();
        for (i, actor) in [1, 2, 3, 2, 4, 5, 6, 7].into_iter().enumerate() {
            let mut c = comment_causes(&comment(actor, 100, None), None).remove(0);
            c.cause = format!("c{i}");
            c.position.global_position = i as i64;
            causes.push(c);
        }
        let groups = GroupDelta::of(&causes);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].count, 8);
        assert_eq!(groups[0].actors, vec![7, 6, 5, 4, 2]);
        assert_eq!(groups[0].position.global_position, 7);
    }
}

//! Notifications (issue 27) against a reference fold: random follows (user 3 is locked, so
//! some are requests), approvals, unfollows, likes and unlikes of posts and comments,
//! comments and replies, deletions, blocks, unblocks, mutes and unmutes, and notification
//! policies (issue 47), run one by one over HTTP; then every user's groups, in the main list
//! and the filtered one (read page by page), their counts, actors and order, and the unread
//! count, against a small fold of the rules written here from the issues' text. The
//! locked user's posts are for their followers only (issue 26): the likes and replies of a
//! comment on one of them are left out for a reader who does not follow them at the end.
//!
//! Robust under load: commands run one at a time (so the log's order is the order below), and
//! every read waits with `min_position` for the last command's position.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_verified, check_property, read, spawn_app, TestApp};
use crate::notifications::{summary, Summary};

const USERS: i64 = 4;
const LOCKED: i64 = 3;

#[derive(Debug, Clone)]
enum Op {
    Follow(i64, i64),
    Unfollow(i64, i64),
    /// The locked user approves the requester.
    Approve(i64),
    Like(i64, i64),
    Unlike(i64, i64),
    LikeComment(i64, usize),
    UnlikeComment(i64, usize),
    /// On the second's post, or a reply to that comment.
    Comment(i64, i64, Option<usize>),
    Delete(usize),
    Block(i64, i64),
    Unblock(i64, i64),
    Mute(i64, i64),
    Unmute(i64, i64),
    /// Issue 47: the user's `not_following` and `not_followers`, each left out or set.
    Policy(i64, Option<&'static str>, Option<&'static str>),
}

fn op() -> impl Strategy<Value = Op> {
    let user = 1..=USERS;
    let pair = (user.clone(), user.clone()).prop_filter("two users", |(a, b)| a != b);
    let index = 0..16usize;
    prop_oneof![
        4 => pair.clone().prop_map(|(a, b)| Op::Follow(a, b)),
        1 => pair.clone().prop_map(|(a, b)| Op::Unfollow(a, b)),
        1 => user.clone().prop_map(Op::Approve),
        4 => pair.clone().prop_map(|(a, b)| Op::Like(a, b)),
        1 => pair.clone().prop_map(|(a, b)| Op::Unlike(a, b)),
        2 => (user.clone(), index.clone()).prop_map(|(a, i)| Op::LikeComment(a, i)),
        1 => (user.clone(), index.clone()).prop_map(|(a, i)| Op::UnlikeComment(a, i)),
        4 => (user.clone(), user.clone(), prop::option::of(index.clone()))
            .prop_map(|(a, b, p)| Op::Comment(a, b, p)),
        1 => index.prop_map(Op::Delete),
        1 => pair.clone().prop_map(|(a, b)| Op::Block(a, b)),
        1 => pair.clone().prop_map(|(a, b)| Op::Unblock(a, b)),
        1 => pair.clone().prop_map(|(a, b)| Op::Mute(a, b)),
        1 => pair.prop_map(|(a, b)| Op::Unmute(a, b)),
        2 => (user, disposition(), disposition()).prop_map(|(u, a, b)| Op::Policy(u, a, b)),
    ]
}

fn disposition() -> impl Strategy<Value = Option<&'static str>> {
    prop::option::of(prop::sample::select(vec!["accept", "filter", "drop"]))
}

/// A live notification in the reference.
#[derive(Debug, Clone)]
struct Cause {
    recipient: i64,
    key: String,
    kind: &'static str,
    /// The post or comment it is about ("" for follows).
    about: String,
    actor: i64,
    seq: usize,
    /// In the filtered list (issue 47).
    filtered: bool,
}

/// A comment as the reference knows it.
#[derive(Debug, Clone)]
struct Comment {
    id: String,
    post: String,
    author: i64,
    live: bool,
}

/// The rules of issue 27, as small as they can be said.
#[derive(Debug, Default)]
struct Reference {
    causes: Vec<Cause>,
    /// Each live group's place: the last cause that joined it (an undo never lowers it).
    places: BTreeMap<(i64, &'static str, String, bool), usize>,
    mutes: BTreeSet<(i64, i64)>,
    seq: usize,
    /// Who follows whom (approved), as the history runs.
    follows: BTreeSet<(i64, i64)>,
    /// Each user's (not_following, not_followers), as set.
    policies: BTreeMap<i64, (&'static str, &'static str)>,
}

impl Reference {
    fn add(&mut self, recipient: i64, key: String, kind: &'static str, about: &str, actor: i64) {
        self.seq += 1;
        if recipient == actor || self.mutes.contains(&(recipient, actor)) {
            return;
        }
        let filtered = match self.disposition(recipient, actor, kind) {
            "drop" => return,
            kept => kept == "filter",
        };
        self.causes.push(Cause {
            recipient,
            key,
            kind,
            about: about.to_owned(),
            actor,
            seq: self.seq,
            filtered,
        });
        let place = self
            .places
            .entry((recipient, kind, about.to_owned(), filtered))
            .or_default();
        *place = (*place).max(self.seq);
    }

    /// Issue 47's rule: `not_following` if the recipient does not follow the actor (an
    /// approval of their request makes them), `not_followers` if the actor does not follow the
    /// recipient, the stricter of those that apply.
    fn disposition(&self, recipient: i64, actor: i64, kind: &str) -> &'static str {
        let Some(&(not_following, not_followers)) = self.policies.get(&recipient) else {
            return "accept";
        };
        let rank = |d: &str| ["accept", "filter", "drop"].iter().position(|x| *x == d);
        let follows =
            self.follows.contains(&(recipient, actor)) || kind == "follow_request_approved";
        let followed_by = self.follows.contains(&(actor, recipient));
        let mut applied = vec!["accept"];
        if !follows {
            applied.push(not_following);
        }
        if !followed_by {
            applied.push(not_followers);
        }
        applied.into_iter().max_by_key(|d| rank(d)).unwrap()
    }

    fn remove(&mut self, keep: impl Fn(&Cause) -> bool) {
        self.causes.retain(keep);
        let live: BTreeSet<(i64, &str, String, bool)> = self
            .causes
            .iter()
            .map(|c| (c.recipient, c.kind, c.about.clone(), c.filtered))
            .collect();
        self.places.retain(|group, _| live.contains(group));
    }

    /// (type, about, count, actors newest first ≤ 5) per recipient, by place, newest first:
    /// of the main list, or of the filtered one.
    fn groups(&self, recipient: i64, filtered: bool) -> Vec<Summary> {
        let mut groups: BTreeMap<(&str, &str), Vec<&Cause>> = BTreeMap::new();
        let theirs = |c: &&Cause| c.recipient == recipient && c.filtered == filtered;
        for c in self.causes.iter().filter(theirs) {
            groups.entry((c.kind, &c.about)).or_default().push(c);
        }
        let mut out: Vec<(usize, Summary)> = groups
            .into_iter()
            .map(|((kind, about), mut causes)| {
                causes.sort_by_key(|c| std::cmp::Reverse(c.seq));
                let mut actors = Vec::new();
                for c in &causes {
                    if actors.len() < 5 && !actors.contains(&c.actor) {
                        actors.push(c.actor);
                    }
                }
                let summary = (
                    kind.to_owned(),
                    about.to_owned(),
                    causes.len() as i64,
                    actors,
                );
                let place = (recipient, kind, about.to_owned(), filtered);
                (self.places[&place], summary)
            })
            .collect();
        out.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
        out.into_iter().map(|(_, g)| g).collect()
    }
}

/// The world and the reference as the history runs.
struct Run<'a> {
    app: &'a TestApp,
    posts: BTreeMap<i64, String>,
    comments: Vec<Comment>,
    reference: Reference,
    last: Option<String>,
}

impl Run<'_> {
    /// Keeps the answer's position (commands run one at a time: the last is the newest).
    fn answered(&mut self, status: StatusCode, body: &Value) -> bool {
        if let Some(p) = body["position"].as_str() {
            self.last = Some(p.to_owned());
        }
        status.is_success() && body["changed"] != false
    }

    async fn relation(&mut self, verb: &str, actor: i64, target: i64) -> Option<Value> {
        let (status, body) = self.app.command(verb, actor, target).await;
        self.answered(status, &body).then_some(body)
    }

    async fn like(&mut self, user: i64, item: String, verb: &str) -> bool {
        let (status, body) = self
            .app
            .post_as(user, &format!("/api/v1/{item}/{verb}"), json!({}))
            .await;
        self.answered(status, &body)
    }

    async fn step(&mut self, op: Op) {
        match op {
            Op::Follow(a, b) => {
                if let Some(body) = self.relation("follow", a, b).await {
                    let r = &mut self.reference;
                    match body["relation"]["requested"] == true {
                        true => r.add(b, format!("request:{a}"), "follow_request", "", a),
                        false => {
                            // A follow is judged as made (issue 47).
                            r.follows.insert((a, b));
                            r.add(b, format!("follow:{a}"), "followed", "", a);
                        }
                    }
                }
            }
            Op::Unfollow(a, b) => {
                if self.relation("unfollow", a, b).await.is_some() {
                    self.reference.follows.remove(&(a, b));
                    let keys = [format!("follow:{a}"), format!("request:{a}")];
                    self.reference
                        .remove(|c| c.recipient != b || !keys.contains(&c.key));
                }
            }
            Op::Approve(a) => {
                if self
                    .relation("follow_requests/approve", LOCKED, a)
                    .await
                    .is_some()
                {
                    let r = &mut self.reference;
                    let key = format!("request:{a}");
                    r.remove(|c| c.recipient != LOCKED || c.key != key);
                    let approval = format!("approved:{}", r.seq);
                    r.add(a, approval, "follow_request_approved", "", LOCKED);
                    r.follows.insert((a, LOCKED));
                }
            }
            Op::Like(a, b) | Op::Unlike(a, b) => {
                let like = matches!(op, Op::Like(..));
                let post = self.posts[&b].clone();
                if self
                    .like(
                        a,
                        format!("posts/{post}"),
                        if like { "like" } else { "unlike" },
                    )
                    .await
                {
                    let r = &mut self.reference;
                    let key = format!("like:post:{post}:{a}");
                    match like {
                        true => r.add(b, key, "liked_post", &post, a),
                        false => r.remove(|c| c.key != key),
                    }
                }
            }
            Op::LikeComment(a, i) | Op::UnlikeComment(a, i) => {
                let like = matches!(op, Op::LikeComment(..));
                let Some(c) = self.comments.get(i).cloned() else {
                    return;
                };
                if self
                    .like(
                        a,
                        format!("comments/{}", c.id),
                        if like { "like" } else { "unlike" },
                    )
                    .await
                {
                    let r = &mut self.reference;
                    let key = format!("like:comment:{}:{a}", c.id);
                    match like {
                        true => r.add(c.author, key, "liked_comment", &c.id, a),
                        false => r.remove(|x| x.key != key),
                    }
                }
            }
            Op::Comment(a, b, parent) => self.comment(a, b, parent).await,
            Op::Delete(i) => {
                let Some(c) = self.comments.get(i).cloned() else {
                    return;
                };
                let (status, body) = read(
                    self.app
                        .client
                        .delete(format!("{}/api/v1/comments/{}", self.app.base, c.id))
                        .bearer_auth(self.app.token(c.author))
                        .send()
                        .await
                        .unwrap(),
                )
                .await;
                if self.answered(status, &body) {
                    self.comments[i].live = false;
                    let key = format!("comment:{}", c.id);
                    self.reference.remove(|x| x.key != key && x.about != c.id);
                }
            }
            Op::Block(a, b) => {
                if self.relation("block", a, b).await.is_some() {
                    self.reference.follows.remove(&(a, b));
                    self.reference.follows.remove(&(b, a));
                    self.reference.remove(|c| {
                        (c.recipient, c.actor) != (a, b) && (c.recipient, c.actor) != (b, a)
                    });
                }
            }
            Op::Unblock(a, b) => {
                self.relation("unblock", a, b).await;
            }
            Op::Mute(a, b) => {
                let (status, body) = self.app.mute(a, b, Value::Null).await;
                if self.answered(status, &body) {
                    let r = &mut self.reference;
                    r.mutes.insert((a, b));
                    r.remove(|c| (c.recipient, c.actor) != (a, b));
                }
            }
            Op::Unmute(a, b) => {
                if self.relation("unmute", a, b).await.is_some() {
                    self.reference.mutes.remove(&(a, b));
                }
            }
            Op::Policy(user, not_following, not_followers) => {
                let body = json!({"not_following": not_following, "not_followers": not_followers});
                let body = match body.as_object().unwrap().values().all(Value::is_null) {
                    true => json!({}),
                    false => body,
                };
                let (status, answer) =
                    crate::notification_policy::set_policy(self.app, user, body).await;
                assert_eq!(status, StatusCode::OK, "{answer}");
                self.answered(status, &answer);
                let (a, b) = (&answer["not_following"], &answer["not_followers"]);
                let name = |v: &Value| ["accept", "filter", "drop"].into_iter().find(|d| v == d);
                let policy = (name(a).unwrap(), name(b).unwrap());
                let set = self
                    .reference
                    .policies
                    .entry(user)
                    .or_insert(("accept", "accept"));
                let expected = (
                    not_following.unwrap_or(set.0),
                    not_followers.unwrap_or(set.1),
                );
                assert_eq!(policy, expected, "a part left out keeps its value");
                *set = policy;
            }
        }
    }

    /// A comment on `b`'s post, or a reply to comment `parent` (on its post): the parent's
    /// author is told `replied`; the post's author `commented`, unless the parent is theirs.
    async fn comment(&mut self, a: i64, b: i64, parent: Option<usize>) {
        let parent = parent.and_then(|i| self.comments.get(i).cloned());
        let post = match &parent {
            Some(p) => p.post.clone(),
            None => self.posts[&b].clone(),
        };
        let post_author = *self.posts.iter().find(|(_, p)| **p == post).unwrap().0;
        let (status, body) = self
            .app
            .post_as(
                a,
                &format!("/api/v1/posts/{post}/comments"),
                json!({ "content": "c", "parent": parent.as_ref().map(|p| p.id.clone()) }),
            )
            .await;
        if !self.answered(status, &body) {
            return;
        }
        let id = body["comment"]["id"].as_str().unwrap().to_owned();
        self.comments.push(Comment {
            id: id.clone(),
            post: post.clone(),
            author: a,
            live: true,
        });
        let r = &mut self.reference;
        let key = format!("comment:{id}");
        if let Some(p) = &parent {
            r.add(p.author, key.clone(), "replied", &p.id, a);
            r.seq -= 1;
        }
        if parent.as_ref().is_none_or(|p| p.author != post_author) {
            r.add(post_author, key, "commented", &post, a);
        } else {
            r.seq += 1;
        }
    }
}

impl Run<'_> {
    /// `user`'s groups (of the main list, or the filtered one) as they may read them now:
    /// those about a comment on the locked user's post (its likes, its replies) only while
    /// they follow them.
    fn expected(&self, user: i64, filtered: bool) -> Vec<Summary> {
        let locked_post = &self.posts[&LOCKED];
        let on_locked_post = |comment: &str| {
            self.comments
                .iter()
                .any(|c| c.id == comment && &c.post == locked_post)
        };
        let may_read = user == LOCKED || self.reference.follows.contains(&(user, LOCKED));
        let mut groups = self.reference.groups(user, filtered);
        groups.retain(|(kind, about, ..)| {
            let asks = matches!(kind.as_str(), "liked_comment" | "replied");
            !asks || may_read || !on_locked_post(about)
        });
        groups
    }
}

/// Every group of `user`'s main list (or the filtered one), read three at a time.
async fn listed(app: &TestApp, user: i64, at: &str, filtered: bool) -> Vec<Summary> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url =
            format!("/api/v1/notifications?limit=3&min_position={at}&filtered={filtered}");
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let (status, page) = app.get_as(user, &url).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        out.extend(summary(page["items"].as_array().unwrap()));
        cursor = page["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            return out;
        }
    }
}

#[test]
fn notifications_equal_a_reference_fold_of_random_histories() {
    check_property(16, prop::collection::vec(op(), 10..60), |ops| async move {
        let app = spawn_app().await;
        app.set_locked(LOCKED, true).await;
        let mut posts = BTreeMap::new();
        for u in 1..=USERS {
            posts.insert(u, app.publish(u, &format!("post of {u}")).await.0);
        }
        let mut run = Run {
            app: &app,
            posts,
            comments: Vec::new(),
            reference: Reference::default(),
            last: None,
        };
        for op in ops {
            run.step(op).await;
        }
        let Some(at) = run.last.clone() else { return };
        for user in 1..=USERS {
            let filtered = run.expected(user, true);
            let listed_filtered = listed(&app, user, &at, true).await;
            assert_eq!(listed_filtered, filtered, "user {user}'s filtered list");
            let expected = run.expected(user, false);
            assert_eq!(
                listed(&app, user, &at, false).await,
                expected,
                "user {user}"
            );
            let (status, unread) = app
                .get_as(
                    user,
                    &format!("/api/v1/notifications/unread_count?min_position={at}"),
                )
                .await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(
                unread["count"].as_i64().unwrap(),
                expected.len() as i64,
                "user {user}"
            );
        }
        assert_verified(&app).await;
    });
}

//! Private content (issue 26) against a reference model: random follows, unfollows, removals,
//! blocks, locks, unlocks and posts of random visibility; then every reader's feed, every
//! author's timeline as each reader (and as no one) sees it, page by page, and what each
//! reader's live stream received, against a small model of the rules.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use futures::StreamExt;
use proptest::prelude::*;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{check_property, spawn_app, TestApp};

/// Users 1..=USERS act; user 99 is followed by everyone from the start and never acted on, so
/// no reader falls back to the recommended feed and its last post marks the stream's end.
const USERS: i64 = 4;
const MARKER: i64 = 99;
const PAGE: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    Follow(i64, i64),
    Unfollow(i64, i64),
    /// The first removes the second from their followers.
    Remove(i64, i64),
    Block(i64, i64),
    Lock(i64, bool),
    Post(i64, &'static str),
}

fn op() -> impl Strategy<Value = Op> {
    let user = 1..=USERS;
    let pair = (user.clone(), user.clone()).prop_filter("two users", |(a, b)| a != b);
    prop_oneof![
        4 => pair.clone().prop_map(|(a, b)| Op::Follow(a, b)),
        1 => pair.clone().prop_map(|(a, b)| Op::Unfollow(a, b)),
        1 => pair.clone().prop_map(|(a, b)| Op::Remove(a, b)),
        1 => pair.prop_map(|(a, b)| Op::Block(a, b)),
        1 => (user.clone(), any::<bool>()).prop_map(|(a, l)| Op::Lock(a, l)),
        4 => (user, prop::sample::select(vec!["public", "unlisted", "followers"]))
            .prop_map(|(a, v)| Op::Post(a, v)),
    ]
}

/// The rules, as small as they can be said.
#[derive(Debug, Default)]
struct Model {
    follows: BTreeSet<(i64, i64)>,
    requests: BTreeSet<(i64, i64)>,
    blocks: BTreeSet<(i64, i64)>,
    locked: BTreeSet<i64>,
    /// (author, visibility, post index), oldest first.
    posts: Vec<(i64, &'static str, usize)>,
    /// For each (reader, post index): whether the reader followed the post's author at some
    /// moment since its publication, and at every moment since.
    followed: HashMap<(i64, usize), Followed>,
}

/// Whether a reader followed a post's author since the post was published.
#[derive(Debug, Clone, Copy)]
struct Followed {
    ever: bool,
    always: bool,
}

impl Model {
    fn apply(&mut self, op: &Op) {
        self.change(op);
        for (&(reader, post), followed) in self.followed.iter_mut() {
            let now = self.follows.contains(&(reader, self.posts[post].0));
            followed.ever |= now;
            followed.always &= now;
        }
    }

    fn change(&mut self, op: &Op) {
        match *op {
            Op::Follow(a, b) => {
                let blocked = self.blocks.contains(&(a, b)) || self.blocks.contains(&(b, a));
                if blocked || self.follows.contains(&(a, b)) {
                    return;
                }
                match self.locked.contains(&b) {
                    true => self.requests.insert((a, b)),
                    false => self.follows.insert((a, b)),
                };
            }
            Op::Unfollow(a, b) => {
                self.follows.remove(&(a, b));
                self.requests.remove(&(a, b));
            }
            Op::Remove(a, b) => {
                self.follows.remove(&(b, a));
            }
            Op::Block(a, b) => {
                self.blocks.insert((a, b));
                for pair in [(a, b), (b, a)] {
                    self.follows.remove(&pair);
                    self.requests.remove(&pair);
                }
            }
            Op::Lock(a, true) => {
                self.locked.insert(a);
            }
            Op::Lock(a, false) => {
                self.locked.remove(&a);
                let approved: Vec<_> = self.requests.iter().filter(|r| r.1 == a).copied().collect();
                for request in approved {
                    self.requests.remove(&request);
                    self.follows.insert(request);
                }
            }
            Op::Post(a, visibility) => {
                let index = self.posts.len();
                self.posts.push((a, visibility, index));
                for reader in 1..=USERS {
                    let now = self.follows.contains(&(reader, a));
                    let followed = Followed {
                        ever: now,
                        always: now,
                    };
                    self.followed.insert((reader, index), followed);
                }
            }
        }
    }

    /// Whether `viewer` may read a post of `visibility` by `author`.
    fn readable(&self, viewer: Option<i64>, author: i64, visibility: &str) -> bool {
        match viewer {
            Some(v) if v == author || self.follows.contains(&(v, author)) => true,
            _ => visibility != "followers" && !self.locked.contains(&author),
        }
    }

    /// `author`'s timeline as `viewer` sees it, newest first.
    fn timeline(&self, viewer: Option<i64>, author: i64) -> Vec<usize> {
        let posts = self.posts.iter().rev().filter(|p| p.0 == author);
        posts
            .filter(|p| self.readable(viewer, author, p.1))
            .map(|p| p.2)
            .collect()
    }

    /// `reader`'s feed (the marker's posts aside), newest first.
    fn feed(&self, reader: i64) -> Vec<usize> {
        let posts = self.posts.iter().rev();
        posts
            .filter(|p| self.follows.contains(&(reader, p.0)))
            .map(|p| p.2)
            .collect()
    }
}

/// Runs `op` over HTTP; the position of what it appended, if anything.
async fn run(app: &TestApp, op: &Op, ids: &mut Vec<String>) -> Option<String> {
    let (status, body) = match *op {
        Op::Follow(a, b) => app.command("follow", a, b).await,
        Op::Unfollow(a, b) => app.command("unfollow", a, b).await,
        Op::Remove(a, b) => app.command("remove_follower", a, b).await,
        Op::Block(a, b) => app.command("block", a, b).await,
        Op::Lock(a, locked) => {
            let body = app.set_locked(a, locked).await;
            (StatusCode::OK, body)
        }
        Op::Post(a, visibility) => {
            let (status, body) = publish(app, a, &format!("post {}", ids.len()), visibility).await;
            ids.push(body["post"]["id"].as_str().unwrap().to_owned());
            (status, body)
        }
    };
    // A follow refused by a block is the rule working; nothing else is refused here.
    assert!(
        status.is_success() || status == StatusCode::FORBIDDEN || status == StatusCode::CONFLICT,
        "{op:?}: {status} {body}"
    );
    body["position"].as_str().map(str::to_owned)
}

/// Publishes a post of `visibility` as `author`, asserting success.
async fn publish(
    app: &TestApp,
    author: i64,
    content: &str,
    visibility: &str,
) -> (StatusCode, Value) {
    let body = json!({"content": content, "visibility": visibility});
    let (status, body) = app.post_with(author, body).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    (status, body)
}

/// Every page of `path` (cursor-paged, `PAGE` a page) as `viewer`: post ids, page by page.
async fn pages(app: &TestApp, viewer: Option<i64>, path: &str, at: &str) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url = format!("{path}?size={PAGE}&min_position={at}");
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let (status, body) = match viewer {
            Some(v) => app.get_as(v, &url).await,
            None => app.get(&url).await,
        };
        assert_eq!(status, StatusCode::OK, "{url}: {body}");
        let ids: Vec<String> = body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap().to_owned())
            .collect();
        if !ids.is_empty() {
            pages.push(ids);
        }
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return pages,
        }
    }
}

/// The model's list as pages of post ids.
fn paged(list: Vec<usize>, ids: &[String]) -> Vec<Vec<String>> {
    let ids: Vec<String> = list.into_iter().map(|i| ids[i].clone()).collect();
    ids.chunks(PAGE).map(<[String]>::to_vec).collect()
}

type Body = futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>;

/// The post ids a live stream received, in order, up to the marker post.
async fn drain(body: &mut Body, marker: &str) -> Vec<String> {
    let mut buffer = String::new();
    let mut seen = Vec::new();
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let data: String = block
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            let is_post = block
                .lines()
                .any(|l| l.strip_prefix("event:").is_some_and(|e| e.trim() == "post"));
            if data.is_empty() || !is_post {
                continue;
            }
            let data: Value = serde_json::from_str(&data).unwrap();
            let id = data["id"].as_str().unwrap().to_owned();
            if id == marker {
                return seen;
            }
            seen.push(id);
        }
        let chunk = tokio::time::timeout(Duration::from_secs(15), body.next())
            .await
            .expect("the marker arrives")
            .unwrap()
            .unwrap();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[test]
fn every_readers_feed_timelines_and_stream_follow_the_model() {
    check_property(8, prop::collection::vec(op(), 10..50), |ops| async move {
        let app = spawn_app().await;
        let mut at = String::new();
        for reader in 1..=USERS {
            let (_, body) = app.command("follow", reader, MARKER).await;
            at = body["position"].as_str().unwrap().to_owned();
        }
        app.get(&format!(
            "/api/v1/relation/status?from=1&to={MARKER}&min_position={at}"
        ))
        .await;
        let mut streams = Vec::new();
        for reader in 1..=USERS {
            let response = app
                .client
                .get(format!("{}/api/v1/feed/stream", app.base))
                .bearer_auth(app.token(reader))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            streams.push(response.bytes_stream().boxed());
        }
        let mut model = Model::default();
        let mut ids = Vec::new();
        for op in &ops {
            // The marker's position, later than every op's, is what the reads wait for.
            run(&app, op, &mut ids).await;
            model.apply(op);
        }
        let (_, marker) = publish(&app, MARKER, "marker", "public").await;
        let marker_id = marker["post"]["id"].as_str().unwrap().to_owned();
        at = marker["position"].as_str().unwrap().to_owned();
        ids.push(marker_id.clone());
        let marker_index = ids.len() - 1;
        for reader in 1..=USERS {
            let got = pages(&app, Some(reader), "/api/v1/feed", &at).await;
            // The marker's post is the newest of every feed.
            let mut want = vec![marker_index];
            want.extend(model.feed(reader));
            assert_eq!(
                got,
                paged(want, &ids),
                "reader {reader}'s feed after {ops:?}"
            );
        }
        for author in 1..=USERS {
            for viewer in (1..=USERS).map(Some).chain([None]) {
                let path = format!("/api/v1/users/{author}/posts");
                let got = pages(&app, viewer, &path, &at).await;
                let want = paged(model.timeline(viewer, author), &ids);
                assert_eq!(got, want, "{author}'s timeline as {viewer:?} after {ops:?}");
            }
        }
        // The live stream judges each post by the replica as it applies the post's batch, or,
        // when a slow stream catches up from the log, as the replica is at that reading: some
        // moment between the post's publication and the end. So a post received was by an
        // author the reader followed at some moment since, and a post by an author followed
        // at every moment since is received.
        for (i, stream) in streams.iter_mut().enumerate() {
            let reader = i as i64 + 1;
            let got = drain(stream, &marker_id).await;
            for (p, id) in ids.iter().enumerate().take(model.posts.len()) {
                let received = got.contains(id);
                let followed = model.followed[&(reader, p)];
                assert!(
                    !received || followed.ever,
                    "reader {reader} got post {p} it could not read, after {ops:?}"
                );
                assert!(
                    received || !followed.always,
                    "reader {reader} missed post {p}, after {ops:?}"
                );
            }
        }
    });
}

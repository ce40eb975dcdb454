//! The property: for random follows, unfollows, blocks, unblocks, mutes, unmutes, removed
//! followers, locked accounts with their requests approved, rejected or approved by an unlock,
//! posts, reposts and unreposts (issue 44), deletes and erasures (issue 25), every reader's
//! feed equals the reference (posts of followed authors and posts reposted by followed users,
//! each once at its newest appearance with its `reposted_by`, none blocked, none muted by the
//! reader, none deleted, none the reader may not read, newest first; the recommended authors'
//! posts for readers who follow nobody) page by page, 3 at a time (so no item is repeated or
//! skipped within a reading),
//! read with `min_position` and without (through the inbox cache when read from PostgreSQL). A
//! small threshold and cap put every path (push, pull, switches both ways, trimmed inboxes,
//! deep pulls) in play, and each case holds posts in memory differently (issue 28): none (every
//! page from PostgreSQL), a few per author or in all (pages from memory until a bound, then from
//! PostgreSQL), or the defaults (every page from memory).

use std::collections::BTreeSet;

use proptest::prelude::*;
use reqwest::StatusCode;

use relations_projections::feed::held::page::FeedAsk;
use relations_projections::feed::held::timelines::Caps;
use relations_projections::replica::live::LiveGraph;

use crate::helpers::{projector_reached, spawn_with, test_config, user, TestApp};

const USERS: i64 = 4;
const RECOMMENDED: [i64; 2] = [1, 2];
const PAGE: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    Relation(&'static str, i64, i64),
    Post(i64),
    /// Delete the n-th post published so far (modulo), as its author or as someone else.
    Delete(usize, bool),
    /// Read a first page (loads the reader's inbox into the cache mid-run).
    Read(i64),
    /// a locks or unlocks their account (unlocking approves every pending request).
    Lock(i64, bool),
    /// a erases their account.
    Erase(i64),
    /// a reposts (`true`) the n-th post published so far (modulo), or takes it back.
    Repost(i64, usize, bool),
    /// a follows b keeping (`true`) or hiding b's reposts (issue 44's `show_reposts`).
    ShowReposts(i64, i64, bool),
}

fn op() -> impl Strategy<Value = Op> {
    let who = 1..=USERS;
    prop_oneof![
        4 => (prop::sample::select(vec!["follow", "unfollow", "block", "unblock", "mute", "unmute",
                "remove_follower", "follow_requests/approve", "follow_requests/reject"]), who.clone(), who.clone())
            .prop_map(|(verb, a, b)| Op::Relation(verb, a, b)),
        // Follows again on their own, so that readers follow several reposters.
        3 => (who.clone(), who.clone()).prop_map(|(a, b)| Op::Relation("follow", a, b)),
        1 => (who.clone(), any::<bool>()).prop_map(|(a, locked)| Op::Lock(a, locked)),
        3 => who.clone().prop_map(Op::Post),
        1 => (0usize..64, any::<bool>()).prop_map(|(i, by_author)| Op::Delete(i, by_author)),
        1 => who.clone().prop_map(Op::Read),
        3 => (who.clone(), 0usize..64, prop::bool::weighted(0.75))
            .prop_map(|(a, n, on)| Op::Repost(a, n, on)),
        1 => (who.clone(), who, any::<bool>()).prop_map(|(a, b, on)| Op::ShowReposts(a, b, on)),
        // Two users at most, so that most histories go on among the others.
        1 => (USERS - 1..=USERS).prop_map(Op::Erase),
    ]
}

#[derive(Default)]
struct Model {
    follows: BTreeSet<(i64, i64)>,
    blocks: BTreeSet<(i64, i64)>,
    /// (muter, muted): endless mutes.
    mutes: BTreeSet<(i64, i64)>,
    /// Pending follow requests (requester, target).
    requests: BTreeSet<(i64, i64)>,
    locked: BTreeSet<i64>,
    /// Erased users.
    erased: BTreeSet<i64>,
    /// (id, author, live), in publication order.
    posts: Vec<(String, i64, bool)>,
    /// Each post's place in the order of posts and reposts.
    post_order: Vec<usize>,
    /// (post index, reposter, live, place in the order).
    reposts: Vec<(usize, i64, bool, usize)>,
    /// The places given so far.
    clock: usize,
    /// Follows and requests (follower, followee) that hide the followee's reposts.
    no_reposts: BTreeSet<(i64, i64)>,
}

impl Model {
    fn blocked_either_way(&self, a: i64, b: i64) -> bool {
        self.blocks.contains(&(a, b)) || self.blocks.contains(&(b, a))
    }

    /// What the service may answer when `a` acts on `b` and either is erased: `None` when
    /// neither is. An erased actor's token is refused within a second (401) and their
    /// commands meanwhile name an erased user (404); a self-relation is 400 before that.
    fn refused(&self, a: i64, b: Option<i64>) -> Option<Vec<StatusCode>> {
        if self.erased.contains(&a) {
            Some(vec![
                StatusCode::UNAUTHORIZED,
                StatusCode::NOT_FOUND,
                StatusCode::BAD_REQUEST,
                StatusCode::FORBIDDEN,
            ])
        } else if b.is_some_and(|b| self.erased.contains(&b)) {
            Some(vec![StatusCode::NOT_FOUND])
        } else {
            None
        }
    }

    /// Erases `user`: every relation of theirs ends both ways, their posts are deleted.
    fn erase(&mut self, user: i64) {
        for edges in [
            &mut self.follows,
            &mut self.blocks,
            &mut self.mutes,
            &mut self.requests,
            &mut self.no_reposts,
        ] {
            edges.retain(|&(a, b)| a != user && b != user);
        }
        self.locked.remove(&user);
        for post in self.posts.iter_mut().filter(|p| p.1 == user) {
            post.2 = false;
        }
        for repost in self.reposts.iter_mut().filter(|r| r.1 == user) {
            repost.2 = false;
        }
        self.erased.insert(user);
    }

    fn publish(&mut self, id: String, author: i64) {
        self.posts.push((id, author, true));
        self.post_order.push(self.clock);
        self.clock += 1;
    }

    /// Whether `reader` may read a post of `author` (issue 26: a locked author's posts are for
    /// followers only).
    fn may_read(&self, reader: i64, author: i64) -> bool {
        reader == author
            || !self.locked.contains(&author)
            || self.follows.contains(&(reader, author))
    }

    /// The statuses `a`'s repost of post `n` may get; it changes the model when 200.
    fn repost(&self, a: i64, n: usize) -> Vec<StatusCode> {
        let (_, author, live) = self.posts[n];
        if !live || !self.may_read(a, author) {
            return vec![StatusCode::NOT_FOUND];
        }
        if self.blocked_either_way(a, author) {
            // Spec order puts readability first; a block may hide the post too.
            return vec![StatusCode::FORBIDDEN, StatusCode::NOT_FOUND];
        }
        if self.locked.contains(&author) {
            return vec![StatusCode::FORBIDDEN];
        }
        vec![StatusCode::OK]
    }

    /// `a`'s live repost of post `n`, if any.
    fn live_repost(&self, a: i64, n: usize) -> Option<usize> {
        self.reposts
            .iter()
            .position(|&(p, by, live, _)| p == n && by == a && live)
    }

    /// The status the service must answer, and the model after it.
    fn relation(&mut self, verb: &str, a: i64, b: i64) -> StatusCode {
        if a == b {
            return StatusCode::BAD_REQUEST;
        }
        match verb {
            "follow" if self.blocks.contains(&(b, a)) => return StatusCode::FORBIDDEN,
            "follow" if self.blocks.contains(&(a, b)) => return StatusCode::CONFLICT,
            "follow" if self.follows.contains(&(a, b)) => {}
            "follow" if self.locked.contains(&b) => {
                self.requests.insert((a, b));
            }
            "follow" => {
                self.follows.insert((a, b));
            }
            "unfollow" => {
                self.follows.remove(&(a, b));
                self.requests.remove(&(a, b));
                self.no_reposts.remove(&(a, b));
            }
            "block" => {
                self.blocks.insert((a, b));
                for edge in [(a, b), (b, a)] {
                    self.follows.remove(&edge);
                    self.requests.remove(&edge);
                    self.no_reposts.remove(&edge);
                }
            }
            "remove_follower" => {
                self.follows.remove(&(b, a));
                self.no_reposts.remove(&(b, a));
            }
            "follow_requests/approve" => {
                if self.requests.remove(&(b, a)) {
                    self.follows.insert((b, a));
                }
            }
            "follow_requests/reject" => {
                if self.requests.remove(&(b, a)) {
                    self.no_reposts.remove(&(b, a));
                }
            }
            "mute" => {
                self.mutes.insert((a, b));
            }
            "unmute" => {
                self.mutes.remove(&(a, b));
            }
            _ => {
                self.blocks.remove(&(a, b));
            }
        }
        StatusCode::OK
    }

    /// Locks or unlocks `user`'s account; unlocking approves every request to them.
    fn lock(&mut self, user: i64, locked: bool) {
        if locked {
            self.locked.insert(user);
            return;
        }
        self.locked.remove(&user);
        let approved: Vec<_> = self
            .requests
            .iter()
            .filter(|r| r.1 == user)
            .copied()
            .collect();
        for request in approved {
            self.requests.remove(&request);
            self.follows.insert(request);
        }
    }

    /// `reader`'s feed: each item `"{id}<{reposted_by, comma-separated}"`.
    fn feed(&self, reader: i64) -> Vec<String> {
        let follows_anyone = self.follows.iter().any(|&(f, _)| f == reader);
        let mut items: Vec<(usize, String)> = Vec::new();
        for (n, (id, author, live)) in self.posts.iter().enumerate() {
            if !*live || self.mutes.contains(&(reader, *author)) {
                continue;
            }
            if !follows_anyone {
                // Issue 26: a locked author's posts are for followers only.
                let recommended = RECOMMENDED.contains(author)
                    && *author != reader
                    && !self.locked.contains(author)
                    && !self.blocked_either_way(reader, *author);
                if recommended {
                    items.push((self.post_order[n], format!("{id}<")));
                }
                continue;
            }
            let mut appearances: Vec<(usize, Option<i64>)> = Vec::new();
            if self.follows.contains(&(reader, *author)) {
                appearances.push((self.post_order[n], None));
            }
            if self.may_read(reader, *author) && !self.blocked_either_way(reader, *author) {
                for &(_, by, _, at) in self.reposts.iter().filter(|r| r.0 == n && r.2) {
                    let kept = !self.no_reposts.contains(&(reader, by));
                    if self.follows.contains(&(reader, by))
                        && kept
                        && !self.mutes.contains(&(reader, by))
                    {
                        appearances.push((at, Some(by)));
                    }
                }
            }
            appearances.sort_unstable();
            let Some(&(newest, _)) = appearances.last() else {
                continue;
            };
            let by: Vec<String> = appearances
                .iter()
                .rev()
                .filter_map(|a| a.1)
                .take(3)
                .map(|by| by.to_string())
                .collect();
            items.push((newest, format!("{id}<{}", by.join(","))));
        }
        items.sort_unstable_by_key(|item| std::cmp::Reverse(item.0));
        items.into_iter().map(|item| item.1).collect()
    }
}

/// A replica of `app`'s log holding every post, folding the run's events as they come: the
/// memory path (issue 28) asked directly, whatever the app's own caps are.
pub(crate) fn replica(app: &TestApp, shutdown: &tokio_util::sync::CancellationToken) -> LiveGraph {
    let keys = app.config.keys.keyring(&app.pool).unwrap();
    let caps = Caps {
        per_author: 32,
        total: 4_000_000,
    };
    let graph = LiveGraph::holding_posts(caps, keys);
    let wakeup = relations_projections::Wakeup::listen(app.pool.clone(), shutdown.clone());
    let running = graph
        .clone()
        .run(app.pool.clone(), wakeup, shutdown.clone());
    tokio::spawn(running);
    graph
}

/// `reader`'s first home page (of `size`) as `graph` answers it from memory, no round trip.
pub(crate) fn home_from_memory(
    graph: &LiveGraph,
    reader: i64,
    size: i64,
) -> Vec<relations_projections::views::PostView> {
    let ask = FeedAsk {
        reader: user(reader),
        recommended: &[],
        now: chrono::Utc::now(),
        list: None,
        screening: Default::default(),
    };
    let page = graph.with(|g| g.feed_page(ask, None, size)).flatten();
    page.expect("a first page from memory").0.items
}

/// `reader`'s first page as the replica answers it, items as [`pages`] renders them; `None`
/// when memory cannot answer it.
fn memory_first_page(graph: &LiveGraph, reader: i64) -> Option<Vec<String>> {
    let recommended: Vec<_> = RECOMMENDED.iter().map(|&id| user(id)).collect();
    let ask = FeedAsk {
        reader: user(reader),
        recommended: &recommended,
        now: chrono::Utc::now(),
        list: None,
        screening: Default::default(),
    };
    let (page, _) = graph
        .with(|g| g.feed_page(ask, None, PAGE as i64))
        .flatten()?;
    let items = page.items.iter().map(|p| {
        let by: Vec<String> = p
            .reposted_by
            .iter()
            .flatten()
            .map(|u| u.get().to_string())
            .collect();
        format!(
            "{}<{}",
            serde_json::to_value(p.id).unwrap().as_str().unwrap(),
            by.join(",")
        )
    });
    Some(items.collect())
}

/// `a` follows `b` with `show_reposts: on`.
async fn show_reposts(app: &TestApp, a: i64, b: i64, on: bool) -> (StatusCode, serde_json::Value) {
    let body = serde_json::json!({ "target": b, "show_reposts": on });
    app.post_as(a, "/api/v1/relation/follow", body).await
}

/// Every page of `reader`'s feed with `query`, page by page.
async fn pages(app: &TestApp, reader: i64, query: &str) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/feed?size={PAGE}&{query}&cursor={c}"),
            None => format!("/api/v1/feed?size={PAGE}&{query}"),
        };
        let (status, body) = app.get_as(reader, &path).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        pages.push(
            body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    let by = p["reposted_by"]
                        .as_array()
                        .expect("a feed item's reposted_by");
                    let by: Vec<String> = by.iter().map(|u| u.to_string()).collect();
                    format!("{}<{}", p["id"].as_str().unwrap(), by.join(","))
                })
                .collect(),
        );
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return pages,
        }
        assert!(pages.len() < 100, "the feed never ended");
    }
}

fn expected_pages(feed: &[String]) -> Vec<Vec<String>> {
    if feed.is_empty() {
        return vec![vec![]];
    }
    feed.chunks(PAGE).map(<[String]>::to_vec).collect()
}

/// Posts held in memory per author and in all.
const MEMORY: [(u32, u32); 4] = [(0, 0), (1, 1_000), (3, 4), (32, 4_000_000)];

async fn run((ops, (per_author, posts)): (Vec<Op>, (u32, u32))) {
    let mut config = test_config().await;
    config.feed_memory_per_author = per_author;
    config.feed_memory_posts = posts;
    config.feed.big_v_threshold = 2;
    config.feed.feed_inbox_cap = 3;
    config.recommended_authors = RECOMMENDED
        .iter()
        .map(|&id| relations_api::config::RecommendedAuthor(Some(user(id))))
        .collect();
    let app = spawn_with(config).await;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let graph = replica(&app, &shutdown);
    let mut model = Model::default();
    let mut last = None;
    for op in &ops {
        let (actor, other) = match *op {
            Op::Relation(_, a, b) | Op::ShowReposts(a, b, _) => (a, Some(b)),
            Op::Post(a) | Op::Read(a) | Op::Lock(a, _) | Op::Erase(a) | Op::Repost(a, ..) => {
                (a, None)
            }
            Op::Delete(..) => (0, None),
        };
        if let Some(allowed) = model.refused(actor, other) {
            let status = match *op {
                Op::Relation(verb, a, b) => app.command(verb, a, b).await.0,
                Op::ShowReposts(a, b, on) => show_reposts(&app, a, b, on).await.0,
                Op::Post(a) => app.post(a, "p").await.0,
                Op::Repost(..) if model.posts.is_empty() => continue,
                Op::Repost(a, n, on) => {
                    let id = &model.posts[n % model.posts.len()].0;
                    let verb = if on { "repost" } else { "unrepost" };
                    let path = format!("/api/v1/posts/{id}/{verb}");
                    app.post_as(a, &path, serde_json::json!({})).await.0
                }
                Op::Erase(a) | Op::Read(a) | Op::Lock(a, _) => {
                    let answer = app.get_as(a, "/api/v1/feed").await.0;
                    // Read within the second before the token is refused: nothing to check.
                    if answer == StatusCode::OK {
                        continue;
                    }
                    answer
                }
                Op::Delete(..) => unreachable!("a delete names no user here"),
            };
            assert!(allowed.contains(&status), "{op:?}: {status}");
            continue;
        }
        match *op {
            Op::Erase(user) => {
                let (status, body) = app.erase_me(user).await;
                assert_eq!(status, StatusCode::OK, "{body}");
                model.erase(user);
                last = body["position"].as_str().map(str::to_owned);
            }
            Op::ShowReposts(a, b, on) => {
                let pair = (a, b);
                let pending = model.requests.contains(&pair);
                let expected = model.relation("follow", a, b);
                let (status, body) = show_reposts(&app, a, b, on).await;
                assert_eq!(status, expected, "{op:?}: {body}");
                // A follow takes the value; a new request keeps it for its approval; a
                // pending one keeps what it was made with.
                let requested = model.requests.contains(&pair) && !pending;
                if model.follows.contains(&pair) || requested {
                    match on {
                        true => model.no_reposts.remove(&pair),
                        false => model.no_reposts.insert(pair),
                    };
                }
                if model.follows.contains(&pair) {
                    assert_eq!(body["relation"]["show_reposts"], on, "{op:?}: {body}");
                }
                if let Some(position) = body["position"].as_str() {
                    last = Some(position.to_owned());
                }
            }
            Op::Relation(verb, a, b) => {
                let expected = model.relation(verb, a, b);
                let (status, body) = app.command(verb, a, b).await;
                assert_eq!(status, expected, "{op:?}: {body}");
                if let Some(position) = body["position"].as_str() {
                    last = Some(position.to_owned());
                }
            }
            Op::Post(author) => {
                let (id, position) = app.publish(author, "p").await;
                model.publish(id, author);
                last = Some(position);
            }
            Op::Repost(..) if model.posts.is_empty() => {}
            Op::Repost(a, n, on) => {
                let n = n % model.posts.len();
                let verb = if on { "repost" } else { "unrepost" };
                let path = format!("/api/v1/posts/{}/{verb}", model.posts[n].0);
                let (status, body) = app.post_as(a, &path, serde_json::json!({})).await;
                let had = model.live_repost(a, n);
                if !on {
                    // An unrepost is judged by readability too; whatever it answers, a 200
                    // says whether it took a repost back.
                    let allowed = [StatusCode::OK, StatusCode::FORBIDDEN, StatusCode::NOT_FOUND];
                    assert!(allowed.contains(&status), "{op:?}: {status} {body}");
                    if status == StatusCode::OK {
                        assert_eq!(body["changed"], had.is_some(), "{op:?}: {body}");
                        if let Some(at) = had {
                            model.reposts[at].2 = false;
                        }
                    }
                } else {
                    assert!(
                        model.repost(a, n).contains(&status),
                        "{op:?}: {status} {body}"
                    );
                    if status == StatusCode::OK {
                        assert_eq!(body["changed"], had.is_none(), "{op:?}: {body}");
                        if had.is_none() {
                            model.reposts.push((n, a, true, model.clock));
                            model.clock += 1;
                        }
                    }
                }
                if let Some(position) = body["position"].as_str() {
                    last = Some(position.to_owned());
                }
            }
            Op::Delete(_, _) if model.posts.is_empty() => {}
            Op::Delete(n, by_author) => {
                let n = n % model.posts.len();
                let (id, author, live) = model.posts[n].clone();
                let actor = if by_author {
                    author
                } else {
                    author % USERS + 1
                };
                let (status, body) = app.delete_post(actor, &id).await;
                let expected = match (live, by_author) {
                    (false, _) => StatusCode::NOT_FOUND,
                    (true, false) => StatusCode::FORBIDDEN,
                    (true, true) => StatusCode::OK,
                };
                if model.erased.contains(&actor) || model.erased.contains(&author) {
                    // Nothing of an erased user is deleted again.
                    assert_ne!(status, StatusCode::OK, "{op:?}: {body}");
                    continue;
                }
                assert_eq!(status, expected, "{op:?}: {body}");
                if status == StatusCode::OK {
                    model.posts[n].2 = false;
                    last = body["position"].as_str().map(str::to_owned);
                }
            }
            Op::Read(reader) => {
                let (status, _) = app.get_as(reader, "/api/v1/feed").await;
                assert_eq!(status, StatusCode::OK);
            }
            Op::Lock(user, locked) => {
                model.lock(user, locked);
                let body = app.set_locked(user, locked).await;
                if let Some(position) = body["position"].as_str() {
                    last = Some(position.to_owned());
                }
            }
        }
    }
    let Some(last) = last else { return };
    let readers: Vec<i64> = (1..=USERS).filter(|r| !model.erased.contains(r)).collect();
    for &reader in &readers {
        let expected = expected_pages(&model.feed(reader));
        let with_position = pages(&app, reader, &format!("min_position={last}")).await;
        assert_eq!(
            with_position, expected,
            "reader {reader} (min_position), ops {ops:?}"
        );
    }
    // The replica, folding every event, answers first pages as PostgreSQL does (or not at
    // all), reposts included.
    crate::helpers::replica_reached(&graph, &last).await;
    for &reader in &readers {
        if let Some(page) = memory_first_page(&graph, reader) {
            let expected = expected_pages(&model.feed(reader));
            assert_eq!(page, expected[0], "reader {reader} (memory), ops {ops:?}");
        }
    }
    shutdown.cancel();
    // The feed's read models agree with a fresh fold, inbox invariant included.
    crate::helpers::assert_verified(&app).await;
    projector_reached(&app, "feed_cache", &last).await;
    for &reader in &readers {
        let expected = expected_pages(&model.feed(reader));
        assert_eq!(
            pages(&app, reader, "").await,
            expected,
            "reader {reader} (no min_position), ops {ops:?}"
        );
    }
}

#[test]
fn every_feed_equals_the_reference_page_by_page() {
    let memory = prop::sample::select(MEMORY.to_vec());
    crate::helpers::check_property(32, (prop::collection::vec(op(), 20..70), memory), run);
}

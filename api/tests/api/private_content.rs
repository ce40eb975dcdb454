//! Private content (issue 26) over HTTP: every endpoint that shows a post or a user's graph,
//! against six viewers (the author, an approved follower, a pending requester, a stranger, a
//! user the author blocks, no token), a public, an unlisted and a followers-only post, of an
//! unlocked and a locked account, with and without `hide_graph`. Each case's expected answer is
//! written out in the tables below.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_verified, code, read, spawn_with, test_config, user, TestApp};

/// The viewers, in the tables' column order: author, follower, requester, stranger, blocked,
/// anonymous. A pending request exists only while the author is locked (an unlock approves
/// it), so in the unlocked scenarios the requester is another user who follows nobody.
const VIEWERS: usize = 6;
const ANONYMOUS: usize = 5;

/// The post endpoints: `IN`/`OUT` for whether a list (timeline, feed) holds the post, else an
/// HTTP status.
#[derive(Debug, Clone, Copy)]
enum PostEndpoint {
    /// `GET /posts/{id}/likes`
    Likes,
    /// `GET /posts/{id}/comments`
    Comments,
    /// `GET /comments/{id}/replies` (of the author's comment on the post)
    Replies,
    /// `POST /posts/{id}/like`
    Like,
    /// `POST /posts/{id}/comments`
    Comment,
    /// `GET /users/{author}/posts` holds it
    Timeline,
    /// `GET /feed` holds it (and `new_count` counts it)
    Feed,
}

const IN: u16 = 1;
const OUT: u16 = 0;

use PostEndpoint::*;

/// `(locked, visibility, endpoint, [author, follower, requester, stranger, blocked, anonymous])`.
/// The same answers hold with and without `hide_graph`, which the test checks.
#[rustfmt::skip]
const POSTS: &[(bool, &str, PostEndpoint, [u16; VIEWERS])] = &[
    // Unlocked, public: anyone reads; a block refuses the interactions (403); commands need a token.
    (false, "public",    Likes,    [200, 200, 200, 200, 200, 200]),
    (false, "public",    Comments, [200, 200, 200, 200, 200, 200]),
    (false, "public",    Replies,  [200, 200, 200, 200, 200, 200]),
    (false, "public",    Like,     [200, 200, 200, 200, 403, 401]),
    (false, "public",    Comment,  [201, 201, 201, 201, 403, 401]),
    (false, "public",    Timeline, [IN,  IN,  IN,  IN,  IN,  IN ]),
    // The feed: the follower's; the recommended feed of those who follow nobody (no block).
    (false, "public",    Feed,     [OUT, IN,  IN,  IN,  OUT, 401]),
    // Unlisted: like public, never recommended.
    (false, "unlisted",  Likes,    [200, 200, 200, 200, 200, 200]),
    (false, "unlisted",  Comments, [200, 200, 200, 200, 200, 200]),
    (false, "unlisted",  Replies,  [200, 200, 200, 200, 200, 200]),
    (false, "unlisted",  Like,     [200, 200, 200, 200, 403, 401]),
    (false, "unlisted",  Comment,  [201, 201, 201, 201, 403, 401]),
    (false, "unlisted",  Timeline, [IN,  IN,  IN,  IN,  IN,  IN ]),
    (false, "unlisted",  Feed,     [OUT, IN,  OUT, OUT, OUT, 401]),
    // Followers only: for the author and the follower; to anyone else it does not exist (404).
    (false, "followers", Likes,    [200, 200, 404, 404, 404, 404]),
    (false, "followers", Comments, [200, 200, 404, 404, 404, 404]),
    (false, "followers", Replies,  [200, 200, 404, 404, 404, 404]),
    (false, "followers", Like,     [200, 200, 404, 404, 404, 401]),
    (false, "followers", Comment,  [201, 201, 404, 404, 404, 401]),
    (false, "followers", Timeline, [IN,  IN,  OUT, OUT, OUT, OUT]),
    (false, "followers", Feed,     [OUT, IN,  OUT, OUT, OUT, 401]),
    // Locked: every post is followers-only, whatever its visibility.
    (true,  "public",    Likes,    [200, 200, 404, 404, 404, 404]),
    (true,  "public",    Comments, [200, 200, 404, 404, 404, 404]),
    (true,  "public",    Replies,  [200, 200, 404, 404, 404, 404]),
    (true,  "public",    Like,     [200, 200, 404, 404, 404, 401]),
    (true,  "public",    Comment,  [201, 201, 404, 404, 404, 401]),
    (true,  "public",    Timeline, [IN,  IN,  OUT, OUT, OUT, OUT]),
    (true,  "public",    Feed,     [OUT, IN,  OUT, OUT, OUT, 401]),
    (true,  "unlisted",  Likes,    [200, 200, 404, 404, 404, 404]),
    (true,  "unlisted",  Comments, [200, 200, 404, 404, 404, 404]),
    (true,  "unlisted",  Replies,  [200, 200, 404, 404, 404, 404]),
    (true,  "unlisted",  Like,     [200, 200, 404, 404, 404, 401]),
    (true,  "unlisted",  Comment,  [201, 201, 404, 404, 404, 401]),
    (true,  "unlisted",  Timeline, [IN,  IN,  OUT, OUT, OUT, OUT]),
    (true,  "unlisted",  Feed,     [OUT, IN,  OUT, OUT, OUT, 401]),
    (true,  "followers", Likes,    [200, 200, 404, 404, 404, 404]),
    (true,  "followers", Comments, [200, 200, 404, 404, 404, 404]),
    (true,  "followers", Replies,  [200, 200, 404, 404, 404, 404]),
    (true,  "followers", Like,     [200, 200, 404, 404, 404, 401]),
    (true,  "followers", Comment,  [201, 201, 404, 404, 404, 401]),
    (true,  "followers", Timeline, [IN,  IN,  OUT, OUT, OUT, OUT]),
    (true,  "followers", Feed,     [OUT, IN,  OUT, OUT, OUT, 401]),
];

/// The graph endpoints about the author.
#[derive(Debug, Clone, Copy)]
enum GraphEndpoint {
    /// `GET /users/{author}/following`
    Following,
    /// `GET /users/{author}/followers`
    Followers,
    /// `GET /users/{author}/friends`
    Friends,
    /// `GET /users/{author}/known_followers` (token)
    KnownFollowers,
    /// `GET /relation/status?from={author}&to={follower}`
    Status,
    /// `GET /relation/batch?from={stranger}&to={author}`
    Batch,
    /// `GET /users/{author}/counts`: always public
    Counts,
}

use GraphEndpoint::*;

/// `(locked, hide_graph, endpoint, [author, follower, requester, stranger, blocked, anonymous])`.
#[rustfmt::skip]
const GRAPH: &[(bool, bool, GraphEndpoint, [u16; VIEWERS])] = &[
    (false, false, Following,      [200, 200, 200, 200, 200, 200]),
    (false, false, Followers,      [200, 200, 200, 200, 200, 200]),
    (false, false, Friends,        [200, 200, 200, 200, 200, 200]),
    (false, false, KnownFollowers, [200, 200, 200, 200, 200, 401]),
    (false, false, Status,         [200, 200, 200, 200, 200, 200]),
    (false, false, Batch,          [200, 200, 200, 200, 200, 200]),
    (false, false, Counts,         [200, 200, 200, 200, 200, 200]),
    // Locked: the lists for the user and their followers; relation queries naming the user
    // for the pair (and for followers, to whom the user is not hidden).
    (true,  false, Following,      [200, 200, 403, 403, 403, 403]),
    (true,  false, Followers,      [200, 200, 403, 403, 403, 403]),
    (true,  false, Friends,        [200, 200, 403, 403, 403, 403]),
    (true,  false, KnownFollowers, [200, 200, 403, 403, 403, 401]),
    (true,  false, Status,         [200, 200, 403, 403, 403, 403]),
    (true,  false, Batch,          [200, 200, 403, 200, 403, 403]),
    (true,  false, Counts,         [200, 200, 200, 200, 200, 200]),
    // Hidden: the lists for the user alone; relation queries for the pair's two users alone.
    (false, true,  Following,      [200, 403, 403, 403, 403, 403]),
    (false, true,  Followers,      [200, 403, 403, 403, 403, 403]),
    (false, true,  Friends,        [200, 403, 403, 403, 403, 403]),
    (false, true,  KnownFollowers, [200, 403, 403, 403, 403, 401]),
    (false, true,  Status,         [200, 200, 403, 403, 403, 403]),
    (false, true,  Batch,          [200, 403, 403, 200, 403, 403]),
    (false, true,  Counts,         [200, 200, 200, 200, 200, 200]),
    (true,  true,  Following,      [200, 403, 403, 403, 403, 403]),
    (true,  true,  Followers,      [200, 403, 403, 403, 403, 403]),
    (true,  true,  Friends,        [200, 403, 403, 403, 403, 403]),
    (true,  true,  KnownFollowers, [200, 403, 403, 403, 403, 401]),
    (true,  true,  Status,         [200, 200, 403, 403, 403, 403]),
    (true,  true,  Batch,          [200, 403, 403, 200, 403, 403]),
    (true,  true,  Counts,         [200, 200, 200, 200, 200, 200]),
];

/// One scenario's users and posts: the author is `base`, the viewers `base..base + 5`.
struct Scenario {
    base: i64,
    locked: bool,
    hide_graph: bool,
    /// visibility -> (post id, the author's comment on it)
    posts: Vec<(&'static str, String, String)>,
}

impl Scenario {
    fn author(&self) -> i64 {
        self.base
    }

    /// The viewer in column `i` (none for the anonymous one).
    fn viewer(&self, i: usize) -> Option<i64> {
        (i != ANONYMOUS).then_some(self.base + i as i64)
    }
}

/// GET `path` as `viewer` (no token when none).
async fn get(app: &TestApp, viewer: Option<i64>, path: &str) -> (StatusCode, Value) {
    match viewer {
        Some(v) => app.get_as(v, path).await,
        None => app.get(path).await,
    }
}

/// POST `path` with `body` as `viewer` (no token when none).
async fn post(app: &TestApp, viewer: Option<i64>, path: &str, body: Value) -> (StatusCode, Value) {
    let mut request = app.client.post(format!("{}{path}", app.base)).json(&body);
    if let Some(v) = viewer {
        request = request.bearer_auth(app.token(v));
    }
    read(request.send().await.unwrap()).await
}

/// The answer's status and its position, asserting success.
fn position(status: StatusCode, body: &Value) -> String {
    assert!(status.is_success(), "{body}");
    body["position"].as_str().unwrap().to_owned()
}

/// Sets the author's settings with `PUT /me/settings`; the position.
async fn settings(app: &TestApp, author: i64, body: Value) -> Option<String> {
    let body = app.settings(author, body).await;
    body["position"].as_str().map(str::to_owned)
}

/// Builds a scenario: the follower follows, the author blocks the blocked user, publishes a
/// post of each visibility with a comment and a reply of their own, then locks (and the
/// requester asks to follow) and hides the graph as the scenario says. The last position.
async fn arrange(app: &TestApp, base: i64, locked: bool, hide_graph: bool) -> (Scenario, String) {
    let mut scenario = Scenario {
        base,
        locked,
        hide_graph,
        posts: Vec::new(),
    };
    let a = scenario.author();
    let (s, b) = app.command("follow", a + 1, a).await;
    position(s, &b);
    let (s, b) = app.command("block", a, a + 4).await;
    let mut last = position(s, &b);
    for visibility in ["public", "unlisted", "followers"] {
        let (s, b) = post(
            app,
            Some(a),
            "/api/v1/posts",
            json!({"content": format!("{visibility} by {a}"), "visibility": visibility}),
        )
        .await;
        assert_eq!(b["post"]["visibility"], json!(visibility), "{b}");
        position(s, &b);
        let id = b["post"]["id"].as_str().unwrap().to_owned();
        let path = format!("/api/v1/posts/{id}/comments");
        let (s, b) = post(app, Some(a), &path, json!({"content": "root"})).await;
        position(s, &b);
        let comment = b["comment"]["id"].as_str().unwrap().to_owned();
        let (s, b) = post(
            app,
            Some(a),
            &path,
            json!({"content": "reply", "parent": comment}),
        )
        .await;
        last = position(s, &b);
        scenario.posts.push((visibility, id, comment));
    }
    if locked {
        settings(app, a, json!({"locked": true})).await.unwrap();
        let (s, b) = app.command("follow", a + 2, a).await;
        assert_eq!(b["relation"]["requested"], json!(true), "{b}");
        last = position(s, &b);
    }
    if hide_graph {
        last = settings(app, a, json!({"hide_graph": true})).await.unwrap();
    }
    (scenario, last)
}

/// The answer `viewer` gets from a post endpoint: a status, or whether the list holds it.
async fn post_answer(
    app: &TestApp,
    s: &Scenario,
    viewer: Option<i64>,
    endpoint: PostEndpoint,
    (post_id, comment): (&str, &str),
    at: &str,
) -> u16 {
    let holds = |status: StatusCode, body: &Value| {
        if status != StatusCode::OK {
            return status.as_u16();
        }
        let items = body["items"].as_array().unwrap();
        u16::from(items.iter().any(|p| p["id"] == json!(post_id)))
    };
    let (status, body) = match endpoint {
        Likes => {
            get(
                app,
                viewer,
                &format!("/api/v1/posts/{post_id}/likes?min_position={at}"),
            )
            .await
        }
        Comments => {
            get(
                app,
                viewer,
                &format!("/api/v1/posts/{post_id}/comments?min_position={at}"),
            )
            .await
        }
        Replies => {
            get(
                app,
                viewer,
                &format!("/api/v1/comments/{comment}/replies?min_position={at}"),
            )
            .await
        }
        Like => {
            post(
                app,
                viewer,
                &format!("/api/v1/posts/{post_id}/like"),
                json!({}),
            )
            .await
        }
        Comment => {
            let path = format!("/api/v1/posts/{post_id}/comments");
            post(app, viewer, &path, json!({"content": "hi"})).await
        }
        Timeline => {
            let path = format!(
                "/api/v1/users/{}/posts?size=20&min_position={at}",
                s.author()
            );
            let (status, body) = get(app, viewer, &path).await;
            return holds(status, &body);
        }
        Feed => {
            let (status, body) = get(
                app,
                viewer,
                &format!("/api/v1/feed?size=20&min_position={at}"),
            )
            .await;
            return holds(status, &body);
        }
    };
    if status == StatusCode::NOT_FOUND {
        assert_eq!(code(&body), "NOT_FOUND", "{body}");
    }
    status.as_u16()
}

/// The answer `viewer` gets from a graph endpoint about the author.
async fn graph_answer(
    app: &TestApp,
    s: &Scenario,
    viewer: Option<i64>,
    endpoint: GraphEndpoint,
    at: &str,
) -> u16 {
    let a = s.author();
    let path = match endpoint {
        Following => format!("/api/v1/users/{a}/following"),
        Followers => format!("/api/v1/users/{a}/followers"),
        Friends => format!("/api/v1/users/{a}/friends"),
        KnownFollowers => format!("/api/v1/users/{a}/known_followers"),
        Status => format!("/api/v1/relation/status?from={a}&to={}", a + 1),
        Batch => format!("/api/v1/relation/batch?from={}&to={a}", a + 3),
        Counts => format!("/api/v1/users/{a}/counts"),
    };
    let separator = if path.contains('?') { '&' } else { '?' };
    let (status, body) = get(app, viewer, &format!("{path}{separator}min_position={at}")).await;
    if status == StatusCode::FORBIDDEN {
        assert_eq!(code(&body), "HIDDEN", "{body}");
    }
    if matches!(endpoint, Counts) {
        assert_eq!(body["followers"], json!(1), "counts stay public: {body}");
    }
    status.as_u16()
}

#[tokio::test]
async fn every_reader_answers_each_viewer_as_the_tables_say() {
    let mut config = test_config().await;
    let scenarios = [(false, false), (true, false), (false, true), (true, true)];
    let bases: Vec<i64> = (1..=scenarios.len() as i64).map(|k| k * 10).collect();
    config.recommended_authors = bases
        .iter()
        .map(|&b| relations_api::config::RecommendedAuthor(Some(user(b))))
        .collect();
    let app = spawn_with(config).await;
    let mut arranged = Vec::new();
    for (&base, &(locked, hide)) in bases.iter().zip(&scenarios) {
        arranged.push(arrange(&app, base, locked, hide).await);
    }
    let mut wrong = Vec::new();
    for (s, at) in &arranged {
        // new_count before any feed page (a first page moves the read mark): what the feed
        // shows of every author, for each viewer with a token.
        let mut counted = Vec::new();
        for i in 0..ANONYMOUS {
            let path = format!("/api/v1/feed/new_count?min_position={at}");
            let (status, body) = get(&app, s.viewer(i), &path).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            let (_, page) = get(
                &app,
                s.viewer(i),
                &format!("/api/v1/feed?size=20&min_position={at}"),
            )
            .await;
            counted.push((
                body["count"].clone(),
                json!(page["items"].as_array().unwrap().len()),
            ));
        }
        for (count, shown) in &counted {
            assert_eq!(count, shown, "new_count counts what the feed shows");
        }
        for &(locked, visibility, endpoint, expected) in POSTS {
            if locked != s.locked {
                continue;
            }
            let (_, id, comment) = s.posts.iter().find(|p| p.0 == visibility).unwrap();
            for (i, &want) in expected.iter().enumerate() {
                let got = post_answer(&app, s, s.viewer(i), endpoint, (id, comment), at).await;
                if got != want {
                    wrong.push(format!(
                        "locked={locked} hide={} {visibility} {endpoint:?} viewer#{i}: want {want}, got {got}",
                        s.hide_graph
                    ));
                }
            }
        }
        for &(locked, hide, endpoint, expected) in GRAPH {
            if (locked, hide) != (s.locked, s.hide_graph) {
                continue;
            }
            for (i, &want) in expected.iter().enumerate() {
                let got = graph_answer(&app, s, s.viewer(i), endpoint, at).await;
                if got != want {
                    wrong.push(format!(
                        "locked={locked} hide={hide} {endpoint:?} viewer#{i}: want {want}, got {got}"
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_verified(&app).await;
}

#[tokio::test]
async fn unlocking_restores_each_posts_visibility_and_settings_answer_both_with_a_position() {
    let app = spawn_with(test_config().await).await;
    let (public, _) = app.publish(1, "public").await;
    let locked = settings(&app, 1, json!({"locked": true, "hide_graph": true})).await;
    let path = |id: &str| {
        format!(
            "/api/v1/posts/{id}/likes?min_position={}",
            locked.as_deref().unwrap()
        )
    };
    assert_eq!(app.get_as(2, &path(&public)).await.0, StatusCode::NOT_FOUND);
    // Either setting may be omitted; the answer shows both.
    let body = app.settings(1, json!({"locked": false})).await;
    assert_eq!(
        (body["locked"].clone(), body["hide_graph"].clone()),
        (json!(false), json!(true))
    );
    let at = body["position"].as_str().unwrap();
    let (status, _) = app
        .get_as(
            2,
            &format!("/api/v1/posts/{public}/likes?min_position={at}"),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "unlocking restores the post's own visibility"
    );
    let (status, body) = app
        .get(&format!("/api/v1/users/1/followers?min_position={at}"))
        .await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "HIDDEN"));
    // Bad input changes nothing.
    let bad = json!({"content": "x", "visibility": "secret"});
    let (status, body) = app.post_with(1, bad).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_INPUT")
    );
    let events = app.events().await;
    let types: Vec<&str> = events.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        types,
        [
            "PostPublished",
            "AccountLocked",
            "GraphHidden",
            "AccountUnlocked"
        ]
    );
    assert_eq!(events[0].1["PostPublished"]["visibility"], json!("public"));
    assert_verified(&app).await;
}

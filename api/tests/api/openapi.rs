//! The served OpenAPI document against the real answers: for every route it lists, real
//! requests (a success and at least one error wherever the route has one) whose status must be
//! declared for that route and whose JSON body must validate against the schema declared for
//! that status, `#/components/schemas/...` refs resolved against the served document.
//!
//! The schemas are checked closed-world: an object answer with a property the document does
//! not declare fails, as does one missing a required property or with a wrong type.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

/// One real request and the status it must get.
struct Call {
    method: Method,
    url: String,
    token: Option<String>,
    body: Option<Value>,
    /// A `text/csv` body instead of JSON.
    csv: Option<String>,
    expect: StatusCode,
}

impl Call {
    fn new(method: &str, url: impl Into<String>, expect: StatusCode) -> Self {
        Self {
            method: method.to_uppercase().parse().unwrap(),
            url: url.into(),
            token: None,
            body: None,
            csv: None,
            expect,
        }
    }

    fn token(mut self, token: String) -> Self {
        self.token = Some(token);
        self
    }

    fn body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    fn csv(mut self, text: &str) -> Self {
        self.csv = Some(text.to_owned());
        self
    }
}

/// What the calls need: users 1 and 2 are friends, 1 blocks 3, 1 has two posts.
struct World {
    /// The log position after the last write, for read-your-writes queries.
    at: String,
    /// One of user 1's posts, left alone.
    post: String,
    /// Another of user 1's posts, deleted by a call.
    doomed: String,
    /// A comment by user 2 on `post`, left alone.
    comment: String,
    /// Another, deleted by a call.
    doomed_comment: String,
    /// User 2's post quoting `post` (issue 44).
    quote: String,
    /// A list of user 1's with user 2 in it (issue 46), left alone.
    list: String,
    /// Another, deleted by a call.
    doomed_list: String,
    doomed_filter: String,
}

async fn arrange(app: &TestApp) -> World {
    for (verb, actor, target) in [("follow", 1, 2), ("follow", 2, 1), ("block", 1, 3)] {
        let (status, body) = app.command(verb, actor, target).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (doomed, _) = app.publish(1, "to be deleted").await;
    let (post, _) = app.publish(1, "hello").await;
    let mut comments = Vec::new();
    for _ in 0..2 {
        let (status, body) = crate::helpers::read(
            app.client
                .post(format!("{}/api/v1/posts/{post}/comments", app.base))
                .bearer_auth(app.token(2))
                .json(&json!({ "content": "a comment" }))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        comments.push((
            body["comment"]["id"].as_str().unwrap().to_owned(),
            body["position"].as_str().unwrap().to_owned(),
        ));
    }
    let (doomed_comment, _) = comments.pop().unwrap();
    let (comment, _) = comments.pop().unwrap();
    let (status, quoting) = app
        .post_with(2, json!({ "content": "quoting", "quote_of": post }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{quoting}");
    let quote = quoting["post"]["id"].as_str().unwrap().to_owned();
    let mut lists = Vec::new();
    for title in ["kept", "doomed"] {
        let (status, made) = app
            .post_as(1, "/api/v1/lists", json!({ "title": title }))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{made}");
        lists.push(made["list"]["id"].as_str().unwrap().to_owned());
    }
    let (doomed_list, list) = (lists.pop().unwrap(), lists.pop().unwrap());
    let path = format!("/api/v1/lists/{list}/members");
    let (status, body) = app.post_as(1, &path, json!({ "users": [2] })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let body = json!({"phrase": "doomed", "contexts": ["home"], "action": "warn"});
    let (status, made) = app.post_as(1, "/api/v1/filters", body).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let doomed_filter = made["filter"]["id"].as_str().unwrap().to_owned();
    let (_, at) = app.publish(1, "last").await;
    World {
        list,
        doomed_list,
        doomed_filter,
        at,
        post,
        doomed,
        comment,
        doomed_comment,
        quote,
    }
}

/// The calls for one documented route. A route with no entry here fails the test: a new route
/// must say how its answers are checked.
fn calls(app: &TestApp, w: &World, method: &str, path: &str) -> Vec<Call> {
    use StatusCode as S;
    let (t1, t2, at) = (app.token(1), app.token(2), &w.at);
    let command = |verb: &str, target: i64, t: Option<&str>, expect| {
        let call = Call::new("post", format!("/api/v1/relation/{verb}"), expect)
            .body(json!({ "target": target }));
        match t {
            Some(t) => call.token(t.to_owned()),
            None => call,
        }
    };
    match (method, path) {
        ("post", "/api/v1/relation/follow") => vec![
            command("follow", 4, Some(&t1), S::OK),
            command("follow", 4, Some(&t1), S::OK), // unchanged: position null
            command("follow", 1, Some(&t1), S::BAD_REQUEST),
            command("follow", 1, Some(&app.token(3)), S::FORBIDDEN),
            command("follow", 2, None, S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/relation/unfollow") => vec![
            command("unfollow", 4, Some(&t1), S::OK),
            command("unfollow", 1, Some(&t1), S::BAD_REQUEST),
        ],
        ("post", "/api/v1/relation/block") => vec![
            command("block", 5, Some(&t1), S::OK),
            command("block", 5, None, S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/relation/unblock") => vec![
            command("unblock", 5, Some(&t1), S::OK),
            Call::new("post", "/api/v1/relation/unblock", S::BAD_REQUEST)
                .token(t1.clone())
                .body(json!({ "target": "five" })),
        ],
        ("post", "/api/v1/relation/remove_follower") => vec![
            command("follow", 1, Some(&app.token(6)), S::OK),
            command("remove_follower", 6, Some(&t1), S::OK),
            command("remove_follower", 1, Some(&t1), S::BAD_REQUEST),
            command("remove_follower", 6, None, S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/relation/mute") => vec![
            Call::new("post", path, S::OK)
                .token(t1.clone())
                .body(json!({ "target": 7, "duration_secs": 3600 })),
            Call::new("post", path, S::OK)
                .token(t1.clone())
                .body(json!({ "target": 8 })),
            Call::new("post", path, S::BAD_REQUEST)
                .token(t1.clone())
                .body(json!({ "target": 7, "duration_secs": -1 })),
            Call::new("post", path, S::UNAUTHORIZED).body(json!({ "target": 7 })),
        ],
        ("post", "/api/v1/relation/unmute") => vec![
            command("unmute", 8, Some(&t1), S::OK),
            command("unmute", 1, Some(&t1), S::BAD_REQUEST),
        ],
        ("post", "/api/v1/relation/follow_requests/approve")
        | ("post", "/api/v1/relation/follow_requests/reject") => {
            let verb = path.trim_start_matches("/api/v1/relation/");
            vec![
                command(verb, 2, Some(&t1), S::OK), // nothing pending: changed false
                command(verb, 1, Some(&t1), S::BAD_REQUEST),
                command(verb, 2, None, S::UNAUTHORIZED),
            ]
        }
        ("put", "/api/v1/me/settings") => vec![
            Call::new("put", path, S::OK)
                .token(app.token(10))
                .body(json!({ "locked": true })),
            Call::new("put", path, S::BAD_REQUEST)
                .token(app.token(10))
                .body(json!({ "locked": "yes" })),
            Call::new("put", path, S::UNAUTHORIZED).body(json!({ "locked": true })),
        ],
        ("put", "/api/v1/me/notification_policy") => vec![
            Call::new("put", path, S::OK)
                .token(app.token(11))
                .body(json!({ "not_followers": "filter" })),
            Call::new("put", path, S::BAD_REQUEST)
                .token(app.token(11))
                .body(json!({ "not_following": "reject" })),
            Call::new("put", path, S::UNAUTHORIZED).body(json!({})),
        ],
        ("get", "/api/v1/me/follow_requests") => vec![
            Call::new("get", format!("{path}?min_position={at}"), S::OK).token(t1.clone()),
            Call::new("get", format!("{path}?cursor=x"), S::BAD_REQUEST).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/me/follower_changes") => vec![
            Call::new(
                "get",
                format!("{path}?since=2020-01-01T00:00:00Z&min_position={at}"),
                S::OK,
            )
            .token(t1.clone()),
            Call::new("get", path, S::BAD_REQUEST).token(t1.clone()),
            Call::new(
                "get",
                format!("{path}?since=2020-01-01T00:00:00Z"),
                S::UNAUTHORIZED,
            ),
        ],
        ("get", "/api/v1/users/{id}/known_followers") => vec![
            Call::new(
                "get",
                format!("/api/v1/users/1/known_followers?min_position={at}"),
                S::OK,
            )
            .token(t2.clone()),
            Call::new(
                "get",
                "/api/v1/users/1/known_followers?limit=0",
                S::BAD_REQUEST,
            )
            .token(t2.clone()),
            Call::new("get", "/api/v1/users/x/known_followers", S::NOT_FOUND).token(t2.clone()),
            Call::new("get", "/api/v1/users/1/known_followers", S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/me/following.csv") => vec![
            Call::new("get", path, S::OK).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/me/following/import") => vec![
            Call::new("post", path, S::OK)
                .token(app.token(11))
                .csv("user_id,since\n4,\n"),
            Call::new("post", path, S::BAD_REQUEST)
                .token(app.token(11))
                .csv("id\n4\n"),
            Call::new("post", path, S::UNSUPPORTED_MEDIA_TYPE)
                .token(app.token(11))
                .body(json!({ "user_id": 4 })),
            Call::new("post", path, S::UNAUTHORIZED).csv("user_id\n4\n"),
        ],
        (
            "post",
            "/api/v1/posts/{id}/like"
            | "/api/v1/posts/{id}/unlike"
            | "/api/v1/posts/{id}/repost"
            | "/api/v1/posts/{id}/unrepost"
            | "/api/v1/posts/{id}/bookmark"
            | "/api/v1/posts/{id}/unbookmark",
        ) => vec![
            Call::new("post", path.replace("{id}", &w.post), S::OK).token(t2.clone()),
            Call::new("post", path.replace("{id}", &w.post), S::FORBIDDEN).token(app.token(3)),
            Call::new("post", path.replace("{id}", "nope"), S::NOT_FOUND).token(t2.clone()),
            Call::new("post", path.replace("{id}", &w.post), S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/posts/{id}/likes" | "/api/v1/posts/{id}/reposts") => vec![
            Call::new(
                "get",
                format!("{}?min_position={at}", path.replace("{id}", &w.post)),
                S::OK,
            ),
            Call::new(
                "get",
                format!("{}?limit=0", path.replace("{id}", &w.post)),
                S::BAD_REQUEST,
            ),
            Call::new("get", path.replace("{id}", "nope"), S::NOT_FOUND),
        ],
        ("post", "/api/v1/posts/{id}/comments") => {
            let url = path.replace("{id}", &w.post);
            vec![
                Call::new("post", url.clone(), S::CREATED)
                    .token(t2.clone())
                    .body(json!({ "content": "hi", "parent": w.comment })),
                Call::new("post", url.clone(), S::BAD_REQUEST)
                    .token(t2.clone())
                    .body(json!({ "content": "" })),
                Call::new("post", url.clone(), S::FORBIDDEN)
                    .token(app.token(3))
                    .body(json!({ "content": "hi" })),
                Call::new("post", path.replace("{id}", "nope"), S::NOT_FOUND)
                    .token(t2.clone())
                    .body(json!({ "content": "hi" })),
                Call::new("post", url, S::UNAUTHORIZED).body(json!({ "content": "hi" })),
            ]
        }
        ("get", "/api/v1/posts/{id}/comments") => vec![
            Call::new(
                "get",
                format!(
                    "/api/v1/posts/{}/comments?sort=top&min_position={at}",
                    w.post
                ),
                S::OK,
            )
            .token(t1.clone()),
            Call::new("get", format!("/api/v1/posts/{}/comments", w.post), S::OK),
            Call::new(
                "get",
                format!("/api/v1/posts/{}/comments?sort=x", w.post),
                S::BAD_REQUEST,
            ),
            Call::new("get", "/api/v1/posts/nope/comments", S::NOT_FOUND),
        ],
        ("delete", "/api/v1/comments/{id}") => vec![
            Call::new(
                "delete",
                format!("/api/v1/comments/{}", w.doomed_comment),
                S::FORBIDDEN,
            )
            .token(app.token(5)),
            Call::new(
                "delete",
                format!("/api/v1/comments/{}", w.doomed_comment),
                S::OK,
            )
            .token(t1.clone()),
            Call::new("delete", "/api/v1/comments/nope", S::NOT_FOUND).token(t1.clone()),
            Call::new(
                "delete",
                format!("/api/v1/comments/{}", w.comment),
                S::UNAUTHORIZED,
            ),
        ],
        ("post", "/api/v1/comments/{id}/like" | "/api/v1/comments/{id}/unlike") => vec![
            Call::new("post", path.replace("{id}", &w.comment), S::OK).token(t1.clone()),
            Call::new("post", path.replace("{id}", "nope.1"), S::NOT_FOUND).token(t1.clone()),
            Call::new("post", path.replace("{id}", &w.comment), S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/comments/{id}/pin" | "/api/v1/comments/{id}/unpin") => vec![
            Call::new("post", path.replace("{id}", &w.comment), S::OK).token(t1.clone()),
            Call::new("post", path.replace("{id}", &w.comment), S::FORBIDDEN).token(t2.clone()),
            Call::new("post", path.replace("{id}", "nope"), S::NOT_FOUND).token(t1.clone()),
        ],
        ("get", "/api/v1/comments/{id}/replies") => vec![
            Call::new(
                "get",
                format!("/api/v1/comments/{}/replies?min_position={at}", w.comment),
                S::OK,
            )
            .token(t1.clone()),
            Call::new(
                "get",
                format!("/api/v1/comments/{}/replies?cursor=x", w.comment),
                S::BAD_REQUEST,
            ),
            Call::new("get", "/api/v1/comments/nope/replies", S::NOT_FOUND),
        ],
        ("get", "/api/v1/filters") => vec![
            Call::new("get", format!("{path}?min_position={at}"), S::OK).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/filters") => vec![
            Call::new("post", path, S::CREATED).token(t1.clone()).body(
                json!({"phrase": "猫", "whole_word": true, "contexts": ["home", "comments"],
                             "action": "hide", "expires_in_secs": 60}),
            ),
            Call::new("post", path, S::BAD_REQUEST)
                .token(t1.clone())
                .body(json!({"phrase": "", "contexts": ["home"], "action": "hide"})),
            Call::new("post", path, S::UNAUTHORIZED)
                .body(json!({"phrase": "x", "contexts": ["home"], "action": "hide"})),
        ],
        ("delete", "/api/v1/filters/{id}") => vec![
            Call::new(
                "delete",
                path.replace("{id}", &w.doomed_filter),
                S::NOT_FOUND,
            )
            .token(t2.clone()),
            Call::new("delete", path.replace("{id}", &w.doomed_filter), S::OK).token(t1.clone()),
            Call::new("delete", path.replace("{id}", "nope"), S::NOT_FOUND).token(t1.clone()),
        ],
        ("get", "/api/v1/lists") => vec![
            Call::new("get", format!("{path}?min_position={at}"), S::OK).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/lists") => vec![
            Call::new("post", path, S::CREATED)
                .token(t1.clone())
                .body(json!({ "title": "new", "exclusive": true })),
            Call::new("post", path, S::BAD_REQUEST)
                .token(t1.clone())
                .body(json!({ "title": "" })),
            Call::new("post", path, S::UNAUTHORIZED).body(json!({ "title": "x" })),
        ],
        ("patch", "/api/v1/lists/{id}") => vec![
            Call::new("patch", path.replace("{id}", &w.list), S::OK)
                .token(t1.clone())
                .body(json!({ "title": "renamed" })),
            Call::new("patch", path.replace("{id}", &w.list), S::BAD_REQUEST)
                .token(t1.clone())
                .body(json!({ "title": "" })),
            Call::new("patch", path.replace("{id}", &w.list), S::NOT_FOUND)
                .token(t2.clone())
                .body(json!({ "title": "theirs" })),
        ],
        ("delete", "/api/v1/lists/{id}") => vec![
            Call::new("delete", path.replace("{id}", &w.doomed_list), S::OK).token(t1.clone()),
            Call::new("delete", path.replace("{id}", "nope"), S::NOT_FOUND).token(t1.clone()),
        ],
        ("get", "/api/v1/lists/{id}/members") => vec![
            Call::new(
                "get",
                format!("{}?min_position={at}", path.replace("{id}", &w.list)),
                S::OK,
            )
            .token(t1.clone()),
            Call::new(
                "get",
                format!("{}?cursor=x", path.replace("{id}", &w.list)),
                S::BAD_REQUEST,
            )
            .token(t1.clone()),
            Call::new("get", path.replace("{id}", "nope"), S::NOT_FOUND).token(t1.clone()),
        ],
        ("post", "/api/v1/lists/{id}/members") => vec![
            Call::new("post", path.replace("{id}", &w.list), S::OK)
                .token(t1.clone())
                .body(json!({ "users": [2] })),
            Call::new("post", path.replace("{id}", &w.list), S::CONFLICT)
                .token(t1.clone())
                .body(json!({ "users": [5] })),
            Call::new("post", path.replace("{id}", &w.list), S::BAD_REQUEST)
                .token(t1.clone())
                .body(json!({ "users": [] })),
        ],
        ("delete", "/api/v1/lists/{id}/members") => vec![
            Call::new("delete", path.replace("{id}", &w.list), S::OK)
                .token(t1.clone())
                .body(json!({ "users": [5] })),
            Call::new("delete", path.replace("{id}", "nope"), S::NOT_FOUND)
                .token(t1.clone())
                .body(json!({ "users": [5] })),
        ],
        ("get", "/api/v1/lists/{id}/feed") => vec![
            Call::new(
                "get",
                format!("{}?min_position={at}", path.replace("{id}", &w.list)),
                S::OK,
            )
            .token(t1.clone()),
            Call::new(
                "get",
                format!("{}?size=0", path.replace("{id}", &w.list)),
                S::BAD_REQUEST,
            )
            .token(t1.clone()),
            Call::new("get", path.replace("{id}", "nope"), S::NOT_FOUND).token(t1.clone()),
        ],
        ("get", "/api/v1/me/suggestions") => vec![
            Call::new("get", format!("{path}?min_position={at}"), S::OK).token(t1.clone()),
            Call::new("get", format!("{path}?limit=50"), S::OK).token(t1.clone()),
            Call::new("get", format!("{path}?limit=51"), S::BAD_REQUEST).token(t1.clone()),
            Call::new("get", format!("{path}?limit=0"), S::BAD_REQUEST).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/me/suggestions/{id}/dismiss") => vec![
            Call::new("post", path.replace("{id}", "4"), S::OK).token(t1.clone()),
            Call::new("post", path.replace("{id}", "1"), S::BAD_REQUEST).token(t1.clone()),
            Call::new("post", path.replace("{id}", "nope"), S::NOT_FOUND).token(t1.clone()),
            Call::new("post", path.replace("{id}", "4"), S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/me/bookmarks") => vec![
            Call::new("get", format!("{path}?min_position={at}"), S::OK).token(t2.clone()),
            Call::new("get", format!("{path}?limit=1"), S::OK).token(t2.clone()),
            Call::new("get", format!("{path}?cursor=x"), S::BAD_REQUEST).token(t2.clone()),
            Call::new("get", format!("{path}?limit=101"), S::BAD_REQUEST).token(t2.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/me/liked") => vec![
            Call::new("get", format!("{path}?ids={}", w.post), S::OK).token(t2.clone()),
            Call::new("get", format!("{path}?ids=x"), S::BAD_REQUEST).token(t2.clone()),
            Call::new("get", format!("{path}?ids={}", w.post), S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/feed/stream") => vec![
            Call::new("get", path, S::OK).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/notifications/stream") => vec![
            Call::new("get", path, S::OK).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/notifications") => vec![
            Call::new("get", format!("{path}?min_position={at}"), S::OK).token(t1.clone()),
            Call::new("get", format!("{path}?types=commented,followed"), S::OK).token(t1.clone()),
            Call::new("get", format!("{path}?cursor=x"), S::BAD_REQUEST).token(t1.clone()),
            Call::new("get", format!("{path}?types=nope"), S::BAD_REQUEST).token(t1.clone()),
            Call::new("get", format!("{path}?filtered=true"), S::OK).token(t1.clone()),
            Call::new("get", format!("{path}?filtered=maybe"), S::BAD_REQUEST).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/notifications/unread_count") => vec![
            Call::new("get", format!("{path}?min_position={at}"), S::OK).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/notifications/read") => vec![
            Call::new("post", path, S::OK)
                .token(t1.clone())
                .body(json!({ "up_to": at })),
            Call::new("post", path, S::BAD_REQUEST)
                .token(t1.clone())
                .body(json!({ "up_to": "x" })),
            Call::new("post", path, S::UNAUTHORIZED).body(json!({ "up_to": at })),
        ],
        ("get", "/admin") => vec![Call::new("get", path, S::OK)],
        ("get", "/api/v1/me/mutes") => vec![
            Call::new("get", format!("{path}?min_position={at}"), S::OK).token(t1.clone()),
            Call::new("get", format!("{path}?cursor=x"), S::BAD_REQUEST).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/relation/status") => vec![
            Call::new(
                "get",
                format!("{path}?from=1&to=2&min_position={at}"),
                S::OK,
            ),
            Call::new("get", format!("{path}?from=1&to=1"), S::OK),
            Call::new(
                "get",
                format!("{path}?from=1&to=2&as_of=2020-01-01T00:00:00Z"),
                S::OK,
            ),
            Call::new("get", format!("{path}?from=0&to=1"), S::BAD_REQUEST),
        ],
        ("get", "/api/v1/relation/batch") => vec![
            Call::new(
                "get",
                format!("{path}?from=1&to=2,3,1&min_position={at}"),
                S::OK,
            ),
            Call::new(
                "get",
                format!("{path}?from=1&to=2,3&as_of=2030-01-01T00:00:00Z&min_position={at}"),
                S::OK,
            ),
            Call::new("get", format!("{path}?from=1&to=2,x"), S::BAD_REQUEST),
        ],
        ("get", "/api/v1/users/{id}/following" | "/api/v1/users/{id}/friends") => {
            let list = path.replace("{id}", "1");
            vec![
                Call::new("get", format!("{list}?viewer=2&min_position={at}"), S::OK),
                Call::new("get", list.clone(), S::OK), // the cached first page
                Call::new("get", format!("{list}?limit=0"), S::BAD_REQUEST),
                Call::new("get", path.replace("{id}", "x"), S::NOT_FOUND),
            ]
        }
        ("get", "/api/v1/users/{id}/followers") => {
            let list = path.replace("{id}", "2");
            vec![
                Call::new(
                    "get",
                    format!("{list}?viewer=1&limit=1&min_position={at}"),
                    S::OK,
                ),
                Call::new("get", list.clone(), S::OK),
                Call::new("get", format!("{list}?cursor=nope"), S::BAD_REQUEST),
                Call::new("get", path.replace("{id}", "-1"), S::NOT_FOUND),
            ]
        }
        ("get", "/api/v1/users/{id}/counts") => vec![
            Call::new(
                "get",
                format!("/api/v1/users/1/counts?min_position={at}"),
                S::OK,
            ),
            Call::new("get", "/api/v1/users/1/counts", S::OK),
            Call::new(
                "get",
                "/api/v1/users/1/counts?min_position=x",
                S::BAD_REQUEST,
            ),
            Call::new("get", "/api/v1/users/0/counts", S::NOT_FOUND),
        ],
        ("get", "/api/v1/me/blocks") => vec![
            Call::new("get", format!("{path}?min_position={at}"), S::OK).token(t1.clone()),
            Call::new("get", format!("{path}?limit=101"), S::BAD_REQUEST).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/posts") => vec![
            Call::new("post", path, S::CREATED)
                .token(t2.clone())
                .body(json!({ "content": "hi" })),
            Call::new("post", path, S::CREATED)
                .token(t2.clone())
                .body(json!({ "content": "hi", "quote_of": w.post, "quote_policy": "nobody" })),
            Call::new("post", path, S::FORBIDDEN)
                .token(app.token(3))
                .body(json!({ "content": "hi", "quote_of": w.post })),
            Call::new("post", path, S::NOT_FOUND)
                .token(t2.clone())
                .body(
                    json!({ "content": "hi", "quote_of": "0190f5a2-7b6c-7def-8123-456789abcdef" }),
                ),
            Call::new("post", path, S::BAD_REQUEST)
                .token(t2.clone())
                .body(json!({ "content": "" })),
            Call::new("post", path, S::UNAUTHORIZED).body(json!({ "content": "hi" })),
        ],
        ("put", "/api/v1/posts/{id}/quote_policy") => vec![
            Call::new("put", path.replace("{id}", &w.post), S::OK)
                .token(t1.clone())
                .body(json!({ "quote_policy": "followers" })),
            Call::new("put", path.replace("{id}", &w.post), S::FORBIDDEN)
                .token(t2.clone())
                .body(json!({ "quote_policy": "nobody" })),
            Call::new("put", path.replace("{id}", &w.post), S::BAD_REQUEST)
                .token(t1.clone())
                .body(json!({ "quote_policy": "some" })),
            Call::new("put", path.replace("{id}", "nope"), S::NOT_FOUND)
                .token(t1.clone())
                .body(json!({ "quote_policy": "nobody" })),
            Call::new("put", path.replace("{id}", &w.post), S::UNAUTHORIZED)
                .body(json!({ "quote_policy": "nobody" })),
        ],
        ("put", "/api/v1/posts/{id}/comment_policy") => vec![
            Call::new("put", path.replace("{id}", &w.post), S::OK)
                .token(t1.clone())
                .body(json!({ "comment_policy": "everyone" })),
            Call::new("put", path.replace("{id}", &w.post), S::FORBIDDEN)
                .token(t2.clone())
                .body(json!({ "comment_policy": "nobody" })),
            Call::new("put", path.replace("{id}", &w.post), S::BAD_REQUEST)
                .token(t1.clone())
                .body(json!({ "comment_policy": "anyone" })),
            Call::new("put", path.replace("{id}", "nope"), S::NOT_FOUND)
                .token(t1.clone())
                .body(json!({ "comment_policy": "nobody" })),
            Call::new("put", path.replace("{id}", &w.post), S::UNAUTHORIZED)
                .body(json!({ "comment_policy": "nobody" })),
        ],
        ("post", "/api/v1/posts/{id}/detach") => vec![
            Call::new("post", path.replace("{id}", &w.quote), S::FORBIDDEN).token(t2.clone()),
            Call::new("post", path.replace("{id}", &w.quote), S::OK).token(t1.clone()),
            Call::new("post", path.replace("{id}", "nope"), S::NOT_FOUND).token(t1.clone()),
            Call::new("post", path.replace("{id}", &w.quote), S::UNAUTHORIZED),
        ],
        ("delete", "/api/v1/posts/{id}") => vec![
            Call::new("delete", format!("/api/v1/posts/{}", w.post), S::FORBIDDEN)
                .token(t2.clone()),
            Call::new("delete", format!("/api/v1/posts/{}", w.doomed), S::OK).token(t1.clone()),
            Call::new("delete", "/api/v1/posts/not-a-post", S::NOT_FOUND).token(t1.clone()),
        ],
        ("get", "/api/v1/users/{id}/posts") => vec![
            Call::new(
                "get",
                format!("/api/v1/users/1/posts?size=1&min_position={at}"),
                S::OK,
            ),
            Call::new("get", "/api/v1/users/1/posts?size=21", S::BAD_REQUEST),
            Call::new("get", "/api/v1/users/x/posts", S::NOT_FOUND),
        ],
        ("get", "/api/v1/feed") => vec![
            Call::new("get", format!("{path}?min_position={at}"), S::OK).token(t2.clone()),
            Call::new("get", format!("{path}?cursor=x"), S::BAD_REQUEST).token(t2.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/feed/new_count") => vec![
            Call::new("get", format!("{path}?min_position={at}"), S::OK).token(t2.clone()),
            Call::new("get", format!("{path}?min_position=1"), S::BAD_REQUEST).token(t2.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/admin/projections") => vec![
            Call::new("get", path, S::OK).token(app.admin_token(9)),
            Call::new("get", path, S::FORBIDDEN).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/admin/users/{id}/revoke") => vec![
            Call::new("post", "/api/v1/admin/users/41/revoke", S::OK)
                .token(app.admin_token(9))
                .body(json!({ "client": "phone", "up_to": 3 })),
            Call::new("post", "/api/v1/admin/users/41/revoke", S::BAD_REQUEST)
                .token(app.admin_token(9))
                .body(json!({ "up_to": 1.5 })),
            Call::new("post", "/api/v1/admin/users/41/revoke", S::FORBIDDEN)
                .token(t1.clone())
                .body(json!({ "up_to": 3 })),
            Call::new("post", "/api/v1/admin/users/x/revoke", S::NOT_FOUND)
                .token(app.admin_token(9))
                .body(json!({ "up_to": 3 })),
        ],
        ("post", "/api/v1/admin/users/{id}/ban" | "/api/v1/admin/users/{id}/unban") => vec![
            Call::new("post", path.replace("{id}", "40"), S::OK).token(app.admin_token(9)),
            Call::new("post", path.replace("{id}", "40"), S::FORBIDDEN).token(t1.clone()),
            Call::new("post", path.replace("{id}", "0"), S::NOT_FOUND).token(app.admin_token(9)),
            Call::new("post", path.replace("{id}", "40"), S::UNAUTHORIZED),
        ],
        // Erasures of users no other call uses.
        ("delete", "/api/v1/me") => vec![
            Call::new("delete", path, S::OK).token(app.token(43)),
            Call::new("delete", path, S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/admin/users/{id}/erase") => vec![
            Call::new("post", path.replace("{id}", "44"), S::OK).token(app.admin_token(9)),
            Call::new("post", path.replace("{id}", "44"), S::FORBIDDEN).token(t1.clone()),
            Call::new("post", path.replace("{id}", "x"), S::NOT_FOUND).token(app.admin_token(9)),
            Call::new("post", path.replace("{id}", "44"), S::UNAUTHORIZED),
        ],
        ("get", "/api/v1/me/archive") => vec![
            Call::new("get", path, S::OK).token(t1.clone()),
            Call::new("get", path, S::UNAUTHORIZED),
        ],
        ("post", "/api/v1/me/logout") => vec![
            Call::new("post", path, S::OK).token(app.token(42)),
            Call::new("post", path, S::UNAUTHORIZED),
        ],
        // Operations: no error answer to provoke from outside (a 503 from /readyz needs a
        // database down or a stuck projector).
        ("get", "/healthz" | "/readyz" | "/metrics") => vec![Call::new("get", path, S::OK)],
        _ => panic!("{method} {path} is documented but has no calls in tests/api/openapi.rs"),
    }
}

/// The served document, with every object schema closed (`additionalProperties: false`
/// unless it says otherwise), so an undeclared field in an answer fails validation.
fn closed(mut value: Value) -> Value {
    fn close(value: &mut Value) {
        match value {
            Value::Object(map) => {
                if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                    map.insert("additionalProperties".into(), Value::Bool(false));
                }
                map.values_mut().for_each(close);
            }
            Value::Array(items) => items.iter_mut().for_each(close),
            _ => {}
        }
    }
    close(&mut value);
    value
}

/// The response `doc` declares for `method path` answering `status`.
fn declared<'d>(doc: &'d Value, method: &str, path: &str, status: u16) -> &'d Value {
    let response = &doc["paths"][path][method]["responses"][status.to_string()];
    assert!(
        response.is_object(),
        "{method} {path} answered {status}, which the document does not declare"
    );
    response
}

/// Checks one real answer against the document.
fn check(doc: &Value, method: &str, path: &str, call: &Call, answer: &Answer) {
    let what = format!("{method} {} -> {}", call.url, answer.status);
    assert_eq!(answer.status, call.expect, "{what}: {}", answer.text);
    let response = declared(doc, method, path, answer.status.as_u16());
    let content = response["content"]
        .as_object()
        .unwrap_or_else(|| panic!("{what}: no content declared"));
    let media = answer.content_type.split(';').next().unwrap_or("").trim();
    let Some(declared) = content.get(media) else {
        panic!("{what}: answered {media}, the document declares {content:?}");
    };
    if media != "application/json" {
        return;
    }
    let body: Value = serde_json::from_str(&answer.text)
        .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", answer.text));
    let mut schema = declared["schema"].clone();
    schema["components"] = doc["components"].clone();
    let validator = jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|e| panic!("{what}: the declared schema does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(&body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}: the answer does not match the declared schema:\n{}\nbody: {body:#}",
        errors.join("\n")
    );
}

/// A real answer.
struct Answer {
    status: StatusCode,
    content_type: String,
    text: String,
}

async fn send(app: &TestApp, call: &Call) -> Answer {
    let mut request = app
        .client
        .request(call.method.clone(), format!("{}{}", app.base, call.url));
    if let Some(token) = &call.token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = &call.body {
        request = request.json(body);
    }
    if let Some(text) = &call.csv {
        request = request
            .header("content-type", "text/csv")
            .body(text.clone());
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    // A stream (Server-Sent Events) never ends: its headers are the answer.
    let text = if content_type.starts_with("text/event-stream") {
        String::new()
    } else {
        response.text().await.unwrap()
    };
    Answer {
        status,
        content_type,
        text,
    }
}

#[tokio::test]
async fn every_route_answers_as_the_served_document_says() {
    let app = spawn_app().await;
    let world = arrange(&app).await;
    let (status, doc) = app.get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let doc = closed(doc);
    let routes: Vec<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| (method.clone(), path.clone()))
        })
        .collect();
    assert!(routes.len() >= 20, "{routes:?}");
    for (method, path) in &routes {
        let calls = calls(&app, &world, method, path);
        assert!(
            calls.iter().any(|c| c.expect.is_success()),
            "{method} {path}: no success call"
        );
        for call in &calls {
            let answer = send(&app, call).await;
            check(&doc, method, path, call, &answer);
        }
    }
}

/// Operation ids are unique, and every link (which schemathesis's stateful phase follows to
/// chain real resources) names an operation that exists, with parameters it takes, read from
/// a property the answer's schema declares.
#[tokio::test]
async fn links_chain_real_operations() {
    let app = spawn_app().await;
    let (_, doc) = app.get("/openapi.json").await;
    let mut operations = std::collections::BTreeMap::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            let id = operation["operationId"].as_str().unwrap().to_owned();
            let params: Vec<String> = operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| p["name"].as_str().unwrap().to_owned())
                .collect();
            assert!(
                operations.insert(id.clone(), params).is_none(),
                "{id} twice"
            );
        }
    }
    let mut links = 0;
    for item in doc["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            for answer in operation["responses"].as_object().unwrap().values() {
                let schema = &answer["content"]["application/json"]["schema"];
                for (name, link) in answer["links"].as_object().into_iter().flatten() {
                    links += 1;
                    let target = link["operationId"].as_str().unwrap();
                    let takes = operations.get(target).unwrap_or_else(|| panic!("{name}"));
                    for (param, source) in link["parameters"].as_object().unwrap() {
                        assert!(takes.contains(param), "{target} takes no {param}");
                        let pointer = source.as_str().unwrap();
                        let pointer = pointer.strip_prefix("$response.body#").unwrap();
                        assert!(declares(&doc, schema, pointer), "{name}: {pointer}");
                    }
                }
            }
        }
    }
    assert!(links >= 20, "{links} links");
}

/// Whether `schema` (refs resolved against `doc`) declares the property at JSON `pointer`.
fn declares(doc: &Value, schema: &Value, pointer: &str) -> bool {
    let mut schema = schema;
    for step in pointer.split('/').skip(1) {
        while let Some(reference) = schema["$ref"].as_str() {
            schema = &doc["components"]["schemas"][reference.rsplit('/').next().unwrap()];
        }
        schema = &schema["properties"][step];
        if schema.is_null() {
            return false;
        }
    }
    true
}

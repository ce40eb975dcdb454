//! Every door tried (issue 45, item 4): every operation `/openapi.json` documents is called as
//! the owner of what it names, another user, a user the owner blocks, a banned user, a revoked
//! token, an erased user, an admin and anonymously, and every 2xx that SPEC forbids is
//! counted: none is allowed. The operations, their parameters and their bodies come from the
//! document itself, so a new operation is tried as soon as it is documented (and the test
//! fails, naming it, if it cannot make up its parameters).
//!
//! The owner is locked and hides their graph; the post and the comment named are the owner's,
//! the post for followers only. So a stranger may read none of them, nor the owner's lists,
//! nor a relation naming the owner and a follower; the answers SPEC opens to a stranger (the
//! owner's counts, their timeline without the post, the stranger's own data and commands)
//! must open, so that a test that refused everything could not pass.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{read, spawn_app, TestApp};

const OWNER: i64 = 1;
const OTHER: i64 = 2;
const BLOCKED: i64 = 3;
const BANNED: i64 = 4;
const REVOKED: i64 = 5;
const ERASED: i64 = 6;
const ADMIN: i64 = 7;
/// Follows the owner (before the owner locked): a relation naming both is the pair's alone.
const FOLLOWER: i64 = 8;
/// Whom the admin operations act on, so that they leave the owner's world as it is.
const VICTIM: i64 = 9;
/// Writes the public post (the owner, locked, has none anyone else may read) and blocks the
/// blocked caller too: for everyone who knocks, a stranger's post.
const AUTHOR: i64 = 10;

/// Who knocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Caller {
    Anonymous,
    Other,
    Blocked,
    Banned,
    Revoked,
    Erased,
    Admin,
    /// Last: the owner's own pass deletes the post, logs out and erases the owner.
    Owner,
}

impl Caller {
    const ALL: [Caller; 8] = [
        Caller::Anonymous,
        Caller::Other,
        Caller::Blocked,
        Caller::Banned,
        Caller::Revoked,
        Caller::Erased,
        Caller::Admin,
        Caller::Owner,
    ];

    fn token(self, app: &TestApp) -> Option<String> {
        let user = match self {
            Caller::Anonymous => return None,
            Caller::Admin => return Some(app.admin_token(ADMIN)),
            Caller::Owner => OWNER,
            Caller::Other => OTHER,
            Caller::Blocked => BLOCKED,
            Caller::Banned => BANNED,
            Caller::Revoked => REVOKED,
            Caller::Erased => ERASED,
        };
        Some(app.token(user))
    }
}

/// What the owner has: a post for followers and a comment on it, with content no stranger
/// may see.
struct World {
    post: String,
    comment: String,
    secret: String,
    /// A public post of `AUTHOR`'s, and their comment on it (whose content the blocked caller
    /// never sees): where the block rules on likes, comments and reposts apply.
    public_post: String,
    public_comment: String,
    public_secret: String,
    position: String,
    /// A list of the owner's, with `AUTHOR` in it (issue 46).
    list: String,
    /// A filter of the owner's (issue 47).
    filter: String,
}

/// One documented operation, with what it is called with.
#[derive(Debug)]
struct Door {
    method: String,
    template: String,
    /// Whether it names the owner's public post (or comment) rather than the private one.
    public: bool,
    secured: bool,
    url: String,
    body: Option<(&'static str, String)>,
}

impl Door {
    fn name(&self) -> String {
        format!("{} {}", self.method.to_uppercase(), self.template)
    }

    /// Whether it names a post or a comment.
    fn on_content(&self) -> bool {
        ["/api/v1/posts/{id}", "/api/v1/comments/{id}"]
            .iter()
            .any(|prefix| self.template.starts_with(prefix))
    }

    /// Destructive doors last: a block, deletions and an admin's erasure, then logout, then
    /// erasing oneself.
    fn rank(&self) -> u8 {
        match (self.method.as_str(), self.template.as_str()) {
            ("delete", "/api/v1/me") => 4,
            ("post", "/api/v1/me/logout") => 3,
            ("delete", "/api/v1/lists/{id}" | "/api/v1/filters/{id}") => 2,
            ("delete", _)
            | ("post", "/api/v1/admin/users/{id}/erase" | "/api/v1/relation/block") => 1,
            _ => 0,
        }
    }
}

/// SPEC's reason why `caller` may get no 2xx at `door`, if it may not.
fn forbidden(door: &Door, caller: Caller) -> Option<&'static str> {
    let path = door.template.as_str();
    if !path.starts_with("/api/v1/") {
        return None; // the operations endpoints answer anyone
    }
    match caller {
        Caller::Banned => return Some("a banned user's requests are 403 USER_BANNED"),
        Caller::Revoked => return Some("a revoked token is 401 TOKEN_REVOKED"),
        Caller::Erased => return Some("an erased user's tokens are 401 ACCOUNT_ERASED"),
        _ => {}
    }
    if path.starts_with("/api/v1/admin/") && caller != Caller::Admin {
        return Some("admins only");
    }
    if door.secured && caller == Caller::Anonymous {
        return Some("a token is needed");
    }
    if caller == Caller::Owner && !door.public {
        return None;
    }
    let hidden_list = ["following", "followers", "friends", "known_followers"]
        .iter()
        .any(|list| path == format!("/api/v1/users/{{id}}/{list}"));
    if hidden_list {
        return Some("the owner's lists are HIDDEN to others");
    }
    if path == "/api/v1/relation/status" || path == "/api/v1/relation/batch" {
        return Some("a relation naming the owner is HIDDEN to all but the pair");
    }
    if path.starts_with("/api/v1/lists/") {
        return Some("a list is its owner's alone: anyone else's is 404");
    }
    if path.starts_with("/api/v1/filters/") {
        return Some("a filter is its owner's alone: anyone else's is 404");
    }
    if door.on_content() && !door.public {
        return Some("a post for followers does not exist for others, nor do its comments");
    }
    if door.on_content() && door.method != "get" && caller == Caller::Blocked {
        return Some("a block refuses every interaction with the owner's post and comments");
    }
    let authors_only = [
        "DELETE /api/v1/posts/{id}",
        "PUT /api/v1/posts/{id}/quote_policy",
        "PUT /api/v1/posts/{id}/comment_policy",
        "DELETE /api/v1/comments/{id}",
        "POST /api/v1/comments/{id}/pin",
        "POST /api/v1/comments/{id}/unpin",
    ];
    if door.public && authors_only.contains(&door.name().as_str()) {
        return Some("the post's author's alone");
    }
    if door.name() == "POST /api/v1/relation/follow" && caller == Caller::Blocked {
        return Some("a blocked user may not follow");
    }
    None
}

/// The doors SPEC opens that still answer otherwise, each with its reason: without this list,
/// every door not forbidden must open (so a test that refused everything would fail).
fn closed_anyway(door: &Door, caller: Caller) -> Option<&'static str> {
    let name = door.name();
    match (caller, name.as_str()) {
        (
            Caller::Owner,
            "POST /api/v1/relation/follow"
            | "POST /api/v1/relation/unfollow"
            | "POST /api/v1/relation/block"
            | "POST /api/v1/relation/unblock"
            | "POST /api/v1/relation/mute"
            | "POST /api/v1/relation/unmute"
            | "POST /api/v1/relation/remove_follower"
            | "POST /api/v1/relation/follow_requests/approve"
            | "POST /api/v1/relation/follow_requests/reject"
            | "POST /api/v1/me/suggestions/{id}/dismiss",
        ) => Some("no relation with oneself (400)"),
        (_, "POST /api/v1/posts/{id}/detach") => Some("the post quotes nothing of the caller's"),
        (Caller::Owner, "POST /api/v1/posts/{id}/unrepost" | "POST /api/v1/posts/{id}/repost")
            if !door.public =>
        {
            Some("a post for followers is not repostable")
        }
        (_, "DELETE /api/v1/me") => Some("logged out just before: 401 TOKEN_REVOKED"),
        _ => None,
    }
}

async fn world(app: &TestApp) -> World {
    app.command("follow", FOLLOWER, OWNER).await;
    let secret = format!("door-secret-{}", uuid::Uuid::new_v4().simple());
    let visibility = json!({ "content": secret, "visibility": "followers" });
    let (post, comment) = post_and_comment(app, OWNER, visibility).await;
    let public_secret = format!("door-public-{}", uuid::Uuid::new_v4().simple());
    let public = json!({ "content": public_secret });
    let (public_post, public_comment) = post_and_comment(app, AUTHOR, public).await;
    app.settings(OWNER, json!({ "locked": true, "hide_graph": true }))
        .await;
    app.command("follow", OWNER, AUTHOR).await;
    let (status, made) = app
        .post_as(OWNER, "/api/v1/lists", json!({ "title": "doors" }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let list = made["list"]["id"].as_str().unwrap().to_owned();
    let body = json!({ "phrase": "doors", "contexts": ["home"], "action": "warn" });
    let (status, made) = app.post_as(OWNER, "/api/v1/filters", body).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let filter = made["filter"]["id"].as_str().unwrap().to_owned();
    app.command("block", OWNER, BLOCKED).await;
    app.command("block", AUTHOR, BLOCKED).await;
    let admin = |path: String, body: Value| async move {
        let request = app.client.post(format!("{}{path}", app.base));
        let sent = request
            .bearer_auth(app.admin_token(ADMIN))
            .json(&body)
            .send();
        let (status, body) = read(sent.await.unwrap()).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
    };
    admin(format!("/api/v1/admin/users/{BANNED}/ban"), json!({})).await;
    let revoke = json!({ "client": null, "up_to": 0 });
    admin(format!("/api/v1/admin/users/{REVOKED}/revoke"), revoke).await;
    let (status, body) = app.erase_me(ERASED).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let position = app.command("follow", OTHER, VICTIM).await.1["position"]
        .as_str()
        .unwrap()
        .to_owned();
    settled(app).await;
    World {
        post,
        comment,
        secret,
        public_post,
        public_comment,
        public_secret,
        position,
        list,
        filter,
    }
}

/// A post of `author`'s with `body`, and their comment on it with the same content: their ids.
async fn post_and_comment(app: &TestApp, author: i64, body: Value) -> (String, String) {
    let (status, answer) = app.post_with(author, body.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let post = answer["post"]["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/posts/{post}/comments");
    let comment = json!({ "content": body["content"] });
    let (status, answer) = app.post_as(author, &path, comment).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    (post, answer["comment"]["id"].as_str().unwrap().to_owned())
}

/// Waits until the ban, the revocation and the erasure are in force (within a second, SPEC).
async fn settled(app: &TestApp) {
    for _ in 0..40 {
        let banned = app.get_as(BANNED, "/api/v1/feed").await.0;
        let revoked = app.get_as(REVOKED, "/api/v1/feed").await.0;
        let erased = app.get_as(ERASED, "/api/v1/feed").await.0;
        if banned == StatusCode::FORBIDDEN
            && revoked == StatusCode::UNAUTHORIZED
            && erased == StatusCode::UNAUTHORIZED
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the ban, the revocation or the erasure never took effect");
}

/// Every documented operation, with its parameters and body made up from the document.
fn doors(doc: &Value, world: &World) -> Vec<Door> {
    let mut doors = Vec::new();
    for public in [false, true] {
        doors.extend(doors_on(doc, world, public));
    }
    doors.sort_by_key(|door| {
        (
            door.rank(),
            door.template.clone(),
            door.public,
            door.method.clone(),
        )
    });
    doors
}

/// Every operation on the private post and comment, or (`public`) those that name a post or a
/// comment, on the public ones.
fn doors_on(doc: &Value, world: &World, public: bool) -> Vec<Door> {
    let mut doors = Vec::new();
    for (template, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let mut path = template.clone();
            let mut query = Vec::new();
            for parameter in operation["parameters"].as_array().into_iter().flatten() {
                let (name, place) = (parameter["name"].as_str().unwrap(), &parameter["in"]);
                if place == "path" {
                    let value = path_value(template, world, public);
                    path = path.replace(&format!("{{{name}}}"), &value);
                } else if place == "query" && parameter["required"] == json!(true) {
                    query.push(format!("{name}={}", query_value(name, world)));
                }
            }
            let url = match query.is_empty() {
                true => path,
                false => format!("{path}?{}", query.join("&")),
            };
            let body = operation["requestBody"]["content"]
                .as_object()
                .and_then(|content| content.iter().next())
                .map(|(kind, content)| body_for(doc, kind, &content["schema"], world));
            let door = Door {
                method: method.clone(),
                template: template.clone(),
                public,
                secured: operation["security"]
                    .as_array()
                    .is_some_and(|s| !s.is_empty()),
                url,
                body,
            };
            if !public || door.on_content() {
                doors.push(door);
            }
        }
    }
    doors
}

fn path_value(template: &str, world: &World, public: bool) -> String {
    if template.starts_with("/api/v1/admin/users/") {
        VICTIM.to_string()
    } else if template.starts_with("/api/v1/users/")
        || template.starts_with("/api/v1/me/suggestions/")
    {
        OWNER.to_string()
    } else if template.starts_with("/api/v1/lists/") {
        world.list.clone()
    } else if template.starts_with("/api/v1/filters/") {
        world.filter.clone()
    } else if template.starts_with("/api/v1/posts/") {
        match public {
            true => world.public_post.clone(),
            false => world.post.clone(),
        }
    } else if template.starts_with("/api/v1/comments/") {
        match public {
            true => world.public_comment.clone(),
            false => world.comment.clone(),
        }
    } else {
        panic!("no id for {template}: teach the door test what it names")
    }
}

fn query_value(name: &str, world: &World) -> String {
    match name {
        "from" => OWNER.to_string(),
        "to" => FOLLOWER.to_string(),
        "since" => "2020-01-01T00:00:00Z".to_owned(),
        "ids" => world.post.clone(),
        other => panic!("no value for the required query parameter {other}"),
    }
}

/// A body of the operation's schema: its required properties, each with a value that names
/// the owner's world.
fn body_for(doc: &Value, kind: &str, schema: &Value, world: &World) -> (&'static str, String) {
    if kind == "text/csv" {
        return ("text/csv", "user_id,since\n".to_owned());
    }
    assert_eq!(kind, "application/json");
    let schema = resolve(doc, schema);
    let mut body = BTreeMap::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap();
        let property = resolve(doc, &schema["properties"][name]);
        let value = match name {
            "target" => json!(OWNER),
            "content" => json!("knock knock"),
            "title" => json!("door"),
            "phrase" => json!("door"),
            "contexts" => json!(["home"]),
            "users" => json!([AUTHOR]),
            "up_to" if property["type"] == "integer" => json!(0),
            "up_to" => json!(world.position),
            _ if property["enum"].is_array() => property["enum"][0].clone(),
            other => panic!("no value for the body's {other}: teach the door test"),
        };
        body.insert(name.to_owned(), value);
    }
    ("application/json", serde_json::to_string(&body).unwrap())
}

fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference.rsplit('/').next().unwrap();
            &doc["components"]["schemas"][name]
        }
        None => schema,
    }
}

/// Calls `door` as `caller`: its status and its body's text (a live stream's status alone).
async fn knock(app: &TestApp, door: &Door, caller: Caller) -> (StatusCode, String) {
    let method = door.method.to_uppercase().parse().unwrap();
    let mut request = app
        .client
        .request(method, format!("{}{}", app.base, door.url));
    if let Some(token) = caller.token(app) {
        request = request.bearer_auth(token);
    }
    if let Some((kind, body)) = &door.body {
        request = request.header("content-type", *kind).body(body.clone());
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    if door.template.ends_with("/stream") {
        return (status, String::new()); // an open stream never ends: its status says enough
    }
    (status, response.text().await.unwrap())
}

#[tokio::test]
async fn every_door_tried_as_everyone_opens_only_where_spec_says() {
    let app = spawn_app().await;
    let world = world(&app).await;
    let (status, doc) = app.get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let doors = doors(&doc, &world);
    assert!(doors.len() >= 60, "{} operations documented", doors.len());
    let mut breaches = Vec::new();
    let mut shut = Vec::new();
    let (mut tried, mut refused) = (0, 0);
    for caller in Caller::ALL {
        for door in &doors {
            let (status, text) = knock(&app, door, caller).await;
            tried += 1;
            let on = if door.public { " (public post)" } else { "" };
            let call = format!("{caller:?} {}{on} -> {status}", door.name());
            assert!(
                !status.is_server_error() || status == StatusCode::SERVICE_UNAVAILABLE,
                "{call}: {text}"
            );
            let leaks = (caller != Caller::Owner && text.contains(&world.secret))
                || (caller == Caller::Blocked
                    && door.public
                    && text.contains(&world.public_secret));
            refused += usize::from(forbidden(door, caller).is_some());
            match (status.is_success(), forbidden(door, caller)) {
                (true, Some(rule)) => breaches.push(format!("{call} ({rule}): {text}")),
                (true, None) if leaks => breaches.push(format!("{call} shows the owner's post")),
                (false, None)
                    if closed_anyway(door, caller).is_none()
                        && matches!(caller, Caller::Owner | Caller::Other | Caller::Admin) =>
                {
                    shut.push(format!("{call}: {text}"))
                }
                _ => {}
            }
        }
    }
    assert!(tried >= 8 * 60);
    // Banned, revoked and erased callers alone are refused at every /api/v1 door.
    assert!(refused > 3 * 55, "{refused} of {tried} calls may not open");
    assert!(breaches.is_empty(), "2xx that SPEC forbids: {breaches:#?}");
    assert!(shut.is_empty(), "doors SPEC opens, found shut: {shut:#?}");
}

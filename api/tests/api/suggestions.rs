//! Suggestions (issue 46) over HTTP against the real services: friends of friends counted over
//! the caller's followees, most first, with `followed_by`; who is never suggested; hidden and
//! locked graphs (issue 26) never showing through, hidden or locked after the follow, on the
//! followee's side (the caller follows) and the suggested user's (the caller does not);
//! dismissals kept in the log, answered `{changed, position}` (replays too), in the archive,
//! gone with erasure; and the replica's walk against the same rule in SQL, on random graphs.
//!
//! Every answer is read twice: over HTTP (the replica's walk, once it reflects the position)
//! and by `query::suggestions` on PostgreSQL (once projector `following` reflects it). Both
//! must equal what the test expects.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{
    assert_verified, check_property, code, head, projector_reached, read, spawn_app, user, TestApp,
};

/// `(user, count, followed_by)`: one suggestion as the tests state it.
type Expected = (i64, i64, Vec<i64>);

fn position(body: &Value) -> String {
    body["position"].as_str().expect("a position").to_owned()
}

/// A relation command that must succeed; its position (the last one when it changed nothing).
async fn relation(app: &TestApp, verb: &str, actor: i64, target: i64) -> Option<String> {
    let (status, body) = app.command(verb, actor, target).await;
    assert_eq!(status, StatusCode::OK, "{verb} {actor} -> {target}: {body}");
    body["position"].as_str().map(str::to_owned)
}

/// `POST /api/v1/me/suggestions/{target}/dismiss` as `actor`.
async fn dismiss(app: &TestApp, actor: i64, target: &str) -> (StatusCode, Value) {
    let path = format!("/api/v1/me/suggestions/{target}/dismiss");
    app.post_as(actor, &path, json!({})).await
}

/// `user`'s suggestions (`limit`), from the replica over HTTP and from PostgreSQL's read
/// model; asserts that both agree, and returns them.
async fn suggested(app: &TestApp, caller: i64, limit: i64) -> Vec<Expected> {
    let at = head(app).await;
    let path = format!("/api/v1/me/suggestions?limit={limit}&min_position={at}");
    let (status, body) = app.get_as(caller, &path).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let from_memory: Vec<Expected> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let ids = item["followed_by"].as_array().unwrap();
            let ids = ids.iter().map(|v| v.as_i64().unwrap()).collect();
            (
                item["user"].as_i64().unwrap(),
                item["count"].as_i64().unwrap(),
                ids,
            )
        })
        .collect();
    // The SQL reads bans from projector `feed`'s table.
    projector_reached(app, "following", &at).await;
    projector_reached(app, "feed", &at).await;
    let now = chrono::Utc::now();
    let from_sql =
        relations_projections::relations::query::suggestions(&app.pool, user(caller), limit, now)
            .await
            .unwrap();
    let from_sql: Vec<Expected> = from_sql
        .into_iter()
        .map(|s| {
            let by = s.followed_by.iter().map(|u| u.get()).collect();
            (s.user.get(), s.count, by)
        })
        .collect();
    assert_eq!(
        from_memory, from_sql,
        "the replica's walk and the SQL differ"
    );
    from_memory
}

async fn admin_ban(app: &TestApp, target: i64) {
    let response = app
        .client
        .post(format!("{}/api/v1/admin/users/{target}/ban", app.base))
        .bearer_auth(app.admin_token(999))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let (status, body) = read(response).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn suggestions_count_the_followees_follows_and_leave_out_whom_they_must() {
    let app = spawn_app().await;
    // Given 1 follows 2, 3, 4 and 5, who follow 10 (all four), 11 (two) and 19 (one).
    for followee in [2, 3, 4, 5] {
        relation(&app, "follow", 1, followee).await;
        relation(&app, "follow", followee, 10).await;
    }
    for follower in [2, 3] {
        relation(&app, "follow", follower, 11).await;
    }
    relation(&app, "follow", 5, 19).await;
    // And 2 follows each user never to be suggested: the caller; one the caller follows; one
    // the caller asked to follow (locked: a pending request is only ever to a locked account,
    // so the lock alone already leaves it out); one the caller blocks; one who blocks the caller;
    // one the caller mutes; one dismissed; one banned.
    for never in [1, 12, 13, 14, 15, 16, 17, 18] {
        relation(&app, "follow", 2, never).await;
    }
    relation(&app, "follow", 1, 12).await;
    app.set_locked(13, true).await;
    let (status, body) = app.command("follow", 1, 13).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["relation"]["state"],
        json!("none"),
        "a request: {body}"
    );
    relation(&app, "block", 1, 14).await;
    relation(&app, "block", 15, 1).await;
    let (status, body) = app.mute(1, 16, Value::Null).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = dismiss(&app, 1, "17").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    admin_ban(&app, 18).await;

    // Then: most first, `followed_by` the three lowest ids.
    let expected: Vec<Expected> = vec![
        (10, 4, vec![2, 3, 4]),
        (11, 2, vec![2, 3]),
        (19, 1, vec![5]),
    ];
    assert_eq!(suggested(&app, 1, 10).await, expected);
    assert_eq!(suggested(&app, 1, 2).await, expected[..2].to_vec());
    // Ties: the lower id first.
    relation(&app, "follow", 5, 11).await;
    relation(&app, "follow", 4, 11).await;
    let expected = vec![(10, 4, vec![2, 3, 4]), (11, 4, vec![2, 3, 4])];
    assert_eq!(suggested(&app, 1, 2).await, expected);
    // Someone who follows nobody is suggested nobody; `limit` is 1 to 50.
    assert!(suggested(&app, 30, 10).await.is_empty());
    for bad in ["0", "51", "x", "-1"] {
        let path = format!("/api/v1/me/suggestions?limit={bad}");
        let (status, body) = app.get_as(1, &path).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "limit={bad}: {body}");
    }
    let (status, body) = app.get("/api/v1/me/suggestions").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    // The default is ten.
    for n in 40..52 {
        relation(&app, "follow", 2, n).await;
    }
    let (status, body) = app.get_as(1, "/api/v1/me/suggestions").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["items"].as_array().unwrap().len(), 10, "{body}");
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_hidden_or_locked_graph_never_shows_through_suggestions() {
    let app = spawn_app().await;
    relation(&app, "follow", 1, 2).await;
    relation(&app, "follow", 2, 10).await;
    relation(&app, "follow", 2, 11).await;
    let both = vec![(10, 1, vec![2]), (11, 1, vec![2])];
    assert_eq!(suggested(&app, 1, 10).await, both);

    // The followee (whom the caller follows) hides their graph after the follow: their
    // follows add nothing; shown again, they do.
    app.settings(2, json!({ "hide_graph": true })).await;
    assert_eq!(suggested(&app, 1, 10).await, vec![]);
    app.settings(2, json!({ "hide_graph": false })).await;
    assert_eq!(suggested(&app, 1, 10).await, both);
    // Locked after the follow: the caller is their follower and may still see their graph.
    app.set_locked(2, true).await;
    assert_eq!(suggested(&app, 1, 10).await, both);

    // A suggested user (whom the caller does not follow) who locks or hides their graph is
    // never suggested: a suggestion names some of their followers.
    app.set_locked(10, true).await;
    assert_eq!(suggested(&app, 1, 10).await, vec![(11, 1, vec![2])]);
    app.settings(11, json!({ "hide_graph": true })).await;
    assert_eq!(suggested(&app, 1, 10).await, vec![]);
    // And back once they show it again.
    app.set_locked(10, false).await;
    app.settings(11, json!({ "hide_graph": false })).await;
    assert_eq!(suggested(&app, 1, 10).await, both);

    // A user who does not follow the locked 2 gets nothing through 2 (they follow nobody who
    // follows 10), and nothing of 2's graph through a followee who follows 2.
    relation(&app, "follow", 3, 4).await;
    relation(&app, "follow", 4, 2).await; // a request: 2 is locked
    relation(&app, "follow_requests/approve", 2, 4).await;
    assert_eq!(
        suggested(&app, 3, 10).await,
        vec![],
        "2 is locked: 4's follow of 2 is in 2's hidden followers"
    );
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_dismissal_is_kept_in_the_log_answered_as_it_was_and_goes_with_erasure() {
    let app = spawn_app().await;
    relation(&app, "follow", 1, 2).await;
    relation(&app, "follow", 2, 10).await;
    relation(&app, "follow", 2, 11).await;

    // A dismissal: `{changed, position}` and nothing else; again, nothing changes.
    let (status, body) = dismiss(&app, 1, "10").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["changed"], json!(true), "{body}");
    position(&body);
    assert_eq!(
        body.as_object().unwrap().keys().collect::<BTreeSet<_>>(),
        BTreeSet::from([&"changed".to_owned(), &"position".to_owned()]),
        "{body}"
    );
    let (status, again) = dismiss(&app, 1, "10").await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again, json!({"changed": false, "position": null}));
    assert_eq!(suggested(&app, 1, 10).await, vec![(11, 1, vec![2])]);
    // In the log, on the pair's stream.
    let events = app.events().await;
    let dismissed: Vec<_> = events
        .iter()
        .filter(|(kind, _)| kind == "SuggestionDismissed")
        .collect();
    assert_eq!(dismissed.len(), 1, "{events:?}");
    assert_eq!(
        dismissed[0].1,
        json!({"SuggestionDismissed": {"user": 1, "dismissed": 10}})
    );
    // A follow and an unfollow do not bring it back: it is for good.
    relation(&app, "follow", 1, 10).await;
    relation(&app, "unfollow", 1, 10).await;
    assert_eq!(suggested(&app, 1, 10).await, vec![(11, 1, vec![2])]);

    // Refusals: oneself, a malformed id, no token.
    let (status, body) = dismiss(&app, 1, "1").await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "SELF_RELATION")
    );
    for bad in ["x", "0", "-3"] {
        let (status, body) = dismiss(&app, 1, bad).await;
        assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "NOT_FOUND"));
    }
    let response = app
        .client
        .post(format!("{}/api/v1/me/suggestions/11/dismiss", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);

    // A retry under its key is answered as it was, in the same shape.
    let path = "me/suggestions/11/dismiss";
    let (status, first, replayed) =
        crate::idempotency::keyed(&app, 1, Method::POST, path, None, "dismiss-11").await;
    assert_eq!((status, replayed), (StatusCode::OK, false), "{first}");
    let (status, retry, replayed) =
        crate::idempotency::keyed(&app, 1, Method::POST, path, None, "dismiss-11").await;
    assert_eq!((status, replayed), (StatusCode::OK, true), "{retry}");
    assert_eq!(retry, first);
    assert_eq!(suggested(&app, 1, 10).await, vec![]);

    // The archive holds the caller's dismissals.
    let (status, _, lines) = crate::erasure::archive(&app, 1).await;
    assert_eq!(status, StatusCode::OK);
    let kept: BTreeSet<i64> = lines
        .iter()
        .filter(|l| l["kind"] == "dismissal")
        .map(|l| l["user"].as_i64().unwrap())
        .collect();
    assert_eq!(kept, BTreeSet::from([10, 11]));

    // A rebuild from the log keeps them (the bulk fold), with their times.
    let kept_rows = |app: &TestApp| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_as::<_, (i64, i64, chrono::DateTime<chrono::Utc>)>(
                "SELECT user_id, dismissed, since FROM rm_dismissals ORDER BY 1, 2",
            )
            .fetch_all(&pool)
            .await
            .unwrap()
        }
    };
    let before = kept_rows(&app).await;
    assert_eq!(before.len(), 2, "{before:?}");
    crate::helpers::relations(&app, &["rebuild", "following"]);
    assert_eq!(kept_rows(&app).await, before);
    assert_eq!(suggested(&app, 1, 10).await, vec![]);
    assert_verified(&app).await;

    // An erasure of the dismissed user takes the row; of the dismisser, all of theirs.
    let rows = |app: &TestApp| {
        let rows = kept_rows(app);
        async move {
            rows.await
                .into_iter()
                .map(|(a, b, _)| (a, b))
                .collect::<Vec<_>>()
        }
    };
    let (status, body) = app.erase_me(10).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let at = head(&app).await;
    projector_reached(&app, "following", &at).await;
    assert_eq!(rows(&app).await, vec![(1, 11)]);
    let (status, body) = app.erase_me(1).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let at = head(&app).await;
    projector_reached(&app, "following", &at).await;
    assert_eq!(rows(&app).await, vec![]);
    let (status, body) = dismiss(&app, 2, "10").await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::NOT_FOUND, "NOT_FOUND"),
        "an erased user is dismissed no more"
    );
    assert_verified(&app).await;
}

/// One step of a random history among a few users.
#[derive(Debug, Clone)]
enum Step {
    Follow(i64, i64),
    Unfollow(i64, i64),
    Block(i64, i64),
    Mute(i64, i64),
    Dismiss(i64, i64),
    Hide(i64, bool),
}

fn step(users: i64) -> impl Strategy<Value = Step> {
    let pair = (1..=users, 1..=users).prop_filter("two users", |(a, b)| a != b);
    prop_oneof![
        6 => pair.clone().prop_map(|(a, b)| Step::Follow(a, b)),
        1 => pair.clone().prop_map(|(a, b)| Step::Unfollow(a, b)),
        1 => pair.clone().prop_map(|(a, b)| Step::Block(a, b)),
        1 => pair.clone().prop_map(|(a, b)| Step::Mute(a, b)),
        1 => pair.prop_map(|(a, b)| Step::Dismiss(a, b)),
        1 => (1..=users, any::<bool>()).prop_map(|(u, on)| Step::Hide(u, on)),
    ]
}

/// The rule stated plainly over the model's sets.
#[derive(Debug, Default)]
struct Model {
    follows: BTreeSet<(i64, i64)>,
    blocks: BTreeSet<(i64, i64)>,
    mutes: BTreeSet<(i64, i64)>,
    dismissals: BTreeSet<(i64, i64)>,
    hidden: BTreeSet<i64>,
}

impl Model {
    fn apply(&mut self, step: &Step) {
        match *step {
            Step::Follow(a, b) => {
                if !self.blocks.contains(&(a, b)) && !self.blocks.contains(&(b, a)) {
                    self.follows.insert((a, b));
                }
            }
            Step::Unfollow(a, b) => drop(self.follows.remove(&(a, b))),
            Step::Block(a, b) => {
                self.blocks.insert((a, b));
                self.follows.remove(&(a, b));
                self.follows.remove(&(b, a));
            }
            Step::Mute(a, b) => drop(self.mutes.insert((a, b))),
            Step::Dismiss(a, b) => drop(self.dismissals.insert((a, b))),
            Step::Hide(u, on) => match on {
                true => drop(self.hidden.insert(u)),
                false => drop(self.hidden.remove(&u)),
            },
        }
    }

    fn suggestions(&self, caller: i64, limit: usize) -> Vec<Expected> {
        let via: Vec<i64> = (self.follows.iter())
            .filter(|&&(a, b)| a == caller && !self.hidden.contains(&b))
            .map(|&(_, b)| b)
            .collect();
        let mut found: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for &(a, b) in &self.follows {
            if via.contains(&a) {
                found.entry(b).or_default().push(a);
            }
        }
        let never = |c: i64| {
            c == caller
                || self.follows.contains(&(caller, c))
                || self.blocks.contains(&(caller, c))
                || self.blocks.contains(&(c, caller))
                || self.mutes.contains(&(caller, c))
                || self.dismissals.contains(&(caller, c))
                || self.hidden.contains(&c)
        };
        let mut all: Vec<Expected> = found
            .into_iter()
            .filter(|&(c, _)| !never(c))
            .map(|(c, mut by)| {
                by.sort_unstable();
                let count = by.len() as i64;
                by.truncate(3);
                (c, count, by)
            })
            .collect();
        all.sort_by_key(|(c, count, _)| (-count, *c));
        all.truncate(limit);
        all
    }
}

/// Random histories of follows, unfollows, blocks, mutes, dismissals and hidden graphs among
/// eight users: every user's suggestions, from the replica and from SQL, equal the rule stated
/// over the model. Each case uses users of its own, so one server serves them all.
#[test]
fn the_replica_and_sql_suggest_as_the_rule_says_on_random_histories() {
    const USERS: i64 = 8;
    let app = tokio::sync::OnceCell::<TestApp>::new();
    let case = std::sync::atomic::AtomicI64::new(0);
    check_property(
        12,
        proptest::collection::vec(step(USERS), 10..60),
        |steps| {
            let (app, case) = (&app, &case);
            async move {
                let app = app.get_or_init(spawn_app).await;
                let base = 100 * case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let id = |u: i64| base + u;
                let mut model = Model::default();
                for step in &steps {
                    model.apply(step);
                    act(app, step, id).await;
                }
                for caller in 1..=USERS {
                    let expected: Vec<Expected> = (model.suggestions(caller, 3).into_iter())
                        .map(|(c, n, by)| (id(c), n, by.into_iter().map(id).collect()))
                        .collect();
                    assert_eq!(
                        suggested(app, id(caller), 3).await,
                        expected,
                        "caller {caller} after {steps:?}"
                    );
                }
            }
        },
    );
}

/// Carries `step` out over HTTP, users named through `id`.
async fn act(app: &TestApp, step: &Step, id: impl Fn(i64) -> i64) {
    let (status, body) = match *step {
        Step::Follow(a, b) => {
            let (status, body) = app.command("follow", id(a), id(b)).await;
            // Across a block: refused, as the model keeps it.
            match status {
                StatusCode::FORBIDDEN | StatusCode::CONFLICT => (StatusCode::OK, body),
                _ => (status, body),
            }
        }
        Step::Unfollow(a, b) => app.command("unfollow", id(a), id(b)).await,
        Step::Block(a, b) => app.command("block", id(a), id(b)).await,
        Step::Mute(a, b) => app.mute(id(a), id(b), Value::Null).await,
        Step::Dismiss(a, b) => dismiss(app, id(a), &id(b).to_string()).await,
        Step::Hide(u, on) => app.settings_as(id(u), json!({ "hide_graph": on })).await,
    };
    assert_eq!(status, StatusCode::OK, "{step:?}: {body}");
}

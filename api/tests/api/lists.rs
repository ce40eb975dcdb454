//! Lists (issue 46) over HTTP against the real services: made, changed, listed, deleted,
//! private, at most 100; members only while followed (an unfollow, a block either way and an
//! erasure end them, and the write side's index knows it: a re-follow's re-add changes one);
//! the list feed by the home feed's rules, from memory and from PostgreSQL alike; `exclusive`
//! taking members out of the home feed and `new_count`; and a model of membership under random
//! follows, unfollows, blocks, erasures and list edits.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use relations_projections::replica::live::LiveGraph;
use relations_projections::Wakeup;
use tokio_util::sync::CancellationToken;

use crate::helpers::{assert_verified, check_property, code, head, read, spawn_app, TestApp};

/// A replica of `app`'s log, tailing it until `shutdown`.
fn replica(app: &TestApp, shutdown: &CancellationToken) -> LiveGraph {
    let graph = LiveGraph::new();
    let wakeup = Wakeup::listen(app.pool.clone(), shutdown.clone());
    tokio::spawn(
        graph
            .clone()
            .run(app.pool.clone(), wakeup, shutdown.clone()),
    );
    graph
}

/// Each of `lists`' members as `graph` holds them once it reflects `at`.
async fn held(graph: &LiveGraph, at: &str, lists: &[Option<String>]) -> Vec<Option<Vec<i64>>> {
    crate::helpers::replica_reached(graph, at).await;
    graph
        .with(|g| {
            let owner = crate::helpers::user(1);
            lists
                .iter()
                .flatten()
                .map(|l| {
                    let id: relations_domain::ListId = l.parse().unwrap();
                    let list = g.lists().get(owner, id);
                    list.map(|h| h.members.keys().copied().collect::<Vec<i64>>())
                })
                .collect()
        })
        .unwrap()
}

/// `method path` as `user` with `body`.
async fn call(
    app: &TestApp,
    user: i64,
    method: Method,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    let request = app
        .client
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(app.token(user))
        .json(&body);
    read(request.send().await.unwrap()).await
}

/// Makes a list of `owner`'s; its id.
async fn create(app: &TestApp, owner: i64, title: &str, exclusive: bool) -> String {
    let body = json!({"title": title, "exclusive": exclusive});
    let (status, body) = call(app, owner, Method::POST, "/api/v1/lists", body).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["list"]["id"].as_str().unwrap().to_owned()
}

/// A members call; its answer.
async fn members(
    app: &TestApp,
    owner: i64,
    list: &str,
    add: bool,
    users: &[i64],
) -> (StatusCode, Value) {
    let method = if add { Method::POST } else { Method::DELETE };
    let path = format!("/api/v1/lists/{list}/members");
    call(app, owner, method, &path, json!({ "users": users })).await
}

async fn follow(app: &TestApp, actor: i64, target: i64) {
    let (status, body) = app.command("follow", actor, target).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// `list`'s members as `owner` reads them (after every write), or the status when refused.
async fn listed(app: &TestApp, owner: i64, list: &str) -> Result<Vec<i64>, StatusCode> {
    let at = head(app).await;
    let path = format!("/api/v1/lists/{list}/members?limit=100&min_position={at}");
    let (status, body) = app.get_as(owner, &path).await;
    if status != StatusCode::OK {
        return Err(status);
    }
    let mut ids: Vec<i64> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["user"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// A feed page's post ids as `reader` reads `path` after every write.
async fn feed(app: &TestApp, reader: i64, path: &str) -> Vec<String> {
    let at = head(app).await;
    let sep = if path.contains('?') { '&' } else { '?' };
    let (status, body) = app
        .get_as(reader, &format!("{path}{sep}min_position={at}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn lists_are_made_changed_listed_and_deleted_privately_and_at_most_a_hundred() {
    let app = spawn_app().await;
    // When 1 makes a list, it answers 201 with the list as made.
    let body = json!({"title": "close friends", "exclusive": true});
    let (status, made) = call(&app, 1, Method::POST, "/api/v1/lists", body).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let list = made["list"]["id"].as_str().unwrap().to_owned();
    assert_eq!(made["list"]["title"], "close friends");
    assert_eq!(made["list"]["exclusive"], true);
    assert_eq!(made["list"]["members"], 0);
    assert!(made["position"].is_string() && made["list"]["created_at"].is_string());
    // Bad titles are 400 and change nothing.
    let before = app.event_count().await;
    for title in [json!(""), json!("a\u{0}"), json!("x".repeat(101)), json!(5)] {
        let (status, body) = call(
            &app,
            1,
            Method::POST,
            "/api/v1/lists",
            json!({"title": title}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{title}: {body}");
    }
    assert_eq!(app.event_count().await, before);
    // A change answers the list as it is; a change to the same values appends nothing.
    let path = format!("/api/v1/lists/{list}");
    let (status, changed) = call(&app, 1, Method::PATCH, &path, json!({"title": "inner"})).await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(
        (
            changed["list"]["title"].as_str(),
            changed["list"]["exclusive"].as_bool()
        ),
        (Some("inner"), Some(true))
    );
    let (_, same) = call(&app, 1, Method::PATCH, &path, json!({"exclusive": true})).await;
    assert!(same["position"].is_null(), "{same}");
    // Another user's list is 404 to every route, as an unknown or malformed one is.
    let at = head(&app).await;
    for (method, suffix) in [
        (Method::PATCH, ""),
        (Method::DELETE, ""),
        (Method::GET, "/members"),
        (Method::GET, "/feed"),
    ] {
        let (status, _) = call(
            &app,
            2,
            method.clone(),
            &format!("{path}{suffix}?min_position={at}"),
            json!({"title": "mine"}),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {suffix}");
    }
    let (status, _) = call(&app, 1, Method::GET, "/api/v1/lists/nope/feed", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, theirs) = app
        .get_as(2, &format!("/api/v1/lists?min_position={at}"))
        .await;
    assert_eq!(theirs["items"], json!([]));
    // Oldest first.
    let second = create(&app, 1, "news", false).await;
    let (_, mine) = app
        .get_as(
            1,
            &format!("/api/v1/lists?min_position={}", head(&app).await),
        )
        .await;
    let ids: Vec<&str> = mine["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![list.as_str(), second.as_str()]);
    assert_eq!(mine["items"][0]["title"], "inner");
    // A deleted list is gone.
    let (status, deleted) = call(&app, 1, Method::DELETE, &path, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    assert!(deleted["position"].is_string());
    assert_eq!(listed(&app, 1, &list).await, Err(StatusCode::NOT_FOUND));
    let (status, _) = call(&app, 1, Method::DELETE, &path, json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // At most 100 lists.
    for n in 1..100 {
        create(&app, 1, &format!("list {n}"), false).await;
    }
    let (status, body) = call(
        &app,
        1,
        Method::POST,
        "/api/v1/lists",
        json!({"title": "one more"}),
    )
    .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "LIST_LIMIT_REACHED")
    );
    assert_verified(&app).await;
}

#[tokio::test]
async fn members_are_followed_users_only_and_leave_with_the_follow() {
    let app = spawn_app().await;
    for followee in [2, 3, 4, 5, 6] {
        follow(&app, 1, followee).await;
    }
    let list = create(&app, 1, "friends", false).await;
    let other = create(&app, 1, "others", false).await;
    // One user not followed refuses the whole call.
    let before = app.event_count().await;
    let (status, body) = members(&app, 1, &list, true, &[2, 9]).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "NOT_FOLLOWING")
    );
    let (status, _) = members(&app, 1, &list, true, &[1]).await;
    assert_eq!(status, StatusCode::CONFLICT, "oneself is not followed");
    assert_eq!(app.event_count().await, before);
    for bad in [
        json!({"users": []}),
        json!({"users": (1..=101).collect::<Vec<i64>>()}),
        json!({"users": [0]}),
    ] {
        let path = format!("/api/v1/lists/{list}/members");
        let (status, body) = call(&app, 1, Method::POST, &path, bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    }
    // Added: changed counts the new members only.
    let (status, body) = members(&app, 1, &list, true, &[2, 3, 4, 5, 6, 2]).await;
    assert_eq!(
        (status, body["changed"].as_i64()),
        (StatusCode::OK, Some(5)),
        "{body}"
    );
    let (_, again) = members(&app, 1, &list, true, &[2, 3]).await;
    assert_eq!(
        (again["changed"].as_i64(), again["position"].is_null()),
        (Some(0), true)
    );
    assert_eq!(members(&app, 1, &other, true, &[2]).await.1["changed"], 1);
    // An unfollow ends 2's membership of every list of 1's.
    app.command("unfollow", 1, 2).await;
    assert_eq!(listed(&app, 1, &list).await, Ok(vec![3, 4, 5, 6]));
    assert_eq!(listed(&app, 1, &other).await, Ok(vec![]));
    // Followed again, 2 is not a member until added, and the add changes one.
    follow(&app, 1, 2).await;
    assert_eq!(listed(&app, 1, &list).await, Ok(vec![3, 4, 5, 6]));
    assert_eq!(members(&app, 1, &list, true, &[2]).await.1["changed"], 1);
    // A block either way ends it; so do a removal of a follower and an erasure.
    app.command("block", 3, 1).await;
    app.command("block", 1, 4).await;
    app.command("remove_follower", 5, 1).await;
    let (status, _) = app.erase_me(6).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed(&app, 1, &list).await, Ok(vec![2]));
    // Removing answers how many were members.
    let (_, removed) = members(&app, 1, &list, false, &[2, 3]).await;
    assert_eq!(removed["changed"], 1, "{removed}");
    // The list's own answer counts its members.
    let (_, changed) = call(
        &app,
        1,
        Method::PATCH,
        &format!("/api/v1/lists/{list}"),
        json!({"title": "x"}),
    )
    .await;
    assert_eq!(changed["list"]["members"], 0, "{changed}");
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_list_feed_reads_its_members_by_the_home_rules_and_exclusive_leaves_home() {
    let app = spawn_app().await;
    for followee in [2, 3, 4] {
        follow(&app, 1, followee).await;
    }
    let list = create(&app, 1, "two and three", false).await;
    members(&app, 1, &list, true, &[2, 3]).await;
    let (p2, _) = app.publish(2, "from two").await;
    let (p3, _) = app.publish(3, "from three").await;
    let (p4, _) = app.publish(4, "from four").await;
    // 3 reposts 4's post: a member's repost is in the list's feed, with reposted_by.
    let (status, _) = app
        .post_as(3, &format!("/api/v1/posts/{p4}/repost"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let list_feed = format!("/api/v1/lists/{list}/feed");
    assert_eq!(
        feed(&app, 1, &list_feed).await,
        vec![p4.clone(), p3.clone(), p2.clone()]
    );
    // The same pages below a cursor come from PostgreSQL: page by page, the same posts.
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("{list_feed}?size=1&cursor={c}"),
            None => format!("{list_feed}?size=1"),
        };
        let (_, body) = app.get_as(1, &path).await;
        paged.extend(
            body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["id"].as_str().unwrap().to_owned()),
        );
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(paged, vec![p4.clone(), p3.clone(), p2.clone()]);
    // A muted member leaves it, as in the home feed.
    app.mute(1, 2, Value::Null).await;
    assert_eq!(
        feed(&app, 1, &list_feed).await,
        vec![p4.clone(), p3.clone()]
    );
    // Not exclusive: the home feed keeps everyone.
    assert_eq!(
        feed(&app, 1, "/api/v1/feed").await,
        vec![p4.clone(), p3.clone()]
    );
    // Exclusive: 3's posts and reposts leave the home feed and new_count.
    call(
        &app,
        1,
        Method::PATCH,
        &format!("/api/v1/lists/{list}"),
        json!({"exclusive": true}),
    )
    .await;
    // 4 (not a member) reposts 3's post: 4's item, so it stays in the home feed; 3's own
    // repost of 4's post does not bring it (nor name 3 in reposted_by). From memory (a first
    // page) and from PostgreSQL (`max_time` is PostgreSQL's) alike.
    let (status, _) = app
        .post_as(4, &format!("/api/v1/posts/{p3}/repost"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let shown = |body: &Value| -> Vec<(String, Value)> {
        let items = body["items"].as_array().unwrap().iter();
        items
            .map(|p| {
                (
                    p["id"].as_str().unwrap().to_owned(),
                    p["reposted_by"].clone(),
                )
            })
            .collect()
    };
    let expected = vec![(p3.clone(), json!([4])), (p4.clone(), json!([]))];
    let at = head(&app).await;
    for path in ["/api/v1/feed?max_time=2999-01-01T00:00:00Z", "/api/v1/feed"] {
        let (status, body) = app
            .get_as(
                1,
                &format!("{path}&min_position={at}").replacen("feed&", "feed?", 1),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(shown(&body), expected, "{path}");
    }
    let (hidden, _) = app.publish(3, "after the mark").await;
    let sql = feed(&app, 1, "/api/v1/feed?max_time=2999-01-01T00:00:00Z").await;
    assert!(
        !sql.contains(&hidden),
        "an exclusive member's post stays out of home (SQL)"
    );
    let at = head(&app).await;
    let (_, count) = app
        .get_as(1, &format!("/api/v1/feed/new_count?min_position={at}"))
        .await;
    assert_eq!(
        count["count"], 0,
        "3's new post is not new in the home feed"
    );
    app.publish(4, "counted").await;
    let at = head(&app).await;
    let (_, count) = app
        .get_as(1, &format!("/api/v1/feed/new_count?min_position={at}"))
        .await;
    assert_eq!(count["count"], 1, "{count}");
    assert_verified(&app).await;
}

/// One step of the membership model.
#[derive(Debug, Clone)]
enum Step {
    Follow(i64),
    Unfollow(i64),
    Block(i64, bool),
    Erase(i64),
    Add(usize, Vec<i64>),
    Remove(usize, Vec<i64>),
    Delete(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let user = 2i64..7;
    let users = proptest::collection::vec(2i64..7, 1..4);
    prop_oneof![
        3 => user.clone().prop_map(Step::Follow),
        1 => user.clone().prop_map(Step::Unfollow),
        1 => (user.clone(), any::<bool>()).prop_map(|(u, by)| Step::Block(u, by)),
        1 => (2i64..7).prop_map(Step::Erase),
        4 => (0usize..2, users.clone()).prop_map(|(l, u)| Step::Add(l, u)),
        1 => (0usize..2, users).prop_map(|(l, u)| Step::Remove(l, u)),
        1 => (0usize..2).prop_map(Step::Delete),
    ]
}

#[test]
fn membership_follows_a_model_under_random_histories() {
    check_property(
        6,
        proptest::collection::vec(step(), 1..16),
        |steps| async move {
            let app = spawn_app().await;
            let shutdown = CancellationToken::new();
            let tailing = replica(&app, &shutdown);
            let mut lists = vec![
                Some(create(&app, 1, "a", false).await),
                Some(create(&app, 1, "b", true).await),
            ];
            // The model: whom 1 follows, who is erased, each list's members.
            let mut follows = BTreeSet::new();
            let mut erased = BTreeSet::new();
            let mut model: BTreeMap<usize, BTreeSet<i64>> =
                BTreeMap::from([(0, BTreeSet::new()), (1, BTreeSet::new())]);
            for step in steps {
                let end = |model: &mut BTreeMap<usize, BTreeSet<i64>>, u: i64| {
                    model.values_mut().for_each(|m| {
                        m.remove(&u);
                    })
                };
                match step {
                    Step::Follow(u) => {
                        let (status, _) = app.command("follow", 1, u).await;
                        if status == StatusCode::OK {
                            follows.insert(u);
                        }
                    }
                    Step::Unfollow(u) => {
                        app.command("unfollow", 1, u).await;
                        follows.remove(&u);
                        end(&mut model, u);
                    }
                    Step::Block(u, by_owner) => {
                        let (a, b) = if by_owner { (1, u) } else { (u, 1) };
                        app.command("block", a, b).await;
                        app.command("unblock", a, b).await;
                        follows.remove(&u);
                        end(&mut model, u);
                    }
                    Step::Erase(u) => {
                        app.erase_me(u).await;
                        erased.insert(u);
                        follows.remove(&u);
                        end(&mut model, u);
                    }
                    Step::Add(l, users) | Step::Remove(l, users) if lists[l].is_none() => {
                        let _ = users;
                    }
                    Step::Add(l, users) => {
                        let list = lists[l].clone().unwrap();
                        let (status, body) = members(&app, 1, &list, true, &users).await;
                        let named: BTreeSet<i64> = users.iter().copied().collect();
                        let expected = if named.iter().any(|u| erased.contains(u)) {
                            StatusCode::NOT_FOUND
                        } else if named.iter().all(|u| follows.contains(u)) {
                            let new = named.difference(&model[&l]).count();
                            assert_eq!(body["changed"].as_u64(), Some(new as u64), "{body}");
                            model.get_mut(&l).unwrap().extend(named);
                            StatusCode::OK
                        } else {
                            StatusCode::CONFLICT
                        };
                        assert_eq!(status, expected, "{body}");
                    }
                    Step::Remove(l, users) => {
                        let list = lists[l].clone().unwrap();
                        let (status, body) = members(&app, 1, &list, false, &users).await;
                        let named: BTreeSet<i64> = users.iter().copied().collect();
                        if named.iter().any(|u| erased.contains(u)) {
                            assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
                        } else {
                            let gone = named.intersection(&model[&l]).count();
                            assert_eq!(body["changed"].as_u64(), Some(gone as u64), "{body}");
                            model.get_mut(&l).unwrap().retain(|u| !named.contains(u));
                        }
                    }
                    Step::Delete(l) => {
                        if let Some(list) = lists[l].take() {
                            let (status, _) = call(
                                &app,
                                1,
                                Method::DELETE,
                                &format!("/api/v1/lists/{list}"),
                                json!({}),
                            )
                            .await;
                            assert_eq!(status, StatusCode::OK);
                            model.remove(&l);
                        }
                    }
                }
            }
            for (l, list) in lists.iter().enumerate() {
                if let Some(list) = list {
                    let expected: Vec<i64> = model[&l].iter().copied().collect();
                    assert_eq!(listed(&app, 1, list).await, Ok(expected), "list {l}");
                }
            }
            // A replica that tailed the history, and one loaded after it, agree with the model.
            let at = head(&app).await;
            let expected: Vec<Option<Vec<i64>>> = lists
                .iter()
                .enumerate()
                .filter(|(_, l)| l.is_some())
                .map(|(l, _)| Some(model[&l].iter().copied().collect()))
                .collect();
            assert_eq!(held(&tailing, &at, &lists).await, expected, "tailed");
            let loaded = replica(&app, &shutdown);
            assert_eq!(held(&loaded, &at, &lists).await, expected, "loaded");
            shutdown.cancel();
            assert_verified(&app).await;
        },
    );
}

/// `"tx.gp"` as a pair that orders as the log does.
fn place(position: &str) -> (i64, i64) {
    let (tx, gp) = position.split_once('.').unwrap();
    (tx.parse().unwrap(), gp.parse().unwrap())
}

#[tokio::test]
async fn members_calls_race_each_other_and_unfollows_exactly() {
    let app = spawn_app().await;
    let list = create(&app, 1, "raced", false).await;
    for u in 2..=31 {
        follow(&app, 1, u).await;
    }
    // Twenty adds of one user each at once, many in one group: each adds its own.
    let adds = (2..=21).map(|u| {
        let (app, list) = (&app, list.clone());
        async move { members(app, 1, &list, true, &[u]).await }
    });
    for (status, body) in futures::future::join_all(adds).await {
        assert_eq!(
            (status, body["changed"].as_i64()),
            (StatusCode::OK, Some(1)),
            "{body}"
        );
    }
    assert_eq!(listed(&app, 1, &list).await, Ok((2..=21).collect()));
    // An add of each of ten more races an unfollow of them: an add decided first is ended by
    // the unfollow (its position is below the unfollow's), one decided after is refused.
    let races = (22..=31).map(|u| {
        let (app, list) = (&app, list.clone());
        async move {
            let named = [u];
            let (add, unfollow) = tokio::join!(
                members(app, 1, &list, true, &named),
                app.command("unfollow", 1, u)
            );
            (add, unfollow)
        }
    });
    for ((status, add), (_, unfollow)) in futures::future::join_all(races).await {
        let ended = place(unfollow["position"].as_str().unwrap());
        match status {
            StatusCode::OK => assert!(place(add["position"].as_str().unwrap()) < ended),
            StatusCode::CONFLICT => assert_eq!(code(&add), "NOT_FOLLOWING"),
            other => panic!("{other}: {add}"),
        }
    }
    assert_eq!(listed(&app, 1, &list).await, Ok((2..=21).collect()));
    // The write side's index agrees: a second add of each of them changes nothing.
    let (_, again) = members(&app, 1, &list, true, &(2..=21).collect::<Vec<i64>>()).await;
    assert_eq!(again["changed"], 0, "{again}");
    assert_verified(&app).await;
}

//! Private accounts and follow requests (issue 14), over HTTP against the real services,
//! including the races the consistency boundaries are for.

use std::collections::BTreeSet;

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::TestApp;
use crate::helpers::{
    assert_verified, blocked_by, code, patient_transaction, projector_reached, spawn_app,
    spawn_with, test_config,
};

const APPROVE: &str = "follow_requests/approve";
const REJECT: &str = "follow_requests/reject";

/// The users of `user`'s pending requests, newest first, every page of 2, once `at` is read.
async fn requesters(app: &TestApp, user: i64, at: &str) -> Vec<i64> {
    let mut users = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/me/follow_requests?limit=2&cursor={c}&min_position={at}"),
            None => format!("/api/v1/me/follow_requests?limit=2&min_position={at}"),
        };
        let (status, page) = app.get_as(user, &path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        for item in page["items"].as_array().unwrap() {
            assert!(item["since"].is_string(), "{item}");
            users.push(item["user"].as_i64().unwrap());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return users,
        }
    }
}

fn position(body: &Value) -> String {
    body["position"].as_str().expect("a position").to_owned()
}

/// (requester, target) of every pending request in the write side's index.
async fn pending(app: &TestApp) -> BTreeSet<(i64, i64)> {
    sqlx::query_as("SELECT requester, target FROM pending_requests")
        .fetch_all(&app.pool)
        .await
        .unwrap()
        .into_iter()
        .collect()
}

#[tokio::test]
async fn a_locked_account_turns_follows_into_requests_its_owner_approves_or_rejects() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "for approved followers").await;
    let locked = app.set_locked(1, true).await;
    assert_eq!(locked["locked"], json!(true));
    assert!(locked["position"].is_string(), "{locked}");
    let again = app.set_locked(1, true).await;
    assert_eq!(
        again,
        json!({"locked": true, "hide_graph": false, "position": null})
    );

    // A follow becomes a request; asking again changes nothing.
    let (status, body) = app.command("follow", 2, 1).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["changed"], json!(true));
    let relation = &body["relation"];
    assert_eq!(
        (relation["requested"].clone(), relation["following"].clone()),
        (json!(true), json!(false)),
        "{body}"
    );
    let asked_at = position(&body);
    let (_, again) = app.command("follow", 2, 1).await;
    assert_eq!(
        (
            again["changed"].clone(),
            again["relation"]["requested"].clone()
        ),
        (json!(false), json!(true))
    );
    // Both sides see it, in status, batch and the owner's list; the follower count does not.
    let (_, status_2) = app
        .get_as(
            2,
            &format!("/api/v1/relation/status?from=2&to=1&min_position={asked_at}"),
        )
        .await;
    assert_eq!(status_2["requested"], json!(true), "{status_2}");
    let (_, batch) = app.get_as(1, "/api/v1/relation/batch?from=1&to=2,3").await;
    assert_eq!(
        batch["relations"][0]["requested_by"],
        json!(true),
        "{batch}"
    );
    assert_eq!(batch["relations"][1]["requested_by"], json!(false));
    assert_eq!(requesters(&app, 1, &asked_at).await, vec![2]);
    assert!(requesters(&app, 2, &asked_at).await.is_empty());
    let (_, counts) = app.get("/api/v1/users/1/counts").await;
    assert_eq!(counts["followers"], json!(0));
    assert_eq!(
        app.get("/api/v1/me/follow_requests").await.0,
        StatusCode::UNAUTHORIZED
    );

    // Approval makes the follow, and backfills the new follower's feed like a follow.
    let (status, body) = app.command(APPROVE, 1, 2).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["changed"], json!(true));
    assert_eq!(
        (
            body["relation"]["followed_by"].clone(),
            body["relation"]["requested_by"].clone()
        ),
        (json!(true), json!(false))
    );
    let approved_at = position(&body);
    let (_, feed) = app
        .get_as(2, &format!("/api/v1/feed?min_position={approved_at}"))
        .await;
    assert_eq!(feed["items"][0]["id"], json!(post), "{feed}");
    assert!(requesters(&app, 1, &approved_at).await.is_empty());
    let (_, again) = app.command(APPROVE, 1, 2).await;
    assert_eq!(
        (again["changed"].clone(), again["position"].clone()),
        (json!(false), json!(null))
    );

    // Rejection, and withdrawal (an unfollow of a pending request) are changes too.
    app.command("follow", 3, 1).await;
    let (_, body) = app.command(REJECT, 1, 3).await;
    assert_eq!(body["changed"], json!(true), "{body}");
    assert_eq!(body["relation"]["requested_by"], json!(false));
    app.command("follow", 4, 1).await;
    let (_, body) = app.command("unfollow", 4, 1).await;
    assert_eq!(body["changed"], json!(true), "{body}");
    assert!(body["position"].is_string());
    assert_eq!(body["relation"]["requested"], json!(false));
    // Nothing pending: success without a change; the wrong side cannot approve.
    let (_, body) = app.command(REJECT, 1, 3).await;
    assert_eq!(body["changed"], json!(false));
    app.command("follow", 5, 1).await;
    let (_, body) = app.command(APPROVE, 5, 1).await;
    assert_eq!(body["changed"], json!(false), "only the one asked approves");
    let (status, body) = app.command(APPROVE, 1, 1).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "SELF_RELATION")
    );

    let kinds: Vec<(String, Value)> = app
        .events()
        .await
        .into_iter()
        .filter(|(kind, _)| kind.starts_with("Follow") || kind.starts_with("Account"))
        .collect();
    let names: Vec<&str> = kinds.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "AccountLocked",
            "FollowRequested",
            "FollowRequestApproved",
            "Followed",
            "FollowRequested",
            "FollowRequestRejected",
            "FollowRequested",
            "FollowRequestWithdrawn",
            "FollowRequested",
        ]
    );
    assert_eq!(
        kinds[5].1,
        json!({"FollowRequestRejected": {"requester": 3, "target": 1, "cause": "asked"}})
    );
    let (_, last) = app.command("follow", 6, 1).await;
    projector_reached(&app, "feed", &position(&last)).await;
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_block_ends_pending_requests_both_ways() {
    let app = spawn_app().await;
    app.set_locked(1, true).await;
    app.set_locked(2, true).await;
    app.command("follow", 2, 1).await;
    app.command("follow", 1, 2).await;
    let (_, body) = app.command("block", 1, 2).await;
    assert_eq!(body["changed"], json!(true));
    let relation = &body["relation"];
    assert_eq!(
        (
            relation["requested"].clone(),
            relation["requested_by"].clone(),
            relation["blocking"].clone()
        ),
        (json!(false), json!(false), json!(true))
    );
    let at = position(&body);
    assert!(requesters(&app, 1, &at).await.is_empty());
    assert!(requesters(&app, 2, &at).await.is_empty());
    assert!(pending(&app).await.is_empty());
    let ends: Vec<Value> = app
        .events()
        .await
        .into_iter()
        .filter(|(kind, _)| kind == "FollowRequestWithdrawn" || kind == "FollowRequestRejected")
        .map(|(_, payload)| payload)
        .collect();
    assert_eq!(
        ends,
        vec![
            json!({"FollowRequestWithdrawn": {"requester": 1, "target": 2, "cause": "block"}}),
            json!({"FollowRequestRejected": {"requester": 2, "target": 1, "cause": "block"}}),
        ]
    );
    // The blocked user cannot ask again.
    let (status, body) = app.command("follow", 2, 1).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "BLOCKED"));
    projector_reached(&app, "following", &at).await;
    assert_verified(&app).await;
}

#[tokio::test]
async fn unlocking_approves_every_pending_request_in_one_transaction() {
    let app = spawn_app().await;
    app.set_locked(1, true).await;
    let requesters_ids: Vec<i64> = (2..=61).collect();
    for (status, body) in
        join_all(requesters_ids.iter().map(|&r| app.command("follow", r, 1))).await
    {
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["relation"]["requested"], json!(true));
    }
    // A follower from before the lock stays one; the lock asks nothing of them.
    let unlocked = app.set_locked(1, false).await;
    assert_eq!(unlocked["locked"], json!(false));
    let at = position(&unlocked);
    let (_, counts) = app
        .get(&format!("/api/v1/users/1/counts?min_position={at}"))
        .await;
    assert_eq!(counts["followers"], json!(60), "{counts}");
    assert!(requesters(&app, 1, &at).await.is_empty());
    assert!(pending(&app).await.is_empty());
    // One transaction: the unlock and all 60 approvals with their follows.
    let transactions: Vec<(String, i64)> = sqlx::query_as(
        "SELECT event_type, count(DISTINCT transaction_id) FROM events
          WHERE event_type IN ('AccountUnlocked', 'FollowRequestApproved', 'Followed')
          GROUP BY 1 ORDER BY 1",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        transactions,
        vec![
            ("AccountUnlocked".to_owned(), 1),
            ("FollowRequestApproved".to_owned(), 1),
            ("Followed".to_owned(), 1)
        ]
    );
    let same: bool = sqlx::query_scalar(
        "SELECT count(DISTINCT transaction_id) = 1 FROM events
          WHERE event_type IN ('AccountUnlocked', 'FollowRequestApproved', 'Followed')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(same);
    // Unlocked: a follow is a follow again.
    let (_, body) = app.command("follow", 99, 1).await;
    assert_eq!(body["relation"]["following"], json!(true), "{body}");
    assert_eq!(
        app.set_locked(1, false).await,
        json!({"locked": false, "hide_graph": false, "position": null})
    );
    projector_reached(&app, "feed", &position(&body)).await;
    assert_verified(&app).await;
}

#[tokio::test]
async fn requests_at_the_limit_racing_other_follows_never_pass_it() {
    let mut config = test_config().await;
    config.follow_limit = 5;
    let app = spawn_with(config).await;
    // Targets 100..110 are locked, 200..210 are not: user 1 asks or follows all 20 at once.
    for target in 100..110 {
        app.set_locked(target, true).await;
    }
    let follows = (100..110)
        .chain(200..210)
        .map(|t| app.command("follow", 1, t));
    let results = join_all(follows).await;
    let accepted = results.iter().filter(|(s, _)| *s == StatusCode::OK).count();
    let refused = results
        .iter()
        .filter(|(s, b)| *s == StatusCode::CONFLICT && code(b) == "FOLLOW_LIMIT_REACHED")
        .count();
    assert_eq!((accepted, refused), (5, 15), "{results:?}");
    let guard: i32 = sqlx::query_scalar("SELECT following FROM follow_guard WHERE user_id = 1")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(guard, 5);
    // In sequence: an approval takes no room (the request already counted); a withdrawal
    // makes some.
    for target in [100, 101, 102] {
        let (_, body) = app.command("follow", 2, target).await;
        assert_eq!(body["relation"]["requested"], json!(true), "{body}");
    }
    app.command("follow", 2, 200).await;
    app.command("follow", 2, 201).await;
    let (status, body) = app.command("follow", 2, 202).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "FOLLOW_LIMIT_REACHED")
    );
    let (_, body) = app.command(APPROVE, 100, 2).await;
    assert_eq!(body["changed"], json!(true));
    let (status, _) = app.command("follow", 2, 202).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (_, body) = app.command("unfollow", 2, 101).await;
    assert_eq!(body["changed"], json!(true));
    let (status, body) = app.command("follow", 2, 202).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_verified_when_settled(&app).await;
}

#[tokio::test]
async fn blocks_racing_approvals_never_leave_a_request_or_a_follow_beside_a_block() {
    let app = spawn_app().await;
    app.set_locked(1, true).await;
    let requesters_ids: Vec<i64> = (10..40).collect();
    join_all(requesters_ids.iter().map(|&r| app.command("follow", r, 1))).await;
    // Each requester is approved while one of the two blocks the other, all at once.
    let mut racing = Vec::new();
    for &r in &requesters_ids {
        racing.push(app.command(APPROVE, 1, r));
        racing.push(match r % 2 {
            0 => app.command("block", r, 1),
            _ => app.command("block", 1, r),
        });
    }
    for (status, body) in join_all(racing).await {
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (_, last) = app.command("follow", 99, 98).await;
    let at = position(&last);
    // As user 1, locked: its relations are for the pairs it is in (issue 26).
    let (_, batch) = app
        .get_as(
            1,
            &format!(
                "/api/v1/relation/batch?from=1&to={}&min_position={at}",
                requesters_ids
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        )
        .await;
    for relation in batch["relations"].as_array().unwrap() {
        let blocked = relation["blocking"] == json!(true) || relation["blocked_by"] == json!(true);
        assert!(blocked, "{relation}");
        for flag in ["following", "followed_by", "requested", "requested_by"] {
            assert_eq!(relation[flag], json!(false), "{relation}");
        }
    }
    assert!(pending(&app).await.is_empty());
    assert_verified_when_settled(&app).await;
}

#[tokio::test]
async fn unlocking_racing_withdrawals_and_new_requests_leaves_nothing_pending() {
    let app = spawn_app().await;
    app.set_locked(1, true).await;
    let old: Vec<i64> = (10..40).collect();
    join_all(old.iter().map(|&r| app.command("follow", r, 1))).await;
    // The unlock, withdrawals of half the old requests and 30 new follows, all at once.
    let mut racing = Vec::new();
    for &r in old.iter().filter(|r| *r % 2 == 0) {
        racing.push(app.command("unfollow", r, 1));
    }
    for r in 100..130 {
        racing.push(app.command("follow", r, 1));
    }
    let (unlocked, answers) = tokio::join!(app.set_locked(1, false), join_all(racing));
    assert_eq!(unlocked["locked"], json!(false));
    for (status, body) in &answers {
        assert_eq!(*status, StatusCode::OK, "{body}");
    }
    // No request is left pending by a lock that no longer exists; every new follower
    // follows, asked before the unlock (approved by it) or after it.
    assert!(pending(&app).await.is_empty(), "{:?}", pending(&app).await);
    let (_, last) = app.command("follow", 99, 98).await;
    let at = position(&last);
    assert!(requesters(&app, 1, &at).await.is_empty());
    let new: Vec<String> = (100..130).map(|r| r.to_string()).collect();
    // As user 1, locked: its relations are for the pairs it is in (issue 26).
    let (_, batch) = app
        .get_as(
            1,
            &format!(
                "/api/v1/relation/batch?from=1&to={}&min_position={at}",
                new.join(",")
            ),
        )
        .await;
    for relation in batch["relations"].as_array().unwrap() {
        assert_eq!(relation["followed_by"], json!(true), "{relation}");
    }
    // A withdrawn request was never approved after its withdrawal.
    let events = app.events().await;
    for &r in old.iter().filter(|r| *r % 2 == 0) {
        let about_r: Vec<&str> = events
            .iter()
            .filter(|(_, p)| {
                let inner = p.as_object().unwrap().values().next().unwrap();
                inner.get("requester") == Some(&json!(r))
                    || inner.get("follower") == Some(&json!(r))
            })
            .map(|(k, _)| k.as_str())
            .collect();
        assert!(
            about_r == ["FollowRequested", "FollowRequestWithdrawn"]
                || about_r
                    == [
                        "FollowRequested",
                        "FollowRequestApproved",
                        "Followed",
                        "Unfollowed"
                    ],
            "{r}: {about_r:?}"
        );
    }
    assert_verified_when_settled(&app).await;
}

/// Waits for every projector to pass a fresh event, then verifies.
async fn assert_verified_when_settled(app: &TestApp) {
    let (_, last) = app.command("follow", 7777, 7778).await;
    let at = position(&last);
    projector_reached(app, "following", &at).await;
    projector_reached(app, "feed", &at).await;
    assert_verified(app).await;
}

#[tokio::test]
async fn unlocking_an_account_with_thousands_of_pending_requests_approves_them_in_one_transaction()
{
    let app = spawn_app().await;
    app.set_locked(1, true).await;
    let requesters: Vec<i64> = (1000..4000).collect();
    for chunk in requesters.chunks(500) {
        for (status, body) in join_all(chunk.iter().map(|&r| app.command("follow", r, 1))).await {
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    }
    assert_eq!(pending(&app).await.len(), requesters.len());
    let started = std::time::Instant::now();
    let unlocked = app.set_locked(1, false).await;
    let took = started.elapsed();
    let at = position(&unlocked);
    let (_, counts) = app
        .get(&format!("/api/v1/users/1/counts?min_position={at}"))
        .await;
    assert_eq!(counts["followers"], json!(3000), "{counts}");
    assert!(pending(&app).await.is_empty());
    let transactions: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT transaction_id) FROM events
          WHERE event_type IN ('AccountUnlocked', 'FollowRequestApproved')
             OR (event_type = 'Followed' AND payload->'Followed'->>'followee' = '1')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(transactions, 1, "one transaction for 3,001 events and more");
    // Every requester's limit held: a request already counted, the approval adds nothing.
    let guard: i32 = sqlx::query_scalar("SELECT following FROM follow_guard WHERE user_id = 1000")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(guard, 1);
    println!("unlocking with 3,000 pending requests took {took:?}");
    assert_verified_when_settled(&app).await;
}

#[tokio::test]
async fn an_unlock_racing_a_requesters_erasure_and_a_follow_never_deadlocks() {
    // The cycle a review found: an unlock held its account's `account_locks` row while it
    // waited for a requester's user lock; the requester's erasure, holding that lock, waited
    // for a guard row; and the follow holding the guard row waited for the account's row. Here
    // a transaction of the test plays the follow (it never gives up: its deadlock timeout is
    // long, so PostgreSQL picks the unlock or the erasure if they close a cycle).
    const ACCOUNT: i64 = 1;
    const ERASED: i64 = 2;
    const ASKER: i64 = 3;
    let app = spawn_app().await;
    app.set_locked(ERASED, true).await;
    app.set_locked(ACCOUNT, true).await;
    for (requester, target) in [(ASKER, ERASED), (ERASED, ACCOUNT)] {
        let (status, body) = app.command("follow", requester, target).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["relation"]["requested"], json!(true), "{body}");
    }
    // The follow: the asker's guard row, as a follow group locks it.
    let (mut follow, follow_pid) = patient_transaction(&app).await;
    let locked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM follow_guard WHERE user_id = $1 FOR NO KEY UPDATE) g",
    )
    .bind(ASKER)
    .fetch_one(&mut *follow)
    .await
    .unwrap();
    assert_eq!(
        locked, 1,
        "a request counts toward its requester's guard row"
    );
    // The erasure holds its user's lock and waits for the asker's guard row; the unlock then
    // waits for the erasure; the follow then reads the account's lock row, and commits.
    let ((erased, unlocked), ()) = tokio::join!(
        async {
            tokio::join!(app.erase_me(ERASED), async {
                blocked_by(&app, follow_pid).await;
                app.settings_as(ACCOUNT, json!({ "locked": false })).await
            })
        },
        async {
            // Only once the unlock waits, as above.
            let erasure = blocked_by(&app, follow_pid).await;
            blocked_by(&app, erasure).await;
            sqlx::query("SELECT 1 FROM account_locks WHERE user_id = $1 FOR SHARE")
                .bind(ACCOUNT)
                .execute(&mut *follow)
                .await
                .unwrap();
            follow.commit().await.unwrap();
        }
    );
    let (status, body) = erased;
    assert_eq!(status, StatusCode::OK, "the erasure: {body}");
    let (status, body) = unlocked;
    assert_eq!(status, StatusCode::OK, "the unlock: {body}");
    assert_eq!(body["locked"], json!(false));
    // The erased requester's request went with them; nothing is pending, nothing approved.
    assert!(pending(&app).await.is_empty(), "{:?}", pending(&app).await);
    let approved = app
        .events()
        .await
        .into_iter()
        .filter(|(kind, _)| kind == "FollowRequestApproved")
        .count();
    assert_eq!(approved, 0);
}

/// Takes stream `stream` of the account aggregate in a transaction of the test, as a writer
/// appending to it would; the transaction's backend.
async fn hold_account_stream(
    app: &TestApp,
    stream: i64,
) -> (sqlx::Transaction<'static, sqlx::Postgres>, i32) {
    let (mut tx, pid) = patient_transaction(app).await;
    sqlx::query("SELECT lock_streams('account', ARRAY[$1::text], false)")
        .bind(stream.to_string())
        .execute(&mut *tx)
        .await
        .unwrap();
    (tx, pid)
}

/// A user (from 5 on) whose lock comes before `user`'s in the order every writer takes them
/// (SQL `lock_users`: by key).
async fn locked_before(app: &TestApp, user: i64) -> i64 {
    sqlx::query_scalar(
        "SELECT u FROM generate_series(5::bigint, 200) AS u
          WHERE hashtextextended(current_schema() || ':user:' || u, 0)
              < hashtextextended(current_schema() || ':user:' || $1, 0)
          LIMIT 1",
    )
    .bind(user)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// A transaction of the test's own holding `user`'s lock exclusively, as an erasure of theirs
/// would, and its backend.
async fn hold_user(app: &TestApp, user: i64) -> (sqlx::Transaction<'static, sqlx::Postgres>, i32) {
    let (mut tx, pid) = patient_transaction(app).await;
    sqlx::query("SELECT lock_users(ARRAY[$1::bigint], ARRAY[true])")
        .bind(user)
        .execute(&mut *tx)
        .await
        .unwrap();
    (tx, pid)
}

#[tokio::test]
async fn requests_made_while_an_unlock_takes_its_locks_are_approved_or_erased_with_their_user() {
    // Two requests arrive after the unlock first read its requesters, while it waits for the
    // lock of a requester that comes before its own in the lock order (an unlock holds its user
    // exclusively, so a request made once it holds it waits for the unlock and is a follow); the
    // erasure of one of the two requesters is under way when the unlock finds them. The unlock
    // approves the other and decides again past the erasure.
    const ACCOUNT: i64 = 1;
    const ERASED: i64 = 3;
    const LATE: i64 = 4;
    let app = spawn_app().await;
    let early = locked_before(&app, ACCOUNT).await;
    app.set_locked(ACCOUNT, true).await;
    app.command("follow", early, ACCOUNT).await;
    let (held, held_pid) = hold_user(&app, early).await;
    let (erasing, erasing_pid) = hold_account_stream(&app, ERASED).await;
    let (unlocked, erased, ()) = tokio::join!(
        app.settings_as(ACCOUNT, json!({ "locked": false })),
        async {
            blocked_by(&app, held_pid).await;
            for requester in [ERASED, LATE] {
                let (status, body) = app.command("follow", requester, ACCOUNT).await;
                assert_eq!(status, StatusCode::OK, "{body}");
                assert_eq!(body["relation"]["requested"], json!(true), "{body}");
            }
            app.erase_me(ERASED).await
        },
        async {
            let erasure = blocked_by(&app, erasing_pid).await;
            held.commit().await.unwrap();
            // The unlock finds the erasure under way, and waits for it the second time.
            blocked_by(&app, erasure).await;
            erasing.commit().await.unwrap();
        }
    );
    let (status, body) = unlocked;
    assert_eq!(status, StatusCode::OK, "the unlock: {body}");
    let (status, body) = erased;
    assert_eq!(status, StatusCode::OK, "the erasure: {body}");
    assert!(pending(&app).await.is_empty(), "{:?}", pending(&app).await);
    let approved: BTreeSet<i64> = app
        .events()
        .await
        .into_iter()
        .filter(|(kind, _)| kind == "FollowRequestApproved")
        .map(|(_, payload)| {
            payload["FollowRequestApproved"]["requester"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(approved, BTreeSet::from([early, LATE]));
}

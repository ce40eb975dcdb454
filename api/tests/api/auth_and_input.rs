//! Every 401 case and the bad-input matrix: each answers 4xx with an error code and appends
//! nothing.

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{EncodingKey, Header};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{code, read, spawn_app, SECRET};

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn sign(claims: serde_json::Value, secret: &str) -> String {
    jsonwebtoken::encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

#[tokio::test]
async fn commands_without_a_valid_token_are_401() {
    let app = spawn_app().await;
    let cases = [
        ("missing", None),
        ("empty", Some(String::new())),
        ("malformed", Some("not.a.jwt".to_owned())),
        ("garbage", Some("abc".to_owned())),
        (
            "wrong signature",
            Some(sign(
                json!({"sub": "1", "exp": now() + 600}),
                "another-secret",
            )),
        ),
        (
            "expired",
            Some(sign(json!({"sub": "1", "exp": now() - 3600}), SECRET)),
        ),
        ("no exp", Some(sign(json!({"sub": "1"}), SECRET))),
        (
            "sub not a user id",
            Some(sign(json!({"sub": "alice", "exp": now() + 600}), SECRET)),
        ),
        (
            "sub zero",
            Some(sign(json!({"sub": "0", "exp": now() + 600}), SECRET)),
        ),
        (
            "sub a number, not a string",
            Some(sign(json!({"sub": 1, "exp": now() + 600}), SECRET)),
        ),
        (
            "HS512, not HS256",
            Some(
                jsonwebtoken::encode(
                    &Header::new(jsonwebtoken::Algorithm::HS512),
                    &json!({"sub": "1", "exp": now() + 600}),
                    &EncodingKey::from_secret(SECRET.as_bytes()),
                )
                .unwrap(),
            ),
        ),
        (
            "alg none",
            Some(
                "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiIxIiwiZXhwIjo5OTk5OTk5OTk5fQ."
                    .to_owned(),
            ),
        ),
    ];
    for (case, token) in cases {
        let (status, body) = app
            .command_raw("follow", token.as_deref(), json!({"target": 2}))
            .await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::UNAUTHORIZED, "UNAUTHENTICATED"),
            "{case}"
        );
        // A token sent where none is needed is checked all the same.
        if let Some(token) = token.filter(|t| !t.is_empty()) {
            let (status, body) = read(
                app.client
                    .get(format!("{}/api/v1/users/1/counts", app.base))
                    .bearer_auth(token)
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            assert_eq!(
                (status, code(&body)),
                (StatusCode::UNAUTHORIZED, "UNAUTHENTICATED"),
                "{case} on a public query"
            );
        }
    }
    // Not a Bearer scheme.
    let response = app
        .client
        .post(format!("{}/api/v1/relation/follow", app.base))
        .header("authorization", format!("Basic {}", app.token(1)))
        .json(&json!({"target": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.event_count().await, 0);
}

/// An unknown path is 404 and an undeclared method 405 whatever token comes with them: routing
/// answers before the token is looked at. A routed request's token is still checked.
#[tokio::test]
async fn routing_answers_404_and_405_before_the_token_is_checked() {
    let app = spawn_app().await;
    let bad = sign(json!({"sub": "1", "exp": now() + 600}), "another-secret");
    let send = |method: &str, path: &str, token: &str| {
        app.client
            .request(method.parse().unwrap(), format!("{}{path}", app.base))
            .bearer_auth(token)
            .send()
    };
    for token in [bad.as_str(), "garbage", &app.token(1)] {
        for (method, path) in [
            ("TRACE", "/api/v1/relation/follow"),
            ("DELETE", "/api/v1/users/1/counts"),
            ("PUT", "/healthz"),
        ] {
            let response = send(method, path, token).await.unwrap();
            assert_eq!(
                response.status(),
                StatusCode::METHOD_NOT_ALLOWED,
                "{method} {path}"
            );
            assert!(response.headers().contains_key("allow"), "{method} {path}");
        }
        let (status, body) = read(send("GET", "/api/v1/nowhere", token).await.unwrap()).await;
        assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "NOT_FOUND"));
    }
    let (status, body) = read(send("GET", "/api/v1/users/1/counts", &bad).await.unwrap()).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNAUTHORIZED, "UNAUTHENTICATED")
    );
}

#[tokio::test]
async fn bad_bodies_are_4xx_with_a_code_and_append_nothing() {
    let app = spawn_app().await;
    let token = app.token(1);
    let post = |body: String, content_type: Option<&'static str>| {
        let mut request = app
            .client
            .post(format!("{}/api/v1/relation/follow", app.base))
            .bearer_auth(&token)
            .body(body);
        if let Some(ct) = content_type {
            request = request.header("content-type", ct);
        }
        async move { read(request.send().await.unwrap()).await }
    };
    let json_ct = Some("application/json");
    let cases: Vec<(&str, String, Option<&'static str>, StatusCode, &str)> = vec![
        (
            "zero",
            r#"{"target": 0}"#.into(),
            json_ct,
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
        ),
        (
            "negative",
            r#"{"target": -5}"#.into(),
            json_ct,
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
        ),
        (
            "fraction",
            r#"{"target": 1.5}"#.into(),
            json_ct,
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
        ),
        (
            "string",
            r#"{"target": "2"}"#.into(),
            json_ct,
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
        ),
        (
            "null",
            r#"{"target": null}"#.into(),
            json_ct,
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
        ),
        (
            "past i64",
            r#"{"target": 9223372036854775808}"#.into(),
            json_ct,
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
        ),
        (
            "past u64",
            r#"{"target": 18446744073709551616}"#.into(),
            json_ct,
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
        ),
        (
            "exponent",
            r#"{"target": 1e400}"#.into(),
            json_ct,
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
        ),
        (
            "missing field",
            r#"{}"#.into(),
            json_ct,
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
        ),
        (
            "array",
            r#"[2]"#.into(),
            json_ct,
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
        ),
        (
            "malformed",
            r#"{"target": "#.into(),
            json_ct,
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
        ),
        (
            "empty",
            String::new(),
            json_ct,
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
        ),
        (
            "not json content",
            r#"{"target": 2}"#.into(),
            Some("text/plain"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        (
            "no content type",
            r#"{"target": 2}"#.into(),
            None,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        (
            "oversized",
            format!(r#"{{"target": 2, "pad": "{}"}}"#, "x".repeat(70 * 1024)),
            json_ct,
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
        ),
    ];
    for (case, body, content_type, status, error) in cases {
        let (got, body) = post(body, content_type).await;
        assert_eq!((got, code(&body)), (status, error), "{case}: {body}");
    }
    assert_eq!(app.event_count().await, 0);
    let guards: i64 = sqlx::query_scalar("SELECT count(*) FROM follow_guard")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(guards, 0);
}

#[tokio::test]
async fn the_actor_comes_from_the_token_never_the_body() {
    let app = spawn_app().await;
    let (status, body) = app
        .command_raw(
            "follow",
            Some(&app.token(3)),
            json!({"target": 4, "actor": 99, "from": 99}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["relation"]["from"], json!(3));
}

/// The rest of the bad-input matrix: huge and malformed query parameters, oversized batches,
/// deeply nested JSON. Each is a 4xx with a code; nothing is appended.
#[tokio::test]
async fn bad_query_parameters_and_hostile_bodies_are_4xx() {
    let app = spawn_app().await;
    let ids = (1..=10_000)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let queries = [
        format!("/api/v1/relation/batch?from=1&to={ids}"),
        "/api/v1/relation/batch?from=1&to=".to_owned(),
        "/api/v1/relation/status?from=1&to=0".to_owned(),
        "/api/v1/relation/status?from=1&to=99999999999999999999".to_owned(),
        "/api/v1/users/1/following?limit=1000000".to_owned(),
        "/api/v1/users/1/following?limit=0".to_owned(),
        "/api/v1/users/1/following?offset=1000000000000".to_owned(),
        "/api/v1/users/1/following?offset=-1".to_owned(),
        "/api/v1/users/1/followers?cursor=garbage".to_owned(),
        "/api/v1/users/1/followers?cursor=".to_owned(),
        "/api/v1/users/1/followers?cursor=1.2.3".to_owned(),
        "/api/v1/users/1/counts?min_position=garbage".to_owned(),
        "/api/v1/users/1/counts?min_position=".to_owned(),
        "/api/v1/users/1/posts?size=1000".to_owned(),
        "/api/v1/users/1/posts?max_time=yesterday".to_owned(),
    ];
    for path in &queries {
        let (status, body) = app.get(path).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_INPUT"),
            "{}",
            &path[..path.len().min(80)]
        );
    }
    // Cursors with times beyond the years any key holds (found by schemathesis's stateful
    // phase, which follows a new post's links: PostgreSQL refused the time, answered 500) page
    // as the nearest end does: nothing lies beyond the first year, nothing is newer than the
    // last.
    let (_, published) = app.post(1, "a post with likes, reposts and comments").await;
    let post = published["post"]["id"].as_str().unwrap();
    app.command("follow", 2, 1).await;
    let (_, liked) = app
        .post_as(2, &format!("/api/v1/posts/{post}/like"), json!({}))
        .await;
    let at = liked["position"].as_str().unwrap();
    let (far, near) = ("-219757733932122220", "804889993660765891");
    for (path, items) in [
        (format!("/api/v1/posts/{post}/likes?cursor={far}.6"), 0),
        (format!("/api/v1/posts/{post}/likes?cursor={near}.6"), 1),
        (format!("/api/v1/posts/{post}/reposts?cursor={far}.19"), 0),
        (
            format!("/api/v1/posts/{post}/comments?cursor=0.-40878.{far}.117"),
            0,
        ),
        (format!("/api/v1/users/1/followers?cursor={far}.2"), 0),
        (format!("/api/v1/users/1/followers?cursor={near}.2"), 1),
    ] {
        let (status, body) = app.get_as(1, &format!("{path}&min_position={at}")).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        assert_eq!(
            body["items"].as_array().unwrap().len(),
            items,
            "{path}: {body}"
        );
    }
    let before = app.event_count().await;
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let (status, body) = read(
        app.client
            .post(format!("{}/api/v1/relation/follow", app.base))
            .bearer_auth(app.token(1))
            .header("content-type", "application/json")
            .body(format!(r#"{{"target": {deep}}}"#))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_INPUT")
    );
    assert_eq!(app.event_count().await, before);
}

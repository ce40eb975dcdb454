//! Quotes (issue 44), given/when/then over HTTP against the real services: a quote is judged
//! not found, blocked, then not quotable; a post shows the post it quotes as each reader may
//! see it at the moment of reading (one level deep, `unavailable` or `detached` otherwise,
//! never its content); `quote_count`, the policy's changes, `detach` by the quoted author, the
//! `quoted` notification and every undo; a quote raced against a policy change; the log's
//! other readers (verify, rebuild, replay, the archive).

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_verified, code, relations, run_relations, spawn_app, TestApp};

/// Publishes `body` (with its content) as `author`: the status and the answer.
async fn publish(app: &TestApp, author: i64, body: Value) -> (StatusCode, Value) {
    app.post_with(author, body).await
}

/// `author` quotes `post` with `text`; the new post's id and position.
async fn quote(app: &TestApp, author: i64, post: &str, text: &str) -> (String, String) {
    let (status, body) = publish(app, author, json!({"content": text, "quote_of": post})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    (
        body["post"]["id"].as_str().unwrap().to_owned(),
        body["position"].as_str().unwrap().to_owned(),
    )
}

/// `verb` (`follow`, `block`...) of `b` by `a`; the position.
async fn relation(app: &TestApp, verb: &str, a: i64, b: i64) -> String {
    let (status, body) = app.command(verb, a, b).await;
    assert_eq!(status, StatusCode::OK, "{verb}: {body}");
    body["position"].as_str().unwrap_or_default().to_owned()
}

/// `author`'s timeline as `reader` sees it once `at` is folded: the posts.
async fn timeline(app: &TestApp, reader: i64, author: i64, at: &str) -> Vec<Value> {
    let path = format!("/api/v1/users/{author}/posts?min_position={at}");
    let (status, page) = app.get_as(reader, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["items"].as_array().unwrap().clone()
}

/// `reader`'s home feed once `at` is folded (`cursor` below a post, or the first page).
async fn feed(app: &TestApp, reader: i64, at: &str, cursor: Option<&str>) -> Value {
    let cursor = cursor.map(|c| format!("&cursor={c}")).unwrap_or_default();
    let path = format!("/api/v1/feed?size=2&min_position={at}{cursor}");
    let (status, page) = app.get_as(reader, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page
}

/// What post `id` in `author`'s timeline shows of its quote to `reader`, once `at` is folded.
async fn seen(app: &TestApp, reader: i64, author: i64, at: &str, id: &str) -> (String, String) {
    shown(find(&timeline(app, reader, author, at).await, id))
}

/// `user` sets who may quote `post`: the status and the answer.
async fn set_policy(app: &TestApp, user: i64, post: &str, policy: &str) -> (StatusCode, Value) {
    let path = format!("{}/api/v1/posts/{post}/quote_policy", app.base);
    let request = app.client.put(path).bearer_auth(app.token(user));
    let body = json!({ "quote_policy": policy });
    crate::helpers::read(request.json(&body).send().await.unwrap()).await
}

/// The post `id` of `posts`.
fn find<'a>(posts: &'a [Value], id: &str) -> &'a Value {
    posts
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("{id} in {posts:?}"))
}

/// What a post shows of its quote: `("post", content)` for an embedded post, else
/// `(state, "")`; it never carries the quoted post's content unless embedded.
fn shown(post: &Value) -> (String, String) {
    let quote = &post["quote"];
    match quote["state"].as_str() {
        Some(state) => {
            assert!(quote.get("content").is_none(), "{post}");
            (state.to_owned(), String::new())
        }
        None => {
            // One level: the embedded post's own quote is left out.
            assert!(quote.get("quote").is_none(), "{post}");
            (
                "post".to_owned(),
                quote["content"].as_str().unwrap().to_owned(),
            )
        }
    }
}

fn embedded(content: &str) -> (String, String) {
    ("post".to_owned(), content.to_owned())
}

fn gone(state: &str) -> (String, String) {
    (state.to_owned(), String::new())
}

#[tokio::test]
async fn a_quote_shows_the_quoted_post_as_each_reader_may_see_it_now() {
    let app = spawn_app().await;
    // Given 1's public post, and 2's quote of it.
    let (post, _) = app.publish(1, "the original").await;
    let (status, answer) = publish(&app, 2, json!({"content": "look", "quote_of": post})).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    // Then the answer shows it embedded, one level deep, and a post quoting none shows null.
    assert_eq!(shown(&answer["post"]), embedded("the original"));
    assert_eq!(answer["post"]["quote"]["id"], post.as_str());
    assert_eq!(answer["post"]["quote_policy"], "anyone");
    let quoting = answer["post"]["id"].as_str().unwrap().to_owned();
    // And a quote of the quote embeds only the first level.
    let (deeper, at) = quote(&app, 3, &quoting, "deeper").await;
    let posts = timeline(&app, 4, 3, &at).await;
    assert_eq!(shown(find(&posts, &deeper)), embedded("look"));
    // Given 5 and 6 follow 2 (6's first page from memory, and a cursor page from PostgreSQL).
    relation(&app, "follow", 5, 2).await;
    let at = relation(&app, "follow", 6, 2).await;
    let (_, at_newer) = app.publish(2, "newer").await;
    let first = feed(&app, 6, &at_newer, None).await;
    let cursor = first["next_cursor"].as_str().map(str::to_owned);
    let first = first["items"].as_array().unwrap().clone();
    let below = feed(&app, 6, &at_newer, cursor.as_deref()).await;
    let below = below["items"].as_array().unwrap().clone();
    let both = [first, below].concat();
    assert_eq!(shown(find(&both, &quoting)), embedded("the original"));
    assert_eq!(
        find(&timeline(&app, 5, 1, &at).await, &post)["quote_count"],
        1
    );
    // When 1 blocks 5, then 5 sees the quote unavailable; 6 still sees it.
    let at = relation(&app, "block", 1, 5).await;
    assert_eq!(seen(&app, 5, 2, &at, &quoting).await, gone("unavailable"));
    assert_eq!(
        seen(&app, 6, 2, &at, &quoting).await,
        embedded("the original")
    );
    // When 1 deletes the post, then everyone sees it unavailable.
    let (status, deleted) = app.delete_post(1, &post).await;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    let at = deleted["position"].as_str().unwrap();
    let page = feed(&app, 6, at, None).await;
    let items = page["items"].as_array().unwrap();
    assert!(items
        .iter()
        .all(|p| p["id"] != quoting || shown(p) == gone("unavailable")));
    assert_eq!(seen(&app, 6, 2, at, &quoting).await, gone("unavailable"));
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_followers_only_or_erased_authors_quoted_post_is_unavailable_to_whom_it_is_hidden() {
    let app = spawn_app().await;
    // Given 1's followers-only post, quoted by 2, who follows 1.
    relation(&app, "follow", 2, 1).await;
    let (status, answer) = publish(
        &app,
        1,
        json!({"content": "friends", "visibility": "followers"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let post = answer["post"]["id"].as_str().unwrap().to_owned();
    let (quoting, at) = quote(&app, 2, &post, "see").await;
    // Then 2's follower 3, who does not follow 1, sees it unavailable; 2 sees it.
    assert_eq!(seen(&app, 3, 2, &at, &quoting).await, gone("unavailable"));
    assert_eq!(seen(&app, 2, 2, &at, &quoting).await, embedded("friends"));
    // Given 4's public post quoted by 2, when 4 is erased, then it is unavailable to all.
    let (public, _) = app.publish(4, "soon gone").await;
    let (other, _) = quote(&app, 2, &public, "again").await;
    let (status, erased) = app.erase_me(4).await;
    assert_eq!(status, StatusCode::OK, "{erased}");
    let at = erased["position"].as_str().unwrap();
    assert_eq!(seen(&app, 2, 2, at, &other).await, gone("unavailable"));
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_quote_is_judged_not_found_then_blocked_then_not_quotable_and_refusals_change_nothing() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "mine").await;
    let quote_as = |author: i64, of: String| {
        let app = &app;
        async move { publish(app, author, json!({"content": "q", "quote_of": of})).await }
    };
    let before = app.event_count().await;
    // An unknown post, and a followers-only post of someone one does not follow: 404.
    let unknown = "0190f5a2-7b6c-7def-8123-456789abcdef".to_owned();
    let (status, body) = quote_as(2, unknown).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::NOT_FOUND, "NOT_FOUND"),
        "{body}"
    );
    let (_, hidden) = publish(&app, 1, json!({"content": "f", "visibility": "followers"})).await;
    let hidden = hidden["post"]["id"].as_str().unwrap().to_owned();
    let (status, body) = quote_as(2, hidden.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    // Malformed input: 400.
    let (status, body) = quote_as(2, "not-a-post".to_owned()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let bad = json!({"content": "q", "quote_policy": "friends"});
    let (status, body) = publish(&app, 2, bad).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // A block either way: 403 BLOCKED, before the policy.
    relation(&app, "block", 3, 1).await;
    let (status, body) = quote_as(3, post.clone()).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "BLOCKED"),
        "{body}"
    );
    let after_block = app.event_count().await;
    assert_eq!(
        after_block,
        before + 2,
        "only the hidden post and the block were appended"
    );
    // A policy of nobody: only its author quotes it.
    let (status, closed) =
        publish(&app, 1, json!({"content": "c", "quote_policy": "nobody"})).await;
    assert_eq!(status, StatusCode::CREATED, "{closed}");
    assert_eq!(closed["post"]["quote_policy"], "nobody");
    let closed = closed["post"]["id"].as_str().unwrap().to_owned();
    let (status, body) = quote_as(2, closed.clone()).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "NOT_QUOTABLE"),
        "{body}"
    );
    let (status, body) = quote_as(1, closed.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // A policy of followers: a follower may, anyone else not.
    let (status, body) = set_policy(&app, 2, &post, "followers").await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "NOT_AUTHOR"),
        "{body}"
    );
    let (status, body) = set_policy(&app, 1, &post, "followers").await;
    assert_eq!(
        (status, &body["changed"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    let (status, body) = set_policy(&app, 1, &post, "followers").await;
    assert_eq!(
        (status, &body["changed"]),
        (StatusCode::OK, &json!(false)),
        "{body}"
    );
    let (status, body) = set_policy(&app, 1, &post, "everyone").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = quote_as(2, post.clone()).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "NOT_QUOTABLE"),
        "{body}"
    );
    relation(&app, "follow", 2, 1).await;
    let (status, body) = quote_as(2, post.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // Unknown post for a policy change: 404.
    let unknown = "0190f5a2-7b6c-7def-8123-456789abcdef";
    let (status, _) = set_policy(&app, 1, unknown, "nobody").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// `user` detaches the quote of `post`: the status and answer.
async fn detach(app: &TestApp, user: i64, post: &str) -> (StatusCode, Value) {
    app.post_as(user, &format!("/api/v1/posts/{post}/detach"), json!({}))
        .await
}

/// `user`'s `quoted` notifications' posts once `at` is folded.
async fn quoted(app: &TestApp, user: i64, at: &str) -> Vec<String> {
    let path = format!("/api/v1/notifications?types=quoted&limit=100&min_position={at}");
    let (status, page) = app.get_as(user, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let items = page["items"].as_array().unwrap();
    let mut posts: Vec<String> = items
        .iter()
        .map(|g| g["post"].as_str().unwrap().to_owned())
        .collect();
    posts.sort();
    posts
}

#[tokio::test]
async fn detach_by_the_quoted_author_and_deletion_undo_counts_and_notifications() {
    let app = spawn_app().await;
    // Given 1's post quoted by 2 and by 3, and by 1 itself.
    let (post, _) = app.publish(1, "quoted").await;
    let (first, _) = quote(&app, 2, &post, "one").await;
    let (second, _) = quote(&app, 3, &post, "two").await;
    let (own, at) = quote(&app, 1, &post, "mine").await;
    // Then it counts three quotes, and 1 is notified of the two by others, one each.
    assert_eq!(
        find(&timeline(&app, 9, 1, &at).await, &post)["quote_count"],
        3
    );
    let mut expected = vec![first.clone(), second.clone()];
    expected.sort();
    assert_eq!(quoted(&app, 1, &at).await, expected);
    // When the quoting author, or a stranger, detaches: 403, and a post quoting none: 403.
    let (status, body) = detach(&app, 2, &first).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "NOT_AUTHOR"),
        "{body}"
    );
    let (status, _) = detach(&app, 7, &first).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = detach(&app, 1, &post).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // When 1 detaches 2's quote, then it shows detached, no longer counts nor notifies.
    let (status, body) = detach(&app, 1, &first).await;
    assert_eq!(
        (status, &body["changed"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    let at = body["position"].as_str().unwrap().to_owned();
    let (status, again) = detach(&app, 1, &first).await;
    assert_eq!(
        (status, &again["changed"]),
        (StatusCode::OK, &json!(false)),
        "{again}"
    );
    let posts = timeline(&app, 9, 2, &at).await;
    assert_eq!(shown(find(&posts, &first)), gone("detached"));
    assert_eq!(find(&posts, &first)["quote"]["id"], post.as_str());
    assert_eq!(
        find(&timeline(&app, 9, 1, &at).await, &post)["quote_count"],
        2
    );
    assert_eq!(quoted(&app, 1, &at).await, vec![second.clone()]);
    // When 3 deletes their quote, then the count and the notification go with it.
    let (status, deleted) = app.delete_post(3, &second).await;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    let at = deleted["position"].as_str().unwrap().to_owned();
    assert_eq!(
        find(&timeline(&app, 9, 1, &at).await, &post)["quote_count"],
        1
    );
    assert_eq!(quoted(&app, 1, &at).await, Vec::<String>::new());
    // An unknown post to detach: 404.
    let (status, _) = detach(&app, 1, "0190f5a2-7b6c-7def-8123-456789abcdef").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let _ = own;
    // Every reader agrees with the log: verify, a rebuild, replay and the archive.
    assert_verified(&app).await;
    relations(&app, &["rebuild", "feed"]);
    relations(&app, &["rebuild", "engagement"]);
    relations(&app, &["rebuild", "notifications"]);
    assert_verified(&app).await;
    assert_eq!(quoted(&app, 1, &at).await, Vec::<String>::new());
    let out = std::env::temp_dir().join(format!("quotes-{}", uuid::Uuid::new_v4().simple()));
    let replay = run_relations(
        &app,
        &[
            "replay",
            "--format",
            "parquet",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let _ = std::fs::remove_dir_all(&out);
    let (status, _, archive) = crate::erasure::archive(&app, 2).await;
    assert_eq!(status, StatusCode::OK);
    let mine = archive
        .iter()
        .find(|r| r["kind"] == "post" && r["id"] == first.as_str());
    assert_eq!(mine.unwrap()["quote_of"], post.as_str());
}

#[tokio::test]
async fn a_quote_never_passes_a_policy_change() {
    let app = spawn_app().await;
    for round in 0..8 {
        // Given 1's post open to anyone; when 2 quotes it as 1 closes it, at once.
        let (post, _) = app.publish(1, &format!("round {round}")).await;
        let close = set_policy(&app, 1, &post, "nobody");
        let body = json!({"content": "race", "quote_of": post});
        let (closed, quoted) = tokio::join!(close, publish(&app, 2, body));
        let (closed, answer) = closed;
        assert_eq!(
            (closed, &answer["changed"]),
            (StatusCode::OK, &json!(true)),
            "{answer}"
        );
        let (status, body) = quoted;
        assert!(
            status == StatusCode::CREATED || code(&body) == "NOT_QUOTABLE",
            "{status} {body}"
        );
        // Then a quote accepted was decided before the closing: in one transaction (a group
        // decides its commands in turn, the guard taking in each decision, but inserts their
        // events in (stream, version) order, so the log's order inside a transaction says
        // nothing of the decisions'), or in a transaction whose events went in first (the two
        // are serialized by the post stream's lock, and each inserts under it). A refused one
        // left nothing in the log.
        let events: Vec<(String, Value)> =
            sqlx::query_as("SELECT event_type, payload::jsonb FROM events")
                .fetch_all(&app.pool)
                .await
                .unwrap();
        let quoted = events
            .iter()
            .any(|(t, d)| t == "PostPublished" && d[t]["quote_of"] == post.as_str());
        match status {
            StatusCode::CREATED => {
                let place = |answer: &Value| -> (i64, i64) {
                    let (xid, position) = answer["position"]
                        .as_str()
                        .unwrap()
                        .split_once('.')
                        .unwrap();
                    (xid.parse().unwrap(), position.parse().unwrap())
                };
                let (quote, close) = (place(&body), place(&answer));
                assert!(
                    quote.0 == close.0 || quote.1 < close.1,
                    "quote {body} close {answer}"
                );
            }
            _ => assert!(!quoted, "{body}"),
        }
    }
}

#[tokio::test]
async fn the_first_page_from_memory_counts_quotes_and_keeps_policies_and_detaching() {
    use relations_projections::views::{QuoteState, QuoteView};
    let app = spawn_app().await;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let graph = crate::feed_model::replica(&app, &shutdown);
    // Given 9 follows 1 and 2; 1's post, quoted by 2 and by 3; 1 closes it to quotes.
    relation(&app, "follow", 9, 1).await;
    relation(&app, "follow", 9, 2).await;
    let (post, _) = app.publish(1, "held").await;
    let (first, _) = quote(&app, 2, &post, "one").await;
    quote(&app, 3, &post, "two").await;
    set_policy(&app, 1, &post, "followers").await;
    // When 1 detaches 2's quote, then the replica's page (no round trip) agrees.
    let (status, body) = detach(&app, 1, &first).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    crate::helpers::replica_reached(&graph, body["position"].as_str().unwrap()).await;
    let page = crate::feed_model::home_from_memory(&graph, 9, 10);
    let by_id = |id: &str| page.iter().find(|p| p.id.to_string() == id).unwrap();
    let quoted = by_id(&post);
    assert_eq!(quoted.quote_count, 1);
    assert_eq!(quoted.quote_policy.as_str(), "followers");
    assert_eq!(quoted.quote, Some(None));
    assert!(matches!(
        by_id(&first).quote,
        Some(Some(QuoteView::Gone {
            state: QuoteState::Detached,
            ..
        }))
    ));
    shutdown.cancel();
}

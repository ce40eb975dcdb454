//! (i) Likes and comments (seed 002): the like command rate against a plain-table like in SQL
//! (and the repost command, issue 44, against the like command),
//! "which of these 100 posts did I like" against the same question in SQL, the like-state
//! cache's hit rate, and a comment page of a post with 10,000 comments, filtered by the
//! caller's blocks, against the same page unfiltered. First, the like commands with no
//! projector running, on a database of their own, against the same plain design: the command
//! path's share of the gap.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use serde_json::{json, Value};

use super::scale::Scale;
use crate::harness::rate;
use crate::harness::{client, closed_loop, token, Env, Row, Server, Stats};

const AUTHORS: i64 = 100;
const POSTS: usize = 1_000;
const LIKERS: i64 = 2_000;
const VIEWER: i64 = 9_999_999;

/// What every part of the scenario works on.
struct Stage<'a> {
    env: &'a Env,
    scale: Scale,
    db: &'static str,
    pool: sqlx::PgPool,
    http: reqwest::Client,
    base: String,
    /// The posts' ids.
    posts: Arc<Vec<String>>,
}

/// Closed-loop clients in every measurement.
const CLIENTS: usize = 64;

pub async fn engagement(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    // First the command path alone, on a database of its own that nothing else has written.
    let alone = {
        let (server, stage) = Stage::open(env, scale, "bench_engagement_alone", Some(&[])).await?;
        let alone = commands(&stage, scale.base() + 1_000, "like").await;
        drop(server);
        alone
    };
    let (server, stage) = Stage::open(env, scale, "bench_engagement", None).await?;
    let mut rows = like_commands(&stage, &alone).await?;
    rows.extend(like_checks_of_posts(&stage).await?);
    rows.extend(comment_pages(&stage).await?);
    drop(server);
    Ok(rows)
}

impl<'a> Stage<'a> {
    /// A fresh database `db` with 1,000 posts published on a server whose `projectors` run (see
    /// [`Server::start`]); the server, and the stage on it.
    async fn open(
        env: &'a Env,
        scale: Scale,
        db: &'static str,
        projectors: Option<&[&str]>,
    ) -> anyhow::Result<(Server, Self)> {
        let pool = env.fresh_database(db).await?;
        let server = Server::start(env, db, 18086, &[], projectors).await?;
        // Every like asks the in-memory replica whether the liker may read the post; at 1M
        // users its load (11.7M follows) overlapped the first like commands (0.11x the plain
        // design).
        server.graph_caught_up(&pool).await?;
        let http = client();
        let base = server.base.clone();
        let posts = Arc::new(publish_posts(&http, &base, scale.base()).await?);
        let stage = Stage {
            env,
            scale,
            db,
            pool,
            http,
            base,
            posts,
        };
        Ok((server, stage))
    }
}

/// Posts by 100 authors (numbered from `shift`), published over HTTP; their ids.
async fn publish_posts(
    http: &reqwest::Client,
    base: &str,
    shift: i64,
) -> anyhow::Result<Vec<String>> {
    let mut posts = Vec::with_capacity(POSTS);
    for i in 0..POSTS {
        let author = shift + 1 + (i as i64 % AUTHORS);
        let answer: Value = http
            .post(format!("{base}/api/v1/posts"))
            .bearer_auth(token(author))
            .json(&json!({"content": "a post to like"}))
            .send()
            .await?
            .json()
            .await?;
        posts.push(answer["post"]["id"].as_str().unwrap_or_default().to_owned());
    }
    Ok(posts)
}

/// Like commands (random users like random posts) against the plain-table design: a likes row
/// and a counter row, one transaction; and the same commands with no projector running
/// (`alone`, measured before) against the same.
async fn like_commands(stage: &Stage<'_>, alone: &Stats) -> anyhow::Result<Vec<Row>> {
    // Users are numbered after the world's, when there is one.
    let shift = stage.scale.base();
    let likes = commands(stage, shift + 1_000, "like").await;
    // Issue 44: the repost command beside the like command, in the same run, other users.
    let reposts = commands(stage, shift + 1_000 + LIKERS, "repost").await;
    for table in [
        "CREATE TABLE plain_likes (post text, user_id bigint, PRIMARY KEY (post, user_id))",
        "CREATE TABLE plain_counts (post text PRIMARY KEY, likes bigint NOT NULL DEFAULT 0)",
    ] {
        sqlx::query(table).execute(&stage.pool).await?;
    }
    let plain = {
        let (sql_pool, posts) = (stage.env.pool(stage.db, 24).await?, stage.posts.clone());
        closed_loop(CLIENTS, stage.scale.run, move |_, _| {
            let pool = sql_pool.clone();
            let mut rng = rand::rng();
            let user = shift + rng.random_range(1_000..1_000 + LIKERS);
            let post = posts[rng.random_range(0..posts.len())].clone();
            async move { plain_like(&pool, &post, user).await.is_ok() }
        })
        .await
    };
    let baseline = format!("plain likes table + counter in SQL: {}", rate(&plain));
    Ok(vec![
        Row::new(
            "i. like command, 64 clients",
            "HTTP (event, pair lock, group commit)",
            rate(&likes),
        )
        .against(baseline.clone(), likes.per_sec() / plain.per_sec()),
        Row::new(
            "i. like command, 64 clients, no projector running",
            "the command path alone, on a fresh database of its own (no read model written)",
            rate(alone),
        )
        .against(baseline, alone.per_sec() / plain.per_sec()),
        Row::new(
            "i. repost command, 64 clients",
            "HTTP (event, pair lock and author's lock read, group commit)",
            rate(&reposts),
        )
        .against(
            format!("the like command in the same run: {}", rate(&likes)),
            reposts.per_sec() / likes.per_sec(),
        )
        .target(
            ">= 0.8x the like command",
            reposts.per_sec() >= 0.8 * likes.per_sec(),
        ),
    ])
}

/// 64 clients `verb` (`like`, `repost`) random posts for the run, as users
/// `first..first + LIKERS`.
async fn commands(stage: &Stage<'_>, first: i64, verb: &'static str) -> Stats {
    let (http, base, posts) = (stage.http.clone(), stage.base.clone(), stage.posts.clone());
    closed_loop(CLIENTS, stage.scale.run, move |_, _| {
        let (http, base) = (http.clone(), base.clone());
        let mut rng = rand::rng();
        let user = rng.random_range(first..first + LIKERS);
        let post = posts[rng.random_range(0..posts.len())].clone();
        async move {
            http.post(format!("{base}/api/v1/posts/{post}/{verb}"))
                .bearer_auth(token(user))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
        }
    })
    .await
}

/// A like in the plain-table design.
async fn plain_like(pool: &sqlx::PgPool, post: &str, user: i64) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    let inserted = sqlx::query("INSERT INTO plain_likes VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .bind(post)
        .bind(user)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if inserted == 1 {
        sqlx::query(
            "INSERT INTO plain_counts VALUES ($1, 1)
             ON CONFLICT (post) DO UPDATE SET likes = plain_counts.likes + 1",
        )
        .bind(post)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await
}

/// "Which of these 100 posts did I like", through the like-state cache, against SQL; and the
/// cache's hit rate meanwhile.
async fn like_checks_of_posts(stage: &Stage<'_>) -> anyhow::Result<Vec<Row>> {
    // Users are numbered after the world's, when there is one.
    let shift = stage.scale.base();
    let (clients, base) = (CLIENTS, &stage.base);
    let head = relations_store::log::head(&stage.pool).await?;
    let engaged = format!("{base}/api/v1/users/1/counts?min_position={head}");
    let _ = stage.http.get(engaged).send().await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = like_checks(base).await?;
    let check = {
        let (http, base, posts) = (stage.http.clone(), base.clone(), stage.posts.clone());
        closed_loop(clients, stage.scale.run, move |_, _| {
            let (http, base) = (http.clone(), base.clone());
            let mut rng = rand::rng();
            let user = shift + rng.random_range(1_000..1_000 + LIKERS);
            let start = rng.random_range(0..posts.len() - 100);
            let ids = posts[start..start + 100].join(",");
            async move {
                http.get(format!("{base}/api/v1/me/liked?ids={ids}"))
                    .bearer_auth(token(user))
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            }
        })
        .await
    };
    let after = like_checks(base).await?;
    let check_sql = {
        let (sql_pool, posts) = (stage.env.pool(stage.db, 24).await?, stage.posts.clone());
        closed_loop(clients, stage.scale.run, move |_, _| {
            let pool = sql_pool.clone();
            let mut rng = rand::rng();
            let user = shift + rng.random_range(1_000..1_000 + LIKERS);
            let start = rng.random_range(0..posts.len() - 100);
            let targets: Vec<String> = posts[start..start + 100]
                .iter()
                .map(|p| format!("post:{p}"))
                .collect();
            async move {
                sqlx::query_scalar::<_, String>(
                    "SELECT target FROM rm_likes WHERE user_id = $1 AND target = ANY($2)",
                )
                .bind(user)
                .bind(&targets)
                .fetch_all(&pool)
                .await
                .is_ok()
            }
        })
        .await
    };
    let hits = after.0 - before.0;
    let loads = after.1 - before.1;
    Ok(vec![
        Row::new(
            "i. like check of 100 posts, 64 clients",
            "HTTP (like-state cache)",
            rate(&check),
        )
        .against(
            format!("same question in SQL: {}", rate(&check_sql)),
            check.per_sec() / check_sql.per_sec(),
        ),
        Row::new(
            "i. like-state cache",
            "hit rate: ids answered from a loaded set / all recent ids checked",
            format!(
                "{:.1}% ({hits:.0} from the set, {loads:.0} on the load that filled it)",
                100.0 * hits / (hits + loads).max(1.0)
            ),
        ),
    ])
}

/// A post with many comments, the viewer blocking 100 of the commenters: its comment page
/// with a bearer (blocks filtered) against without.
async fn comment_pages(stage: &Stage<'_>) -> anyhow::Result<Vec<Row>> {
    // Users are numbered after the world's, when there is one.
    let shift = stage.scale.base();
    let comments: usize = if stage.scale.graph_users < 10_000 {
        1_000
    } else {
        10_000
    };
    let (clients, http, base) = (CLIENTS, &stage.http, &stage.base);
    let thread = stage.posts[0].clone();
    let commenters: i64 = 2_000;
    for chunk in (0..comments).collect::<Vec<_>>().chunks(clients) {
        let made = chunk.iter().map(|_| {
            let author = shift + 10_000 + rand::rng().random_range(0..commenters);
            http.post(format!("{base}/api/v1/posts/{thread}/comments"))
                .bearer_auth(token(author))
                .json(&json!({"content": "a comment"}))
                .send()
        });
        for answer in futures::future::join_all(made).await {
            answer?;
        }
    }
    for blocked in 0..100 {
        http.post(format!("{base}/api/v1/relation/block"))
            .bearer_auth(token(shift + VIEWER))
            .json(&json!({"target": shift + 10_000 + blocked * 20}))
            .send()
            .await?;
    }
    let head = relations_store::log::head(&stage.pool).await?;
    let _ = http
        .get(format!(
            "{base}/api/v1/posts/{thread}/comments?min_position={head}"
        ))
        .send()
        .await?;
    let page = |viewer: Option<i64>, sort: &'static str| {
        let (http, base, thread) = (http.clone(), base.clone(), thread.clone());
        closed_loop(clients, stage.scale.run, move |_, _| {
            let (http, base, thread) = (http.clone(), base.clone(), thread.clone());
            async move {
                let mut request =
                    http.get(format!("{base}/api/v1/posts/{thread}/comments?sort={sort}"));
                if let Some(viewer) = viewer {
                    request = request.bearer_auth(token(viewer));
                }
                request.send().await.is_ok_and(|r| r.status().is_success())
            }
        })
    };
    let mut rows = Vec::new();
    for sort in ["new", "top"] {
        let filtered = page(Some(shift + VIEWER), sort).await;
        let plain = page(None, sort).await;
        rows.push(
            Row::new(
                &format!("i. comment page (sort={sort}), {comments} comments, 64 clients"),
                "with a bearer: blocks filtered, liked flags",
                rate(&filtered),
            )
            .against(
                format!("no bearer (no filtering): {}", rate(&plain)),
                filtered.per_sec() / plain.per_sec(),
            ),
        );
    }
    Ok(rows)
}

/// `relations_like_checks_total` answered from a loaded set and on a load, from `/metrics`.
async fn like_checks(base: &str) -> anyhow::Result<(f64, f64)> {
    let text = reqwest::get(format!("{base}/metrics"))
        .await?
        .text()
        .await?;
    let value = |label: &str| {
        text.lines()
            .find_map(|l| {
                l.strip_prefix(&format!(
                    "relations_like_checks_total{{answered_by=\"{label}\"}} "
                ))
            })
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    Ok((value("cache"), value("cache_load")))
}

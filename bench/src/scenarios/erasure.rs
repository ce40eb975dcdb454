//! (n) erasing a big account (issue 25): a user with 100,000 followers, 1,000 followees,
//! 10,000 posts, 50,000 likes given and 5,000 comments (a tenth of each with `--quick`). How
//! long the command takes to answer, how long until every read model and the in-memory graph
//! reflect it (`min_position`), and other users' follow commands meanwhile, against the same
//! commands just before. Mastodon's figures beside it: 30 minutes for 2,000 followers
//! (mastodon#5506), 103 minutes for a purge of 12,223 accounts (#15416).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use relations_store::LogPosition;
use serde_json::json;

use super::scale::Scale;
use crate::graph;
use crate::harness::{client, closed_loop, rate, token, Env, Row, Server, Stats};

/// How big the erased account is.
struct Account {
    followers: i64,
    followees: i64,
    posts: usize,
    likes: usize,
    comments: usize,
}

/// Clients of the other users' follow load.
const CLIENTS: usize = 16;

pub async fn erasure(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let quick = scale.graph_users < 10_000;
    let size = match quick {
        true => Account {
            followers: 10_000,
            followees: 100,
            posts: 1_000,
            likes: 5_000,
            comments: 500,
        },
        false => Account {
            followers: 100_000,
            followees: 1_000,
            posts: 10_000,
            likes: 50_000,
            comments: 5_000,
        },
    };
    let (base, db) = (scale.base(), "bench_erasure");
    let (user, others) = (base + 1, base + 1_000_000);
    let pool = env.fresh_database(db).await?;
    let server = load(env, db, &pool, base, &size).await?;
    let before = follows(server.base.clone(), others, Duration::from_secs(5)).await;
    let load = tokio::spawn(follows(
        server.base.clone(),
        others,
        Duration::from_secs(12),
    ));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let asked = Instant::now();
    let answer: serde_json::Value = client()
        .delete(format!("{}/api/v1/me", server.base))
        .bearer_auth(token(user))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let answered = asked.elapsed();
    let position: LogPosition = answer["position"]
        .as_str()
        .unwrap_or_default()
        .parse()
        .map_err(|e| anyhow::anyhow!("the erasure's position: {e:?}"))?;
    let folded =
        relations_projections::runtime::wait_for(&pool, &ALL, position, Duration::from_secs(600))
            .await?;
    anyhow::ensure!(folded, "the projectors never folded the erasure");
    let projected = asked.elapsed();
    let graph = format!(
        "{}/api/v1/users/{}/counts?min_position={position}",
        server.base,
        base + 2
    );
    while !client().get(&graph).send().await?.status().is_success() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let reflected = asked.elapsed();
    let during = load.await?;
    Ok(rows(
        &size,
        [answered, projected, reflected],
        &before,
        &during,
    ))
}

/// The rows: the answer, the fold and the graph (times since the command was sent), and the
/// other users' follows just before and meanwhile.
fn rows(
    size: &Account,
    [answered, projected, reflected]: [Duration; 3],
    before: &Stats,
    during: &Stats,
) -> Vec<Row> {
    let scenario = format!(
        "n. erase a user with {} followers, {} followees, {} posts, {} likes, {} comments",
        size.followers, size.followees, size.posts, size.likes, size.comments
    );
    let mastodon = "Mastodon: 30 min for 2,000 followers (#5506)";
    vec![
        Row::new(&scenario, "DELETE /api/v1/me answered", ms(answered))
            .against(mastodon.to_owned(), 1_800_000.0 / millis(answered))
            .target("< 1 s", answered < Duration::from_secs(1)),
        Row::new(
            &scenario,
            "every projector folded it; the in-memory graph reflects it",
            format!("{}; {}", ms(projected), ms(reflected)),
        )
        .against(mastodon.to_owned(), 1_800_000.0 / millis(reflected))
        .target("< 10 s", reflected < Duration::from_secs(10)),
        Row::new(
            &scenario,
            &format!("other users' follows, {CLIENTS} clients: while it is folded"),
            rate(during),
        )
        .against(
            format!("just before: {}", rate(before)),
            ratio(before, during),
        ),
    ]
}

/// The erased account in `db`, loaded (follows and posts through the log, likes and comments
/// over HTTP) and folded; the server it runs on.
async fn load(
    env: &Env,
    db: &str,
    pool: &sqlx::PgPool,
    base: i64,
    size: &Account,
) -> anyhow::Result<Server> {
    let (user, others) = (base + 1, base + 1_000_000);
    let mut edges: Vec<(i64, i64)> = (2..=size.followers + 1).map(|f| (base + f, user)).collect();
    edges.extend((0..size.followees).map(|k| (user, base + 500_000 + k)));
    graph::load_follows(pool, &edges).await?;
    let mut authors = vec![user; size.posts];
    authors.extend((0..size.likes as i64).map(|k| others + k % 1_000));
    graph::load_posts(pool, &authors).await?;
    let server = Server::start(env, db, 18088, &[], None).await?;
    graph::caught_up(pool, &ALL).await?;
    server.graph_caught_up(pool).await?;
    let liked: Vec<String> = sqlx::query_scalar(
        "SELECT post_id::text FROM rm_posts WHERE author <> $1 AND repost_of IS NULL ORDER BY seq LIMIT $2",
    )
    .bind(user)
    .bind(size.likes as i64)
    .fetch_all(pool)
    .await?;
    let made = engage(&server.base, user, &liked, size.comments).await?;
    eprintln!("erasure: {made} likes and comments made over HTTP");
    graph::caught_up(pool, &ALL).await?;
    Ok(server)
}

/// Every projector's name.
const ALL: [&str; 4] = [
    relations_projections::relations::NAME,
    relations_projections::feed::NAME,
    relations_projections::history::NAME,
    relations_projections::engagement::NAME,
];

/// `user` likes every post of `liked` and comments on the first `comments`, over HTTP (64 at
/// a time); how many succeeded.
async fn engage(base: &str, user: i64, liked: &[String], comments: usize) -> anyhow::Result<u64> {
    let http = client();
    let bearer = token(user);
    let mut made = 0;
    let requests: Vec<(String, bool)> = liked
        .iter()
        .map(|post| (post.clone(), false))
        .chain(liked.iter().take(comments).map(|post| (post.clone(), true)))
        .collect();
    for chunk in requests.chunks(64) {
        let sent = chunk.iter().map(|(post, comment)| {
            let request = match comment {
                true => http
                    .post(format!("{base}/api/v1/posts/{post}/comments"))
                    .json(&json!({"content": "a comment to forget"})),
                false => http.post(format!("{base}/api/v1/posts/{post}/like")),
            };
            request.bearer_auth(&bearer).send()
        });
        for answer in futures::future::join_all(sent).await {
            made += u64::from(answer?.status().is_success());
        }
    }
    Ok(made)
}

/// Other users follow and unfollow each other for `duration`, `CLIENTS` at a time.
async fn follows(base: String, others: i64, duration: Duration) -> Stats {
    let (http, tokens) = (
        client(),
        Arc::new((0..1_000).map(|k| token(others + k)).collect::<Vec<_>>()),
    );
    closed_loop(CLIENTS, duration, move |_, i| {
        let (http, base, tokens) = (http.clone(), base.clone(), tokens.clone());
        let (who, target) = {
            let mut rng = rand::rng();
            (
                rng.random_range(0..1_000usize),
                others + 2_000 + rng.random_range(0..10_000),
            )
        };
        async move {
            let verb = if i % 2 == 0 { "follow" } else { "unfollow" };
            http.post(format!("{base}/api/v1/relation/{verb}"))
                .bearer_auth(&tokens[who])
                .json(&json!({"target": target}))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
        }
    })
    .await
}

fn millis(took: Duration) -> f64 {
    took.as_secs_f64() * 1000.0
}

fn ms(took: Duration) -> String {
    format!("{:.0} ms", millis(took))
}

/// The p99 just before over the p99 during (1.0: unchanged; below: slower meanwhile).
fn ratio(before: &Stats, during: &Stats) -> f64 {
    before.ms(0.99) / during.ms(0.99).max(0.001)
}

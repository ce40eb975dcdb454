//! (r) reposts in feeds (issue 44): the first feed page with reposts from memory beside the
//! same page without them, in the same run; and how soon a repost by an account with 100k
//! followers (pulled) reaches their first pages.

use std::time::{Duration, Instant};

use super::feed::feed_pages;
use super::scale::Scale;
use crate::graph;
use crate::harness::{client, rate, token, Env, Row, Server};

/// The rows of (r).
pub async fn reposts(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    let hybrid = ("hybrid, from memory", 100, true);
    let (plain, more) = feed_pages(env, scale, hybrid, false).await?;
    rows.extend(more);
    let (reposted, more) = feed_pages(env, scale, hybrid, true).await?;
    rows.extend(more.into_iter().map(|mut row| {
        row.scenario = format!("r. {} (with reposts)", row.scenario);
        row
    }));
    let ratio = reposted.per_sec() / plain.per_sec();
    rows.push(
        Row::new(
            "r. feed first page with reposts, from memory, 1,000 authors, 16 clients",
            "a tenth of the posts reposted by a followed author",
            rate(&reposted),
        )
        .against(format!("without reposts: {}", rate(&plain)), ratio)
        .target(
            "p99 < 5 ms, >= 0.8x without reposts",
            reposted.ms(0.99) < 5.0 && ratio >= 0.8,
        ),
    );
    rows.push(reach(env, scale).await?);
    Ok(rows)
}

/// A repost by an account followed by 100k users (2,000 with --quick), over the threshold
/// (pulled): from its answer to the reposted post on top of the first page of each of 20
/// followers, polled.
async fn reach(env: &Env, scale: Scale) -> anyhow::Result<Row> {
    let followers: i64 = if scale.graph_users < 10_000 {
        2_000
    } else {
        100_000
    };
    let db = "bench_repost_reach";
    let pool = env.fresh_database(db).await?;
    let base = scale.base();
    let (reposter, author) = (base + 1, base + 2);
    let edges: Vec<(i64, i64)> = (0..followers).map(|f| (base + 10 + f, reposter)).collect();
    graph::load_follows(&pool, &edges).await?;
    graph::load_posts(&pool, &[author]).await?;
    let server = Server::start(env, db, 18089, &[], None).await?;
    graph::caught_up(&pool, &[relations_projections::feed::NAME]).await?;
    server.graph_caught_up(&pool).await?;
    let client = client();
    let post: String = sqlx::query_scalar("SELECT post_id::text FROM rm_posts LIMIT 1")
        .fetch_one(&pool)
        .await?;
    let sent = Instant::now();
    let answer = client
        .post(format!("{}/api/v1/posts/{post}/repost", server.base))
        .bearer_auth(token(reposter))
        .json(&serde_json::json!({}))
        .send()
        .await?;
    anyhow::ensure!(answer.status().is_success(), "repost: {}", answer.status());
    let answered = sent.elapsed();
    let sample: Vec<i64> = (0..20).map(|i| base + 10 + i * (followers / 20)).collect();
    let mut slowest = Duration::ZERO;
    for follower in sample {
        loop {
            let page: serde_json::Value = client
                .get(format!("{}/api/v1/feed?size=1", server.base))
                .bearer_auth(token(follower))
                .send()
                .await?
                .json()
                .await?;
            if page["items"][0]["id"] == post.as_str() {
                break;
            }
            anyhow::ensure!(
                sent.elapsed() < Duration::from_secs(60),
                "never reached {follower}"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        slowest = slowest.max(sent.elapsed());
    }
    let ms = slowest.as_secs_f64() * 1000.0;
    Ok(Row::new(
        "r. a repost by an account with 100k followers (pulled) reaches their first pages",
        &format!(
            "{followers} followers: answered in {:.0} ms; on the first page of 20 sampled followers by",
            answered.as_secs_f64() * 1000.0
        ),
        format!("{ms:.0} ms"),
    )
    .target("< 1 s", ms < 1000.0))
}

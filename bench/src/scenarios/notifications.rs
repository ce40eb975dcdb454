//! (p) Notifications (issue 27): projector `notifications`' catch-up fold of one loaded log
//! (follows, a post each, likes, and a hot author whose few posts take a like from every
//! user) beside projector `feed`'s fold of the same log, each alone in a `relations project`
//! process, in events/s and as a ratio; and the rows the likes leave (groups, not a row per
//! like, in what pages read). Then the same log with the hot author's notification policy set
//! before the likes (issue 47): each like to them is judged against the pair's stream, read
//! from the log.

use std::time::Duration;

use super::scale::Scale;
use crate::graph;
use crate::harness::{Env, Row};

/// Posts of the hot author (user 1), each liked by every other user.
const HOT_POSTS: usize = 20;
/// Likes of every other post.
const LIKES: i64 = 5;

pub async fn notifications(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    if let Some(users) = scale.world() {
        // A copy of the world holds its log already (the load below would repeat its streams),
        // and the world's build folded it: `relations rebuild notifications` applies the
        // runner's batches, so that row is this fold at the world's size.
        return Ok(vec![Row::new(
            "p. notifications catch-up",
            &format!("{users} users: the world's log"),
            "the world's `relations rebuild notifications` row (the runner's batches)".to_owned(),
        )]);
    }
    let db = "bench_notifications";
    let (pool, [follows, posts, likes]) = world(env, db, scale, false).await?;
    let events = follows + posts + likes;
    let feed = fold(env, db, &pool, relations_projections::feed::NAME).await?;
    let notify = fold(env, db, &pool, relations_projections::notifications::NAME).await?;
    let rate = |took: Duration| events as f64 / took.as_secs_f64();
    let (groups, causes): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM notify_groups), (SELECT count(*) FROM notify_causes)",
    )
    .fetch_one(&pool)
    .await?;
    let hot: i64 = sqlx::query_scalar("SELECT count(*) FROM notify_groups WHERE recipient = 1")
        .fetch_one(&pool)
        .await?;
    let log = format!("{events} events ({follows} follows, {posts} posts, {likes} likes)");
    Ok(vec![
        Row::new(
            "p. notifications catch-up",
            &format!("{log}: projector `notifications` alone"),
            format!(
                "{:.1} s ({:.0} events/s)",
                notify.as_secs_f64(),
                rate(notify)
            ),
        )
        .against(
            format!(
                "projector `feed` alone, same log: {:.1} s ({:.0} events/s)",
                feed.as_secs_f64(),
                rate(feed)
            ),
            rate(notify) / rate(feed),
        )
        .target(">= 20,000 events/s", rate(notify) >= 20_000.0),
        Row::new(
            "p. notification rows",
            &format!("the hot author's {HOT_POSTS} posts liked by every user"),
            format!("{groups} group rows (the hot author: {hot}), {causes} cause rows"),
        ),
        with_policy(env, scale, rate(notify)).await?,
    ])
}

/// The same log, with the hot author filtering notifications from users who do not follow
/// them (set before the likes): projector `notifications` alone, against its rate without.
async fn with_policy(env: &Env, scale: Scale, without: f64) -> anyhow::Result<Row> {
    let db = "bench_notifications_policy";
    let (pool, counts) = world(env, db, scale, true).await?;
    let events = counts.iter().sum::<u64>() + 1;
    let notify = fold(env, db, &pool, relations_projections::notifications::NAME).await?;
    let rate = events as f64 / notify.as_secs_f64();
    let filtered: i64 =
        sqlx::query_scalar("SELECT count(*) FROM notify_causes WHERE grp LIKE '%|filtered'")
            .fetch_one(&pool)
            .await?;
    Ok(Row::new(
        "p. notifications catch-up, the hot author with a notification policy",
        &format!("{events} events; the hot author filters non-followers ({filtered} filtered)"),
        format!("{:.1} s ({rate:.0} events/s)", notify.as_secs_f64()),
    )
    .against(format!("no policy: {without:.0} events/s"), rate / without))
}

/// The loaded log in a fresh database `db`: follows, a post each and the hot author's, then
/// (`policy`) the hot author's notification policy, then the likes; its pool and how many
/// follows, posts and likes.
async fn world(
    env: &Env,
    db: &str,
    scale: Scale,
    policy: bool,
) -> anyhow::Result<(sqlx::PgPool, [u64; 3])> {
    let pool = env.fresh_database(db).await?;
    let users = scale.graph_users;
    let follows = graph::load_follows(&pool, &graph::follows(users, 42)).await?;
    let mut authors: Vec<i64> = (1..=users).collect();
    authors.extend(std::iter::repeat_n(1, HOT_POSTS));
    let posts = graph::load_posts(&pool, &authors).await?;
    if policy {
        let signal = relations_store::CommitSignal::spawn(pool.clone());
        let user = relations_domain::UserId::try_from(1)?;
        let ask = relations_store::SettingsAsk {
            not_followers: Some(relations_domain::Disposition::Filter),
            ..Default::default()
        };
        let metadata = relations_store::EventMetadata {
            request_id: "bench".to_owned(),
            actor: user,
        };
        let settings = relations_store::SettingsStore::new(pool.clone(), signal);
        settings.set(user, ask, &metadata).await?;
    }
    let likes = graph::load_likes(&pool, &likes_of(&authors, users)).await?;
    Ok((pool, [follows, posts, likes]))
}

/// Each post's likers: [`LIKES`] users for each author's own post, every other user for the
/// hot author's; distinct per post and never its author (7919 is prime: `k * 7919` runs
/// through distinct residues).
fn likes_of(authors: &[i64], users: i64) -> Vec<(i64, usize)> {
    let mut likes = Vec::new();
    for (post, &author) in authors.iter().enumerate() {
        let n = if post >= users as usize {
            users - 1
        } else {
            LIKES
        };
        for k in 1..=n {
            let user = (author - 1 + k * 7919) % users + 1;
            if user != author {
                likes.push((user, post));
            }
        }
    }
    likes
}

/// Runs projector `name` alone from the start of the log in a `relations project` process
/// until it has applied the whole log; how long that took.
async fn fold(env: &Env, db: &str, pool: &sqlx::PgPool, name: &str) -> anyhow::Result<Duration> {
    let mut child = crate::harness::spawn_projectors(env, db, &[name])?;
    let took = graph::caught_up(pool, &[name]).await;
    let _ = child.kill();
    let _ = child.wait();
    let took = took?;
    eprintln!("p: {name} folded the log in {:.1} s", took.as_secs_f64());
    Ok(took)
}

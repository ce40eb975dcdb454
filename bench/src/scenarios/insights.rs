//! (h) What only the log and the graph in memory answer: known followers of a user with
//! 100,000 followers, for a caller who follows 1,000 (against the plain SQL join), and a
//! relation as of a past moment (against the present-tense status), at 64 clients; and
//! suggestions (issue 46) for callers following 1,000 accounts that each follow 1,000, the
//! walk in memory against the same rule in SQL, at 16 clients.

use std::time::Duration;

use chrono::Utc;
use rand::Rng;
use relations_domain::UserId;

use super::scale::Scale;
use crate::graph;
use crate::harness::rate;
use crate::harness::{client, closed_loop, token, Env, Row, Server};

/// The user with many followers.
const TARGET: i64 = 1;
/// The target's id in a run at `scale` (after the world's users).
fn target(scale: Scale) -> i64 {
    scale.base() + TARGET
}

/// The callers: each follows `FOLLOWED` users, half of whom follow the target.
const CALLERS: i64 = 16;
const FOLLOWED: i64 = 1_000;

/// Closed-loop clients in every measurement.
const CLIENTS: usize = 64;

pub async fn insights(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let followers: i64 = if scale.graph_users < 10_000 {
        10_000
    } else {
        100_000
    };
    let db = "bench_insights";
    let pool = env.fresh_database(db).await?;
    let first_caller = followers + 1_000_000;
    // Every id below is shifted by the scenario's base (after the world's users).
    let shift = scale.base();
    let edges: Vec<(i64, i64)> = edges(followers, first_caller)
        .into_iter()
        .map(|(f, t)| (shift + f, shift + t))
        .collect();
    let events = graph::load_follows(&pool, &edges).await?;
    let names = [
        relations_projections::relations::NAME,
        relations_projections::history::NAME,
    ];
    let server = Server::start(env, db, 18085, &[], Some(&names)).await?;
    graph::caught_up(&pool, &names).await?;
    server.graph_caught_up(&pool).await?;
    let rows = vec![
        Row::new(
            "h. insights",
            &format!(
                "target with {followers} followers; {CALLERS} callers following {FOLLOWED} each"
            ),
            format!("{events} follow events"),
        ),
        known_followers(env, db, &server.base, shift + first_caller, scale).await?,
        status_as_of(&server.base, followers, scale).await,
        followers_pages(env, db, target(scale), followers, scale).await?,
    ];
    drop(server);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut rows = rows;
    rows.extend(suggestions(env, scale).await?);
    Ok(rows)
}

/// The target's followers pages from PostgreSQL (issue 48, item 3: from its own table of
/// `rm_fans`, the SQL path of replicas and deep pages): a page from the middle of its
/// followers (search-after from the middle one's key) against its first page, 64 clients.
async fn followers_pages(
    env: &Env,
    db: &str,
    target: i64,
    followers: i64,
    scale: Scale,
) -> anyhow::Result<Row> {
    use relations_projections::relations::query::FOLLOWERS;
    let pool = env.pool(db, 32).await?;
    let own: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM rm_fan_routes WHERE followee = $1)")
            .bind(target)
            .fetch_one(&pool)
            .await?;
    let middle: (chrono::DateTime<Utc>, i64) = sqlx::query_as(
        "SELECT since, follower FROM rm_fans WHERE route = rm_fan_route($1) AND followee = $1
          ORDER BY since DESC, follower DESC OFFSET $2 LIMIT 1",
    )
    .bind(target)
    .bind(followers / 2)
    .fetch_one(&pool)
    .await?;
    let page = |after: Option<(chrono::DateTime<Utc>, i64)>| {
        let pool = pool.clone();
        closed_loop(CLIENTS, scale.run, move |_, _| {
            let pool = pool.clone();
            async move {
                FOLLOWERS
                    .page(
                        &pool,
                        UserId::try_from(target).expect("positive"),
                        after,
                        21,
                    )
                    .await
                    .is_ok_and(|page| page.len() == 21)
            }
        })
    };
    let first = page(None).await;
    let deep = page(Some(middle)).await;
    let table = if own {
        "its own table"
    } else {
        "its hash bucket"
    };
    Ok(Row::new(
        "h. followers page of the target from PostgreSQL, 64 clients",
        &format!(
            "from the middle of its {followers} followers ({table}), p99 {:.2} ms",
            deep.ms(0.99)
        ),
        rate(&deep),
    )
    .against(
        format!("its first page: {}", rate(&first)),
        deep.per_sec() / first.per_sec(),
    ))
}

/// Suggestions: `SUGGESTED` callers follow the same `fan` accounts, each of which follows
/// `fan` users drawn from a pool of 50 times as many; the callers ask for their suggestions
/// (the default 10) over HTTP, the walk in memory, against the same rule in SQL
/// (`query::suggestions`), 16 clients each.
async fn suggestions(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    const SUGGESTED: i64 = 16;
    let fan: i64 = if scale.graph_users < 10_000 {
        100
    } else {
        1_000
    };
    let db = "bench_suggestions";
    let pool = env.fresh_database(db).await?;
    let shift = scale.base();
    let (callers, edges) = suggestion_edges(SUGGESTED, fan, shift);
    graph::load_follows(&pool, &edges).await?;
    let names = [relations_projections::relations::NAME];
    let server = Server::start(env, db, 18091, &[], Some(&names)).await?;
    graph::caught_up(&pool, &names).await?;
    server.graph_caught_up(&pool).await?;
    let over_http = |clients: usize| {
        let (client, base) = (client(), server.base.clone());
        let tokens: Vec<String> = (0..SUGGESTED).map(|c| token(shift + callers + c)).collect();
        closed_loop(clients, scale.run, move |i, n| {
            let (client, base) = (client.clone(), base.clone());
            let token = tokens[(i + n as usize) % tokens.len()].clone();
            async move {
                client
                    .get(format!("{base}/api/v1/me/suggestions"))
                    .bearer_auth(token)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            }
        })
    };
    let alone = over_http(1).await;
    let from_memory = over_http(16).await;
    let in_sql = {
        let pool = env.pool(db, 16).await?;
        closed_loop(16, scale.run, move |i, _| {
            let pool = pool.clone();
            let caller = user(shift + callers + (i as i64 % SUGGESTED));
            async move {
                relations_projections::relations::query::suggestions(&pool, caller, 10, Utc::now())
                    .await
                    .is_ok()
            }
        })
        .await
    };
    drop(server);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let under_load = Row::new(
        "h. suggestions, 16 clients",
        &format!(
            "callers following {fan} accounts each following {fan}: HTTP (the walk in memory)"
        ),
        rate(&from_memory),
    )
    .against(
        format!("the same rule in SQL: {}", rate(&in_sql)),
        from_memory.per_sec() / in_sql.per_sec(),
    )
    .target("p99 < 10 ms", from_memory.ms(0.99) < 10.0);
    let alone = Row::new(
        "h. suggestions, 1 client",
        "the same walk with no queue: its own latency",
        rate(&alone),
    );
    Ok(vec![alone, under_load])
}

/// `callers` callers (from 1) follow the same `fan` accounts (from 1,000), each of which
/// follows `fan` users drawn from a pool of 50 times as many (from 10,000); every id shifted
/// by `shift`. The first caller's id before the shift, and the edges.
fn suggestion_edges(callers: i64, fan: i64, shift: i64) -> (i64, Vec<(i64, i64)>) {
    let (first, followees, pool_start) = (1, 1_000, 10_000);
    let mut edges = Vec::with_capacity((callers * fan + fan * fan) as usize);
    for c in 0..callers {
        edges.extend((0..fan).map(|f| (first + c, followees + f)));
    }
    let mut rng = rand::rng();
    for f in 0..fan {
        let mut chosen = std::collections::HashSet::new();
        while chosen.len() < fan as usize {
            chosen.insert(pool_start + rng.random_range(0..fan * 50));
        }
        edges.extend(chosen.into_iter().map(|to| (followees + f, to)));
    }
    let edges = edges.into_iter().map(|(a, b)| (shift + a, shift + b));
    (first, edges.collect())
}

/// Users 2..=followers+1 follow the target; caller c (from `first_caller`) follows 500 of
/// them and 500 others.
fn edges(followers: i64, first_caller: i64) -> Vec<(i64, i64)> {
    let mut edges: Vec<(i64, i64)> = (2..=followers + 1).map(|f| (f, TARGET)).collect();
    let mut rng = rand::rng();
    for c in 0..CALLERS {
        let caller = first_caller + c;
        let mut chosen = std::collections::HashSet::new();
        while chosen.len() < (FOLLOWED / 2) as usize {
            chosen.insert(rng.random_range(2..=followers + 1));
        }
        while chosen.len() < FOLLOWED as usize {
            chosen.insert(rng.random_range(followers + 2..first_caller));
        }
        edges.extend(chosen.into_iter().map(|f| (caller, f)));
    }
    edges
}

/// Known followers of the target over HTTP (from memory) against the plain SQL join.
async fn known_followers(
    env: &Env,
    db: &str,
    base: &str,
    first_caller: i64,
    scale: Scale,
) -> anyhow::Result<Row> {
    let known_http = {
        let (client, base) = (client(), base.to_owned());
        let tokens: Vec<String> = (0..CALLERS).map(|c| token(first_caller + c)).collect();
        closed_loop(CLIENTS, scale.run, move |i, _| {
            let (client, base) = (client.clone(), base.clone());
            let token = tokens[i % tokens.len()].clone();
            async move {
                client
                    .get(format!(
                        "{base}/api/v1/users/{}/known_followers",
                        target(scale)
                    ))
                    .bearer_auth(token)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            }
        })
        .await
    };
    let known_sql = {
        let pool = env.pool(db, 32).await?;
        closed_loop(CLIENTS, scale.run, move |i, _| {
            let pool = pool.clone();
            let caller = first_caller + (i as i64 % CALLERS);
            async move {
                relations_projections::relations::query::known_followers(
                    &pool,
                    user(caller),
                    user(target(scale)),
                    None,
                    20,
                )
                .await
                .is_ok()
            }
        })
        .await
    };
    Ok(Row::new(
        "h. known followers, 64 clients",
        "HTTP (from memory)",
        rate(&known_http),
    )
    .against(
        format!("plain SQL join: {}", rate(&known_sql)),
        known_http.per_sec() / known_sql.per_sec(),
    )
    .target("p99 < 10 ms", known_http.ms(0.99) < 10.0))
}

/// A relation as of a moment in the loaded history against the relation now.
async fn status_as_of(base: &str, followers: i64, scale: Scale) -> Row {
    let moment = Utc::now() - chrono::Duration::milliseconds(1);
    let status = |as_of: bool| {
        let (client, base) = (client(), base.to_owned());
        let at = moment.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        closed_loop(CLIENTS, scale.run, move |_, _| {
            let (client, base) = (client.clone(), base.clone());
            let from = scale.base() + rand::rng().random_range(2..=followers + 1);
            let to = target(scale);
            let query = match as_of {
                true => format!("from={from}&to={to}&as_of={at}"),
                false => format!("from={from}&to={to}"),
            };
            async move {
                client
                    .get(format!("{base}/api/v1/relation/status?{query}"))
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            }
        })
    };
    let present = status(false).await;
    let past = status(true).await;
    Row::new(
        "h. status as of a moment, 64 clients",
        "HTTP (the pair's relation stream read from the log and folded)",
        rate(&past),
    )
    .against(
        format!("present-tense status: {}", rate(&present)),
        past.per_sec() / present.per_sec(),
    )
}

fn user(id: i64) -> UserId {
    UserId::try_from(id).expect("positive")
}

//! (b) relation status, batch, list pages and counts over HTTP vs the same reads in SQL vs a
//! trivial axum handler.

use std::time::Instant;

use rand::Rng;
use sqlx::PgPool;

use super::scale::Scale;
use crate::harness::rate;
use crate::harness::{client, closed_loop, Env, Row, Server, Stats};

/// (b) status, batch of 20 and list pages over HTTP vs the same reads in SQL vs a trivial
/// axum handler, at 64 clients.
pub async fn reads(server: &Server, env: &Env, db: &str, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let clients = 64;
    let users = scale.graph_users;
    let ceiling = ceiling(clients, scale).await?;
    let mut rows = vec![Row::new(
        "b. reads, 64 clients",
        "trivial axum handler (HTTP ceiling)",
        rate(&ceiling),
    )];
    let pool = env.pool(db, 32).await?;
    for kind in [
        "status",
        "batch of 20",
        "following page",
        "followers page",
        "counts",
    ] {
        let http = {
            let (client, base) = (client(), server.base.clone());
            closed_loop(clients, scale.run, move |_, _| {
                let (client, base) = (client.clone(), base.clone());
                let path = read_path(kind, users);
                async move {
                    client
                        .get(format!("{base}{path}"))
                        .send()
                        .await
                        .is_ok_and(|r| r.status().is_success())
                }
            })
            .await
        };
        let sql = {
            let pool = pool.clone();
            closed_loop(clients, scale.run, move |_, _| {
                let pool = pool.clone();
                let (from, to) = ids(kind, users);
                async move { read_sql(&pool, kind, from, &to).await }
            })
            .await
        };
        let name = format!("b. {kind}, 64 clients");
        rows.push(Row::new(&name, "HTTP", rate(&http)).against(
            format!("same read in SQL: {}", rate(&sql)),
            http.per_sec() / sql.per_sec(),
        ));
        let vs_ceiling = http.per_sec() / ceiling.per_sec();
        rows.push(
            Row::new(
                &name,
                "HTTP vs the HTTP ceiling",
                format!("{:.0}/s, p99 {:.2} ms", http.per_sec(), http.ms(0.99)),
            )
            .against(
                format!("trivial handler: {:.0}/s", ceiling.per_sec()),
                vs_ceiling,
            )
            .target(
                ">= 0.3x ceiling, p99 < 5 ms",
                vs_ceiling >= 0.3 && http.ms(0.99) < 5.0,
            ),
        );
    }
    rows.extend(token_check(users as u64));
    Ok(rows)
}

fn ids(kind: &str, users: i64) -> (i64, Vec<i64>) {
    let mut rng = rand::rng();
    let from = rng.random_range(1..=users);
    let n = if kind == "batch of 20" { 20 } else { 1 };
    (from, (0..n).map(|_| rng.random_range(1..=users)).collect())
}

pub fn read_path(kind: &str, users: i64) -> String {
    let (from, to) = ids(kind, users);
    match kind {
        "status" => format!("/api/v1/relation/status?from={from}&to={}", to[0]),
        "batch of 20" => format!(
            "/api/v1/relation/batch?from={from}&to={}",
            to.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
        "followers page" => format!("/api/v1/users/{from}/followers"),
        "counts" => format!("/api/v1/users/{from}/counts"),
        _ => format!("/api/v1/users/{from}/following?offset=20"),
    }
}

async fn read_sql(pool: &PgPool, kind: &str, from: i64, to: &[i64]) -> bool {
    use relations_projections::relations::query;
    let user = |id: i64| relations_domain::UserId::try_from(id).expect("positive");
    match kind {
        "following page" => query::FOLLOWING
            .page(pool, user(from), 20, 20)
            .await
            .is_ok(),
        "followers page" => query::FOLLOWERS
            .page(pool, user(from), None, 21)
            .await
            .is_ok(),
        "counts" => query::counts(pool, user(from)).await.is_ok(),
        _ => {
            let to: Vec<_> = to.iter().map(|&t| user(t)).collect();
            query::relations(pool, user(from), &to, None).await.is_ok()
        }
    }
}

/// The HTTP ceiling: a trivial axum handler on this machine, at `clients`.
pub(crate) async fn ceiling(clients: usize, scale: Scale) -> anyhow::Result<Stats> {
    let app = axum::Router::new().route(
        "/ping",
        axum::routing::get(|| async { axum::Json(serde_json::json!({"ok": true})) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = client();
    Ok(closed_loop(clients, scale.run, move |_, _| {
        let client = client.clone();
        async move {
            client
                .get(format!("http://127.0.0.1:{port}/ping"))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
        }
    })
    .await)
}

/// The cost per request of the token check: HS256 verification alone, and with the revocation
/// and ban lookups every request now makes (a read lock on the in-memory graph and two hash
/// probes), against a graph holding `accounts` accounts with revocations. In process, one core.
pub fn token_check(accounts: u64) -> Vec<Row> {
    use relations_domain::{AccountEvent, LogEvent, TokenStamp, UserId};
    use relations_projections::replica::Replica;
    use relations_store::LogPosition;

    let secret = b"bench-check";
    let mut graph = Replica::default();
    for user in 1..=accounts {
        let revoked = AccountEvent::TokensRevoked {
            user: UserId::try_from(user as i64).expect("positive"),
            client: Some("phone".into()),
            up_to: 3,
        };
        let at = LogPosition {
            transaction_id: 1,
            global_position: user as i64,
        };
        graph.apply(at, chrono::Utc::now(), &LogEvent::Account(revoked));
    }
    let graph = std::sync::RwLock::new(graph);
    let key = jsonwebtoken::DecodingKey::from_secret(secret);
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::HS256);
    validation.set_required_spec_claims(&["exp", "sub"]);
    let claims =
        serde_json::json!({"sub": "4242", "exp": 4_000_000_000u64, "cli": "phone", "ver": 7});
    let token = jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret),
    )
    .expect("a token encodes");
    let rounds = 200_000u32;
    let time = |check: &dyn Fn() -> bool| {
        let started = Instant::now();
        let mut accepted = 0u32;
        for _ in 0..rounds {
            accepted += u32::from(std::hint::black_box(check()));
        }
        assert_eq!(accepted, rounds, "every check accepts");
        started.elapsed().as_nanos() as f64 / f64::from(rounds)
    };
    let decode = || jsonwebtoken::decode::<serde_json::Value>(&token, &key, &validation).is_ok();
    let plain = time(&decode);
    let checked = time(&|| {
        let Ok(data) = jsonwebtoken::decode::<serde_json::Value>(&token, &key, &validation) else {
            return false;
        };
        let user = UserId::try_from(4242).expect("positive");
        let stamp = TokenStamp {
            client: data.claims["cli"].as_str().unwrap_or_default().to_owned(),
            ver: data.claims["ver"].as_i64().unwrap_or(0),
            bat: 0,
        };
        let graph = graph.read().expect("not poisoned");
        !graph.accounts().refuses(user, &stamp) && !graph.accounts().banned(user)
    });
    vec![Row::new(
        "b. token check, in process",
        &format!(
            "HS256 verify + revocation and ban lookups ({accounts} accounts with revocations)"
        ),
        format!("{checked:.0} ns per request"),
    )
    .against(
        format!("HS256 verify alone: {plain:.0} ns"),
        plain / checked,
    )]
}

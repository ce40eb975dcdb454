//! Seed 001's split (issue 48, item 3): follows kept by follower (`rm_follows`, hash
//! partitions) and by followee (`rm_fans`), an account over the threshold moved to a table of its
//! own while it is read, and the layout kept by `rebuild`, `verify` and erasure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use relations_projections::relations::query::FOLLOWERS;
use reqwest::StatusCode;
use sqlx::PgPool;

use crate::helpers::{projector_reached, relations, spawn_with, test_config, user, TestApp};

/// Accounts with this many followers get a table of their own in these tests.
const THRESHOLD: &str = "3";

/// `followee`'s followers from PostgreSQL, newest first.
async fn followers(pool: &PgPool, followee: i64) -> Vec<i64> {
    let page = FOLLOWERS
        .page(pool, user(followee), None, 50)
        .await
        .unwrap();
    page.iter().map(|e| e.user.get()).collect()
}

async fn scalar(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

/// Whether table `name` exists in the test's schema.
async fn table_exists(pool: &PgPool, name: &str) -> bool {
    sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(name)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// `verify` against `app`'s database, which must find nothing.
fn verified(app: &TestApp) {
    let out = relations(app, &["verify"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Follows `actor -> target` and waits for projector `following` to fold it.
async fn follow(app: &TestApp, verb: &str, actor: i64, target: i64) {
    let (status, body) = app.command(verb, actor, target).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    projector_reached(app, "following", body["position"].as_str().unwrap()).await;
}

#[tokio::test]
async fn an_account_crossing_the_threshold_gets_a_table_of_its_own_while_it_is_read() {
    let mut config = test_config().await;
    config.fans.fan_table_threshold = THRESHOLD.parse().unwrap();
    let app = spawn_with(config).await;
    let pool = app.pool.clone();
    follow(&app, "follow", 10, 1).await;
    follow(&app, "follow", 11, 1).await;
    follow(&app, "follow", 10, 2).await;
    assert_eq!(followers(&pool, 1).await, [11, 10]);
    assert!(!table_exists(&pool, "rm_fans_u1").await);
    // Every row in its followee's hash bucket (1 -> -2, 2 -> -3).
    let in_buckets = "SELECT count(*) FROM rm_fans WHERE route = -1 - followee % 8";
    assert_eq!(scalar(&pool, in_buckets).await, 3);

    // A reader pages 1's followers all the while: the move never hides one.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = tokio::spawn({
        let (pool, stop) = (pool.clone(), stop.clone());
        async move {
            let mut seen = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let page = followers(&pool, 1).await;
                assert!(
                    page.ends_with(&[11, 10]),
                    "a reader lost followers in the move: {page:?}"
                );
                seen.push(page.len());
            }
            seen
        }
    });
    follow(&app, "follow", 12, 1).await;
    follow(&app, "follow", 13, 1).await;
    stop.store(true, Ordering::Relaxed);
    let seen = reader.await.unwrap();
    assert!(seen.len() > 1 && seen.last() == Some(&4), "{seen:?}");

    // 1 crossed the threshold with its third follower: all four are in its own table now.
    assert_eq!(followers(&pool, 1).await, [13, 12, 11, 10]);
    assert_eq!(scalar(&pool, "SELECT count(*) FROM rm_fans_u1").await, 4);
    assert_eq!(scalar(&pool, "SELECT count(*) FROM rm_fan_routes").await, 1);
    assert_eq!(
        scalar(
            &pool,
            "SELECT count(*) FROM rm_fans WHERE route <> followee AND followee = 1"
        )
        .await,
        0
    );
    // A followers page reads one partition: the account's own.
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN SELECT follower FROM rm_fans WHERE route = rm_fan_route(1) AND followee = 1",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let plan = plan.join("\n");
    assert!(
        plan.contains("rm_fans_u1") && !plan.contains("rm_fans_h"),
        "{plan}"
    );
    // Following pages read the follower's one hash partition.
    let plan: Vec<String> =
        sqlx::query_scalar("EXPLAIN SELECT followee FROM rm_follows WHERE follower = 10")
            .fetch_all(&pool)
            .await
            .unwrap();
    let partitions: std::collections::BTreeSet<&str> = plan
        .iter()
        .flat_map(|line| line.split_whitespace())
        .filter_map(|word| word.strip_prefix("rm_follows_h"))
        .map(|rest| rest.trim_end_matches("_pkey"))
        .collect();
    assert_eq!(partitions.len(), 1, "{plan:?}");

    // An unfollow leaves the account's own table; 2 stays in its bucket.
    follow(&app, "unfollow", 12, 1).await;
    assert_eq!(followers(&pool, 1).await, [13, 11, 10]);
    assert_eq!(followers(&pool, 2).await, [10]);
    assert_eq!(scalar(&pool, "SELECT count(*) FROM rm_fans_u1").await, 3);
    verified(&app);

    // A rebuild lays the same tables out again, the own table among them.
    relations(
        &app,
        &["rebuild", "following", "--fan-table-threshold", THRESHOLD],
    );
    assert_eq!(followers(&pool, 1).await, [13, 11, 10]);
    assert_eq!(scalar(&pool, "SELECT count(*) FROM rm_fans_u1").await, 3);
    let partitions = "SELECT count(*) FROM pg_inherits
                       WHERE inhparent IN ('rm_fans'::regclass, 'rm_follows'::regclass)";
    assert_eq!(scalar(&pool, partitions).await, 17);
    let indexes = "SELECT count(*) FROM pg_indexes
                    WHERE schemaname = current_schema()
                      AND tablename ~ '^rm_(follows|fans)_[hu][0-9]+$'";
    // A key on each of 8 follow partitions, a page index on each of 9 fan partitions, each
    // attached to its table's own index, and none left invalid.
    assert_eq!(scalar(&pool, indexes).await, 17);
    let attached =
        "SELECT count(*) FROM pg_inherits h JOIN pg_index x ON x.indexrelid = h.inhparent
                     WHERE x.indrelid IN ('rm_fans'::regclass, 'rm_follows'::regclass)";
    assert_eq!(scalar(&pool, attached).await, 17);
    let invalid = "SELECT count(*) FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid
                    WHERE NOT x.indisvalid AND c.relnamespace = current_schema()::regnamespace";
    assert_eq!(scalar(&pool, invalid).await, 0);
    verified(&app);
    // Rebuilt with a higher threshold, 1 has no table of its own (the shadow had one, made like
    // the live tables), and with the first again, it has.
    relations(
        &app,
        &["rebuild", "following", "--fan-table-threshold", "100"],
    );
    assert!(!table_exists(&pool, "rm_fans_u1").await);
    assert_eq!(scalar(&pool, "SELECT count(*) FROM rm_fan_routes").await, 0);
    assert_eq!(followers(&pool, 1).await, [13, 11, 10]);
    verified(&app);
    relations(
        &app,
        &["rebuild", "following", "--fan-table-threshold", THRESHOLD],
    );
    assert_eq!(scalar(&pool, "SELECT count(*) FROM rm_fans_u1").await, 3);
    verified(&app);
    // The projector goes on from the rebuilt tables.
    follow(&app, "follow", 14, 1).await;
    assert_eq!(followers(&pool, 1).await, [14, 13, 11, 10]);

    // An erasure takes the account's table with it.
    let (status, body) = app.erase_me(1).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    projector_reached(&app, "following", body["position"].as_str().unwrap()).await;
    assert!(!table_exists(&pool, "rm_fans_u1").await);
    assert_eq!(scalar(&pool, "SELECT count(*) FROM rm_fan_routes").await, 0);
    assert_eq!(followers(&pool, 2).await, [10]);
    verified(&app);
}

#[tokio::test]
async fn an_erased_follower_leaves_every_followee_s_table() {
    let mut config = test_config().await;
    config.fans.fan_table_threshold = THRESHOLD.parse().unwrap();
    let app = spawn_with(config).await;
    let pool = app.pool.clone();
    for follower in [10, 11, 12] {
        follow(&app, "follow", follower, 1).await;
    }
    follow(&app, "follow", 10, 2).await;
    follow(&app, "follow", 1, 10).await;
    assert!(table_exists(&pool, "rm_fans_u1").await);
    let (status, body) = app.erase_me(10).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    projector_reached(&app, "following", body["position"].as_str().unwrap()).await;
    assert_eq!(followers(&pool, 1).await, [12, 11]);
    assert_eq!(followers(&pool, 2).await, Vec::<i64>::new());
    assert_eq!(followers(&pool, 10).await, Vec::<i64>::new());
    assert_eq!(
        scalar(
            &pool,
            "SELECT count(*) FROM rm_follows WHERE 10 IN (follower, followee)"
        )
        .await,
        0
    );
    verified(&app);
}

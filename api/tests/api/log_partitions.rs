//! The log partitioned by transaction (issue 48, item 4): partitions made ahead of the
//! transactions that fall in them, a stream whose events lie in several partitions loaded and
//! read as one, and the lock that keeps a stream's versions unique where no index spans the
//! partitions.

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::{
    assert_verified, blocked_by, patient_transaction, projector_reached, relations, spawn_app,
    spawn_with, TestApp,
};
use relations_store::log::partitions;

/// Ends `n` transactions of its own, each given a transaction id: the cluster's next id moves
/// at least `n` on.
async fn use_up_transaction_ids(pool: &PgPool, n: usize) {
    for _ in 0..n {
        sqlx::query("SELECT pg_current_xact_id()")
            .execute(pool)
            .await
            .unwrap();
    }
}

/// Lays a fresh database's log out again in partitions `width` transaction ids wide, `ahead`
/// of them beyond the next transaction's (other tests use ids up meanwhile: the margin is
/// theirs): the first partition ends at this transaction, the others (all empty) go, and the
/// next ones are made from there. Partitions are made that narrow only for a test.
async fn narrow_partitions(pool: &PgPool, width: i64, ahead: i32) {
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('relations.log_partitions_keep'))")
        .execute(&mut *tx)
        .await
        .unwrap();
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(events, 0, "only a fresh log is laid out again");
    sqlx::query(
        "DO $$ DECLARE p text; BEGIN
            FOR p IN SELECT name FROM log_partitions WHERE low > 0 LOOP
                EXECUTE format('DROP TABLE %I', p);
            END LOOP;
            DELETE FROM log_partitions WHERE low > 0;
            ALTER TABLE events DETACH PARTITION events_0;
            EXECUTE format('ALTER TABLE events ATTACH PARTITION events_0 FOR VALUES FROM (MINVALUE) TO (%L)',
                           pg_current_xact_id()::text::bigint + 1);
            UPDATE log_partitions SET high = pg_current_xact_id()::text::bigint + 1 WHERE low = 0;
         END $$",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query("UPDATE log_partitioning SET xids = $1, ahead = $2")
        .bind(width)
        .bind(ahead)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    partitions::keep(pool).await.unwrap();
}

fn position(body: &Value) -> String {
    body["position"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn partitions_are_made_ahead_once_and_listed_in_order() {
    let app = spawn_app().await;
    let made = partitions::list(&app.pool).await.unwrap();
    assert_eq!(made[0].name, "events_0");
    assert_eq!(made[0].low, 0);
    assert!(made.len() >= 2, "{made:?}");
    assert!(made.windows(2).all(|w| w[0].high == w[1].low), "{made:?}");
    // The next transaction's partition and at least one beyond it exist.
    let next: i64 =
        sqlx::query_scalar("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let last = made.last().unwrap();
    assert!(
        last.high - next > last.high - last.low,
        "{made:?} at {next}"
    );
    // Nothing more to make until transactions move on.
    assert_eq!(partitions::keep(&app.pool).await.unwrap(), 0);
    // The operator's listing: the first is being written, the next waits.
    let listed = relations(&app, &["partitions", "--keep"]);
    let listed = String::from_utf8(listed.stdout).unwrap();
    let lines: Vec<Vec<&str>> = listed.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(
        lines[0],
        [
            "partition",
            "from_transaction",
            "to_transaction",
            "bytes",
            "state"
        ]
    );
    assert_eq!((lines[1][0], lines[1][4]), ("events_0", "open"), "{listed}");
    assert_eq!(lines[2][4], "ahead", "{listed}");
    assert_eq!(lines.len(), made.len() + 1, "{listed}");

    narrow_partitions(&app.pool, 64, 4).await;
    let narrow = partitions::list(&app.pool).await.unwrap();
    assert!(narrow.len() >= made.len() + 4, "{narrow:?}");
    assert!(
        narrow.windows(2).all(|w| w[0].high == w[1].low),
        "{narrow:?}"
    );
    use_up_transaction_ids(&app.pool, 200).await;
    assert!(partitions::keep(&app.pool).await.unwrap() >= 3);
}

#[tokio::test]
async fn a_stream_across_partitions_is_loaded_decided_and_read_as_one() {
    let app = spawn_app().await;
    narrow_partitions(&app.pool, 32, 8).await;
    let mut last = String::new();
    for round in 0..12 {
        let verb = if round % 2 == 0 { "follow" } else { "unfollow" };
        let (status, body) = app.command(verb, 1, 2).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body["changed"],
            json!(true),
            "{verb} in round {round}: {body}"
        );
        assert_eq!(body["relation"]["following"], json!(verb == "follow"));
        last = position(&body);
        use_up_transaction_ids(&app.pool, 40).await;
        partitions::keep(&app.pool).await.unwrap();
    }
    let spread: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT tableoid) FROM events WHERE aggregate_id = '1:2'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(
        spread >= 6,
        "the pair's 12 events lie in {spread} partitions"
    );
    projector_reached(&app, "following", &last).await;

    // A fresh instance holds no stream: it loads the pair from every partition, decides from
    // its whole history (1 does not follow 2), and appends the next version.
    let config = app.stop().await;
    let app: TestApp = spawn_with(config).await;
    let (status, body) = app.command("unfollow", 1, 2).await;
    assert_eq!(
        (status, body["changed"].clone()),
        (StatusCode::OK, json!(false)),
        "{body}"
    );
    let (status, body) = app.command("follow", 1, 2).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["changed"], json!(true), "{body}");
    let versions: Vec<i64> = sqlx::query_scalar(
        "SELECT sequence FROM events WHERE aggregate_id = '1:2'
          ORDER BY transaction_id, global_position",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(versions, (1..=13).collect::<Vec<i64>>());
    let at = position(&body);
    let (_, following) = app
        .get(&format!("/api/v1/users/1/following?min_position={at}"))
        .await;
    assert_eq!(following["items"][0]["user"], json!(2), "{following}");
    projector_reached(&app, "feed", &at).await;
    assert_verified(&app).await;
}

#[tokio::test]
async fn an_unlock_waits_for_every_command_on_its_users_pairs() {
    let app = spawn_app().await;
    app.set_locked(1, true).await;
    let (_, body) = app.command("follow", 2, 1).await;
    assert_eq!(body["relation"]["requested"], json!(true), "{body}");
    // A command on a pair of user 1's holds 1 shared, as every pair command does.
    let (mut held, holder) = patient_transaction(&app).await;
    sqlx::query("SELECT lock_users(ARRAY[1]::bigint[], ARRAY[false])")
        .execute(&mut *held)
        .await
        .unwrap();
    let unlocking = {
        let app_base = app.base.clone();
        let token = app.token(1);
        tokio::spawn(async move {
            reqwest::Client::new()
                .put(format!("{app_base}/api/v1/me/settings"))
                .bearer_auth(token)
                .json(&json!({"locked": false}))
                .send()
                .await
                .unwrap()
                .status()
        })
    };
    // The unlock waits for it: no request of its pairs can end beside it.
    blocked_by(&app, holder).await;
    held.rollback().await.unwrap();
    assert_eq!(unlocking.await.unwrap(), StatusCode::OK);
    let (_, body) = app.command("follow", 2, 1).await;
    assert_eq!(body["relation"]["following"], json!(true), "{body}");
}

#[tokio::test]
async fn verify_reports_a_version_held_in_two_partitions() {
    let app = spawn_app().await;
    narrow_partitions(&app.pool, 32, 8).await;
    // What no index refuses: one version of a stream appended, past the streams' locks, into
    // two partitions.
    for _ in 0..2 {
        sqlx::query(
            "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
             VALUES ('relation', '77:78', 1, 'Followed', '1', '{\"Followed\": {\"follower\": 77, \"followee\": 78}}', '{}')",
        )
        .execute(&app.pool)
        .await
        .unwrap();
        use_up_transaction_ids(&app.pool, 40).await;
        partitions::keep(&app.pool).await.unwrap();
    }
    let keys = app.config.keys.keyring(&app.pool).unwrap();
    let differences = relations_projections::verify(
        &app.pool,
        app.config.feed.settings(),
        &keys,
        &Default::default(),
    )
    .await
    .unwrap();
    let line = "log: stream relation 77:78 holds version 1 in two partitions";
    assert!(differences.iter().any(|d| d == line), "{differences:#?}");
}

//! Test helpers: each test gets its own database, its own Redis key prefix and its own port,
//! and talks to the running server over real HTTP.

use std::time::Duration;

use relations_api::auth::JwtKeys;
use relations_api::config::{
    Config, DatabaseConfig, FanConfig, FeedConfig, JwtConfig, KafkaConfig, KeysConfig, RedisConfig,
};
use relations_api::Application;
use relations_domain::UserId;
use reqwest::StatusCode;
use serde_json::Value;
use sqlx::{Connection, PgConnection, PgPool};
use tokio_util::sync::CancellationToken;

pub const SECRET: &str = "test-secret-do-not-use-0123456789abcdef";

/// The tests' `RELATIONS_MASTER_KEY` (every process a test starts is given it).
pub const MASTER_KEY: &str = "7465737420746573742074657374207465737420746573742074657374212121";

/// The server under test.
pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub pool: PgPool,
    pub jwt: JwtKeys,
    pub config: Config,
    shutdown: CancellationToken,
    server: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

/// Stops the server gracefully when a test ends, however it ends: the server runs on a runtime
/// of its own, so its projectors finish their step and its pool closes its connections. (On the
/// test's own runtime it would be cut off mid-transaction at the test's end, leaving sessions
/// idle in transaction that hold the cluster-wide log horizon back for other tests.)
impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

fn admin_url() -> String {
    std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

fn redis_url() -> String {
    std::env::var("TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// The one database the tests share; each test works in a schema of its own.
const TEST_DATABASE: &str = "relations_test";

/// A fresh, empty schema in the shared test database; returns a URL whose `search_path` is it.
///
/// A schema, not a database: CREATE DATABASE holds a transaction id for as long as it copies
/// its template, and concurrent ones queue on the template's lock, so a suite that made a
/// database per test would hold the cluster-wide log horizon back for seconds at a time.
pub async fn fresh_database() -> String {
    let admin = admin_url();
    let (base, _) = admin
        .rsplit_once('/')
        .expect("a database URL ends in /dbname");
    let mut conn = PgConnection::connect(&admin)
        .await
        .expect("PostgreSQL is reachable");
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(TEST_DATABASE)
            .fetch_one(&mut conn)
            .await
            .unwrap();
    if !exists {
        // Several tests may race here; losing the race is fine.
        let _ = sqlx::query(&format!("CREATE DATABASE {TEST_DATABASE}"))
            .execute(&mut conn)
            .await;
    }
    let schema = format!("test_{}", uuid::Uuid::new_v4().simple());
    let mut db = PgConnection::connect(&format!("{base}/{TEST_DATABASE}"))
        .await
        .expect("test database reachable");
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&mut db)
        .await
        .expect("create test schema");
    format!("{base}/{TEST_DATABASE}?options=-c%20search_path%3D{schema}")
}

/// A configuration for a test: fresh database, own Redis prefix, port 0, generous limits.
pub async fn test_config() -> Config {
    Config {
        database: DatabaseConfig {
            database_url: fresh_database().await,
            db_max_connections: 20,
        },
        database_read_url: None,
        jwt: JwtConfig {
            jwt_secret: SECRET.to_owned(),
        },
        keys: KeysConfig {
            master_key: MASTER_KEY.to_owned(),
        },
        redis: RedisConfig {
            redis_url: Some(redis_url()),
            redis_prefix: format!("test:{}:", uuid::Uuid::new_v4().simple()),
        },
        kafka: KafkaConfig {
            kafka_brokers: None,
            kafka_topic: "relations.events".to_owned(),
            kafka_partitions: 4,
        },
        http_addr: "127.0.0.1:0".parse().unwrap(),
        follow_limit: 1000,
        command_workers: 4,
        command_deadline_ms: 5_000,
        rate_capacity: 10_000,
        rate_refill_per_sec: 1000.0,
        feed: FeedConfig {
            big_v_threshold: 5000,
            feed_inbox_cap: 1000,
        },
        fans: FanConfig {
            fan_table_threshold: 100_000,
        },
        feed_memory_per_author: 32,
        feed_memory_posts: 4_000_000,
        graph_snapshot_dir: None,
        graph_snapshot_every_s: 300,
        recommended_authors: vec![],
        run_projectors: true,
        catch_up_wait_ms: 15_000,
        stuck_after_ms: 30_000,
        request_timeout_ms: 10_000,
        header_read_timeout_ms: 5_000,
        max_connections: 10_000,
        held_after_ms: 10_000,
        streams_per_user: 5,
    }
}

pub async fn spawn_app() -> TestApp {
    spawn_with(test_config().await).await
}

pub async fn spawn_with(config: Config) -> TestApp {
    let shutdown = CancellationToken::new();
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let server = {
        let (config, shutdown) = (config.clone(), shutdown.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let app = Application::build(config).await?;
                let _ = ready_tx.send(app.port());
                app.run(shutdown).await
            })
        })
    };
    let port = ready_rx.await.expect("the app builds");
    let pool = PgPool::connect(&config.database.database_url)
        .await
        .unwrap();
    TestApp {
        base: format!("http://127.0.0.1:{port}"),
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
        pool,
        jwt: JwtKeys::new(SECRET),
        config,
        shutdown,
        server: Some(server),
    }
}

pub fn user(id: i64) -> UserId {
    UserId::try_from(id).unwrap()
}

impl TestApp {
    /// Stops the server and waits for it to drain.
    /// Starts a graceful shutdown without waiting for it (requests in flight go on).
    pub fn begin_shutdown(&self) {
        self.shutdown.cancel();
    }

    pub async fn stop(mut self) -> Config {
        self.shutdown.cancel();
        let server = self.server.take().unwrap();
        tokio::task::spawn_blocking(move || server.join().unwrap().unwrap())
            .await
            .unwrap();
        self.config.clone()
    }

    pub fn token(&self, id: i64) -> String {
        self.jwt
            .issue(user(id), false, Duration::from_secs(600))
            .unwrap()
    }

    pub fn admin_token(&self, id: i64) -> String {
        self.jwt
            .issue(user(id), true, Duration::from_secs(600))
            .unwrap()
    }

    /// POSTs a relation command as `actor`.
    pub async fn command(&self, verb: &str, actor: i64, target: i64) -> (StatusCode, Value) {
        self.command_raw(
            verb,
            Some(&self.token(actor)),
            serde_json::json!({ "target": target }),
        )
        .await
    }

    pub async fn command_raw(
        &self,
        verb: &str,
        token: Option<&str>,
        body: Value,
    ) -> (StatusCode, Value) {
        let mut request = self
            .client
            .post(format!("{}/api/v1/relation/{verb}", self.base))
            .json(&body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("request sent");
        read(response).await
    }

    /// A follow of `target` by `actor` under the `Idempotency-Key` `key`; the raw answer (its
    /// headers and timing are some tests' concern).
    pub async fn keyed_follow(&self, actor: i64, target: i64, key: &str) -> reqwest::Response {
        self.client
            .post(format!("{}/api/v1/relation/follow", self.base))
            .bearer_auth(self.token(actor))
            .header("idempotency-key", key)
            .json(&serde_json::json!({ "target": target }))
            .send()
            .await
            .expect("an answer")
    }

    /// POSTs `path` with the JSON `body` as `user`; the answer.
    pub async fn post_as(&self, user: i64, path: &str, body: Value) -> (StatusCode, Value) {
        read(
            self.client
                .post(format!("{}{path}", self.base))
                .bearer_auth(self.token(user))
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// Publishes a post as `author`.
    pub async fn post(&self, author: i64, content: &str) -> (StatusCode, Value) {
        self.post_with(author, serde_json::json!({ "content": content }))
            .await
    }

    /// `POST /api/v1/posts` with `body` (content, visibility) as `author`.
    pub async fn post_with(&self, author: i64, body: Value) -> (StatusCode, Value) {
        read(
            self.client
                .post(format!("{}/api/v1/posts", self.base))
                .bearer_auth(self.token(author))
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// Publishes a post as `author` and returns its id and position, asserting success.
    pub async fn publish(&self, author: i64, content: &str) -> (String, String) {
        let (status, body) = self.post(author, content).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        (
            body["post"]["id"].as_str().unwrap().to_owned(),
            body["position"].as_str().unwrap().to_owned(),
        )
    }

    /// `POST /api/v1/relation/mute` as `muter` (`duration`: seconds, or null for good).
    pub async fn mute(&self, muter: i64, target: i64, duration: Value) -> (StatusCode, Value) {
        read(
            self.client
                .post(format!("{}/api/v1/relation/mute", self.base))
                .bearer_auth(self.token(muter))
                .json(&serde_json::json!({ "target": target, "duration_secs": duration }))
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// `PUT /api/v1/me/settings {"locked": locked}` as `user`, asserting success; the answer.
    pub async fn set_locked(&self, user: i64, locked: bool) -> Value {
        self.settings(user, serde_json::json!({ "locked": locked }))
            .await
    }

    /// `PUT /api/v1/me/settings` with `body` as `user`, asserting success; the answer.
    pub async fn settings(&self, user: i64, body: Value) -> Value {
        let (status, body) = self.settings_as(user, body).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// `PUT /api/v1/me/settings` with `body` as `user`; the status and the answer.
    pub async fn settings_as(&self, user: i64, body: Value) -> (StatusCode, Value) {
        read(
            self.client
                .put(format!("{}/api/v1/me/settings", self.base))
                .bearer_auth(self.token(user))
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// Deletes post `id` as `actor`.
    pub async fn delete_post(&self, actor: i64, id: &str) -> (StatusCode, Value) {
        read(
            self.client
                .delete(format!("{}/api/v1/posts/{id}", self.base))
                .bearer_auth(self.token(actor))
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// Erases `user` with their own token (`DELETE /api/v1/me`).
    pub async fn erase_me(&self, user: i64) -> (StatusCode, Value) {
        read(
            self.client
                .delete(format!("{}/api/v1/me", self.base))
                .bearer_auth(self.token(user))
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// GETs `path` as `user`.
    pub async fn get_as(&self, user: i64, path: &str) -> (StatusCode, Value) {
        read(
            self.client
                .get(format!("{}{path}", self.base))
                .bearer_auth(self.token(user))
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// The Prometheus text of `/metrics`.
    pub async fn metrics(&self) -> String {
        self.client
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        read(
            self.client
                .get(format!("{}{path}", self.base))
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// Every event in log order: (event_type, payload).
    pub async fn events(&self) -> Vec<(String, Value)> {
        sqlx::query_as::<_, (String, Value)>(
            "SELECT event_type, payload::jsonb FROM events ORDER BY transaction_id, global_position",
        )
        .fetch_all(&self.pool)
        .await
        .unwrap()
    }

    pub async fn event_count(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM events")
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }
}

/// A transaction of the test's own that never breaks a lock cycle itself (its deadlock timeout
/// is long, so PostgreSQL aborts another member of a cycle it closes), and its backend.
pub async fn patient_transaction(
    app: &TestApp,
) -> (sqlx::Transaction<'static, sqlx::Postgres>, i32) {
    let mut tx = app.pool.begin().await.unwrap();
    let pid: i32 = sqlx::query_scalar(
        "SELECT pg_backend_pid() FROM set_config('deadlock_timeout', '10min', true)",
    )
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    (tx, pid)
}

/// The backend blocked by `blocker`, once there is one.
pub async fn blocked_by(app: &TestApp, blocker: i32) -> i32 {
    for _ in 0..500 {
        let waiting: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))",
        )
        .bind(blocker)
        .fetch_optional(&app.pool)
        .await
        .unwrap();
        if let Some(pid) = waiting {
            return pid;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("nothing waits on backend {blocker}");
}

/// Status and JSON body (Null when the body is not JSON).
pub async fn read(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The error code of an error body.
pub fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("<no code>")
}

/// Waits (up to 20 s) until projector `name` has applied `position`. On a timeout it names the
/// transactions that held the log horizon back meanwhile.
pub async fn projector_reached(app: &TestApp, name: &str, position: &str) {
    let (tx, pos) = position.split_once('.').unwrap();
    let (tx, pos): (i64, i64) = (tx.parse().unwrap(), pos.parse().unwrap());
    let mut holders = Vec::new();
    for _ in 0..80 {
        let done: Option<bool> = sqlx::query_scalar(
            "SELECT (transaction_id, global_position) >= ($2, $3)
               FROM projector_checkpoints WHERE name = $1",
        )
        .bind(name)
        .bind(tx)
        .bind(pos)
        .fetch_optional(&app.pool)
        .await
        .unwrap();
        if done == Some(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        let seen: Vec<(String,)> = sqlx::query_as(
            "SELECT concat_ws(' | ', datname, state, backend_xid::text, now() - xact_start, left(query, 120))
               FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND now() - xact_start > interval '500 ms'",
        )
        .fetch_all(&app.pool)
        .await
        .unwrap();
        holders.extend(seen);
    }
    panic!("projector {name} never reached {position}; long transactions seen: {holders:#?}");
}

/// `relations verify` in process: every read model (the feed's inbox invariant included)
/// equals a fresh fold of the log, under the app's own feed settings.
pub async fn assert_verified(app: &TestApp) {
    let keys = app.config.keys.keyring(&app.pool).unwrap();
    let settings = app.config.feed.settings();
    let differences =
        relations_projections::verify(&app.pool, settings, &keys, &Default::default())
            .await
            .unwrap();
    assert!(differences.is_empty(), "{differences:#?}");
}

/// An open transaction that has appended `Followed(100, 200)` and holds the log's horizon:
/// events committed after it wait above the horizon until it ends.
pub async fn hold_open_follow(app: &TestApp) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut held = app.pool.begin().await.unwrap();
    sqlx::query(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
         VALUES ('relation', '100:200', 1, 'Followed', '1', '{\"Followed\": {\"follower\": 100, \"followee\": 200}}', '{}')",
    )
    .execute(&mut *held)
    .await
    .unwrap();
    held
}

/// Runs the async property `check` on `cases` values of `strategy` (shrinking failures), on a
/// runtime of its own.
pub fn check_property<S, F>(cases: u32, strategy: S, check: impl Fn(S::Value) -> F)
where
    S: proptest::strategy::Strategy,
    S::Value: Clone + std::fmt::Debug,
    F: std::future::Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases,
        max_shrink_iters: 32,
        ..proptest::test_runner::Config::default()
    });
    runner
        .run(&strategy, |value| {
            runtime.block_on(check(value));
            Ok(())
        })
        .unwrap();
}

/// `relations ARGS` (the binary under test) against `app`'s database, as it ended.
pub fn run_relations(app: &TestApp, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_relations"))
        .args(args)
        .env("DATABASE_URL", &app.config.database.database_url)
        .env("RELATIONS_MASTER_KEY", MASTER_KEY)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

/// `relations ARGS` against `app`'s database, which must succeed.
pub fn relations(app: &TestApp, args: &[&str]) -> std::process::Output {
    let output = run_relations(app, args);
    assert!(
        output.status.success(),
        "relations {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A moment strictly between two commands: the clock read between them, with room either side.
pub async fn moment() -> chrono::DateTime<chrono::Utc> {
    tokio::time::sleep(Duration::from_millis(5)).await;
    let now = chrono::Utc::now();
    tokio::time::sleep(Duration::from_millis(5)).await;
    now
}

/// An instant as RFC 3339 to the microsecond, as the API and the log write it.
pub fn rfc3339(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// Waits until `graph` (a replica a test runs itself) has folded the log up to `at`, waiting
/// out its load.
pub async fn replica_reached(graph: &relations_projections::replica::live::LiveGraph, at: &str) {
    let position: relations_store::LogPosition = at.parse().unwrap();
    for _ in 0..200 {
        if graph.wait_for(position, Duration::from_secs(10)).await == Some(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the replica never reached {at}");
}

/// The newest position in the log (a test that reads after its last write waits for it).
pub async fn head(app: &TestApp) -> String {
    let (tx, gp): (i64, i64) = sqlx::query_as(
        "SELECT transaction_id::text::bigint, global_position FROM events
          ORDER BY transaction_id DESC, global_position DESC LIMIT 1",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    format!("{tx}.{gp}")
}

//! The one PostgreSQL pool and the schema migrations.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

/// The migrations in `migrations/`, embedded in the binary.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// How the pool is sized and how its sessions behave.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    /// Upper bound on open connections.
    pub max_connections: u32,
    /// How long a request waits for a free connection before it fails.
    pub acquire_timeout: Duration,
    /// Refuse sessions on a server in recovery (a standby): during a failover a proxy may
    /// briefly route to the standby, and a pooled session there would fail every write with
    /// 25006. Off for a pool that reads from a standby on purpose.
    pub primary_only: bool,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            max_connections: 32,
            acquire_timeout: Duration::from_secs(3),
            primary_only: true,
        }
    }
}

/// Opens the shared pool. Every session gets `idle_in_transaction_session_timeout`: a
/// transaction left open would hold back the log readers' horizon for everyone.
///
/// sqlx 0.8 sets no TCP keepalive on its own sockets, so a session whose peer vanished
/// (half-open) is noticed on this side only by the deadlines above it: the command deadline
/// (`Workers::deadline`, which closes the connection), the pool's `acquire_timeout`, and
/// `statement_timeout`. On the server's side each session asks for TCP keepalives and for
/// `client_connection_check_interval` (PostgreSQL 14+), so a backend whose client closed or
/// vanished ends its query and releases its locks in seconds instead of hours.
pub async fn connect(database_url: &str, settings: &PoolSettings) -> Result<PgPool, sqlx::Error> {
    let options: PgConnectOptions = database_url.parse()?;
    let options = options.application_name("relations").options([
        ("idle_in_transaction_session_timeout", "10s"),
        ("statement_timeout", "30s"),
        ("tcp_keepalives_idle", "10"),
        ("tcp_keepalives_interval", "5"),
        ("tcp_keepalives_count", "3"),
        ("client_connection_check_interval", "2s"),
    ]);
    let primary_only = settings.primary_only;
    PgPoolOptions::new()
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if primary_only {
                    let (in_recovery,): (bool,) = sqlx::query_as("SELECT pg_is_in_recovery()")
                        .fetch_one(&mut *conn)
                        .await?;
                    if in_recovery {
                        return Err(sqlx::Error::Io(std::io::Error::new(
                            std::io::ErrorKind::ConnectionRefused,
                            "connected to a server in recovery (a standby), not the primary",
                        )));
                    }
                }
                Ok(())
            })
        })
        // No ping before handing out a connection: it is a round trip on every query, and a
        // dead connection fails its query, which is retried or answered 503 like any outage
        // (a half-open one is bounded by the command deadline, which closes it).
        .test_before_acquire(false)
        .max_connections(settings.max_connections)
        .acquire_timeout(settings.acquire_timeout)
        .connect_with(options)
        .await
}

/// Applies every pending migration; safe to run from several processes at once.
pub async fn migrate(pool: &PgPool) -> Result<(), sqlx::migrate::MigrateError> {
    MIGRATOR.run(pool).await
}

/// Ends `tx` the way `result` says: an `Ok` value that `commit` accepts is committed; any other
/// ending is rolled back. Always explicitly: a transaction left to sqlx's lazy rollback on drop
/// sits idle holding a transaction id, and so holds back the cluster-wide horizon that every log
/// reader waits on. When both the work and the rollback fail, the work's error is returned.
pub async fn end_transaction<T, E: From<sqlx::Error>>(
    tx: sqlx::Transaction<'_, sqlx::Postgres>,
    result: Result<T, E>,
    commit: impl FnOnce(&T) -> bool,
) -> Result<T, E> {
    match result {
        Ok(value) if commit(&value) => {
            tx.commit().await?;
            Ok(value)
        }
        Ok(value) => {
            tx.rollback().await?;
            Ok(value)
        }
        Err(error) => {
            if let Err(rollback) = tx.rollback().await {
                tracing::warn!(%rollback, "rollback after a failed transaction failed too");
            }
            Err(error)
        }
    }
}

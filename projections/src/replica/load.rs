//! Loading the replica: each model's read model and its projector's checkpoint, read in one
//! read-only snapshot (it takes no transaction id, so it holds back no horizon). The tail then
//! replays the log from the lowest checkpoint, and each model skips what its load held. The
//! graph may come from its snapshot instead ([`super::snapshot`]): its position is then its
//! checkpoint.

use relations_store::LogPosition;
use sqlx::PgPool;

use super::snapshot::{self, SnapshotConfig};
use super::tail::ReplicaTail;
use super::{each_model, MemoryModel, Replica};
use crate::error::ProjectionError;
use crate::feed::held::timelines::Caps;

/// Loads every model in one snapshot, the graph from its own snapshot file when `snapshots`
/// names one the log recognises; the tail then replays from the lowest checkpoint.
pub(super) async fn load(
    pool: &PgPool,
    caps: Caps,
    keys: Option<relations_store::Keyring>,
    snapshots: Option<&SnapshotConfig>,
) -> Result<ReplicaTail, ProjectionError> {
    let mut replica = Replica::new(caps);
    let started = std::time::Instant::now();
    let snapshot = match snapshots {
        Some(config) => snapshot::read(&config.dir).await,
        None => None,
    };
    let mut tx = pool.begin().await?;
    let result = async {
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        // The load sorts and indexes what it read between its statements: at 1M users that
        // took longer than the 10 s idle limit every session gets, and the load was killed and
        // retried for ever. Its own transaction only; it holds no lock.
        sqlx::query("SET LOCAL idle_in_transaction_session_timeout = '5min'")
            .execute(&mut *tx)
            .await?;
        if let Some(snapshot) = snapshot {
            if let Some(graph) = snapshot.check(&mut tx).await? {
                let position = graph.restored_from();
                tracing::info!(?position, elapsed = ?started.elapsed(), "graph restored from its snapshot");
                replica.restore(graph);
            }
        }
        let mut replay: Option<LogPosition> = None;
        each_model!(replica, |model| {
            if let Some(at) = model.checkpoint(&mut tx).await? {
                replay = Some(replay.map_or(at, |r| r.min(at)));
            }
        });
        let replay = replay.unwrap_or(LogPosition::START);
        each_model!(replica, |model| model.load(&mut tx, replay).await?);
        Ok::<_, sqlx::Error>(replay)
    }
    .await;
    let replay = relations_store::db::end_transaction(tx, result, |_| true).await?;
    replica.advance(replay);
    Ok(ReplicaTail {
        pending: Some(Box::new(replica)),
        position: replay,
        keys,
    })
}

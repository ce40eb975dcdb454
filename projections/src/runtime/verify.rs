//! `relations verify`: fold the log afresh in memory and compare every read model row by row.
//!
//! Everything is read in one REPEATABLE READ snapshot: a checkpoint and the rows it stands for
//! were committed together, so each read model is compared with a fold of the log up to its
//! projector's checkpoint, and the write side's guard rows with a fold of every event in the
//! snapshot. The log is read once; each model's own [`Check`] folds what it needs and compares
//! its own tables.

use std::collections::BTreeSet;

use async_trait::async_trait;
use relations_store::db::end_transaction;
use relations_store::log::{self, RecordedEvent};
use relations_store::{Keyring, LogPosition};
use sqlx::{PgConnection, PgPool, Row};

use super::checkpoint;
use crate::error::ProjectionError;

/// One model's check: a fold of the log and a comparison of its rows with that fold.
#[async_trait]
pub trait Check: Send {
    /// The projector whose checkpoint bounds the fold; `None` for the write side, which is
    /// compared with every event in the snapshot, the unsettled ones above the horizon too.
    fn projector(&self) -> Option<&'static str>;

    /// Folds one event (the check skips events of streams it does not model).
    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError>;

    /// Reads the model's rows in the snapshot and reports every difference into `out`.
    async fn compare(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<(), ProjectionError>;
}

/// What [`run`] compares.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Compare with every event below the horizon rather than each projector's checkpoint:
    /// for read models fed from Kafka (which keep offsets, not a log position), once they have
    /// caught up.
    pub whole_log: bool,
    /// Only these projectors' read models (`following`, `feed`); all when empty. The write
    /// side's guard rows are always compared.
    pub projectors: Vec<String>,
}

impl Scope {
    /// Whether `projector`'s read models are compared.
    pub fn covers(&self, projector: &str) -> bool {
        self.projectors.is_empty() || self.projectors.iter().any(|p| p == projector)
    }
}

/// Runs `checks` in one snapshot, reading the log once; every difference, empty when all agree.
pub async fn run(
    pool: &PgPool,
    keys: &Keyring,
    mut checks: Vec<Box<dyn Check>>,
    scope: &Scope,
) -> Result<Vec<String>, ProjectionError> {
    let mut tx = pool.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *tx)
        .await?;
    let end = LogPosition {
        transaction_id: i64::MAX,
        global_position: i64::MAX,
    };
    let mut limits = Vec::with_capacity(checks.len());
    for check in &checks {
        limits.push(match check.projector() {
            Some(name) if !scope.whole_log => checkpoint::read(&mut *tx, name).await?,
            _ => end,
        });
    }
    let mut after = LogPosition::START;
    loop {
        let mut batch = log::read_after(&mut tx, after, 5_000).await?;
        log::reveal(keys, &mut batch).await?;
        let Some(last) = batch.last() else { break };
        after = last.position;
        for event in &batch {
            for (check, limit) in checks.iter_mut().zip(&limits) {
                if event.position <= *limit {
                    check.fold(event)?;
                }
            }
        }
    }
    // Events above the readers' horizon are in the snapshot too; the write side counts them.
    let mut unsettled = log::read_unsettled(&mut tx).await?;
    log::reveal(keys, &mut unsettled).await?;
    for event in &unsettled {
        for check in checks.iter_mut().filter(|c| c.projector().is_none()) {
            check.fold(event)?;
        }
    }
    let mut out = Vec::new();
    let mut compared = repeated_versions(&mut tx, &mut out).await;
    for check in &checks {
        if compared.is_err() {
            break;
        }
        compared = check.compare(&mut tx, &mut out).await;
    }
    end_transaction(tx, compared, |_| false).await?;
    Ok(out)
}

/// Reports every stream version the log holds twice, in two of its partitions (issue 48):
/// the log's own invariant, which no index spans.
async fn repeated_versions(
    conn: &mut PgConnection,
    out: &mut Vec<String>,
) -> Result<(), ProjectionError> {
    for (stream_type, stream, version) in log::partitions::versions_repeated(conn).await? {
        out.push(format!(
            "log: stream {stream_type} {stream} holds version {version} in two partitions"
        ));
    }
    Ok(())
}

/// Reports what `expected` holds and `actual` lacks, and the reverse, as `what: ...` lines.
pub(crate) fn diff<T: Ord + std::fmt::Debug + Clone>(
    what: &str,
    expected: &BTreeSet<T>,
    actual: &BTreeSet<T>,
    out: &mut Vec<String>,
) {
    for missing in expected.difference(actual) {
        out.push(format!("{what}: missing {missing:?}"));
    }
    for extra in actual.difference(expected) {
        out.push(format!("{what}: unexpected {extra:?}"));
    }
}

/// `rows` as a set, reporting each row found more than once (a table without a unique key
/// relies on its projector never to write a row twice).
pub(crate) fn distinct<T: Ord + std::fmt::Debug>(
    what: &str,
    rows: Vec<T>,
    out: &mut Vec<String>,
) -> BTreeSet<T> {
    let mut set = BTreeSet::new();
    for row in rows {
        if let Some(again) = set.replace(row) {
            out.push(format!("{what}: duplicated {again:?}"));
        }
    }
    set
}

/// The rows of a two-column bigint query.
pub(crate) async fn pairs(
    conn: &mut sqlx::PgConnection,
    sql: &'static str,
) -> Result<BTreeSet<(i64, i64)>, sqlx::Error> {
    let rows = sqlx::query(sql).fetch_all(conn).await?;
    rows.iter()
        .map(|r| Ok((r.try_get::<i64, _>(0)?, r.try_get::<i64, _>(1)?)))
        .collect()
}

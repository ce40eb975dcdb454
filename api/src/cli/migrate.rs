//! `relations migrate`: apply pending migrations and exit.

use anyhow::Context;
use relations_store::db;

use crate::config::DatabaseConfig;

/// Applies every pending migration.
pub async fn run(database: DatabaseConfig) -> anyhow::Result<()> {
    let pool = database.connect().await?;
    db::migrate(&pool).await.context("applying migrations")?;
    tracing::info!("migrations applied");
    Ok(())
}

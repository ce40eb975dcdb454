//! `relations migrate`: apply pending migrations, seal the content older events hold in plain
//! text (once; docs/events.md, "the one sanctioned rewrite"), and exit.

use anyhow::Context;
use relations_store::{db, log};

use crate::config::{DatabaseConfig, KeysConfig};

/// `relations migrate` arguments.
#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    database: DatabaseConfig,
    #[command(flatten)]
    keys: KeysConfig,
}

/// Applies every pending migration, then seals every version-1 post and comment in place.
pub async fn run(args: MigrateArgs) -> anyhow::Result<()> {
    let master_key = args.keys.master_key()?;
    let pool = args.database.connect().await?;
    db::migrate(&pool).await.context("applying migrations")?;
    tracing::info!("migrations applied");
    let made = log::partitions::keep(&pool)
        .await
        .context("making the log's next partitions")?;
    tracing::info!(made, "the log's next partitions made");
    let keys = relations_store::Keyring::new(master_key, pool.clone());
    let mut conn = pool.acquire().await?;
    let done = log::seal_plain_content(&mut conn, &keys, |so_far| {
        tracing::debug!(
            walked = so_far.walked,
            sealed = so_far.sealed,
            "sealing content"
        );
    })
    .await
    .context("sealing the plain-text content of version-1 events")?;
    tracing::info!(
        events = done.walked,
        sealed = done.sealed,
        "post and comment content sealed in the log"
    );
    Ok(())
}

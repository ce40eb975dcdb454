//! `relations verify`: fold the log afresh and compare every read model; exit 1 on a difference.

use crate::config::ReadSideConfig;

/// `relations verify` arguments.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Compare with the whole log, not with each projector's checkpoint (for read models
    /// fed from Kafka, which keep offsets instead; run it once they have caught up).
    #[arg(long)]
    whole_log: bool,
    /// Only this projector's read models (repeatable): following, feed.
    #[arg(long)]
    only: Vec<String>,
    #[command(flatten)]
    read_side: ReadSideConfig,
}

/// Prints each difference; fails when there is any.
pub async fn run(args: VerifyArgs) -> anyhow::Result<()> {
    let (pool, keys, settings) = args.read_side.connect().await?;
    let scope = relations_projections::runtime::verify::Scope {
        whole_log: args.whole_log,
        projectors: args.only,
    };
    let differences = relations_projections::verify(&pool, settings.feed, &keys, &scope).await?;
    if differences.is_empty() {
        println!("read models agree with the log");
        return Ok(());
    }
    for difference in &differences {
        println!("{difference}");
    }
    anyhow::bail!(
        "{} differences between the read models and the log",
        differences.len()
    )
}

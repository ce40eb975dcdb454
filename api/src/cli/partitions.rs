//! `relations partitions`: the log's partitions (issue 48), oldest first, each with the
//! transactions it holds, its bytes and its state; `--keep` first makes the ones the next
//! transactions need, as every `serve` does each minute.

use relations_store::log::partitions;

use crate::config::DatabaseConfig;

/// `relations partitions` arguments.
#[derive(Debug, clap::Args)]
pub struct PartitionsArgs {
    /// Make the partitions the next transactions need first (`log_partitioning`: how wide, how
    /// many ahead).
    #[arg(long)]
    keep: bool,
    #[command(flatten)]
    database: DatabaseConfig,
}

/// Prints one line per partition: name, first and end transaction id, bytes, state.
pub async fn run(args: PartitionsArgs) -> anyhow::Result<()> {
    let pool = args.database.connect().await?;
    if args.keep {
        let made = partitions::keep(&pool).await?;
        eprintln!("relations: {made} partition(s) made");
    }
    println!("partition\tfrom_transaction\tto_transaction\tbytes\tstate");
    for p in partitions::list(&pool).await? {
        println!(
            "{}\t{}\t{}\t{}\t{}",
            p.name,
            p.low,
            p.high,
            p.bytes,
            p.state.as_str()
        );
    }
    Ok(())
}

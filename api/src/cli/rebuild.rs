//! `relations rebuild NAME`: rebuild a read model into shadow tables, then swap atomically.

use anyhow::Context;

use relations_projections::runtime::rebuild::{rebuild, PublishedProgress};

use crate::config::ReadSideConfig;

/// `relations rebuild` arguments.
#[derive(Debug, clap::Args)]
pub struct RebuildArgs {
    /// The projector (`following`, `feed`, `history`, `engagement`, `notifications`).
    name: String,
    #[command(flatten)]
    read_side: ReadSideConfig,
}

/// Rebuilds with a progress bar on stderr.
pub async fn run(args: RebuildArgs) -> anyhow::Result<()> {
    let RebuildArgs { name, read_side } = args;
    let (pool, keys, settings) = read_side.connect().await?;
    let projector = relations_projections::by_name(&name, settings, &keys).with_context(|| {
        let names: Vec<_> = relations_projections::all(settings, &keys, None)
            .iter()
            .map(|p| p.name())
            .collect();
        format!("no projector named {name:?}; there are {names:?}")
    })?;
    let bar = indicatif::ProgressBar::new(0).with_style(indicatif::ProgressStyle::with_template(
        "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} events ({per_sec}, eta {eta})",
    )?);
    bar.set_message(format!("rebuilding {name}"));
    let published = PublishedProgress::start(&pool, &name);
    let report = rebuild(&pool, projector, |done, total| {
        bar.set_length(total);
        bar.set_position(done);
        published.update(done, total);
    })
    .await;
    published.finish().await;
    let report = report?;
    bar.finish();
    tracing::info!(projector = %name, events = report.events, position = %report.position, "rebuilt and swapped in");
    Ok(())
}

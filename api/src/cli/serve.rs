//! `relations serve`: the HTTP API and, unless told otherwise, the projectors, until SIGTERM.

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::startup::{cancel_on_signal, Application};

/// Builds the application (migrating first) and serves until a signal.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let app = Application::build(config).await?;
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    app.run(shutdown).await
}

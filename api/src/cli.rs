//! The `relations` command line.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use relations_domain::UserId;
use relations_store::db::{self, PoolSettings};
use tokio_util::sync::CancellationToken;

use crate::auth::JwtKeys;
use crate::config::{Config, DatabaseConfig, JwtConfig};
use crate::startup::{cancel_on_signal, Application};

/// relations: an event-sourced service for follows, blocks and the follow feed.
#[derive(Debug, Parser)]
#[command(name = "relations", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP API (migrates first).
    Serve(Box<Config>),
    /// Apply pending database migrations and exit.
    Migrate(DatabaseConfig),
    /// Print a development JWT for a user.
    Token {
        /// The user id (`sub`).
        #[arg(long)]
        user: UserId,
        /// Grant the admin role.
        #[arg(long)]
        admin: bool,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl_secs: u64,
        #[command(flatten)]
        jwt: JwtConfig,
    },
}

/// Parses the command line and runs the command; errors are logged and turn into exit code 1.
pub async fn main() -> ExitCode {
    crate::telemetry::init();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "failed");
            eprintln!("relations: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(config) => {
            let app = Application::build(*config).await?;
            let shutdown = CancellationToken::new();
            tokio::spawn(cancel_on_signal(shutdown.clone()));
            app.run(shutdown).await
        }
        Command::Migrate(database) => {
            let pool = db::connect(&database.database_url, &PoolSettings::default())
                .await
                .context("connecting to PostgreSQL")?;
            db::migrate(&pool).await.context("applying migrations")?;
            tracing::info!("migrations applied");
            Ok(())
        }
        Command::Token {
            user,
            admin,
            ttl_secs,
            jwt,
        } => {
            let token =
                JwtKeys::new(&jwt.jwt_secret).issue(user, admin, Duration::from_secs(ttl_secs))?;
            println!("{token}");
            Ok(())
        }
    }
}

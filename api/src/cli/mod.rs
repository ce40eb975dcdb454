//! The `relations` command line: one file per command (as mini-redis's `cmd/`), and this enum
//! dispatching to them.

mod migrate;
mod partitions;
mod project;
mod rebuild;
mod replay;
mod serve;
mod token;
mod verify;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::Config;

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
    #[command(mut_arg("redis_url", |arg| arg.required(true)))]
    Serve(Box<Config>),
    /// Apply pending database migrations, seal the plain-text content older events hold (the
    /// one sanctioned rewrite of the log, once), and exit.
    Migrate(migrate::MigrateArgs),
    /// Run the projectors alone (no HTTP), until SIGTERM: from PostgreSQL's log (with the Kafka
    /// relay when KAFKA_BROKERS is set), or from the Kafka topic as a consumer group.
    Project(project::ProjectArgs),
    /// Rebuild a projector's read model from the start of the log into shadow tables, while the
    /// live one keeps serving, then swap atomically.
    Rebuild(rebuild::RebuildArgs),
    /// Print the event log as JSON lines (the versioned envelope), in commit order, or write it as
    /// Parquet files partitioned by day (`--format parquet --out DIR`, incremental).
    Replay(replay::ReplayArgs),
    /// Fold the log afresh and compare every read model row by row; exit 1 on a difference.
    Verify(verify::VerifyArgs),
    /// List the log's partitions (oldest first: transactions held, bytes, closed, open or made
    /// ahead); `--keep` makes the next ones first.
    Partitions(partitions::PartitionsArgs),
    /// Print a development JWT for a user.
    Token(token::TokenArgs),
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
        Command::Serve(config) => serve::run(*config).await,
        Command::Migrate(args) => migrate::run(args).await,
        Command::Project(args) => project::run(args).await,
        Command::Rebuild(args) => rebuild::run(args).await,
        Command::Replay(args) => replay::run(args).await,
        Command::Verify(args) => verify::run(args).await,
        Command::Partitions(args) => partitions::run(args).await,
        Command::Token(args) => token::run(args),
    }
}

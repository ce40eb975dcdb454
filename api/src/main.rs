//! The `relations` binary: see `relations --help`.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    relations_api::cli::main().await
}

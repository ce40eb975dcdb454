//! `relations token`: print a development JWT.

use std::time::Duration;

use relations_domain::UserId;

use crate::auth::JwtKeys;
use crate::config::JwtConfig;

/// `relations token` arguments.
#[derive(Debug, clap::Args)]
pub struct TokenArgs {
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
}

/// Prints the token on stdout.
pub fn run(args: TokenArgs) -> anyhow::Result<()> {
    let token = JwtKeys::new(&args.jwt.jwt_secret).issue(
        args.user,
        args.admin,
        Duration::from_secs(args.ttl_secs),
    )?;
    println!("{token}");
    Ok(())
}

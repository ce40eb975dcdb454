//! `relations token`: print a development JWT.

use std::time::Duration;

use relations_domain::{TokenStamp, UserId};

use crate::config::JwtConfig;
use crate::jwt::JwtKeys;

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
    /// The client or device (`cli`), which logout and revocations name.
    #[arg(long)]
    client: Option<String>,
    /// The token's version for its client (`ver`).
    #[arg(long)]
    ver: Option<i64>,
    /// The user's batch (`bat`).
    #[arg(long)]
    bat: Option<i64>,
    #[command(flatten)]
    jwt: JwtConfig,
}

/// Prints the token on stdout.
pub fn run(args: TokenArgs) -> anyhow::Result<()> {
    let stamp =
        (args.client.is_some() || args.ver.is_some() || args.bat.is_some()).then(|| TokenStamp {
            client: args.client.clone().unwrap_or_default(),
            ver: args.ver.unwrap_or(0),
            bat: args.bat.unwrap_or(0),
        });
    let token = JwtKeys::new(args.jwt.secret()?).issue_stamped(
        args.user,
        args.admin,
        Duration::from_secs(args.ttl_secs),
        stamp.as_ref(),
    )?;
    println!("{token}");
    Ok(())
}

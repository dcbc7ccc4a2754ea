//! Mints a Switchboard bearer token signed with an HS256 secret, for local use.
//!
//! `switchboard-token --org acme --user alice --role admin`

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

use std::time::Duration;

use clap::Parser;
use switchboard_auth::{Claims, TokenMinter};

/// Mints a bearer token for local use.
#[derive(Debug, Parser)]
struct Args {
    /// HS256 secret shared with the services.
    #[arg(long, env = "SWITCHBOARD_JWT_SECRET")]
    secret: String,
    /// Organization id.
    #[arg(long, default_value = "dev-org")]
    org: String,
    /// User id.
    #[arg(long, default_value = "dev-user")]
    user: String,
    /// Roles (repeatable).
    #[arg(long = "role", default_values_t = ["admin".to_owned()])]
    roles: Vec<String>,
    /// Audience (`aud`); the services require theirs (`SWITCHBOARD_JWT_AUDIENCE`).
    #[arg(long, default_value = switchboard_auth::DEFAULT_AUDIENCE)]
    audience: String,
    /// Lifetime in seconds.
    #[arg(long, default_value_t = 86_400)]
    ttl_secs: u64,
}

fn main() {
    let args = Args::parse();
    let roles: Vec<&str> = args.roles.iter().map(String::as_str).collect();
    let mut claims = Claims::new(
        &args.org,
        &args.user,
        &roles,
        Duration::from_secs(args.ttl_secs),
    );
    claims.aud = Some(args.audience);
    match TokenMinter::hs256(&args.secret).mint(&claims) {
        Ok(token) => println!("{token}"),
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(1);
        }
    }
}

//! `example-grpc-service`: the Switchboard example gRPC service.
//!
//! Serves the in-memory inventory and server reflection on `--listen`, and
//! prints `listening on http://<addr>` to stderr once it accepts connections,
//! for the process that started it to read the port.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

use std::net::SocketAddr;

use anyhow::Context as _;
use clap::Parser;

/// Example gRPC service for Switchboard.
#[derive(Debug, Parser)]
#[command(name = "example-grpc-service", version, about)]
struct Args {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("failed to listen on {}", args.listen))?;
    let addr = listener
        .local_addr()
        .context("failed to read the bound address")?;
    eprintln!("listening on http://{addr}");
    switchboard_example_grpc_service::serve(listener).await
}

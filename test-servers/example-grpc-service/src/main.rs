//! `example-grpc-service`: the Switchboard example gRPC service.
//!
//! Serves the in-memory inventory and server reflection on `--listen`, and
//! prints `listening on http://<addr>` to stderr once it accepts connections,
//! for the process that started it to read the port. With `--tls-cert` and
//! `--tls-key` it serves TLS (`listening on https://<addr>`), and with
//! `--client-ca` it requires a client certificate that CA issued.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

use std::{net::SocketAddr, path::PathBuf};

use anyhow::Context as _;
use clap::Parser;
use tonic::transport::ServerTlsConfig;

/// Example gRPC service for Switchboard.
#[derive(Debug, Parser)]
#[command(name = "example-grpc-service", version, about)]
struct Args {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Serve TLS with this certificate (PEM); needs `--tls-key`.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key (PEM) of `--tls-cert`.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Require a client certificate issued by this CA (PEM); needs
    /// `--tls-cert`.
    #[arg(long, requires = "tls_cert")]
    client_ca: Option<PathBuf>,
}

impl Args {
    /// The server TLS the arguments ask for, its files read.
    fn tls(&self) -> anyhow::Result<Option<ServerTlsConfig>> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        let read = |path: &PathBuf| {
            std::fs::read(path).with_context(|| format!("failed to read {}", path.display()))
        };
        let client_ca = self.client_ca.as_ref().map(read).transpose()?;
        Ok(Some(switchboard_example_grpc_service::server_tls(
            &read(cert)?,
            &read(key)?,
            client_ca.as_deref(),
        )))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let tls = args.tls()?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("failed to listen on {}", args.listen))?;
    let addr = listener
        .local_addr()
        .context("failed to read the bound address")?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    eprintln!("listening on {scheme}://{addr}");
    switchboard_example_grpc_service::serve_with(listener, tls).await
}

//! `example-mcp-server`: the Switchboard example MCP server.
//!
//! Serves one session on stdin/stdout (the default), Streamable HTTP with
//! `--transport http`, or the pets HTTP API of the OpenAPI tests with
//! `--transport api`. Logs go to stderr, since stdout carries MCP in stdio
//! mode.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

use std::{net::SocketAddr, path::PathBuf, sync::Arc};

use anyhow::Context as _;

use clap::{Parser, ValueEnum};
use switchboard_example_mcp_server::{
    HttpServerOptions, Stats, serve_stdio, spawn_api_on, spawn_http,
};
use tracing_subscriber::EnvFilter;

/// Example MCP server for Switchboard.
#[derive(Debug, Parser)]
#[command(name = "example-mcp-server", version, about)]
struct Args {
    /// How to talk to the client.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    transport: Transport,
    /// Address to listen on with `--transport http`.
    #[arg(long, default_value = "127.0.0.1:8931")]
    listen: SocketAddr,
    /// Serve every HTTP request on its own instead of in `initialize` sessions.
    #[arg(long)]
    stateless: bool,
    /// Serve `https://` (HTTP/2 and HTTP/1.1) with a certificate made at
    /// start-up for the loopback names, written to `--certificate-out`.
    #[arg(long, requires = "certificate_out")]
    tls: bool,
    /// Where `--tls` writes the server's certificate (PEM), for clients to trust.
    #[arg(long)]
    certificate_out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Transport {
    /// One session on stdin/stdout.
    Stdio,
    /// Streamable HTTP at `/mcp`.
    Http,
    /// Not MCP: the pets HTTP API of OpenAPI integrations' tests, its
    /// document at `/openapi.json`.
    Api,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn")),
        )
        .with_writer(std::io::stderr)
        .init();

    let stats = Arc::new(Stats::default());
    match args.transport {
        Transport::Api => {
            let api = spawn_api_on(args.listen).await?;
            eprintln!("listening on {}", api.base_url);
            shutdown_signal().await?;
        }
        Transport::Stdio => {
            tokio::select! {
                served = serve_stdio(stats) => served?,
                signal = shutdown_signal() => signal?,
            }
        }
        Transport::Http => {
            let server = spawn_http(HttpServerOptions {
                addr: args.listen,
                stateful: !args.stateless,
                tls: args.tls,
                ..HttpServerOptions::default()
            })
            .await?;
            if let (Some(path), Some(pem)) = (&args.certificate_out, &server.certificate_pem) {
                std::fs::write(path, pem)
                    .with_context(|| format!("writing the certificate to {}", path.display()))?;
            }
            eprintln!("listening on {}", server.url());
            shutdown_signal().await?;
            tracing::info!("shutting down");
            server.shutdown().await;
        }
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate())?;
        tokio::select! {
            interrupted = tokio::signal::ctrl_c() => interrupted?,
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await?;
    Ok(())
}

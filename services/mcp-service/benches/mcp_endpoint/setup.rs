//! The processes under load: the example MCP server (streamable HTTP) and
//! mcp-service (SQLite) with its MCP endpoint on, the
//! example server as its integration `bench`.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use anyhow::Context as _;
use switchboard_proto::mcp::v1::mcp_service_client::McpServiceClient;
use switchboard_test_support::{
    TEST_JWT_SECRET, authed,
    bench::{KillOnDrop, wait_for_port},
    grpc::{free_port, wait_serving},
    http_integration_request, token,
};
use tonic::transport::Channel;

use crate::client::Target;

/// The integration's slug, in the endpoint's path.
const SLUG: &str = "bench";

/// Both sides of the comparison and the processes behind them.
#[derive(Debug)]
pub struct Setup {
    /// The example server's MCP path, called directly.
    pub direct: Target,
    /// The same server through `/mcp/integrations/bench`, with a bearer
    /// token of the benchmark's organization.
    pub endpoint: Target,
    /// mcp-service's process.
    pub service: KillOnDrop,
    /// The example server's process.
    pub upstream: KillOnDrop,
    _dir: tempfile::TempDir,
}

/// Starts both processes and creates the integration.
pub async fn start() -> anyhow::Result<Setup> {
    let dir = tempfile::tempdir()?;
    let upstream_port = free_port()?;
    let upstream = example_http(upstream_port)?;
    wait_for_port(upstream_port).await?;
    let upstream_addr = SocketAddr::from(([127, 0, 0, 1], upstream_port));
    let endpoint_addr = SocketAddr::from(([127, 0, 0, 1], free_port()?));
    let (service, grpc_url) = mcp_service(dir.path(), endpoint_addr).await?;
    let token = token("bench-org", "bench-user", &["admin"]);
    let channel = Channel::from_shared(grpc_url)?.connect().await?;
    let request = http_integration_request(SLUG, &format!("http://{upstream_addr}/mcp"));
    McpServiceClient::new(channel)
        .create_integration(authed(request, &token))
        .await
        .context("creating the integration")?;
    Ok(Setup {
        direct: Target {
            addr: upstream_addr,
            path: "/mcp".into(),
            authorization: None,
        },
        endpoint: Target {
            addr: endpoint_addr,
            path: format!("/mcp/integrations/{SLUG}"),
            authorization: Some(format!("Bearer {token}")),
        },
        service,
        upstream,
        _dir: dir,
    })
}

/// The example server over streamable HTTP on `port`.
fn example_http(port: u16) -> anyhow::Result<KillOnDrop> {
    let child = Command::new(sibling_binary("example-mcp-server")?)
        .args(["--transport", "http", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting the example MCP server")?;
    Ok(KillOnDrop(child))
}

/// A binary of the workspace built beside this benchmark: target/release by
/// `make bench-mcp-endpoint`, target/debug for CI's smoke run
/// (`make bench-mcp-endpoint-smoke`).
fn sibling_binary(name: &str) -> anyhow::Result<PathBuf> {
    switchboard_test_support::built_binary(name, "run make bench-mcp-endpoint")
}

/// mcp-service with its endpoint on `endpoint`, and limits that leave the
/// benchmark's callers alone (it measures speed, not refusals); its gRPC
/// URL.
async fn mcp_service(dir: &Path, endpoint: SocketAddr) -> anyhow::Result<(KillOnDrop, String)> {
    let port = free_port()?;
    let child = Command::new(sibling_binary("mcp-service")?)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .current_dir(dir)
        .env_remove("DATABASE_URL")
        .env("SWITCHBOARD_DATA_DIR", dir.join("data"))
        .env("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET)
        .env("SWITCHBOARD_DEV_MODE", "true")
        .env("SWITCHBOARD_OUTBOUND_ALLOW", "127.0.0.1/32")
        .env("SWITCHBOARD_MCP_ENDPOINT_LISTEN", endpoint.to_string())
        .env("SWITCHBOARD_ORG_RATE_LIMIT", "100000000")
        .env("SWITCHBOARD_ORG_RATE_BURST", "100000000")
        .env("RUST_LOG", "warn")
        .env("SWITCHBOARD_LOG_FORMAT", "pretty")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting mcp-service")?;
    let service = KillOnDrop(child);
    let url = format!("http://127.0.0.1:{port}");
    wait_serving(&url, "", Duration::from_secs(30)).await?;
    wait_for_port(endpoint.port()).await?;
    Ok((service, url))
}

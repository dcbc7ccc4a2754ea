//! The processes under load and what the calls need: the example MCP server
//! (streamable HTTP, and a second one on TLS), mcp-service (release binary,
//! SQLite), an HTTP, an HTTPS and a stdio integration of the example server,
//! a direct MCP session on it, and the Python mcp-proxy in front of it over
//! stdio.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use anyhow::{Context as _, bail};
use switchboard_proto::mcp::v1::{self as pb, mcp_service_client::McpServiceClient};
use switchboard_test_support::{
    TEST_JWT_SECRET, authed,
    bench::KillOnDrop,
    grpc::{free_port, wait_serving},
    http_integration_request, token,
};
use tonic::transport::Channel;

use crate::{
    mcp_session::{McpSession, open_session},
    python_proxy::{self, PythonProxy},
};

/// Everything a benchmark run calls.
#[derive(Debug)]
pub struct Setup {
    /// mcp-service's gRPC URL.
    pub grpc_url: String,
    /// A token of the benchmark's organization.
    pub token: String,
    /// The integration reaching the example server over streamable HTTP.
    pub http_integration: String,
    /// The integration reaching the TLS example server.
    pub https_integration: String,
    /// The integration starting the example server over stdio.
    pub stdio_integration: String,
    /// The direct MCP session on the example server.
    pub direct: McpSession,
    /// The Python mcp-proxy in front of the example server over stdio.
    pub python_proxy: PythonProxy,
    /// mcp-service's process.
    pub service: KillOnDrop,
    /// The example server's process.
    pub upstream: KillOnDrop,
    _tls_upstream: KillOnDrop,
    _dir: tempfile::TempDir,
}

/// Starts the processes and creates the integrations.
pub async fn start() -> anyhow::Result<Setup> {
    // First: without the proxy there is nothing to compare the stdio path with.
    let proxy_program = python_proxy::program()?;
    if pinned() {
        // Before the example servers start: they inherit this CPU.
        taskset(&["-a", "-p", "-c", LOAD_CPU, &std::process::id().to_string()])?;
    }
    let dir = tempfile::tempdir()?;
    let example = release_binary("example-mcp-server")?;
    let upstream_port = free_port()?;
    let upstream = example_http(&example, upstream_port, &[])?;
    let tls_port = free_port()?;
    let ca_file = dir.path().join("upstream-ca.pem");
    let tls_upstream = example_http(
        &example,
        tls_port,
        &[
            "--tls".as_ref(),
            "--certificate-out".as_ref(),
            ca_file.as_os_str(),
        ],
    )?;
    wait_for_file(&ca_file).await?;
    let upstream_addr = SocketAddr::from(([127, 0, 0, 1], upstream_port));
    let (service, grpc_url) = mcp_service(dir.path(), &example, &ca_file).await?;
    let token = token("bench-org", "bench-user", &["admin"]);
    let channel = Channel::from_shared(grpc_url.clone())?.connect().await?;
    let upstream_url = format!("http://{upstream_addr}/mcp");
    let http_integration = create(
        &channel,
        &token,
        http_integration_request("bench_http", &upstream_url),
    )
    .await?;
    let https_url = format!("https://127.0.0.1:{tls_port}/mcp");
    let https_integration = create(
        &channel,
        &token,
        http_integration_request("bench_https", &https_url),
    )
    .await?;
    let stdio_integration = create(&channel, &token, stdio_request(&example)).await?;
    let direct = open_session(upstream_addr).await?;
    let python_proxy = python_proxy::start(&proxy_program, &example).await?;
    Ok(Setup {
        grpc_url,
        token,
        http_integration,
        https_integration,
        stdio_integration,
        direct,
        python_proxy,
        service,
        upstream,
        _tls_upstream: tls_upstream,
        _dir: dir,
    })
}

/// The example server over streamable HTTP on `port`, with `extra` arguments.
fn example_http(
    example: &Path,
    port: u16,
    extra: &[&std::ffi::OsStr],
) -> anyhow::Result<KillOnDrop> {
    let child = Command::new(example)
        .args(["--transport", "http", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting the example MCP server")?;
    Ok(KillOnDrop(child))
}

/// Waits until the TLS example server has written its certificate.
async fn wait_for_file(path: &Path) -> anyhow::Result<()> {
    for _ in 0..300 {
        if std::fs::metadata(path).is_ok_and(|m| m.len() > 0) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("{} was not written", path.display())
}

/// A release binary of the workspace, built by `scripts/bench-execute-tool.sh`
/// with the features the workspace build gives it (building each package
/// alone would build its dependencies again with fewer features).
fn release_binary(name: &str) -> anyhow::Result<PathBuf> {
    switchboard_test_support::built_binary(name, "run scripts/bench-execute-tool.sh")
}

/// The CPU of the load generator and the HTTP example servers, and the one
/// of mcp-service (with the stdio server it starts, as in its own pod) and of
/// the Python mcp-proxy it is compared with (with its stdio server), when
/// [`pinned`].
const LOAD_CPU: &str = "0";
const SERVICE_CPU: &str = "1";

/// SWITCHBOARD_BENCH_PIN=1: mcp-service on a CPU of its own, so that its
/// calls/s show what it serves with one core rather than what is left of
/// two cores shared with the load generator and the upstream.
pub fn pinned() -> bool {
    std::env::var("SWITCHBOARD_BENCH_PIN").is_ok_and(|value| value == "1")
}

/// A command running `program`, on mcp-service's CPU when [`pinned`].
pub fn on_service_cpu(program: &Path) -> Command {
    if pinned() {
        let mut command = Command::new("taskset");
        command.args(["-c", SERVICE_CPU]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn taskset(args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new("taskset")
        .args(args)
        .stdout(Stdio::null())
        .status()
        .context("running taskset (util-linux)")?;
    anyhow::ensure!(status.success(), "taskset {args:?} failed: {status}");
    Ok(())
}

/// mcp-service as a release binary, with limits that leave the benchmark's
/// callers alone (it measures speed, not refusals).
async fn mcp_service(
    dir: &Path,
    example: &Path,
    ca_file: &Path,
) -> anyhow::Result<(KillOnDrop, String)> {
    let port = free_port()?;
    // SWITCHBOARD_BENCH_MCP_BIN: another mcp-service binary (a build kept
    // from before a change), for comparing two builds round by round.
    let binary = match std::env::var_os("SWITCHBOARD_BENCH_MCP_BIN") {
        Some(path) => PathBuf::from(path),
        None => release_binary("mcp-service")?,
    };
    let mut command = on_service_cpu(&binary);
    // SWITCHBOARD_BENCH_MCP_WORKERS: mcp-service's runtime threads
    // (TOKIO_WORKER_THREADS), for comparing runtime sizes; the load
    // generator and the example server keep theirs.
    if let Ok(workers) = std::env::var("SWITCHBOARD_BENCH_MCP_WORKERS") {
        command.env("TOKIO_WORKER_THREADS", workers);
    }
    let child = command
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .current_dir(dir)
        .env_remove("DATABASE_URL")
        .env("SWITCHBOARD_DATA_DIR", dir.join("data"))
        .env("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET)
        .env("SWITCHBOARD_DEV_MODE", "true")
        .env("SWITCHBOARD_OUTBOUND_ALLOW", "127.0.0.1/32")
        .env("SWITCHBOARD_MCP_TLS_CA_FILE", ca_file)
        // The same root for a build from before that setting.
        .env("SSL_CERT_FILE", ca_file)
        .env(
            "SWITCHBOARD_STDIO_ALLOW",
            format!("{} --transport stdio", example.display()),
        )
        .env("SWITCHBOARD_ORG_RATE_LIMIT", "100000000")
        .env("SWITCHBOARD_ORG_RATE_BURST", "100000000")
        .env("RUST_LOG", "warn")
        .env("SWITCHBOARD_LOG_FORMAT", "pretty")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting mcp-service")?;
    let url = format!("http://127.0.0.1:{port}");
    let started = wait_serving(&url, "", Duration::from_secs(30)).await?;
    eprintln!(
        "mcp-service SERVING {} ms after its start",
        started.as_millis()
    );
    Ok((KillOnDrop(child), url))
}

fn stdio_request(example: &Path) -> pb::CreateIntegrationRequest {
    pb::CreateIntegrationRequest {
        display_name: "bench_stdio".into(),
        slug: "bench_stdio".into(),
        source: Some(pb::create_integration_request::Source::Custom(
            pb::CustomIntegrationSpec {
                transport: Some(pb::Transport {
                    kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                        command: example.display().to_string(),
                        args: vec!["--transport".into(), "stdio".into()],
                        ..Default::default()
                    })),
                }),
                auth: None,
            },
        )),
        ..Default::default()
    }
}

async fn create(
    channel: &Channel,
    token: &str,
    request: pb::CreateIntegrationRequest,
) -> anyhow::Result<String> {
    let created = McpServiceClient::new(channel.clone())
        .create_integration(authed(request, token))
        .await?
        .into_inner();
    Ok(created.integration.context("no integration")?.id)
}

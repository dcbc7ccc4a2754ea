//! The load generator: a fixed number of callers, each on its own
//! connection, each making its share of the calls one after the other;
//! every call's latency is kept and every answer checked.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use switchboard_proto::mcp::v1::{self as pb, mcp_service_client::McpServiceClient};
use switchboard_test_support::authed;
use tonic::transport::Channel;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

use crate::{
    mcp_session::{McpSession, connect_http, post},
    setup::Setup,
};

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// MCP `tools/call` straight to the example server over HTTP.
    Direct,
    /// A gRPC call that does nothing: mcp-service's health check.
    GrpcEcho,
    /// ExecuteTool through mcp-service, upstream over streamable HTTP.
    ViaHttp,
    /// ExecuteTool through mcp-service, upstream over streamable HTTP on
    /// TLS (a second example server, offering HTTP/2 by ALPN).
    ViaHttps,
    /// ExecuteTool through mcp-service, upstream over stdio.
    ViaStdio,
    /// MCP `tools/call` to the Python `mcp-proxy` (PyPI), which serves
    /// streamable HTTP in front of the example server over stdio: the
    /// reference the stdio path is compared with.
    PythonProxyStdio,
}

impl Path {
    /// Every path, in the order each round runs them.
    pub const ALL: [Path; 6] = [
        Path::Direct,
        Path::ViaHttp,
        Path::GrpcEcho,
        Path::ViaStdio,
        Path::PythonProxyStdio,
        Path::ViaHttps,
    ];

    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Path::Direct => "direct HTTP tools/call",
            Path::GrpcEcho => "gRPC echo (health check)",
            Path::ViaHttp => "mcp-service → streamable HTTP",
            Path::ViaStdio => "mcp-service → stdio",
            Path::ViaHttps => "mcp-service → streamable HTTPS",
            Path::PythonProxyStdio => "Python mcp-proxy → stdio",
        }
    }
}

/// One run's figures.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub p50: Duration,
    pub p99: Duration,
    pub per_second: f64,
}

fn stats(mut latencies: Vec<Duration>, wall: Duration) -> Stats {
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Stats {
        p50: at(0.50),
        p99: at(0.99),
        per_second: latencies.len() as f64 / wall.as_secs_f64(),
    }
}

/// One caller: its own connection to whatever it calls.
enum Caller {
    /// MCP `tools/call` on a session of its own connection (direct, or
    /// through the Python proxy).
    Mcp(Path, SendRequest<Full<Bytes>>, McpSession, Arc<AtomicU64>),
    Echo(HealthClient<Channel>, String),
    Execute(
        McpServiceClient<Channel>,
        Box<pb::ExecuteToolRequest>,
        String,
    ),
}

impl Caller {
    async fn new(
        setup: &Setup,
        path: Path,
        ids: &Arc<AtomicU64>,
        number: usize,
    ) -> anyhow::Result<Self> {
        let session = match path {
            Path::Direct => Some(&setup.direct),
            Path::PythonProxyStdio => Some(&setup.python_proxy.session),
            _ => None,
        };
        if let Some(session) = session {
            let sender = connect_http(session.addr).await?;
            return Ok(Caller::Mcp(path, sender, session.clone(), ids.clone()));
        }
        let channel = Channel::from_shared(setup.grpc_url.clone())?
            .tcp_nodelay(true)
            .connect()
            .await?;
        let integration_id = match path {
            Path::GrpcEcho => {
                return Ok(Caller::Echo(
                    HealthClient::new(channel),
                    setup.token.clone(),
                ));
            }
            Path::ViaStdio => &setup.stdio_integration,
            Path::ViaHttps => &setup.https_integration,
            _ => &setup.http_integration,
        };
        let request = pb::ExecuteToolRequest {
            integration_id: integration_id.clone(),
            tool_name: "echo".into(),
            arguments_json: r#"{"text":"ping"}"#.into(),
            // One upstream session shared by every caller, unless
            // SWITCHBOARD_BENCH_SCOPES spreads them over several.
            session_scope: format!("bench-{}", number % session_scopes()),
            ..Default::default()
        };
        Ok(Caller::Execute(
            McpServiceClient::new(channel),
            Box::new(request),
            setup.token.clone(),
        ))
    }

    async fn call(&mut self) -> anyhow::Result<()> {
        match self {
            Caller::Mcp(path, sender, session, ids) => {
                let id = ids.fetch_add(1, Ordering::Relaxed);
                let message = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"ping"}}}}}}"#
                );
                let (status, _, body) = post(
                    sender,
                    session.addr,
                    Some(&session.session_id),
                    Bytes::from(message),
                )
                .await?;
                let body = std::str::from_utf8(&body)?;
                if !status.is_success() || !body.contains(r#""text":"ping""#) {
                    bail!("{} answered {status}: {body}", path.name());
                }
            }
            Caller::Echo(client, token) => {
                let request = HealthCheckRequest {
                    service: String::new(),
                };
                client.check(authed(request, token)).await?;
            }
            Caller::Execute(client, request, token) => {
                let response = client
                    .execute_tool(authed((**request).clone(), token))
                    .await?
                    .into_inner();
                if response.is_error || response.content.is_empty() {
                    bail!("ExecuteTool failed: {response:?}");
                }
            }
        }
        Ok(())
    }
}

/// Upstream sessions the ExecuteTool callers are spread over
/// (`SWITCHBOARD_BENCH_SCOPES`, default 1: every caller on one session).
fn session_scopes() -> usize {
    std::env::var("SWITCHBOARD_BENCH_SCOPES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

/// `calls` calls on `path` from `callers` callers, each on its own
/// connection (connected before the clock starts).
pub async fn drive(
    setup: &Setup,
    path: Path,
    callers: usize,
    calls: usize,
) -> anyhow::Result<Stats> {
    let ids = Arc::new(AtomicU64::new(1_000_000 * (path as u64 + 1)));
    let mut connected = Vec::with_capacity(callers);
    for number in 0..callers {
        connected.push(Caller::new(setup, path, &ids, number).await?);
    }
    let per_caller = calls / callers;
    let started = Instant::now();
    let workers: Vec<_> = connected
        .into_iter()
        .map(|mut caller| {
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(per_caller);
                for _ in 0..per_caller {
                    let t = Instant::now();
                    caller.call().await?;
                    latencies.push(t.elapsed());
                }
                anyhow::Ok(latencies)
            })
        })
        .collect();
    let mut all = Vec::with_capacity(calls);
    for worker in workers {
        all.extend(worker.await.context("a caller panicked")??);
    }
    Ok(stats(all, started.elapsed()))
}

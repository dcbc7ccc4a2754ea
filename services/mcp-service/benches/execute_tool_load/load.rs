//! The load generator: a fixed number of callers, each on its own
//! connection, each making its share of the calls one after the other;
//! every call's latency is kept and every answer checked.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use switchboard_proto::mcp::v1::{self as pb, mcp_service_client::McpServiceClient};
use switchboard_test_support::authed;
use tokio::net::TcpStream;
use tonic::transport::Channel;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

use crate::setup::{PROTOCOL_VERSION, Setup};

/// The direct MCP session on the example server.
#[derive(Debug, Clone)]
pub struct DirectSession {
    /// Where the server listens.
    pub addr: SocketAddr,
    /// The session every direct call joins.
    pub session_id: String,
}

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
}

impl Path {
    /// Every path, in the order each round runs them.
    pub const ALL: [Path; 5] = [
        Path::Direct,
        Path::ViaHttp,
        Path::GrpcEcho,
        Path::ViaStdio,
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

/// A bare HTTP/1.1 connection to `addr`, with TCP_NODELAY.
pub async fn connect_http(addr: SocketAddr) -> anyhow::Result<SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

/// POSTs `message` to the MCP endpoint; the status, headers and whole body.
pub async fn post(
    sender: &mut SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    session: Option<&str>,
    message: Bytes,
) -> anyhow::Result<(StatusCode, HeaderMap, Bytes)> {
    let mut request = Request::post("/mcp")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let request = request.body(Full::new(message))?;
    sender.ready().await?;
    let response = sender.send_request(request).await?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    Ok((parts.status, parts.headers, body))
}

/// One caller: its own connection to whatever it calls.
enum Caller {
    Direct(SendRequest<Full<Bytes>>, DirectSession, Arc<AtomicU64>),
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
        if path == Path::Direct {
            let sender = connect_http(setup.direct.addr).await?;
            return Ok(Caller::Direct(sender, setup.direct.clone(), ids.clone()));
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
            Caller::Direct(sender, session, ids) => {
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
                    bail!("direct call answered {status}: {body}");
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

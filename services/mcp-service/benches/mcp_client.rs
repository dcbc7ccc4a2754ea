//! The MCP client path alone, without the gRPC service around it: the same
//! `tools/call` to the example server over streamable HTTP made
//!
//! - through an rmcp session built as mcp-service builds its sessions
//!   (`CappedHttpClient` over reqwest, the same transport settings), and
//! - as one bare HTTP POST with the same reqwest client, its JSON or SSE
//!   answer parsed, on a session initialized by hand,
//!
//! at 1 and 16 callers, in alternating rounds. The process's CPU per call is
//! the client's alone (the server is another process). The difference is
//! what a shorter `tools/call` path than rmcp's could save (BENCHMARKS.md).
//!
//! `cargo bench -p switchboard-mcp-service --bench mcp_client`
//! (`BENCH_ROUNDS`, `BENCH_CALLS` set the rounds and the calls per row).

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use rmcp::{
    ServiceExt as _,
    model::CallToolRequestParams,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use switchboard_mcp_service::outbound::mcp::transport::streamable_http::{
    capped::CappedHttpClient, standalone_stream::StandaloneStream,
};
use switchboard_test_support::{
    bench::{drive_callers, quiet_example_http_server},
    cpu_time,
};

const PROTOCOL_VERSION: &str = "2025-11-25";
const ACCEPT: &str = "application/json, text/event-stream";

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// `calls` calls of `op` from `callers` callers: calls/s, p50 and the
/// process's CPU per call.
async fn row<F, Fut>(name: &str, callers: usize, calls: usize, op: F)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let cpu = cpu_time(std::process::id());
    let (mut latencies, wall) = drive_callers(callers, calls, op).await;
    let cpu = cpu_time(std::process::id()).saturating_sub(cpu);
    latencies.sort_unstable();
    let n = latencies.len() as f64;
    println!(
        "| {name} | {callers} | {:.0} | {:.3} ms | {:.1} µs |",
        n / wall.as_secs_f64(),
        latencies[latencies.len() / 2].as_secs_f64() * 1e3,
        cpu.as_secs_f64() / n * 1e6,
    );
}

/// POSTs `message` on `session`; the answer's JSON-RPC message.
async fn post(http: &reqwest::Client, url: &str, session: Option<&str>, message: &Value) -> Value {
    let mut request = http
        .post(url)
        .header("accept", ACCEPT)
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .json(message);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.expect("the server answers");
    let sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let body = response.bytes().await.expect("a body");
    let text = std::str::from_utf8(&body).expect("UTF-8");
    let json = if sse {
        // The last event with data: the answer (after a priming event).
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|data| !data.is_empty())
            .unwrap_or("null")
    } else {
        text
    };
    serde_json::from_str(json).unwrap_or(Value::Null)
}

/// A session initialized by hand; its id.
async fn bare_session(http: &reqwest::Client, url: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}});
    let response = http
        .post(url)
        .header("accept", ACCEPT)
        .json(&initialize)
        .send()
        .await
        .expect("initialize answered");
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    drop(response.bytes().await);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(http, url, Some(&session), &initialized).await;
    session
}

/// An rmcp session built as mcp-service builds its sessions.
async fn rmcp_session(
    http: &reqwest::Client,
    url: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
        .reinit_on_expired_session(true)
        .max_sse_event_size(4 << 20)
        .max_concurrent_requests(1024);
    let transport = StreamableHttpClientTransport::with_client(
        CappedHttpClient::new(http.clone(), StandaloneStream::default()),
        config,
    );
    ().serve(transport).await.expect("an rmcp session")
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (rounds, calls) = (setting("BENCH_ROUNDS", 3), setting("BENCH_CALLS", 32_000));
    let port = switchboard_test_support::grpc::free_port().expect("a port");
    let _upstream = quiet_example_http_server(port)
        .await
        .expect("the example server starts");
    let url = format!("http://127.0.0.1:{port}/mcp");

    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .no_proxy()
        .build()
        .expect("an HTTP client");
    let rmcp_session = Arc::new(rmcp_session(&http, &url).await);
    let session: Arc<str> = bare_session(&http, &url).await.into();
    let ids = Arc::new(AtomicU64::new(1));

    println!("| client | callers | calls/s | p50 | client CPU per call |");
    println!("| --- | --- | --- | --- | --- |");
    for _ in 0..rounds {
        for callers in [1, 16] {
            let calls = if callers == 1 { calls / 8 } else { calls };
            let peer = rmcp_session.clone();
            row("rmcp session", callers, calls, move || {
                let peer = peer.clone();
                async move {
                    let arguments = json!({"text": "ping"});
                    let params = CallToolRequestParams::new("echo")
                        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
                    let result = peer.peer().call_tool(params).await.expect("a result");
                    assert_ne!(result.is_error, Some(true));
                }
            })
            .await;
            let (http, url, session, ids) =
                (http.clone(), url.clone(), session.clone(), ids.clone());
            row("bare POST", callers, calls, move || {
                let (http, url, session) = (http.clone(), url.clone(), session.clone());
                let id = ids.fetch_add(1, Ordering::Relaxed);
                async move {
                    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"text": "ping"}}});
                    let answer = post(&http, &url, Some(&session), &call).await;
                    assert!(answer.get("result").is_some(), "{answer}");
                }
            })
            .await;
        }
    }
}

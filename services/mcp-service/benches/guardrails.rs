//! What the guardrails cost: the detectors over one 64 KiB result (plain
//! text, and the same with secrets in it to redact), and ExecuteTool of a
//! 64 KiB `echo` (its arguments and its result both checked) with the
//! guardrails on against off, alternating rounds. See BENCHMARKS.md.
//!
//! `cargo bench -p switchboard-mcp-service --bench guardrails`

use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;
use switchboard_mcp_service::{Config, domain::guardrails::Guardrails};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, mcp_service_client::McpServiceClient},
};
use switchboard_test_support::{
    TEST_JWT_SECRET, TestDb, authed, bench::quiet_example_http_server, http_integration_request,
    token,
};
use tonic::transport::Channel;

const RESULT_BYTES: usize = 64 * 1024;

/// About 64 KiB of ordinary prose and numbers: what most results are.
fn prose() -> String {
    let line = "Order 10482 shipped to the Lyon warehouse on 2026-11-28; 14 items, total 1,204.50 EUR, carrier reference QX-2291.\n";
    line.repeat(RESULT_BYTES / line.len() + 1)[..RESULT_BYTES].to_owned()
}

/// The same with a secret of each common kind every 4 KiB.
fn with_secrets() -> String {
    let mut text = prose();
    for at in (0..RESULT_BYTES - 200).step_by(4096) {
        let at = (at..).find(|&i| text.is_char_boundary(i)).unwrap_or(at);
        text.insert_str(at, " AKIAIOSFODNN7EXAMPLE 4111 1111 1111 1111 ");
    }
    text
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn detectors() {
    println!("The detectors over one 64 KiB result (check_result, default actions)\n");
    let guardrails = Guardrails::default();
    for (name, text) in [("plain prose", prose()), ("with secrets", with_secrets())] {
        let result = CallToolResult::success(vec![ContentBlock::text(text)]);
        let mut times = Vec::with_capacity(2_000);
        for _ in 0..2_000 {
            let mut checked = result.clone();
            let started = Instant::now();
            guardrails.check_result(&mut checked);
            times.push(started.elapsed());
        }
        times.sort();
        let p50 = percentile(&times, 0.5);
        println!(
            "{name:<14} p50 {:>8.1} µs   p99 {:>8.1} µs   {:>6.0} MB/s",
            p50.as_secs_f64() * 1e6,
            percentile(&times, 0.99).as_secs_f64() * 1e6,
            RESULT_BYTES as f64 / p50.as_secs_f64() / 1e6
        );
    }
}

struct Service {
    _db: TestDb,
    _server: switchboard_server::RunningServer,
    channel: Channel,
    id: String,
}

async fn service(upstream: &str, guardrails_off: bool) -> Service {
    let db = TestDb::sqlite().expect("a database");
    let mut config = Config::for_tests(&db.url, TEST_JWT_SECRET);
    config.common.server.org_rate_limit = std::num::NonZeroU32::MAX;
    config.common.server.org_rate_burst = std::num::NonZeroU32::MAX;
    config.common.telemetry.log_filter = "warn".into();
    config.guardrails.off = guardrails_off;
    let server = switchboard_mcp_service::spawn(config)
        .await
        .expect("mcp-service starts");
    let channel = Channel::from_shared(server.url())
        .expect("url")
        .connect()
        .await
        .expect("connects");
    let admin = token("bench", "bench-admin", &["admin"]);
    let id = McpServiceClient::new(channel.clone())
        .create_integration(authed(http_integration_request("docs", upstream), &admin))
        .await
        .expect("created")
        .into_inner()
        .integration
        .expect("an integration")
        .id;
    Service {
        _db: db,
        _server: server,
        channel,
        id,
    }
}

/// `calls` sequential ExecuteTool calls of `echo` with 64 KiB of prose:
/// their p50.
async fn execute(s: &Service, calls: usize) -> Duration {
    let member = token("bench", "bench-member", &["member"]);
    let mut client = McpServiceClient::new(s.channel.clone());
    let arguments = json_to_struct(&json!({ "text": prose() }));
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let request = authed(
            pb::ExecuteToolRequest {
                integration_id: s.id.clone(),
                tool_name: "echo".into(),
                arguments: arguments.clone(),
                session_scope: "bench".into(),
                ..Default::default()
            },
            &member,
        );
        let started = Instant::now();
        let response = client.execute_tool(request).await.expect("answered");
        times.push(started.elapsed());
        assert!(!response.into_inner().is_error);
    }
    times.sort();
    percentile(&times, 0.5)
}

async fn execute_tool_rounds() {
    let calls = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    println!("\nExecuteTool of a 64 KiB echo, 1 caller, {calls} calls a round, alternating\n");
    let port = switchboard_test_support::grpc::free_port().expect("a port");
    let _upstream = quiet_example_http_server(port)
        .await
        .expect("example server");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (on, off) = (service(&url, false).await, service(&url, true).await);
    execute(&on, 100).await;
    execute(&off, 100).await;
    for round in 1..=3 {
        let without = execute(&off, calls).await;
        let with = execute(&on, calls).await;
        println!(
            "round {round}   off p50 {:>7.3} ms   on p50 {:>7.3} ms   {:+.1} %",
            without.as_secs_f64() * 1e3,
            with.as_secs_f64() * 1e3,
            (with.as_secs_f64() / without.as_secs_f64() - 1.0) * 100.0
        );
    }
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    detectors();
    execute_tool_rounds().await;
}

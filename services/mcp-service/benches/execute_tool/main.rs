//! ExecuteTool through mcp-service against a direct rmcp client call, over
//! mutual TLS against plaintext, and the reused-session path against
//! connecting per call; memory with 1,000 idle upstream sessions. See
//! BENCHMARKS.md.
//!
//! `cargo bench -p switchboard-mcp-service --bench execute_tool`
//! (`BENCH_TLS=off` leaves out the rows over TLS).

mod tls_rows;

use std::{
    future::Future,
    sync::Arc,
    time::{Duration, Instant},
};

use rmcp::{
    ServiceExt as _, model::CallToolRequestParams, transport::StreamableHttpClientTransport,
};
use serde_json::json;
use switchboard_mcp_service::Config;
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, mcp_service_client::McpServiceClient},
};
use switchboard_telemetry::{TelemetryConfig, TelemetryGuard};
use switchboard_test_support::{
    TEST_JWT_SECRET, TestDb, authed,
    bench::{drive_callers, quiet_example_http_server},
    cpu_time, http_integration_request,
    otlp::Collector,
    token,
};
use tonic::transport::Channel;

use crate::tls_rows::{Caller, tls_rows};

/// Calls per row; `BENCH_CALLS` sets another count.
fn calls() -> usize {
    std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4000)
}

/// Runs `row` and prints the CPU time this process spent per call in it,
/// less that of the OTLP collector (on a thread of its own) when there is
/// one, which is printed apart.
pub(crate) async fn with_cpu<T>(
    name: &str,
    calls: usize,
    collector: Option<&Collector>,
    row: impl Future<Output = T>,
) -> T {
    let collector_cpu = || collector.map(Collector::cpu_time).unwrap_or_default();
    let (before, collector_before) = (cpu_time(std::process::id()), collector_cpu());
    let result = row.await;
    let collected = collector_cpu().saturating_sub(collector_before);
    let spent = cpu_time(std::process::id())
        .saturating_sub(before)
        .saturating_sub(collected);
    let per_call = |d: Duration| d.as_secs_f64() * 1e6 / calls as f64;
    println!(
        "  CPU of callers and mcp-service, {name}: {:.1} µs per call",
        per_call(spent)
    );
    if collector.is_some() {
        println!(
            "  CPU of the OTLP collector, {name}: {:.1} µs per call",
            per_call(collected)
        );
    }
    result
}

/// The benchmark's tool call, as an rmcp client sends it.
fn echo() -> CallToolRequestParams {
    CallToolRequestParams::new("echo").with_arguments(
        json!({"text": "ping"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

#[derive(Debug)]
pub(crate) struct Stats {
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

/// Runs `calls` calls of `op` from `concurrency` callers.
pub(crate) async fn drive<F, Fut>(concurrency: usize, calls: usize, op: F) -> Stats
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let (latencies, wall) = drive_callers(concurrency, calls, op).await;
    stats(latencies, wall)
}

/// Runs `calls` calls each of `a` and `b` from one caller, alternating, so
/// that whatever else the machine does slows both alike; calls/s is from the
/// time spent in the calls.
pub(crate) async fn interleaved<A, AF, B, BF>(calls: usize, a: A, b: B) -> (Stats, Stats)
where
    A: Fn() -> AF,
    AF: Future<Output = ()>,
    B: Fn() -> BF,
    BF: Future<Output = ()>,
{
    let (mut first, mut second) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for _ in 0..calls {
        let t = Instant::now();
        a().await;
        first.push(t.elapsed());
        let t = Instant::now();
        b().await;
        second.push(t.elapsed());
    }
    let busy = |latencies: &[Duration]| latencies.iter().sum::<Duration>();
    let (first_busy, second_busy) = (busy(&first), busy(&second));
    (stats(first, first_busy), stats(second, second_busy))
}

pub(crate) fn report(name: &str, s: &Stats) {
    println!(
        "{name:<44} p50 {:>8.3} ms   p99 {:>8.3} ms   {:>9.0} calls/s",
        s.p50.as_secs_f64() * 1e3,
        s.p99.as_secs_f64() * 1e3,
        s.per_second
    );
}

/// Telemetry as `BENCH_TRACING` says: unset, none installed; `local`, the
/// services' default (spans made and context forwarded, nothing exported);
/// `export`, every span exported to an OTLP collector in this process (on a
/// thread of its own, whose CPU time is counted apart).
async fn install_tracing() -> Option<(TelemetryGuard, Option<Collector>)> {
    let mode = std::env::var("BENCH_TRACING").ok()?;
    let collector = match mode.as_str() {
        "local" => None,
        "export" => Some(Collector::start_on_own_thread()),
        other => panic!("BENCH_TRACING is local or export, not {other}"),
    };
    let config = TelemetryConfig {
        log_filter: "warn".into(),
        otlp_endpoint: collector.as_ref().map(Collector::endpoint),
        ..TelemetryConfig::new("mcp-service")
    };
    println!("tracing: {mode}");
    let guard = switchboard_telemetry::init_with_writer(&config, std::io::sink)
        .expect("telemetry installed");
    Some((guard, collector))
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tracing = install_tracing().await;
    let port = switchboard_test_support::grpc::free_port().expect("a port");
    let upstream = quiet_example_http_server(port)
        .await
        .expect("the example server starts");
    let url = format!("http://127.0.0.1:{port}/mcp");

    let db = TestDb::sqlite().expect("a database");
    let mut config = Config::for_tests(&db.url, TEST_JWT_SECRET);
    config.max_sessions = 5000;
    // One organization makes every call here, 16 callers at once: its
    // per-organization rate must not be what is measured.
    config.common.server.org_rate_limit = std::num::NonZeroU32::MAX;
    config.common.server.org_rate_burst = std::num::NonZeroU32::MAX;
    config.common.telemetry.log_filter = "warn".into();
    // `BENCH_AUDIT=off`: without the audit trail, to tell its cost per call
    // from the rest of the path's.
    config.audit.enabled = std::env::var("BENCH_AUDIT").as_deref() != Ok("off");
    let tls_config = config.clone();
    let server = switchboard_mcp_service::spawn(config)
        .await
        .expect("mcp-service starts");
    let channel = Channel::from_shared(server.url())
        .expect("url")
        .connect()
        .await
        .expect("connects");
    let mut client = McpServiceClient::new(channel.clone());
    let admin = token("bench", "bench-user", &["admin"]);
    let id = client
        .create_integration(authed(http_integration_request("bench", &url), &admin))
        .await
        .expect("created")
        .into_inner()
        .integration
        .expect("an integration")
        .id;

    let arguments = json_to_struct(&json!({"text": "ping"}));
    let caller = Caller {
        channel: channel.clone(),
        integration_id: id.clone(),
        token: admin.clone(),
        arguments: arguments.clone(),
    };
    let via_service = {
        let caller = caller.clone();
        move || caller.call()
    };
    let direct_client = Arc::new(
        ().serve(StreamableHttpClientTransport::from_uri(url.clone()))
            .await
            .expect("direct client connects"),
    );
    let direct = {
        let direct_client = direct_client.clone();
        move || {
            let peer = direct_client.peer().clone();
            async move {
                peer.call_tool(echo()).await.expect("direct call");
            }
        }
    };

    // Warm both paths (connections, sessions, allocator).
    drive(4, 400, via_service.clone()).await;
    drive(4, 400, direct.clone()).await;

    let calls = calls();
    println!(
        "ExecuteTool on a fast upstream (echo), {calls} calls per row; at 1 caller direct and through mcp-service alternate\n"
    );
    let (direct_1, service_1) = interleaved(calls, direct.clone(), via_service.clone()).await;
    report("direct rmcp call, 1 caller", &direct_1);
    report("through mcp-service, 1 caller", &service_1);
    let collector = tracing
        .as_ref()
        .and_then(|(_, collector)| collector.as_ref());
    let direct_16 = with_cpu("direct", calls, collector, drive(16, calls, direct.clone())).await;
    report("direct rmcp call, 16 callers", &direct_16);
    let service_16 = with_cpu(
        "through mcp-service",
        calls,
        collector,
        drive(16, calls, via_service.clone()),
    )
    .await;
    report("through mcp-service, 16 callers", &service_16);
    if std::env::var("BENCH_TLS").as_deref() != Ok("off") {
        tls_rows(tls_config, &server.url(), &caller, calls, collector).await;
    }
    if std::env::var_os("BENCH_OVERHEAD_ONLY").is_some() {
        println!(
            "added p50 at 1 caller: {:.3} ms; throughput at 16 callers: {:.0}% of direct",
            (service_1.p50.as_secs_f64() - direct_1.p50.as_secs_f64()) * 1e3,
            service_16.per_second / direct_16.per_second * 100.0
        );
        report_exported(tracing.as_ref());
        return;
    }

    let connect_per_call = {
        let url = url.clone();
        move || {
            let url = url.clone();
            async move {
                let client =
                    ().serve(StreamableHttpClientTransport::from_uri(url))
                        .await
                        .expect("connects");
                client.call_tool(echo()).await.expect("call");
                let _ = client.cancel().await;
            }
        }
    };
    let per_call = drive(1, 200, connect_per_call.clone()).await;
    report("connect per call (initialize + call + close)", &per_call);
    let per_call_16 = drive(16, 400, connect_per_call).await;
    report(
        "connect per call (initialize + call + close), 16 callers",
        &per_call_16,
    );
    let fresh = {
        let (channel, id, admin, arguments) = (
            channel.clone(),
            id.clone(),
            admin.clone(),
            arguments.clone(),
        );
        let counter = Arc::new(std::sync::atomic::AtomicU64::new(0));
        move || {
            let mut client = McpServiceClient::new(channel.clone());
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let request = authed(
                pb::ExecuteToolRequest {
                    integration_id: id.clone(),
                    tool_name: "echo".into(),
                    arguments: arguments.clone(),
                    session_scope: format!("fresh-{n}"),
                    arguments_json: String::new(),
                    ..Default::default()
                },
                &admin,
            );
            async move {
                assert!(
                    !client
                        .execute_tool(request)
                        .await
                        .expect("answered")
                        .into_inner()
                        .is_error
                );
            }
        }
    };
    let per_call_service = drive(1, 200, fresh).await;
    report(
        "through mcp-service, a new session per call",
        &per_call_service,
    );

    println!();
    println!(
        "added p50 at 1 caller: {:.3} ms (target <= 0.15 ms)",
        (service_1.p50.as_secs_f64() - direct_1.p50.as_secs_f64()) * 1e3
    );
    println!(
        "throughput at 16 callers: {:.0}% of direct (target >= 60%)",
        service_16.per_second / direct_16.per_second * 100.0
    );
    println!(
        "reused session vs a new session per call, both through mcp-service, HTTP connections kept: {:.1}x calls/s",
        service_1.per_second / per_call_service.per_second
    );
    println!(
        "reused session through mcp-service vs a bare rmcp connect-call-close: {:.1}x calls/s at 1 caller, {:.1}x at 16 (target >= 10x)",
        service_1.per_second / per_call.per_second,
        service_16.per_second / per_call_16.per_second
    );

    let me = std::process::id();
    let before = rss_kib(me);
    for i in 0..1000 {
        let response = client
            .execute_tool(authed(
                pb::ExecuteToolRequest {
                    integration_id: id.clone(),
                    tool_name: "echo".into(),
                    arguments: arguments.clone(),
                    session_scope: format!("idle-{i}"),
                    arguments_json: String::new(),
                    ..Default::default()
                },
                &admin,
            ))
            .await
            .expect("answered")
            .into_inner();
        assert!(!response.is_error);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib(me);
    println!(
        "RSS of the benchmark process (mcp-service in-process): {} MiB before, {} MiB with 1,000 idle upstream sessions (+{:.1} KiB per session); upstream server RSS {} MiB",
        before / 1024,
        after / 1024,
        (after.saturating_sub(before)) as f64 / 1000.0,
        rss_kib(upstream.0.id()) / 1024
    );
    report_exported(tracing.as_ref());
    server.stop().await.expect("stops");
}

fn report_exported(tracing: Option<&(TelemetryGuard, Option<Collector>)>) {
    if let Some((guard, Some(collector))) = tracing {
        tokio::task::block_in_place(|| guard.flush());
        println!("spans exported: {}", collector.spans().len());
    }
}

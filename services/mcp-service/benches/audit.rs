//! What the audit trail costs a call: ExecuteTool through mcp-service with
//! the trail off and on, side by side in one run (rounds alternate so that
//! drift hits both alike), on SQLite and PostgreSQL; and the cost of one
//! append to the store itself, alone and in a batch, which the writer task
//! takes off the call's path. See BENCHMARKS.md.
//!
//! `cargo bench -p switchboard-mcp-service --bench audit` (PostgreSQL on
//! `SWITCHBOARD_TEST_POSTGRES_URL`, `make postgres`)

use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_auth::Principal;
use switchboard_mcp_service::{
    Config,
    domain::audit::{AuditAction, AuditOutcome, AuditRecord},
    outbound::storage::{audit::SqlAuditLog, sql::MIGRATIONS},
};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, mcp_service_client::McpServiceClient},
};
use switchboard_test_support::{
    DbKind, TEST_JWT_SECRET, TestDb, authed, bench::quiet_example_http_server,
    http_integration_request, token,
};
use tonic::transport::Channel;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

struct Service {
    _db: TestDb,
    _server: switchboard_server::RunningServer,
    channel: Channel,
    id: String,
}

async fn service(kind: DbKind, upstream_port: u16, audit: bool) -> Service {
    let db = TestDb::new(kind).await.expect("a database");
    let mut config = Config::for_tests(&db.url, TEST_JWT_SECRET);
    config.common.server.org_rate_limit = std::num::NonZeroU32::MAX;
    config.common.server.org_rate_burst = std::num::NonZeroU32::MAX;
    config.common.telemetry.log_filter = "warn".into();
    config.audit.enabled = audit;
    let server = switchboard_mcp_service::spawn(config)
        .await
        .expect("mcp-service starts");
    let channel = Channel::from_shared(server.url())
        .expect("url")
        .connect()
        .await
        .expect("connects");
    let admin = token("bench", "bench-admin", &["admin"]);
    let url = format!("http://127.0.0.1:{upstream_port}/mcp");
    let id = McpServiceClient::new(channel.clone())
        .create_integration(authed(http_integration_request("github", &url), &admin))
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

/// `calls` sequential ExecuteTool calls of `echo` by a member.
async fn execute(s: &Service, calls: usize, times: &mut Vec<Duration>) {
    let member = token("bench", "bench-member", &["member"]);
    let mut client = McpServiceClient::new(s.channel.clone());
    let arguments = json_to_struct(&json!({"text": "ping"}));
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
}

async fn execute_tool_rows(kind: DbKind, upstream_port: u16, calls: usize) {
    let off = service(kind, upstream_port, false).await;
    let on = service(kind, upstream_port, true).await;
    let (mut off_times, mut on_times) = (Vec::new(), Vec::new());
    execute(&off, 200, &mut Vec::new()).await;
    execute(&on, 200, &mut Vec::new()).await;
    let rounds = 4;
    for _ in 0..rounds {
        execute(&off, calls / rounds, &mut off_times).await;
        execute(&on, calls / rounds, &mut on_times).await;
    }
    off_times.sort();
    on_times.sort();
    let (p50_off, p99_off) = (percentile(&off_times, 0.5), percentile(&off_times, 0.99));
    let (p50_on, p99_on) = (percentile(&on_times, 0.5), percentile(&on_times, 0.99));
    println!(
        "{kind:?}  audit off  p50 {:>7.3} ms   p99 {:>7.3} ms",
        ms(p50_off),
        ms(p99_off)
    );
    println!(
        "{kind:?}  audit on   p50 {:>7.3} ms   p99 {:>7.3} ms   (p50 +{:.3} ms, {:+.1}%)",
        ms(p50_on),
        ms(p99_on),
        ms(p50_on.saturating_sub(p50_off)),
        (p50_on.as_secs_f64() / p50_off.as_secs_f64() - 1.0) * 100.0
    );
}

fn record() -> AuditRecord {
    let caller = Principal::new("bench", "bench-member", vec!["member".to_owned()]);
    let mut record = AuditRecord::by(&caller, AuditAction::ToolCall, AuditOutcome::Ok)
        .on("0190f0d0-0000-7000-8000-000000000000")
        .target("echo");
    record.arguments_digest = "0".repeat(64);
    record.duration_micros = Some(1234);
    record
}

/// One event per transaction (what a call would pay without the writer),
/// and batches of 64 (what the writer pays per event under load).
async fn store_rows(kind: DbKind, appends: usize) {
    let db = TestDb::new(kind).await.expect("a database");
    let database = switchboard_db::open(&db.url, MIGRATIONS, 8)
        .await
        .expect("opened");
    let store = SqlAuditLog::new(database.pool.clone());
    let mut times = Vec::with_capacity(appends);
    for _ in 0..appends {
        let started = Instant::now();
        store.append_all(vec![record()]).await.expect("appended");
        times.push(started.elapsed());
    }
    times.sort();
    let started = Instant::now();
    let batches = appends / 64;
    for _ in 0..batches {
        store
            .append_all((0..64).map(|_| record()).collect())
            .await
            .expect("appended");
    }
    let per_event = started.elapsed() / u32::try_from(batches * 64).unwrap_or(1);
    println!(
        "{kind:?}  one event per transaction  p50 {:>7.3} ms   p99 {:>7.3} ms;  batches of 64: {:>6.1} µs per event",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.99)),
        per_event.as_secs_f64() * 1e6
    );
}

async fn run() {
    let calls = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let port = switchboard_test_support::grpc::free_port().expect("a port");
    let _upstream = quiet_example_http_server(port)
        .await
        .expect("example server");
    println!("ExecuteTool (echo) through mcp-service, 1 caller, {calls} calls per row\n");
    for kind in [DbKind::Sqlite, DbKind::Postgres] {
        execute_tool_rows(kind, port, calls).await;
    }
    println!("\nThe store's append, without the writer task\n");
    for kind in [DbKind::Sqlite, DbKind::Postgres] {
        store_rows(kind, 1024).await;
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run());
}

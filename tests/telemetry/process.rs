//! A service running as its own process exports its spans on its own, on
//! the batch schedule of the standard `OTEL_BSP_*` variables: no caller
//! flushes them, and the process is still running when they arrive. Its
//! logs are quieted to warnings, which must not stop its traces.

use std::time::{Duration, Instant};

use switchboard_proto::mcp::v1::{ListIntegrationsRequest, mcp_service_client::McpServiceClient};
use switchboard_test_support::{
    TEST_JWT_SECRET, authed,
    grpc::{start_binary, wait_serving},
    otlp::Collector,
    token, workspace_binary,
};

/// How long the spans may take: many batch intervals of the test's setting.
const ARRIVAL_LIMIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_process_exports_its_spans_without_being_flushed() {
    let collector = Collector::start().await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let binary = workspace_binary("switchboard-mcp-service", "mcp-service");
    let endpoint = collector.endpoint();
    let service = start_binary(
        binary.to_str().expect("a UTF-8 path"),
        dir.path(),
        &[
            ("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET),
            ("SWITCHBOARD_DEV_MODE", "true"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
            ("RUST_LOG", "warn"),
        ],
    )
    .expect("mcp-service starts");
    wait_serving(&service.url, "", Duration::from_secs(60))
        .await
        .expect("serving");

    let mut client = McpServiceClient::connect(service.url.clone())
        .await
        .expect("connects");
    let admin = token("org-a", "user-a", &["admin"]);
    client
        .list_integrations(authed(ListIntegrationsRequest::default(), &admin))
        .await
        .expect("ListIntegrations answers");

    let wanted = "switchboard.mcp.v1.McpService/ListIntegrations";
    let started = Instant::now();
    while !collector.spans().iter().any(|s| s.name == wanted) {
        assert!(
            started.elapsed() < ARRIVAL_LIMIT,
            "no `{wanted}` span reached the collector within {ARRIVAL_LIMIT:?}; spans: {:?}",
            collector
                .spans()
                .iter()
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

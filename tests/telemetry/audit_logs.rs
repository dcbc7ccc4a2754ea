//! mcp-service running as its own process exports its audit events as
//! OpenTelemetry log records, in the trace of the call they record, and no
//! other log line: those stay on its stdout.

use std::{
    fs::File,
    process::Stdio,
    time::{Duration, Instant},
};

use opentelemetry_proto::tonic::{
    common::v1::any_value::Value, logs::v1::LogRecord, trace::v1::Span,
};
use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::mcp::v1::{self as mcp, mcp_service_client::McpServiceClient};
use switchboard_telemetry::AUDIT_TARGET;
use switchboard_test_support::{
    TEST_JWT_SECRET, authed,
    grpc::{start_binary_writing_to, wait_serving},
    otlp::{Collector, hex, log_attribute},
    token, workspace_binary,
};

use crate::world::create_integration;

/// How long the records may take: many batch intervals of the test's
/// setting.
const ARRIVAL_LIMIT: Duration = Duration::from_secs(20);
const TRACE: &str = "7ef92f3577b34da6a3ce929d0e0e4739";
const CLIENT_SPAN: &str = "00f067aa0ba902b8";
/// An argument of the call: audit records hold its digest, never it.
const CANARY_ARGUMENT: &str = "canary-argument-0c4e7a19";
const ORG: &str = "org-audit";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_calls_audit_event_reaches_the_collector_in_the_calls_trace_and_no_log_line_does() {
    let collector = Collector::start().await;
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("example server");
    let dir = tempfile::tempdir().expect("a temp dir");
    let stdout_path = dir.path().join("stdout.log");
    let stdout = File::create(&stdout_path).expect("a log file");
    let endpoint = collector.endpoint();
    let binary = workspace_binary("switchboard-mcp-service", "mcp-service");
    let service = start_binary_writing_to(
        binary.to_str().expect("a UTF-8 path"),
        dir.path(),
        &[
            ("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET),
            ("SWITCHBOARD_DEV_MODE", "true"),
            ("SWITCHBOARD_OUTBOUND_ALLOW", "127.0.0.0/8"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
            ("OTEL_BLRP_SCHEDULE_DELAY", "200"),
            ("RUST_LOG", "info"),
        ],
        Stdio::from(stdout),
    )
    .expect("mcp-service starts");
    wait_serving(&service.url, "", Duration::from_secs(60))
        .await
        .expect("serving");

    let mut client = McpServiceClient::connect(service.url.clone())
        .await
        .expect("connects");
    let admin = token(ORG, "user-audit", &["admin"]);
    let integration_id =
        create_integration(&mut client, &admin, "example", &upstream.url(), None).await;
    let mut request = authed(
        mcp::ExecuteToolRequest {
            integration_id: integration_id.clone(),
            tool_name: "echo".into(),
            arguments_json: serde_json::json!({ "text": CANARY_ARGUMENT }).to_string(),
            ..Default::default()
        },
        &admin,
    );
    request.metadata_mut().insert(
        "traceparent",
        format!("00-{TRACE}-{CLIENT_SPAN}-01")
            .parse()
            .expect("ascii"),
    );
    client
        .execute_tool(request)
        .await
        .expect("the tool answers");

    let record = tool_call_record(&collector).await;
    for (key, wanted) in [
        ("action", "tool_call"),
        ("outcome", "ok"),
        ("org_id", ORG),
        ("integration_id", integration_id.as_str()),
        ("audit_target", "echo"),
    ] {
        assert_eq!(
            log_attribute(&record, key).as_deref(),
            Some(wanted),
            "{key}: {record:?}"
        );
    }
    assert!(
        log_attribute(&record, "arguments_digest").is_some_and(|d| !d.is_empty()),
        "{record:?}"
    );
    assert_eq!(hex(&record.trace_id), TRACE, "the call's trace");
    let spans = spans_of_the_call(&collector).await;
    assert_within_the_call(&hex(&record.span_id), &spans);

    assert_only_audit_records(
        &collector,
        &std::fs::read_to_string(&stdout_path).unwrap_or_default(),
    );
    assert!(
        !collector.everything().contains(CANARY_ARGUMENT),
        "the arguments are not exported"
    );
    assert!(
        collector
            .log_resources()
            .iter()
            .all(|name| name == switchboard_mcp_service::SERVICE_NAME),
        "the service's resource: {:?}",
        collector.log_resources()
    );
}

/// The record of the tool call, once it has been exported.
async fn tool_call_record(collector: &Collector) -> LogRecord {
    let started = Instant::now();
    loop {
        let found = collector
            .log_records()
            .into_iter()
            .find(|(_, record)| log_attribute(record, "action").as_deref() == Some("tool_call"));
        if let Some((_, record)) = found {
            return record;
        }
        assert!(
            started.elapsed() < ARRIVAL_LIMIT,
            "no tool call record reached the collector within {ARRIVAL_LIMIT:?}: {:?}",
            collector.log_records()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The spans of the call's trace, once its server span has been exported.
async fn spans_of_the_call(collector: &Collector) -> Vec<Span> {
    let started = Instant::now();
    loop {
        let spans: Vec<Span> = collector
            .spans()
            .into_iter()
            .filter(|s| hex(&s.trace_id) == TRACE)
            .collect();
        if spans.iter().any(|s| hex(&s.parent_span_id) == CLIENT_SPAN) {
            return spans;
        }
        assert!(
            started.elapsed() < ARRIVAL_LIMIT,
            "the call's span never reached the collector"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `span_id` is the ExecuteTool server span or a span inside it.
fn assert_within_the_call(span_id: &str, spans: &[Span]) {
    let names = || spans.iter().map(|s| s.name.as_str()).collect::<Vec<_>>();
    let mut id = span_id.to_owned();
    loop {
        let span = spans
            .iter()
            .find(|s| hex(&s.span_id) == id)
            .unwrap_or_else(|| {
                panic!("the record's span {span_id} is in the trace: {:?}", names())
            });
        if span.name == "switchboard.mcp.v1.McpService/ExecuteTool" {
            return;
        }
        id = hex(&span.parent_span_id);
        assert_ne!(
            id,
            CLIENT_SPAN,
            "the record is in the call's span: {:?}",
            names()
        );
    }
}

/// Every record is of the audit target, and the service's other lines —
/// written to its stdout — are not records.
fn assert_only_audit_records(collector: &Collector, stdout: &str) {
    assert!(
        stdout.contains("\"message\":\"integration created\""),
        "the service logged a line of its own: {stdout}"
    );
    let records = collector.log_records();
    for (scope, record) in &records {
        assert_eq!(scope, AUDIT_TARGET, "{record:?}");
        let body = record.body.as_ref().and_then(|b| b.value.as_ref());
        assert!(
            !matches!(body, Some(Value::StringValue(text)) if text == "integration created"),
            "{record:?}"
        );
    }
    assert!(
        records
            .iter()
            .any(|(_, r)| log_attribute(r, "action").as_deref() == Some("integration_change")),
        "the integration's creation is audited too: {records:?}"
    );
}

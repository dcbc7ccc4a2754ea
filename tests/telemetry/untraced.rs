//! A service that exports no spans still carries its caller's trace: the
//! upstream MCP server gets the caller's trace id and flags under a span id
//! of the service's own, and the audit event of the call names the trace.

use std::time::Duration;

use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::mcp::v1::{
    ExecuteToolRequest, ListAuditEventsRequest, audit_service_client::AuditServiceClient,
    mcp_service_client::McpServiceClient,
};
use switchboard_test_support::{
    TEST_JWT_SECRET, authed,
    grpc::{start_binary, wait_serving},
    token, workspace_binary,
};

use crate::world::create_integration;

const CALLER_SPAN: &str = "00f067aa0ba902b7";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_exporting_nothing_carries_the_callers_trace_to_the_server_and_the_audit() {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("example server");
    let dir = tempfile::tempdir().expect("a temp dir");
    let binary = workspace_binary("switchboard-mcp-service", "mcp-service");
    let service = start_binary(
        binary.to_str().expect("a UTF-8 path"),
        dir.path(),
        &[
            ("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET),
            ("SWITCHBOARD_DEV_MODE", "true"),
            ("SWITCHBOARD_OUTBOUND_ALLOW", "127.0.0.1/32"),
            ("RUST_LOG", "warn"),
        ],
    )
    .expect("mcp-service starts");
    wait_serving(&service.url, "", Duration::from_secs(60))
        .await
        .expect("serving");
    let admin = token("org-a", "user-a", &["admin"]);
    let mut client = McpServiceClient::connect(service.url.clone())
        .await
        .expect("connects");
    let integration_id = create_integration(&mut client, &admin, "ex", &upstream.url(), None).await;

    for (trace, flags) in [
        ("4bf92f3577b34da6a3ce929d0e0e4736", "01"),
        ("5cf92f3577b34da6a3ce929d0e0e4737", "00"),
    ] {
        let mut request = authed(
            ExecuteToolRequest {
                integration_id: integration_id.clone(),
                tool_name: "echo".into(),
                arguments_json: r#"{"text":"traced"}"#.into(),
                ..Default::default()
            },
            &admin,
        );
        let traceparent = format!("00-{trace}-{CALLER_SPAN}-{flags}");
        request
            .metadata_mut()
            .insert("traceparent", traceparent.parse().expect("ascii"));
        let answer = client
            .execute_tool(request)
            .await
            .expect("called")
            .into_inner();
        assert!(!answer.is_error, "{answer:?}");

        let seen = upstream.stats.traceparents();
        let forwarded = seen
            .iter()
            .find(|seen| seen.split('-').nth(1) == Some(trace))
            .unwrap_or_else(|| panic!("the server saw the caller's trace {trace}: {seen:?}"));
        let parts: Vec<&str> = forwarded.split('-').collect();
        assert_ne!(
            parts[2], CALLER_SPAN,
            "a span id of the service's own: {forwarded}"
        );
        assert_eq!(parts[3], flags, "the caller's flags: {forwarded}");
    }

    let events = AuditServiceClient::connect(service.url.clone())
        .await
        .expect("connects")
        .list_audit_events(authed(ListAuditEventsRequest::default(), &admin))
        .await
        .expect("listed")
        .into_inner()
        .events;
    let traces: Vec<&str> = events.iter().map(|event| event.trace_id.as_str()).collect();
    assert!(
        traces.contains(&"4bf92f3577b34da6a3ce929d0e0e4736")
            && traces.contains(&"5cf92f3577b34da6a3ce929d0e0e4737"),
        "each call's event names its trace: {traces:?}"
    );
}

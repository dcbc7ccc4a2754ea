//! A team's own services, offered as gRPC and OpenAPI integrations, are
//! called in the caller's trace: the gRPC service (a process) reads the
//! caller's trace id in the `traceparent` metadata of the call, the HTTP
//! API in the `traceparent` header, each under a span id of mcp-service's
//! own.

use std::time::Duration;

use serde_json::Value;

use switchboard_proto::{
    json::struct_to_json,
    mcp::v1::{self as pb, mcp_service_client::McpServiceClient, transport::Kind},
};
use switchboard_test_support::{
    TEST_JWT_SECRET, authed,
    grpc::{start_binary, wait_serving},
    spawn_example_api, spawn_example_grpc_service, token, workspace_binary,
};
use tonic::transport::Channel;

const CALLER_SPAN: &str = "00f067aa0ba902b7";

async fn create(
    client: &mut McpServiceClient<Channel>,
    admin: &str,
    slug: &str,
    kind: Kind,
) -> String {
    let request = pb::CreateIntegrationRequest {
        display_name: slug.into(),
        slug: slug.into(),
        source: Some(pb::create_integration_request::Source::Custom(
            pb::CustomIntegrationSpec {
                transport: Some(pb::Transport { kind: Some(kind) }),
                auth: None,
            },
        )),
        ..Default::default()
    };
    client
        .create_integration(authed(request, admin))
        .await
        .expect("created")
        .into_inner()
        .integration
        .expect("an integration")
        .id
}

async fn call_in_trace(
    client: &mut McpServiceClient<Channel>,
    admin: &str,
    id: &str,
    tool: &str,
    arguments: &str,
    trace: &str,
) -> Value {
    let mut request = authed(
        pb::ExecuteToolRequest {
            integration_id: id.into(),
            tool_name: tool.into(),
            arguments_json: arguments.into(),
            ..Default::default()
        },
        admin,
    );
    let traceparent = format!("00-{trace}-{CALLER_SPAN}-01");
    request
        .metadata_mut()
        .insert("traceparent", traceparent.parse().expect("ascii"));
    let answer = client
        .execute_tool(request)
        .await
        .expect("called")
        .into_inner();
    assert!(!answer.is_error, "{answer:?}");
    struct_to_json(answer.structured_content.as_ref().expect("structured"))
}

fn assert_in_trace(seen: &str, trace: &str) {
    let parts: Vec<&str> = seen.split('-').collect();
    assert_eq!(parts.get(1), Some(&trace), "the caller's trace: {seen}");
    assert_ne!(
        parts.get(2),
        Some(&CALLER_SPAN),
        "a span of the service's own: {seen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_and_openapi_services_are_called_in_the_callers_trace() {
    let inventory = spawn_example_grpc_service();
    let api = spawn_example_api();
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

    let grpc = Kind::Grpc(pb::GrpcTransport {
        target: inventory.url.clone(),
        ..Default::default()
    });
    let grpc = create(&mut client, &admin, "inventory", grpc).await;
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let item = r#"{"id":"9007199254740993"}"#;
    call_in_trace(&mut client, &admin, &grpc, "Inventory_GetItem", item, trace).await;
    let seen = call_in_trace(
        &mut client,
        &admin,
        &grpc,
        "Inventory_LastCall",
        "{}",
        trace,
    )
    .await;
    assert_in_trace(seen["traceparent"].as_str().unwrap_or_default(), trace);

    let openapi = Kind::Openapi(pb::OpenApiTransport {
        base_url: api.base_url.clone(),
        document: api.document().await.to_string(),
        document_url: String::new(),
        operations: Vec::new(),
    });
    let openapi = create(&mut client, &admin, "pets", openapi).await;
    let trace = "5cf92f3577b34da6a3ce929d0e0e4737";
    call_in_trace(
        &mut client,
        &admin,
        &openapi,
        "getPet",
        r#"{"id":7}"#,
        trace,
    )
    .await;
    let seen = api.last_seen().await.expect("the API was called");
    assert_in_trace(seen["traceparent"].as_str().unwrap_or_default(), trace);
}

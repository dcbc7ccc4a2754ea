//! ExecuteTool's exact JSON: arguments sent as JSON text reach the server
//! unchanged, the structured result comes back as exact JSON text, and every
//! failure names its typed reason. Resource parameters and prompt arguments
//! sent as JSON text reach the server exactly too.

use std::time::Duration;

use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::mcp::v1 as pb;
use switchboard_test_support::DbKind;
use tonic::Code;

use crate::support::{Harness, admin, bad_fields, create, http_integration, req, start};

async fn call(
    h: &mut Harness,
    token: &str,
    id: &str,
    tool: &str,
    arguments_json: &str,
) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    h.client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.into(),
                tool_name: tool.into(),
                arguments: None,
                session_scope: "t".into(),
                arguments_json: arguments_json.into(),
                ..Default::default()
            },
            token,
        ))
        .await
        .map(tonic::Response::into_inner)
}

#[tokio::test]
async fn arguments_json_reaches_the_server_and_the_result_comes_back_exactly() {
    let upstream = spawn_http(HttpServerOptions {
        record_tool: true,
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    let mut h = start(DbKind::Sqlite).await;
    let token = admin("org-a");
    let id = create(&mut h, &token, http_integration("example", &upstream.url()))
        .await
        .id;
    let response = call(
        &mut h,
        &token,
        &id,
        "record",
        r#"{"id": 9007199254740993, "ratio": 1.0}"#,
    )
    .await
    .expect("answered");
    assert!(!response.is_error);
    assert_eq!(
        response.structured_content_json,
        r#"{"received":{"id":9007199254740993,"ratio":1.0}}"#
    );
    assert_eq!(
        response.failure_reason(),
        pb::ToolFailureReason::Unspecified
    );

    let status = call(&mut h, &token, &id, "record", "[1, 2]")
        .await
        .expect_err("not an object");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(bad_fields(&status), ["arguments_json"]);
}

#[tokio::test]
async fn every_failure_names_its_reason() {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut h = start(DbKind::Sqlite).await;
    let token = admin("org-a");
    let mut request = http_integration("example", &upstream.url());
    request.timeouts = Some(pb::Timeouts {
        connect: None,
        call: Some(prost_types::Duration {
            seconds: 1,
            nanos: 0,
        }),
    });
    let id = create(&mut h, &token, request).await.id;
    // The 5 MB result gets the default call limit: under a 1 s one a busy
    // machine may end it by time before its size is known.
    let roomy = create(&mut h, &token, http_integration("roomy", &upstream.url()))
        .await
        .id;
    let reason = |response: pb::ExecuteToolResponse| {
        assert!(response.is_error);
        response.failure_reason()
    };
    let tool_error = call(&mut h, &token, &id, "fail", r#"{"message":"no"}"#).await;
    assert_eq!(
        reason(tool_error.expect("answered")),
        pb::ToolFailureReason::ToolError
    );
    let timeout = call(&mut h, &token, &id, "sleep", r#"{"ms":10000}"#)
        .await
        .expect("answered");
    // The limit travels as a fact, for the caller to word.
    assert_eq!(
        timeout.timeout,
        Some(prost_types::Duration {
            seconds: 1,
            nanos: 0
        })
    );
    assert_eq!(reason(timeout), pb::ToolFailureReason::Timeout);
    let too_large = call(&mut h, &token, &roomy, "big", r#"{"bytes":5000000}"#)
        .await
        .expect("answered");
    // The limit travels as a number, in bytes (the default 4 MiB).
    assert_eq!(too_large.result_limit_bytes, Some(4 * 1024 * 1024));
    assert_eq!(reason(too_large), pb::ToolFailureReason::ResultTooLarge);
    let unknown = call(&mut h, &token, &id, "teleport", "{}")
        .await
        .expect("answered");
    // The server's JSON-RPC error as it sent it; the description is its
    // message, as before.
    assert_eq!(
        unknown.jsonrpc_error,
        Some(pb::JsonRpcError {
            code: -32602,
            message: "unknown tool: teleport".into()
        })
    );
    assert_eq!(unknown.error_message, "unknown tool: teleport");
    assert_eq!(unknown.detail, None);
    assert_eq!(reason(unknown), pb::ToolFailureReason::ProtocolError);
    upstream.shutdown().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let unreachable = call(&mut h, &token, &id, "echo", r#"{"text":"x"}"#)
        .await
        .expect("answered");
    // The connection's words travel bare; the description wraps them.
    let detail = unreachable.detail.clone().expect("the connection's words");
    assert!(!detail.is_empty());
    let reason = reason(unreachable.clone());
    let described = match reason {
        pb::ToolFailureReason::ServerUnreachable => "could not connect to the MCP server",
        pb::ToolFailureReason::ConnectionLost => "the connection to the MCP server failed",
        other => panic!("{other:?}"),
    };
    assert_eq!(unreachable.error_message, format!("{described}: {detail}"));
    assert_eq!(
        (unreachable.jsonrpc_error, unreachable.retry_after),
        (None, None)
    );
}

#[tokio::test]
async fn resource_parameters_and_prompt_arguments_as_json_reach_the_server_exactly() {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut h = start(DbKind::Sqlite).await;
    let token = admin("org-a");
    let id = create(&mut h, &token, http_integration("example", &upstream.url()))
        .await
        .id;
    let read = |parameters_json: &str| pb::RetrieveResourceRequest {
        integration_id: id.clone(),
        uri: "data://sales/{region}.csv".into(),
        parameters_json: parameters_json.into(),
        ..Default::default()
    };
    // The server knows no such region and names the URI it was asked for.
    let status = h
        .client
        .retrieve_resource(req(read(r#"{"region": 9007199254740993}"#), &token))
        .await
        .expect_err("no such region");
    assert_eq!(status.code(), Code::NotFound);
    assert!(
        status
            .message()
            .contains("data://sales/9007199254740993.csv"),
        "{status:?}"
    );
    let status = h
        .client
        .retrieve_resource(req(read("[1]"), &token))
        .await
        .expect_err("not an object");
    assert_eq!(bad_fields(&status), ["parameters_json"]);

    let prompt = |arguments_json: &str| pb::GetPromptRequest {
        integration_id: id.clone(),
        name: "summarize".into(),
        arguments_json: arguments_json.into(),
        ..Default::default()
    };
    let rendered = h
        .client
        .get_prompt(req(
            prompt(r#"{"topic": 9007199254740993, "style": "short"}"#),
            &token,
        ))
        .await
        .expect("rendered")
        .into_inner();
    let first = rendered.messages[0]
        .content
        .as_ref()
        .and_then(|c| c.block.as_ref());
    let Some(pb::content_block::Block::Text(text)) = first else {
        panic!("a text message: {rendered:?}");
    };
    assert_eq!(text.text, "Summarize 9007199254740993 in a short style.");
    let status = h
        .client
        .get_prompt(req(prompt("1"), &token))
        .await
        .expect_err("not an object");
    assert_eq!(bad_fields(&status), ["arguments_json"]);
}

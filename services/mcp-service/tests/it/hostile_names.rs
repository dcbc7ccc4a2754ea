//! A caller's names (tool, prompt, resource URI, session scope) are bounded
//! where they enter: past the bound the call is INVALID_ARGUMENT naming the
//! field and no server is contacted, so a caller's megabytes never reach a
//! log line, a span, a metric or a session key.

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::{json::json_to_struct, mcp::v1 as pb};
use switchboard_test_support::{DbKind, db_tests};
use tonic::Code;

use crate::support::{admin, create, http_integration, req, start_with};

const NAME_LIMIT: usize = 1024;
const URI_LIMIT: usize = 8 * 1024;
const SCOPE_LIMIT: usize = 1024;

fn tool(id: &str, name: String, scope: String) -> pb::ExecuteToolRequest {
    pb::ExecuteToolRequest {
        integration_id: id.to_owned(),
        tool_name: name,
        arguments: json_to_struct(&json!({})),
        session_scope: scope,
        ..Default::default()
    }
}

fn refused_naming(result: Result<impl std::fmt::Debug, tonic::Status>, field: &str) {
    let status = result.expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains(field), "{}", status.message());
}

async fn names_past_their_bounds_are_refused_before_any_server(kind: DbKind) {
    let server = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut h = start_with(kind, |_| {}).await;
    let token = admin("org-a");
    let id = create(&mut h, &token, http_integration("example", &server.url()))
        .await
        .id;
    let over = |n: usize| "x".repeat(n + 1);

    let long_name = h
        .client
        .execute_tool(req(tool(&id, over(NAME_LIMIT), "t".into()), &token));
    refused_naming(long_name.await, "tool_name");
    let long_scope = h
        .client
        .execute_tool(req(tool(&id, "echo".into(), over(SCOPE_LIMIT)), &token));
    refused_naming(long_scope.await, "session_scope");
    let resource = pb::RetrieveResourceRequest {
        integration_id: id.clone(),
        uri: over(URI_LIMIT),
        ..Default::default()
    };
    refused_naming(
        h.client.retrieve_resource(req(resource, &token)).await,
        "uri",
    );
    let prompt = pb::GetPromptRequest {
        integration_id: id.clone(),
        name: over(NAME_LIMIT),
        ..Default::default()
    };
    refused_naming(h.client.get_prompt(req(prompt, &token)).await, "name");
    assert_eq!(
        server.stats.snapshot().sessions,
        0,
        "no server was contacted"
    );

    // At the bounds the call goes through: the server answers for itself.
    let at_bounds = tool(&id, "x".repeat(NAME_LIMIT), "s".repeat(SCOPE_LIMIT));
    match h.client.execute_tool(req(at_bounds, &token)).await {
        Ok(answered) => assert!(answered.into_inner().is_error, "no such tool"),
        Err(status) => assert_ne!(status.code(), Code::InvalidArgument, "{status:?}"),
    }
    assert_eq!(server.stats.snapshot().sessions, 1);
}

db_tests!(names_past_their_bounds_are_refused_before_any_server);

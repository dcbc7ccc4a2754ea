//! The lifecycle chosen per server: the stateless protocol of 2026-07-28
//! with a server that speaks it, the initialize handshake with one that
//! speaks only the earlier versions.

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::{json::json_to_struct, mcp::v1 as pb};
use switchboard_test_support::{DbKind, db_tests};

use crate::support::{admin, create, http_integration, req, start};

/// Discovers a fresh integration of a server started with `options`, calls
/// its `echo` tool, and returns the protocol version Discover reports and
/// the sessions the server saw opened.
async fn discover_and_call(kind: DbKind, options: HttpServerOptions) -> (String, u64) {
    let upstream = spawn_http(options).await.expect("upstream");
    let mut h = start(kind).await;
    let token = admin("org-a");
    let id = create(&mut h, &token, http_integration("example", &upstream.url()))
        .await
        .id;
    let discovered = h
        .client
        .discover(req(
            pb::DiscoverRequest {
                integration_id: id.clone(),
                bypass_cache: true,
                allowed_tools: None,
            },
            &token,
        ))
        .await
        .expect("discovered")
        .into_inner();
    let names: Vec<_> = discovered.tools.iter().map(|t| t.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "tools come in one order, by name");
    let response = h
        .client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id,
                tool_name: "echo".into(),
                arguments: json_to_struct(&json!({"text": "hi"})),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect("ExecuteTool answers")
        .into_inner();
    assert!(!response.is_error, "{response:?}");
    let server = discovered.server.expect("server info");
    (server.protocol_version, upstream.stats.snapshot().sessions)
}

async fn a_server_of_2026_07_28_is_reached_without_sessions(kind: DbKind) {
    let (version, sessions) = discover_and_call(
        kind,
        HttpServerOptions {
            stateful: false,
            ..HttpServerOptions::default()
        },
    )
    .await;
    assert_eq!(version, "2026-07-28");
    assert_eq!(sessions, 0, "no initialize handshake");
}

async fn a_server_of_an_earlier_version_is_reached_with_initialize(kind: DbKind) {
    let (version, sessions) = discover_and_call(kind, HttpServerOptions::default()).await;
    assert_eq!(version, "2025-11-25");
    assert!(sessions >= 1, "sessions opened with initialize");
}

db_tests!(
    a_server_of_2026_07_28_is_reached_without_sessions,
    a_server_of_an_earlier_version_is_reached_with_initialize,
);
